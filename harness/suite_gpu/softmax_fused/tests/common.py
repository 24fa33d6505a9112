"""Shared pieces of the softmax_fused workloads: what is timed and how results compare.

Each rep gets setup()'s matrices scaled elementwise by seeded noise (gpukit.perturb) and its output is
checked against the reference run's for the same inputs, within TOLERANCE; the last one is also compared
element by element (check_equivalence)."""
import gpukit
import softnorm


TOLERANCE = {"rtol": 1e-4, "atol": 1e-6}


def experiment(x):
    return softnorm.row_softmax(x)


def check_equivalence(reference, current):
    gpukit.check_close(reference, current, **TOLERANCE)
