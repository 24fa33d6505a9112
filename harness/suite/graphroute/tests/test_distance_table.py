"""Workload: depot-to-customer travel-cost matrices for several one-way-street districts."""
import random

import graphroute
import perfkit
from common import check_equivalence, city_grid, load_result, store_result  # noqa: F401


def setup():
    rng = random.Random(8)
    districts = []
    for k in range(4):
        g, vid = city_grid(11 + k, 16, seed=8 + k, wmin=3, wmax=40, drop=0.12, diagonals=0.2, directed=True)
        verts = g.vertices()
        depots = rng.sample(verts, 72)
        customers = rng.sample(verts, 50)
        districts.append({"graph": g, "depots": depots, "customers": customers})
    return {"districts": districts}


def experiment(data):
    return [graphroute.distance_table(d["graph"], d["depots"], d["customers"]) for d in data["districts"]]


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
