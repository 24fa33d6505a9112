"""Workload: one-way grids with unit weights, where almost every vertex has tied routes.

Exercises the deterministic tie-breaking rules (settle order and predecessor choice)
with full searches from several sources on many small grids.
"""
import graphroute
import perfkit
from common import check_equivalence, city_grid, load_result, store_result  # noqa: F401


def setup():
    grids = []
    for k in range(58):
        rows, cols = 12 + k % 3, 13 + k % 2
        g, vid = city_grid(rows, cols, seed=3 + k, wmin=1, wmax=1, drop=0.1, directed=True)
        sources = [vid(0, 0), vid(rows // 2, cols // 2 - 3), vid(rows - 1, cols - 1),
                   vid(k % rows, (3 * k) % cols), vid((7 * k) % rows, 0), vid(1, (5 * k) % cols)]
        grids.append((g, sources))
    return {"grids": grids}


def experiment(data):
    out = []
    for g, sources in data["grids"]:
        for s in sources:
            dist, pred = graphroute.dijkstra(g, s)
            out.append((dist, pred))
    return out


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
