"""Coverage depth at 650 positions (mostly interval boundaries) over 470k heavily duplicated intervals."""
import numpy as np

import perfkit
import spanindex
from common import check_equivalence, load_result, random_intervals, store_result


def setup():
    rng = np.random.default_rng(23)
    # 2000 distinct intervals on a short 5 kb region, each repeated many times
    us, ue = random_intervals(rng, 2000, 0, 5000, 60)
    pick = rng.integers(0, 2000, size=470_000)
    ix = spanindex.IntervalIndex()
    ix.add_many(us[pick], ue[pick])
    # every boundary position and its neighbours, plus positions off both ends
    pos = np.concatenate([us[:130], ue[:130], us[:130] - 1, ue[:130] + 1,
                          rng.integers(-100, 5200, size=130)])
    return {"index": ix, "pos": pos}


def experiment(data):
    depth = data["index"].depth_at(data["pos"])
    return {"depth": depth}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
