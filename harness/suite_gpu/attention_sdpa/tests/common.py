"""Shared pieces of the attention_sdpa workloads: what is timed and how results compare.

Each rep prefills prompts of its own (inputs: new tokens of the same shape, seeded by gpukit; token ids
have nothing for gpukit.perturb to scale) and its logits are checked against the reference run's for
the same prompts, within TOLERANCE; the last rep's are also compared element by element."""
import torch

import gpukit

TOLERANCE = {"rtol": 1e-3, "atol": 1e-3}


def inputs(data, seed):
    model, tokens = data
    generator = torch.Generator(device=tokens.device).manual_seed(seed)
    fresh = torch.randint(0, model.embed.num_embeddings, tuple(tokens.shape), device=tokens.device,
                          generator=generator)
    return model, fresh


def experiment(data):
    model, tokens = data
    return model.next_token_logits(tokens)


def check_equivalence(reference, current):
    gpukit.check_close(reference, current, **TOLERANCE)
