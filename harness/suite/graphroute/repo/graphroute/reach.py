"""Reachability queries that ignore edge weights."""
from collections import deque

from .graph import GraphError


def reachable(graph, source):
    """Set of vertices reachable from ``source`` (including ``source``)."""
    if source not in graph:
        raise GraphError("unknown vertex %r" % (source,))
    seen = {source}
    queue = deque([source])
    while queue:
        u = queue.popleft()
        for v, _ in graph.neighbors(u):
            if v not in seen:
                seen.add(v)
                queue.append(v)
    return seen


def is_reachable(graph, source, target):
    """True if ``target`` can be reached from ``source``."""
    return target in reachable(graph, source)


def hop_counts(graph, source):
    """Minimum number of edges from ``source`` to each reachable vertex."""
    hops = {source: 0}
    queue = deque([source])
    while queue:
        u = queue.popleft()
        for v, _ in graph.neighbors(u):
            if v not in hops:
                hops[v] = hops[u] + 1
                queue.append(v)
    return hops


def connected_components(graph):
    """Weakly connected components, each as a sorted list, largest first.

    Ties in size are ordered by smallest vertex id.
    """
    undirected = graph if not graph.directed else _symmetrize(graph)
    seen = set()
    comps = []
    for v in undirected.vertices():
        if v in seen:
            continue
        comp = reachable(undirected, v)
        seen |= comp
        comps.append(sorted(comp))
    comps.sort(key=lambda c: (-len(c), c[0]))
    return comps


def _symmetrize(graph):
    from .graph import RoadGraph

    g = RoadGraph(directed=False)
    for v in graph.vertices():
        g.add_vertex(v)
    for u, v, w in graph.edges():
        g.add_edge(u, v, w)
    return g
