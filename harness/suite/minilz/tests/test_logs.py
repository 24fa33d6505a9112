"""Highly repetitive server log lines shipped in ~6 KB batches, each compressed on its own
with a 64 KiB window (the largest allowed)."""
import random

import perfkit
from common import check_equivalence, load_result, run_codec_batch, store_result  # noqa: F401


def setup():
    rng = random.Random(31)
    levels = ["INFO"] * 8 + ["WARN"] * 3 + ["ERROR"]
    paths = ["/api/v1/users", "/api/v1/orders", "/static/app.js", "/health",
             "/api/v2/search", "/login", "/api/v1/orders/items"]
    batches, t = [], 1_700_000_000
    for _ in range(180):
        lines = []
        for _ in range(rng.randint(60, 80)):
            t += rng.randint(0, 3)
            lines.append(
                f"{t} {rng.choice(levels):5s} req={rng.randrange(16**6):06x} "
                f"GET {rng.choice(paths)} status={rng.choice([200, 200, 200, 304, 404, 500])} "
                f"ms={rng.expovariate(1 / 40):.1f}\n")
        batches.append("".join(lines).encode("ascii"))
    return {"batches": batches, "window_bits": 16}


def experiment(data):
    return run_codec_batch(data["batches"], data["window_bits"])


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
