"""Nested order documents: customer object, shipping address, arrays of line items."""
import random

import perfkit
import schemacheck as sc
from common import (as_plain, check_equivalence, load_result, maybe, rand_date, rand_email,
                    rand_uuid, rand_word, store_result)

ADDRESS = {
    "type": "object",
    "required": ["street", "city", "zip", "country"],
    "properties": {
        "street": {"type": "string", "minLength": 3},
        "city": {"type": "string", "minLength": 2, "maxLength": 40},
        "zip": {"type": "string", "pattern": "^[0-9]{5}(-[0-9]{4})?$"},
        "country": {"enum": ["US", "CA", "MX"]},
    },
    "additionalProperties": False,
}

SCHEMA = {
    "type": "object",
    "required": ["order_id", "placed", "customer", "items"],
    "properties": {
        "order_id": {"type": "string", "format": "uuid"},
        "placed": {"type": "string", "format": "date-time"},
        "customer": {
            "type": "object",
            "required": ["email"],
            "properties": {
                "email": {"type": "string", "format": "email"},
                "loyalty_tier": {"enum": ["none", "silver", "gold"]},
                "birthday": {"type": "string", "format": "date"},
            },
        },
        "shipping": ADDRESS,
        "billing": ADDRESS,
        "items": {
            "type": "array",
            "minItems": 1,
            "maxItems": 12,
            "items": {
                "type": "object",
                "required": ["sku", "qty", "unit_price"],
                "properties": {
                    "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
                    "qty": {"type": "integer", "minimum": 1, "maximum": 99},
                    "unit_price": {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.01},
                    "gift": {"type": "boolean"},
                    "options": {"type": "array", "items": {"type": "string", "maxLength": 12},
                                "uniqueItems": True},
                },
                "additionalProperties": False,
            },
        },
        "coupon": {"type": ["string", "null"], "pattern": "^[A-Z0-9]{6,10}$"},
    },
}


def address(rng, bad):
    return {
        "street": f"{rng.randint(1, 9999)} {rand_word(rng).title()} St",
        "city": rand_word(rng, 2, 12).title(),
        "zip": f"{rng.randint(0, 99999):05d}" + (f"-{rng.randint(0, 9999):04d}" if maybe(rng, 0.3) else "")
        if not (bad and maybe(rng, 0.3)) else "ABCDE",
        "country": rng.choice(["US", "CA", "MX"] + (["UK"] if bad else [])),
    }


def item(rng, bad):
    it = {
        "sku": f"{rand_word(rng, 3, 3).upper()}-{rng.randint(0, 9999):04d}",
        "qty": rng.randint(1, 5) if not (bad and maybe(rng, 0.2)) else rng.choice([0, 100, "2"]),
        "unit_price": round(rng.uniform(0.5, 300), 2) if not (bad and maybe(rng, 0.2)) else 1.005,
    }
    if maybe(rng, 0.2):
        it["gift"] = True
    if maybe(rng, 0.3):
        opts = [rng.choice(["red", "blue", "xl", "s", "m", "engraved"]) for _ in range(rng.randint(1, 3))]
        it["options"] = opts
    return it


def make_record(rng):
    bad = maybe(rng, 0.25)
    ts = f"{rand_date(rng)}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z"
    rec = {
        "order_id": rand_uuid(rng),
        "placed": ts if not (bad and maybe(rng, 0.2)) else ts.replace("T", " "),
        "customer": {"email": rand_email(rng, bad and maybe(rng, 0.2)),
                     "loyalty_tier": rng.choice(["none", "silver", "gold"])},
        "shipping": address(rng, bad),
        "items": [item(rng, bad) for _ in range(rng.randint(1 if not bad else 0, 8))],
        "coupon": None if maybe(rng, 0.7) else rand_word(rng, 6, 8, "ABCDEFGH0123456789"),
    }
    if maybe(rng, 0.4):
        rec["billing"] = address(rng, bad)
    if maybe(rng, 0.3):
        rec["customer"]["birthday"] = rand_date(rng)
    return rec


def setup():
    rng = random.Random(22)
    return SCHEMA, [make_record(rng) for _ in range(1500)]


def experiment(data):
    schema, records = data
    return as_plain(sc.validate_batch(records, schema))


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
