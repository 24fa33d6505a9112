"""Time validating a batch of customer records against a nested schema."""
import random
import timeit

import schemacheck as sc

SCHEMA = {
    "type": "object",
    "required": ["id", "email", "plan", "addresses"],
    "properties": {
        "id": {"type": "integer", "minimum": 1},
        "email": {"type": "string", "format": "email"},
        "name": {"type": "string", "minLength": 1, "maxLength": 60},
        "plan": {"enum": ["free", "pro", "team"]},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z-]+$"}, "uniqueItems": True},
        "addresses": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["city", "zip"],
                "properties": {
                    "city": {"type": "string"},
                    "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
                    "primary": {"type": "boolean"},
                },
                "additionalProperties": False,
            },
        },
    },
    "additionalProperties": False,
}

rng = random.Random(0)
records = []
for i in range(3000):
    records.append({
        "id": rng.randint(0, 10_000),
        "email": f"user{i}@example.com" if rng.random() < 0.9 else f"user{i}",
        "name": "x" * rng.randint(0, 70),
        "plan": rng.choice(["free", "pro", "team", "gold"]),
        "score": rng.uniform(-0.1, 1.1),
        "tags": [rng.choice(["new", "vip", "churn-risk", "B2B"]) for _ in range(rng.randint(0, 4))],
        "addresses": [{"city": "Springfield", "zip": f"{rng.randint(0, 99999):05d}"}
                      for _ in range(rng.randint(0, 3))],
    })


def workload():
    sc.validate_batch(records, SCHEMA)


print(f"Execution time: {timeit.timeit(workload, number=1):.6f}s")
