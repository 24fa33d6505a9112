"""Mostly broken records: wrong types, out-of-range numbers, unknown keys, missing fields.

Includes empty objects, non-object records and non-identifier keys in error paths.
"""
import random

import perfkit
import schemacheck as sc
from common import as_plain, check_equivalence, load_result, maybe, rand_word, store_result

SCHEMA = {
    "type": "object",
    "required": ["sensor", "reading", "unit", "ts"],
    "properties": {
        "sensor": {"type": "string", "pattern": "^s-[0-9]{3}$"},
        "reading": {"type": "number", "minimum": -50, "maximum": 150},
        "unit": {"enum": ["C", "F", "K"]},
        "ts": {"type": "integer", "minimum": 1_600_000_000, "maximum": 1_800_000_000},
        "battery": {"type": "integer", "minimum": 0, "maximum": 100, "multipleOf": 5},
        "labels": {"type": "array", "maxItems": 3, "items": {"type": "string", "minLength": 2}},
    },
    "additionalProperties": {"type": ["string", "number"], "maxLength": 8},
}

JUNK = [None, True, [], {}, "x", 3.5, -1, "999999999", [1, 2], {"a": 1}]


def make_record(rng):
    if maybe(rng, 0.05):
        return rng.choice([None, [], "record", 42, {}])
    rec = {}
    for key, good in (("sensor", lambda: f"s-{rng.randint(0, 999):03d}"),
                      ("reading", lambda: round(rng.uniform(-60, 160), 2)),
                      ("unit", lambda: rng.choice("CFK")),
                      ("ts", lambda: rng.randint(1_500_000_000, 1_900_000_000)),
                      ("battery", lambda: rng.randint(0, 105)),
                      ("labels", lambda: [rand_word(rng, 1, 5) for _ in range(rng.randint(0, 5))])):
        r = rng.random()
        if r < 0.15:
            continue
        rec[key] = rng.choice(JUNK) if r < 0.45 else good()
    for _ in range(rng.randint(0, 3)):
        rec[rng.choice(["note", "x-trace id", "loc", "fw version", "9lives"])] = rng.choice(
            JUNK + [rand_word(rng, 2, 12), rng.random()])
    return rec


def setup():
    rng = random.Random(33)
    return SCHEMA, [make_record(rng) for _ in range(4000)]


def experiment(data):
    schema, records = data
    return as_plain(sc.validate_batch(records, schema))


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
