"""Workload: full single-source searches on many small city grids (distances + predecessor trees)."""
import perfkit
import graphroute
from common import check_equivalence, city_grid, load_result, store_result  # noqa: F401


def setup():
    cities = []
    for k in range(26):
        rows, cols = 12 + k % 3, 14 + k % 4
        g, vid = city_grid(rows, cols, seed=100 + k, drop=0.05, diagonals=0.1)
        sources = [vid(rows // 2, cols // 2), vid(0, 0), vid(rows - 1, (3 * cols) // 4),
                   vid(k % rows, (7 * k) % cols), vid((5 * k) % rows, cols - 1)]
        sources += [vid((3 * k + 7 * i) % rows, (5 * k + 11 * i) % cols) for i in range(5)]
        cities.append((g, sources))
    return {"cities": cities}


def experiment(data):
    out = []
    for g, sources in data["cities"]:
        for s in sources:
            dist, pred = graphroute.dijkstra(g, s)
            out.append({"dist": dist, "pred": pred})
    return out


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
