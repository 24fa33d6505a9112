"""graphroute: shortest-path routing on small road networks.

Example::

    from graphroute import RoadGraph, shortest_path

    g = RoadGraph.from_edges([(1, 2, 7), (2, 3, 4), (1, 3, 15)])
    cost, path = shortest_path(g, 1, 3)   # (11, [1, 2, 3])
"""
from .graph import GraphError, RoadGraph
from .io import format_edge_list, load_edge_list, parse_edge_list
from .reach import connected_components, hop_counts, is_reachable, reachable
from .routing import (
    INF,
    NoPathError,
    dijkstra,
    distance_table,
    path_cost,
    reconstruct_path,
    shortest_path,
    shortest_path_lengths,
)

__all__ = [
    "RoadGraph",
    "GraphError",
    "NoPathError",
    "INF",
    "dijkstra",
    "shortest_path",
    "shortest_path_lengths",
    "distance_table",
    "reconstruct_path",
    "path_cost",
    "reachable",
    "is_reachable",
    "hop_counts",
    "connected_components",
    "parse_edge_list",
    "load_edge_list",
    "format_edge_list",
]

__version__ = "1.2.0"
