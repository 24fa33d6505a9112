"""Shared helpers for the schemacheck workloads: record generators and result comparison."""
import random
import string
from perfkit import load_result, store_result  # noqa: F401  (pickle storage)


def as_plain(batch_errors):
    """Turn validate_batch output into plain nested lists of (path, code, message) tuples."""
    return [[(e.path, e.code, e.message) for e in errs] for errs in batch_errors]


def check_equivalence(reference, current):
    assert len(reference) == len(current), f"{len(reference)} vs {len(current)} records"
    for i, (ref, cur) in enumerate(zip(reference, current)):
        assert len(ref) == len(cur), f"record {i}: {len(ref)} vs {len(cur)} errors\n{ref}\n{cur}"
        for a, b in zip(ref, cur):
            assert tuple(a) == tuple(b), f"record {i}: {a} != {b}"


# ------------------------------------------------------------------ generators
def rand_word(rng, lo=3, hi=10, alphabet=string.ascii_lowercase):
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(lo, hi)))


def rand_email(rng, bad=False):
    if bad:
        return rng.choice([rand_word(rng), rand_word(rng) + "@", "@" + rand_word(rng) + ".com",
                           rand_word(rng) + "@" + rand_word(rng)])
    return f"{rand_word(rng)}.{rand_word(rng, 2, 6)}@{rand_word(rng, 4, 8)}.{rng.choice(['com', 'org', 'io', 'de'])}"


def rand_uuid(rng, bad=False):
    h = "".join(rng.choice("0123456789abcdef") for _ in range(32))
    u = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    return u[:-1] + "z" if bad else u


def rand_date(rng, bad=False):
    y, m, d = rng.randint(1950, 2030), rng.randint(1, 12), rng.randint(1, 28)
    if bad:
        m = rng.choice([0, 13, 19])
    return f"{y:04d}-{m:02d}-{d:02d}"


def maybe(rng, p):
    return rng.random() < p
