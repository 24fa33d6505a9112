"""Single integer key with ~200 groups, float and int measures (sum/mean/count)."""
import numpy as np

import groupagg as ga
import perfkit
from common import check_equivalence, load_result, store_result, table_to_plain


def setup():
    rng = np.random.default_rng(101)
    n = 500_000
    return ga.Table({
        "store_id": rng.integers(0, 200, n).astype(np.int64),
        "units": rng.integers(1, 20, n).astype(np.int64),
        "revenue": np.round(rng.gamma(2.0, 35.0, n), 2),
    })


def experiment(table):
    out = table.group_by("store_id").agg(
        total_units=("units", "sum"),
        total_revenue=("revenue", "sum"),
        avg_revenue=("revenue", "mean"),
        n_orders=("units", "count"),
    )
    return {"by_store": table_to_plain(out)}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
