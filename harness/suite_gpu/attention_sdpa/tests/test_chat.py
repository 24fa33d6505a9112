"""Prefill of 32 short prompts (256 tokens each)."""
import torch

import gpukit
import perfkit
import tinylm


def setup():
    model = tinylm.build_model(seed=7, device="cuda")
    generator = torch.Generator(device="cuda").manual_seed(22)
    tokens = torch.randint(0, 8192, (32, 256), device="cuda", generator=generator)
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
