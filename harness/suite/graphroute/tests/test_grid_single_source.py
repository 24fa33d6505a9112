"""Workload: full single-source search on a city grid (distances + predecessor tree)."""
import graphroute
import perfkit
from common import check_equivalence, city_grid, load_result, store_result  # noqa: F401


def setup():
    g, vid = city_grid(58, 58, seed=11, drop=0.05, diagonals=0.1)
    return {"graph": g, "source": vid(29, 29)}


def experiment(data):
    dist, pred = graphroute.dijkstra(data["graph"], data["source"])
    return {"dist": dist, "pred": pred}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
