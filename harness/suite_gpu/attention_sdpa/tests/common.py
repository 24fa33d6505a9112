"""Shared pieces of the attention_sdpa workloads: what is timed and how results compare."""
import gpukit
import tinylm


def experiment(data):
    model, tokens = data
    return model.next_token_logits(tokens)


def check_equivalence(reference, current):
    gpukit.check_close(reference, current, rtol=1e-3, atol=1e-3)
