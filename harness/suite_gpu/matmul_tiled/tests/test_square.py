"""Square 2048 x 2048 product."""
import torch

import gpukit
from common import TOLERANCE, check_equivalence, experiment  # noqa: F401  (what is timed, how it compares)


def setup():
    generator = torch.Generator(device="cuda").manual_seed(31)
    a = torch.randn(2048, 2048, device="cuda", generator=generator)
    b = torch.randn(2048, 2048, device="cuda", generator=generator)
    return a, b


def run_test(eqcheck=False, reference=False, prefix=""):
    return gpukit.time_experiment(globals(), eqcheck, reference, prefix, reps=10)


if __name__ == "__main__":
    gpukit.main(run_test)
