"""Reading and writing plain-text edge lists.

The format is one edge per line, ``u v weight`` separated by whitespace.
Blank lines and lines starting with ``#`` are ignored.  A line with a single
id declares an isolated vertex.
"""
from .graph import GraphError, RoadGraph


def _number(token):
    try:
        return int(token)
    except ValueError:
        return float(token)


def parse_edge_list(lines, directed=False):
    """Build a :class:`RoadGraph` from an iterable of text lines."""
    g = RoadGraph(directed=directed)
    for lineno, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        try:
            if len(parts) == 1:
                g.add_vertex(int(parts[0]))
            elif len(parts) == 2:
                g.add_edge(int(parts[0]), int(parts[1]), 1)
            elif len(parts) == 3:
                g.add_edge(int(parts[0]), int(parts[1]), _number(parts[2]))
            else:
                raise ValueError("too many fields")
        except ValueError as exc:
            raise GraphError("line %d: %s (%r)" % (lineno, exc, raw)) from None
    return g


def load_edge_list(path, directed=False):
    """Read an edge-list file from ``path``."""
    with open(path) as fh:
        return parse_edge_list(fh, directed=directed)


def format_edge_list(graph):
    """Serialise ``graph`` to edge-list text (each undirected edge written once)."""
    out = []
    isolated = [v for v in graph.vertices() if not graph.neighbors(v)]
    for v in isolated:
        out.append("%d" % v)
    for u, v, w in graph.edges():
        if not graph.directed and u > v:
            continue
        out.append("%d %d %s" % (u, v, w))
    return "\n".join(out) + "\n"
