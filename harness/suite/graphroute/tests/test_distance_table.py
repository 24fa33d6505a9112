"""Workload: depot-to-customer travel-cost matrix (several full searches)."""
import random

import graphroute
import perfkit
from common import check_equivalence, city_grid, load_result, store_result  # noqa: F401


def setup():
    g, vid = city_grid(30, 36, seed=8, wmin=3, wmax=40, drop=0.12, diagonals=0.2, directed=True)
    rng = random.Random(8)
    verts = g.vertices()
    depots = rng.sample(verts, 5)
    customers = rng.sample(verts, 60)
    return {"graph": g, "depots": depots, "customers": customers}


def experiment(data):
    return graphroute.distance_table(data["graph"], data["depots"], data["customers"])


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
