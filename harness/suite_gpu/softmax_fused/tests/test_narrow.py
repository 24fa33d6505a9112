"""Row softmax of 16384 short rows (1024 columns: many small programs)."""
import torch

import gpukit
import perfkit
import softnorm


def setup():
    generator = torch.Generator(device="cuda").manual_seed(12)
    return torch.randn(16384, 1024, device="cuda", generator=generator) * 4


def experiment(x):
    return softnorm.row_softmax(x)


def check_equivalence(reference, current):
    gpukit.check_close(reference, current, rtol=1e-4, atol=1e-6)


def run_test(eqcheck=False, reference=False, prefix=""):
    return gpukit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
