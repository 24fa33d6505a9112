"""Row softmax of 16384 short rows (1024 columns: many small programs)."""
import torch

import gpukit
from common import TOLERANCE, check_equivalence, experiment  # noqa: F401  (what is timed, how it compares)


def setup():
    generator = torch.Generator(device="cuda").manual_seed(12)
    return torch.randn(16384, 1024, device="cuda", generator=generator) * 4


def run_test(eqcheck=False, reference=False, prefix=""):
    return gpukit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    gpukit.main(run_test)
