"""Flat user-profile records: formats, patterns, enums and numeric ranges; about 20% invalid."""
import random

import perfkit
import schemacheck as sc
from common import (as_plain, check_equivalence, load_result, maybe, rand_date, rand_email,
                    rand_uuid, rand_word, store_result)

SCHEMA = {
    "title": "user profile",
    "type": "object",
    "required": ["id", "username", "email", "created", "plan"],
    "properties": {
        "id": {"type": "string", "format": "uuid"},
        "username": {"type": "string", "minLength": 3, "maxLength": 16, "pattern": "^[a-z][a-z0-9_]*$"},
        "email": {"type": "string", "format": "email"},
        "created": {"type": "string", "format": "date"},
        "age": {"type": "integer", "minimum": 13, "maximum": 120},
        "plan": {"enum": ["free", "pro", "team", "enterprise"]},
        "score": {"type": "number", "minimum": 0, "maximum": 100},
        "country": {"type": "string", "pattern": "^[A-Z]{2}$"},
        "newsletter": {"type": "boolean"},
        "referrer": {"type": ["string", "null"], "maxLength": 32},
        "last_ip": {"type": "string", "format": "ipv4"},
        "homepage": {"type": "string", "format": "hostname"},
    },
    "additionalProperties": False,
}


def make_record(rng):
    bad = maybe(rng, 0.2)
    rec = {
        "id": rand_uuid(rng, bad and maybe(rng, 0.3)),
        "username": rand_word(rng, 3, 14) if not (bad and maybe(rng, 0.3)) else "9" + rand_word(rng),
        "email": rand_email(rng, bad and maybe(rng, 0.3)),
        "created": rand_date(rng, bad and maybe(rng, 0.2)),
        "plan": rng.choice(["free", "pro", "team", "enterprise"] + (["gold"] if bad else [])),
        "score": round(rng.uniform(0, 100 + (20 if bad else 0)), 3),
        "country": rng.choice(["DE", "US", "FR", "JP", "BR"] + (["usa"] if bad else [])),
        "newsletter": rng.random() < 0.5,
        "referrer": None if maybe(rng, 0.5) else rand_word(rng, 4, 12),
        "last_ip": ".".join(str(rng.randint(0, 255 + (100 if bad else 0))) for _ in range(4)),
        "homepage": f"{rand_word(rng)}.example.{rng.choice(['com', 'net'])}",
    }
    if maybe(rng, 0.7):
        rec["age"] = rng.randint(13, 90) if not bad else rng.choice([5, 150, "31", 40.5])
    if bad and maybe(rng, 0.2):
        del rec[rng.choice(["email", "plan", "created"])]
    if bad and maybe(rng, 0.2):
        rec["nickname"] = rand_word(rng)
    return rec


def setup():
    rng = random.Random(11)
    return SCHEMA, [make_record(rng) for _ in range(3000)]


def experiment(data):
    schema, records = data
    return as_plain(sc.validate_batch(records, schema))


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
