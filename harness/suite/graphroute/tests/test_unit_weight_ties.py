"""Workload: one-way grid with unit weights, where almost every vertex has tied routes.

Exercises the deterministic tie-breaking rules (settle order and predecessor choice).
"""
import graphroute
import perfkit
from common import check_equivalence, city_grid, load_result, store_result  # noqa: F401


def setup():
    g, vid = city_grid(44, 44, seed=3, wmin=1, wmax=1, drop=0.1, directed=True)
    return {"graph": g, "sources": [vid(0, 0), vid(22, 19)]}


def experiment(data):
    out = []
    for s in data["sources"]:
        dist, pred = graphroute.dijkstra(data["graph"], s)
        out.append((dist, pred))
    return out


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
