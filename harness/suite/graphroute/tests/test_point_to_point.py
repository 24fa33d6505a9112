"""Workload: point-to-point route queries, from short hops to cross-town trips."""
import random

import graphroute
import perfkit
from common import check_equivalence, city_grid, load_result, store_result  # noqa: F401


def setup():
    rows, cols = 40, 46
    g, vid = city_grid(rows, cols, seed=23, wmin=5, wmax=60, drop=0.08, diagonals=0.15)
    rng = random.Random(5)
    comp = set(graphroute.reachable(g, vid(22, 25)))
    queries = [(vid(0, 0), vid(rows - 1, cols - 1)), (vid(22, 25), vid(23, 27)), (vid(8, 43), vid(37, 3))]
    while len(queries) < 5:
        a = vid(rng.randrange(rows), rng.randrange(cols))
        b = vid(rng.randrange(rows), rng.randrange(cols))
        if a in comp and b in comp:
            queries.append((a, b))
    queries = [(a, b) for a, b in queries if a in comp and b in comp]
    return {"graph": g, "queries": queries}


def experiment(data):
    g = data["graph"]
    return [graphroute.shortest_path(g, s, t) for s, t in data["queries"]]


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
