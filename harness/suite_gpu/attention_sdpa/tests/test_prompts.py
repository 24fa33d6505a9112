"""Prefill of 8 prompts of 1024 tokens."""
import torch

import gpukit
import tinylm
from common import TOLERANCE, check_equivalence, experiment, inputs  # noqa: F401  (timed, compared)


def setup():
    model = tinylm.build_model(seed=7, device="cuda")
    generator = torch.Generator(device="cuda").manual_seed(21)
    tokens = torch.randint(0, 8192, (8, 1024), device="cuda", generator=generator)
    return model, tokens


def run_test(eqcheck=False, reference=False, prefix=""):
    return gpukit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    gpukit.main(run_test)
