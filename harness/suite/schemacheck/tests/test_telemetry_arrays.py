"""Records dominated by long arrays of scalars (per-element checks), with unique tags."""
import random

import perfkit
import schemacheck as sc
from common import as_plain, check_equivalence, load_result, maybe, rand_word, store_result

SCHEMA = {
    "type": "object",
    "required": ["device", "samples"],
    "properties": {
        "device": {"type": "string", "pattern": "^dev[0-9]+$"},
        "samples": {"type": "array", "minItems": 10,
                    "items": {"type": "number", "minimum": -1000, "maximum": 1000}},
        "flags": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 255,
                                             "multipleOf": 1}},
        "tags": {"type": "array", "uniqueItems": True,
                 "items": {"type": "string", "minLength": 1, "maxLength": 10}},
    },
}


def make_record(rng):
    bad = maybe(rng, 0.15)
    n = rng.randint(5 if bad else 10, 120)
    samples = [round(rng.gauss(0, 300), 3) for _ in range(n)]
    if bad:
        for _ in range(rng.randint(1, 3)):
            samples[rng.randrange(n)] = rng.choice([2000.5, -1500, "nan", None])
    rec = {
        "device": f"dev{rng.randint(0, 500)}",
        "samples": samples,
        "flags": [rng.randint(0, 255 + (10 if bad else 0)) for _ in range(rng.randint(0, 30))],
        "tags": list({rand_word(rng, 1, 8) for _ in range(rng.randint(0, 6))}),
    }
    if bad and maybe(rng, 0.5) and rec["tags"]:
        rec["tags"].append(rec["tags"][0])
    return rec


def setup():
    rng = random.Random(55)
    return SCHEMA, [make_record(rng) for _ in range(900)]


def experiment(data):
    schema, records = data
    return as_plain(sc.validate_batch(records, schema))


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
