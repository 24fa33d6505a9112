"""Prefill of 32 short prompts (256 tokens each)."""
import torch

import gpukit
import tinylm
from common import TOLERANCE, check_equivalence, experiment, inputs  # noqa: F401  (timed, compared)


def setup():
    model = tinylm.build_model(seed=7, device="cuda")
    generator = torch.Generator(device="cuda").manual_seed(22)
    tokens = torch.randint(0, 8192, (32, 256), device="cuda", generator=generator)
    return model, tokens


def run_test(eqcheck=False, reference=False, prefix=""):
    return gpukit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    gpukit.main(run_test)
