"""Row softmax of 4096 x 8192 logits (a classifier head over a large vocabulary)."""
import torch

import gpukit
from common import TOLERANCE, check_equivalence, experiment  # noqa: F401  (what is timed, how it compares)


def setup():
    generator = torch.Generator(device="cuda").manual_seed(11)
    return torch.randn(4096, 8192, device="cuda", generator=generator) * 4


def run_test(eqcheck=False, reference=False, prefix=""):
    return gpukit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    gpukit.main(run_test)
