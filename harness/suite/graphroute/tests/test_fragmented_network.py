"""Workload: many networks split into components of skewed sizes plus isolated nodes.

Only part of each graph is reachable from a source, and one query per network
targets an unreachable vertex.
"""
import random

import graphroute
import perfkit
from common import check_equivalence, load_result, store_result  # noqa: F401


def _network(rng):
    edges = []
    vertices = []
    next_id = 1
    sizes = [rng.randint(70, 90), rng.randint(30, 45), 18] + [rng.randint(4, 15) for _ in range(4)] + [1] * 10
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
    big, second = comps[0], comps[1]
    sources = [big[len(big) // 2], big[0], big[-1], big[len(big) // 3], second[len(second) // 2]]
    return {"graph": g, "sources": sources, "other": second[0]}


def setup():
    rng = random.Random(77)
    return {"networks": [_network(rng) for _ in range(124)]}


def experiment(data):
    out = []
    for net in data["networks"]:
        g = net["graph"]
        for s in net["sources"]:
            dist, pred = graphroute.dijkstra(g, s)
            out.append({"dist": dist, "pred": pred})
        try:
            graphroute.shortest_path(g, net["sources"][0], net["other"])
            unreachable = False
        except graphroute.NoPathError:
            unreachable = True
        out.append(unreachable)
    return out


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
