"""Road network graph.

Vertices are integer ids (intersections); edges carry a non-negative travel
cost (e.g. seconds or metres).  Adjacency lists keep insertion order, so every
traversal in the package is deterministic for a given edge list.
"""


class GraphError(ValueError):
    """Raised for malformed graph input (negative weights, unknown vertices...)."""


class RoadGraph:
    """Weighted graph stored as adjacency lists.

    Parameters
    ----------
    directed:
        If False (the default) every edge is usable in both directions, as for
        two-way streets.  One-way streets need ``directed=True``.
    """

    def __init__(self, directed=False):
        self.directed = bool(directed)
        self._adj = {}
        self._num_edges = 0

    # -- construction -------------------------------------------------------
    @classmethod
    def from_edges(cls, edges, directed=False, vertices=()):
        """Build a graph from an iterable of ``(u, v, weight)`` triples.

        ``vertices`` may list extra isolated vertices to include.
        """
        g = cls(directed=directed)
        for v in vertices:
            g.add_vertex(v)
        for u, v, w in edges:
            g.add_edge(u, v, w)
        return g

    def add_vertex(self, v):
        """Add vertex ``v`` if it is not present yet."""
        if v not in self._adj:
            self._adj[v] = []

    def add_edge(self, u, v, weight=1):
        """Add an edge ``u -> v`` (and ``v -> u`` when undirected).

        Parallel edges are kept; routing simply uses the cheapest one.
        """
        if weight < 0:
            raise GraphError("negative edge weight %r on %r-%r" % (weight, u, v))
        self.add_vertex(u)
        self.add_vertex(v)
        self._adj[u].append((v, weight))
        if not self.directed and u != v:
            self._adj[v].append((u, weight))
        self._num_edges += 1

    # -- queries ------------------------------------------------------------
    def __contains__(self, v):
        return v in self._adj

    def __len__(self):
        return len(self._adj)

    @property
    def num_vertices(self):
        return len(self._adj)

    @property
    def num_edges(self):
        """Number of ``add_edge`` calls (an undirected edge counts once)."""
        return self._num_edges

    def vertices(self):
        """Vertex ids in insertion order."""
        return list(self._adj)

    def neighbors(self, u):
        """List of ``(neighbor, weight)`` pairs leaving ``u``."""
        try:
            return self._adj[u]
        except KeyError:
            raise GraphError("unknown vertex %r" % (u,)) from None

    def degree(self, u):
        return len(self.neighbors(u))

    def edge_weight(self, u, v):
        """Cheapest weight of an edge ``u -> v``; raises GraphError if none exists."""
        best = None
        for x, w in self.neighbors(u):
            if x == v and (best is None or w < best):
                best = w
        if best is None:
            raise GraphError("no edge %r -> %r" % (u, v))
        return best

    def edges(self):
        """Iterate over ``(u, v, weight)`` for every stored adjacency entry."""
        for u, nbrs in self._adj.items():
            for v, w in nbrs:
                yield u, v, w

    def reversed(self):
        """Return a graph with every edge reversed (identity for undirected graphs)."""
        g = RoadGraph(directed=self.directed)
        for v in self._adj:
            g.add_vertex(v)
        if not self.directed:
            for u, v, w in self.edges():
                if u <= v:
                    g.add_edge(u, v, w)
            return g
        for u, v, w in self.edges():
            g.add_edge(v, u, w)
        return g
