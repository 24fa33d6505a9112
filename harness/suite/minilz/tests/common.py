"""Shared helpers for the minilz performance workloads."""
import hashlib
import itertools
import random

import numpy as np

import minilz
from perfkit import load_result, store_result  # noqa: F401  (pickle storage)


def synthetic_text(n_bytes, seed):
    """Prose-like text: Zipf-distributed made-up words grouped into sentences."""
    rng = random.Random(seed)
    syllables = ["ka", "lo", "mi", "ten", "ra", "su", "vel", "on", "ed", "th",
                 "an", "is", "or", "qu", "ex", "bri", "dan", "ul"]
    vocab = ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 4)))
             for _ in range(3000)]
    # cumulative weights computed once (same draws as passing the weights each time)
    cum_weights = list(itertools.accumulate(1.0 / (i + 1) for i in range(len(vocab))))
    parts, size = [], 0
    while size < n_bytes:
        words = rng.choices(vocab, cum_weights=cum_weights, k=rng.randint(5, 18))
        sentence = " ".join(words).capitalize() + (". " if rng.random() < 0.8 else ",\n")
        parts.append(sentence)
        size += len(sentence)
    return "".join(parts).encode("ascii")[:n_bytes]


def run_codec(data, window_bits):
    """Compress, decompress, and summarise the outcome."""
    frame = minilz.compress(data, window_bits)
    restored = minilz.decompress(frame)
    return {
        "frame": frame,
        "frame_len": len(frame),
        "roundtrip": restored == data,
        "input_sha": hashlib.sha256(data).hexdigest(),
        "restored_sha": hashlib.sha256(restored).hexdigest(),
    }


def run_codec_batch(blocks, window_bits):
    """``run_codec`` on each block of a batch, compressed independently."""
    return {"blocks": [run_codec(block, window_bits) for block in blocks]}


def check_equivalence(reference, current):
    if "blocks" in reference:
        assert len(reference["blocks"]) == len(current["blocks"]), (
            f"{len(reference['blocks'])} != {len(current['blocks'])} blocks")
        for ref, cur in zip(reference["blocks"], current["blocks"]):
            _check_block(ref, cur)
    else:
        _check_block(reference, current)


def _check_block(reference, current):
    assert current["roundtrip"] is True, "decompress(compress(x)) != x"
    assert current["restored_sha"] == current["input_sha"]
    assert reference["input_sha"] == current["input_sha"], "workload input changed"
    assert reference["frame_len"] == current["frame_len"], (
        f"compressed size differs: {reference['frame_len']} vs {current['frame_len']}")
    assert reference["frame"] == current["frame"], "compressed bytes differ"
