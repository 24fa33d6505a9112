"""Time graphroute.dijkstra on a synthetic street grid."""
import random
import time

import graphroute


def build_city(rows, cols, seed):
    rng = random.Random(seed)
    ids = list(range(rows * cols))
    rng.shuffle(ids)
    edges = []
    for i in range(rows):
        for j in range(cols):
            v = ids[i * cols + j]
            if j + 1 < cols and rng.random() > 0.05:
                edges.append((v, ids[i * cols + j + 1], rng.randint(1, 20)))
            if i + 1 < rows and rng.random() > 0.05:
                edges.append((v, ids[(i + 1) * cols + j], rng.randint(1, 20)))
    return graphroute.RoadGraph.from_edges(edges, vertices=ids), ids


def main():
    g, ids = build_city(55, 55, seed=2)
    source = ids[27 * 55 + 27]

    start = time.perf_counter()
    dist, pred = graphroute.dijkstra(g, source)
    elapsed = time.perf_counter() - start

    print("settled %d of %d vertices, farthest %d" % (len(dist), g.num_vertices, max(dist.values())))
    print("Execution time: %.6fs" % elapsed)


if __name__ == "__main__":
    main()
