"""Shared pieces of the matmul_tiled workloads: what is timed and how results compare.

Each rep gets setup()'s matrices scaled elementwise by seeded noise (gpukit.perturb) and its output is
checked against the reference run's for the same inputs, within TOLERANCE; the last one is also compared
element by element (check_equivalence)."""
import gpukit
import tilemm


TOLERANCE = {"rtol": 1e-3, "atol": 1e-3}  # (sums in another order)


def experiment(data):
    return tilemm.matmul(*data)


def check_equivalence(reference, current):
    gpukit.check_close(reference, current, **TOLERANCE)
