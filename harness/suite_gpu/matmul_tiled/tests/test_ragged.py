"""Sizes that are no multiple of any tile (1000 x 3000 by 3000 x 500)."""
import torch

import gpukit
from common import TOLERANCE, check_equivalence, experiment  # noqa: F401  (what is timed, how it compares)


def setup():
    generator = torch.Generator(device="cuda").manual_seed(33)
    a = torch.randn(1000, 3000, device="cuda", generator=generator)
    b = torch.randn(3000, 500, device="cuda", generator=generator)
    return a, b


def run_test(eqcheck=False, reference=False, prefix=""):
    return gpukit.time_experiment(globals(), eqcheck, reference, prefix, reps=10)


if __name__ == "__main__":
    gpukit.main(run_test)
