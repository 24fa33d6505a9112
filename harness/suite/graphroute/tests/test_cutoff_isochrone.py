"""Workload: isochrones (all places within a travel budget) around many centres in several city districts."""
import random

import graphroute
import perfkit
from common import check_equivalence, city_grid, load_result, store_result  # noqa: F401


def setup():
    rng = random.Random(41)
    districts = []
    for k in range(6):
        rows, cols = 11 + k % 3, 13 + k % 2
        g, vid = city_grid(rows, cols, seed=41 + k, wmin=2, wmax=30, drop=0.05, diagonals=0.05)
        centers = [vid(rows // 2, cols // 2), vid(2, cols - 3)]
        centers += [vid(rng.randrange(rows), rng.randrange(cols)) for _ in range(94)]
        districts.append((g, centers))
    return {"districts": districts, "budgets": [90, 150, 240]}


def experiment(data):
    budgets = data["budgets"]
    out = []
    for g, centers in data["districts"]:
        out.append([graphroute.shortest_path_lengths(g, c, cutoff=budgets[i % len(budgets)])
                    for i, c in enumerate(centers)])
    return out


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
