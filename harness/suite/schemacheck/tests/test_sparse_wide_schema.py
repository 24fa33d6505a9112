"""A wide schema (120 optional properties of mixed kinds) against sparse records with few fields.

The records arrive as a stream of micro-batches (10-40 records each), and each micro-batch
is validated with its own validate_batch call.
"""
import random

import perfkit
import schemacheck as sc
from common import as_plain, check_equivalence, load_result, maybe, rand_word, store_result


def build_schema(rng):
    props = {}
    for i in range(120):
        kind = i % 6
        if kind == 0:
            props[f"attr_{i}"] = {"type": "string", "maxLength": 20, "pattern": f"^[a-z]{{1,{5 + i % 7}}}$",
                                  "description": f"free-form attribute number {i}"}
        elif kind == 1:
            props[f"attr_{i}"] = {"type": "integer", "minimum": -i, "maximum": 10 * i + 10}
        elif kind == 2:
            props[f"attr_{i}"] = {"type": "number", "exclusiveMaximum": 1.0, "minimum": 0}
        elif kind == 3:
            props[f"attr_{i}"] = {"enum": [f"v{j}" for j in range(8)] + [None, 0]}
        elif kind == 4:
            props[f"attr_{i}"] = {"type": "array", "items": {"type": "integer"}, "maxItems": 4}
        else:
            props[f"attr_{i}"] = {"type": "object", "properties": {"on": {"type": "boolean"},
                                                                   "why": {"type": "string"}},
                                  "required": ["on"]}
    return {"type": "object", "properties": props, "required": ["attr_0"]}


def value_for(rng, i, bad):
    kind = i % 6
    if kind == 0:
        return rand_word(rng, 1, 5) if not bad else rand_word(rng, 8, 25)
    if kind == 1:
        return rng.randint(0, 10 * i) if not bad else -i - 5
    if kind == 2:
        return rng.random() if not bad else 1.0
    if kind == 3:
        return rng.choice([f"v{j}" for j in range(8)] + [None, 0]) if not bad else "v9"
    if kind == 4:
        return [rng.randint(0, 9) for _ in range(rng.randint(0, 4))] if not bad else [1, "2", 3.0]
    return {"on": rng.random() < 0.5} if not bad else {"why": "n/a"}


def make_record(rng):
    rec = {}
    if maybe(rng, 0.9):
        rec["attr_0"] = rand_word(rng, 1, 5)
    for i in rng.sample(range(1, 120), rng.randint(2, 5)):
        rec[f"attr_{i}"] = value_for(rng, i, maybe(rng, 0.1))
    return rec


NUM_RECORDS = 600


def setup():
    rng = random.Random(44)
    records = [make_record(rng) for _ in range(NUM_RECORDS)]
    batches, start = [], 0
    while start < len(records):
        size = rng.randint(10, 40)
        batches.append(records[start:start + size])
        start += size
    return build_schema(rng), batches


def experiment(data):
    schema, batches = data
    out = []
    for batch in batches:
        out.extend(sc.validate_batch(batch, schema))
    return as_plain(out)


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
