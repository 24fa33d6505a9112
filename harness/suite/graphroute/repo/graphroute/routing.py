"""Shortest-path routing with Dijkstra's algorithm.

All functions accept a :class:`~graphroute.graph.RoadGraph` with non-negative
weights.  Vertices are settled in order of increasing distance; among vertices
at the same distance the smallest id is settled first, and when two routes to
a vertex have equal cost the one through the smaller predecessor id wins.
These rules make the returned predecessor trees, and therefore the paths,
fully deterministic.
"""
from .graph import GraphError

INF = float("inf")


class NoPathError(LookupError):
    """Raised when the target cannot be reached from the source."""


def dijkstra(graph, source, target=None, cutoff=None):
    """Single-source shortest paths.

    Parameters
    ----------
    graph:
        The road graph.
    source:
        Start vertex.
    target:
        Optional vertex at which the search stops as soon as it is settled.
    cutoff:
        Optional maximum distance; vertices farther away are not settled.

    Returns
    -------
    (dist, pred):
        ``dist`` maps every settled vertex to its distance from ``source``,
        ``pred`` maps every settled vertex except ``source`` to its
        predecessor on the shortest path.
    """
    if source not in graph:
        raise GraphError("unknown source vertex %r" % (source,))

    tentative = {v: INF for v in graph.vertices()}
    tentative[source] = 0
    parent = {}
    unvisited = set(graph.vertices())
    dist = {}
    pred = {}

    while unvisited:
        # pick the unvisited vertex with the smallest tentative distance
        u = None
        du = INF
        for v in unvisited:
            d = tentative[v]
            if d < du or (d == du and d != INF and v < u):
                u = v
                du = d
        if u is None:
            break  # everything left is unreachable
        if cutoff is not None and du > cutoff:
            break
        unvisited.remove(u)
        dist[u] = du
        if u in parent:
            pred[u] = parent[u]
        if u == target:
            break

        for v, w in graph.neighbors(u):
            if v in dist:
                continue
            nd = du + w
            old = tentative[v]
            if nd < old or (nd == old and u < parent[v]):
                tentative[v] = nd
                parent[v] = u

    return dist, pred


def reconstruct_path(pred, source, target):
    """Walk the predecessor map back from ``target`` to ``source``.

    Returns the list of vertices from ``source`` to ``target`` (inclusive).
    """
    if target == source:
        return [source]
    if target not in pred:
        raise NoPathError("no path from %r to %r" % (source, target))
    path = [target]
    v = target
    while v != source:
        v = pred[v]
        path.append(v)
    path.reverse()
    return path


def shortest_path(graph, source, target):
    """Return ``(distance, path)`` for the cheapest route from ``source`` to ``target``."""
    if target not in graph:
        raise GraphError("unknown target vertex %r" % (target,))
    dist, pred = dijkstra(graph, source, target=target)
    if target not in dist:
        raise NoPathError("no path from %r to %r" % (source, target))
    return dist[target], reconstruct_path(pred, source, target)


def shortest_path_lengths(graph, source, cutoff=None):
    """Distances from ``source`` to every reachable vertex (within ``cutoff``)."""
    dist, _ = dijkstra(graph, source, cutoff=cutoff)
    return dist


def distance_table(graph, sources, targets):
    """Matrix of travel costs: ``table[i][j]`` is the distance ``sources[i] -> targets[j]``.

    Unreachable pairs get ``float('inf')``.
    """
    targets = list(targets)
    table = []
    for s in sources:
        dist, _ = dijkstra(graph, s)
        table.append([dist.get(t, INF) for t in targets])
    return table


def path_cost(graph, path):
    """Total weight of ``path`` using the cheapest edge between consecutive vertices."""
    total = 0
    for u, v in zip(path, path[1:]):
        total += graph.edge_weight(u, v)
    return total
