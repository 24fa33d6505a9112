"""Workload: isochrones (all places within a travel budget) on a large city grid."""
import graphroute
import perfkit
from common import check_equivalence, city_grid, load_result, store_result  # noqa: F401


def setup():
    g, vid = city_grid(80, 80, seed=41, wmin=2, wmax=30, drop=0.05, diagonals=0.05)
    return {"graph": g, "centers": [vid(40, 40), vid(5, 70)], "budget": 170}


def experiment(data):
    g = data["graph"]
    return [graphroute.shortest_path_lengths(g, c, cutoff=data["budget"]) for c in data["centers"]]


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
