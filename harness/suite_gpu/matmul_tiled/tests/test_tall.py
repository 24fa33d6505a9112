"""A 4096 x 1024 by 1024 x 4096 product (an outer-product shape)."""
import torch

import gpukit
from common import TOLERANCE, check_equivalence, experiment  # noqa: F401  (what is timed, how it compares)


def setup():
    generator = torch.Generator(device="cuda").manual_seed(32)
    a = torch.randn(4096, 1024, device="cuda", generator=generator)
    b = torch.randn(1024, 4096, device="cuda", generator=generator)
    return a, b


def run_test(eqcheck=False, reference=False, prefix=""):
    return gpukit.time_experiment(globals(), eqcheck, reference, prefix, reps=10)


if __name__ == "__main__":
    gpukit.main(run_test)
