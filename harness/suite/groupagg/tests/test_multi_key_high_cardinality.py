"""Two key columns (string region x integer day) giving several thousand groups."""
import numpy as np

import groupagg as ga
import perfkit
from common import check_equivalence, load_result, store_result, table_to_plain


def setup():
    rng = np.random.default_rng(303)
    n = 180_000
    regions = np.array(["north", "south", "east", "west", "central", "islands",
                        "alpine", "coast", "delta", "plains"])
    return ga.Table({
        "region": regions[rng.integers(0, len(regions), n)],
        "day": rng.integers(0, 730, n).astype(np.int64),
        "rain_mm": np.where(rng.random(n) < 0.3, 0.0, rng.exponential(4.0, n)),
        "temp_c": rng.normal(12.0, 9.0, n),
        "flagged": rng.random(n) < 0.05,
    })


def experiment(table):
    out = table.group_by(["region", "day"]).agg(
        rain=("rain_mm", "sum"),
        t_min=("temp_c", "min"),
        t_max=("temp_c", "max"),
        t_mean=("temp_c", "mean"),
        n_flagged=("flagged", "sum"),
        readings=("temp_c", "count"),
    )
    return {"by_region_day": table_to_plain(out)}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
