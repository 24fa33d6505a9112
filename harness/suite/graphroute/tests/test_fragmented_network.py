"""Workload: a network split into many components of skewed sizes plus isolated nodes.

Only part of the graph is reachable from the source, and one query targets an
unreachable vertex.
"""
import random

import graphroute
import perfkit
from common import check_equivalence, load_result, store_result  # noqa: F401


def setup():
    rng = random.Random(77)
    edges = []
    vertices = []
    next_id = 1
    sizes = [1200, 700, 350] + [rng.randint(5, 120) for _ in range(40)] + [1] * 300
    rng.shuffle(sizes)
    for size in sizes:
        comp = list(range(next_id, next_id + size))
        next_id += size
        vertices.extend(comp)
        for k in range(1, size):
            # random spanning tree plus extra local edges
            edges.append((comp[k], comp[rng.randrange(k)], rng.randint(1, 50)))
        for _ in range(size // 2):
            a, b = rng.randrange(size), rng.randrange(size)
            if a != b:
                edges.append((comp[a], comp[b], rng.randint(10, 90)))
    rng.shuffle(vertices)
    g = graphroute.RoadGraph.from_edges(edges, vertices=vertices)
    comps = graphroute.connected_components(g)
    big = comps[0]
    return {"graph": g, "source": big[len(big) // 2], "other": comps[1][0]}


def experiment(data):
    g = data["graph"]
    dist, pred = graphroute.dijkstra(g, data["source"])
    try:
        graphroute.shortest_path(g, data["source"], data["other"])
        unreachable = False
    except graphroute.NoPathError:
        unreachable = True
    return {"dist": dist, "pred": pred, "unreachable": unreachable}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
