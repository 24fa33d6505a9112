"""Shared input generators and result helpers for the graphroute workloads."""
import random

from graphroute import RoadGraph
import perfkit
from perfkit import load_result, store_result  # noqa: F401  (pickle storage)


def city_grid(rows, cols, seed, wmin=1, wmax=20, drop=0.0, diagonals=0.0, directed=False, shuffle_ids=True):
    """A perturbed street grid.

    Intersections sit on a ``rows x cols`` lattice; ``drop`` removes a share of
    the streets, ``diagonals`` adds a share of diagonal shortcuts.  With
    ``shuffle_ids`` the vertex ids are a random permutation (with gaps), as
    they would be when loaded from map data.
    """
    rng = random.Random(seed)
    n = rows * cols
    ids = list(range(0, 3 * n, 3))
    if shuffle_ids:
        rng.shuffle(ids)

    def vid(i, j):
        return ids[i * cols + j]

    edges = []
    for i in range(rows):
        for j in range(cols):
            if j + 1 < cols and rng.random() >= drop:
                edges.append((vid(i, j), vid(i, j + 1), rng.randint(wmin, wmax)))
            if i + 1 < rows and rng.random() >= drop:
                edges.append((vid(i, j), vid(i + 1, j), rng.randint(wmin, wmax)))
            if directed:
                if j > 0 and rng.random() >= drop:
                    edges.append((vid(i, j), vid(i, j - 1), rng.randint(wmin, wmax)))
                if i > 0 and rng.random() >= drop:
                    edges.append((vid(i, j), vid(i - 1, j), rng.randint(wmin, wmax)))
            if diagonals and i + 1 < rows and j + 1 < cols and rng.random() < diagonals:
                edges.append((vid(i, j), vid(i + 1, j + 1), rng.randint(wmin, wmax) + wmin))
    g = RoadGraph.from_edges(edges, directed=directed, vertices=sorted(ids))
    return g, vid


def check_equivalence(reference, current):
    """Exact comparison of nested dicts / lists / tuples of ints and floats."""
    perfkit.assert_same(reference, current)
