"""Workload: batches of point-to-point route queries, from short hops to cross-town trips, in several towns."""
import random

import graphroute
import perfkit
from common import check_equivalence, city_grid, load_result, store_result  # noqa: F401


def setup():
    rng = random.Random(5)
    towns = []
    for k in range(6):
        rows, cols = 12 + k % 3, 14 + k % 2
        g, vid = city_grid(rows, cols, seed=23 + k, wmin=5, wmax=60, drop=0.08, diagonals=0.15)
        centre = vid(rows // 2, cols // 2)
        comp = set(graphroute.reachable(g, centre))
        queries = [(vid(0, 0), vid(rows - 1, cols - 1)), (centre, vid(rows // 2 + 1, cols // 2 + 2)),
                   (vid(8, cols - 3), vid(rows - 3, 3))]
        while len(queries) < 78:
            a = vid(rng.randrange(rows), rng.randrange(cols))
            b = vid(rng.randrange(rows), rng.randrange(cols))
            if a in comp and b in comp:
                queries.append((a, b))
        queries = [(a, b) for a, b in queries if a in comp and b in comp]
        towns.append((g, queries))
    return {"towns": towns}


def experiment(data):
    return [[graphroute.shortest_path(g, s, t) for s, t in queries] for g, queries in data["towns"]]


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
