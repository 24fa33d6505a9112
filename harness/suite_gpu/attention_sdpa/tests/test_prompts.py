"""Prefill of 8 prompts of 1024 tokens."""
import torch

import gpukit
import perfkit
import tinylm


def setup():
    model = tinylm.build_model(seed=7, device="cuda")
    generator = torch.Generator(device="cuda").manual_seed(21)
    tokens = torch.randint(0, 8192, (8, 1024), device="cuda", generator=generator)
    return model, tokens


def experiment(data):
    model, tokens = data
    return model.next_token_logits(tokens)


def check_equivalence(reference, current):
    gpukit.check_close(reference, current, rtol=1e-3, atol=1e-3)


def run_test(eqcheck=False, reference=False, prefix=""):
    return gpukit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
