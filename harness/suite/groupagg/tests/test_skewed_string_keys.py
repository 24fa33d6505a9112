"""String keys drawn from a Zipf-like distribution: a few huge groups, a long tail of tiny ones."""
import numpy as np

import groupagg as ga
import perfkit
from common import check_equivalence, load_result, store_result, table_to_plain


def setup():
    rng = np.random.default_rng(202)
    n = 240_000
    vocab = np.array([f"sku-{i:05d}" for i in range(20_000)])
    ranks = np.minimum(rng.zipf(1.3, n), len(vocab)) - 1
    return ga.Table({
        "sku": vocab[ranks],
        "latency_ms": rng.lognormal(3.0, 0.8, n),
        "status": rng.integers(200, 504, n).astype(np.int32),
    })


def experiment(table):
    out = table.group_by("sku").agg(
        fastest=("latency_ms", "min"),
        slowest=("latency_ms", "max"),
        mean_latency=("latency_ms", "mean"),
        worst_status=("status", "max"),
        requests=("status", "count"),
    )
    return {"by_sku": table_to_plain(out)}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
