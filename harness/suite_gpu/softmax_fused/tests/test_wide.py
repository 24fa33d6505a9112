"""Row softmax of 1024 rows of 16384 columns (one long row per program)."""
import torch

import gpukit
from common import TOLERANCE, check_equivalence, experiment  # noqa: F401  (what is timed, how it compares)


def setup():
    generator = torch.Generator(device="cuda").manual_seed(13)
    return torch.randn(1024, 16384, device="cuda", generator=generator) * 4


def run_test(eqcheck=False, reference=False, prefix=""):
    return gpukit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    gpukit.main(run_test)
