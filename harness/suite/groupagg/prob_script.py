"""Time one group-by aggregation over a synthetic sales table."""
import timeit

import numpy as np

import groupagg as ga

rng = np.random.default_rng(0)
n = 200_000
table = ga.Table({
    "store_id": rng.integers(0, 300, n).astype(np.int64),
    "category": rng.choice(np.array(["food", "toys", "garden", "books", "tools"]), n),
    "units": rng.integers(1, 20, n).astype(np.int64),
    "revenue": np.round(rng.gamma(2.0, 35.0, n), 2),
})


def workload():
    table.group_by(["store_id", "category"]).agg(
        units=("units", "sum"),
        revenue=("revenue", "sum"),
        avg_revenue=("revenue", "mean"),
        cheapest=("revenue", "min"),
        priciest=("revenue", "max"),
        orders=("units", "count"),
    )


print(f"Execution time: {timeit.timeit(workload, number=1):.6f}s")
