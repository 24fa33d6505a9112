"""Highly repetitive server log lines with a 64 KiB window (the largest allowed)."""
import random

import perfkit
from common import check_equivalence, load_result, run_codec, store_result  # noqa: F401


def setup():
    rng = random.Random(31)
    levels = ["INFO"] * 8 + ["WARN"] * 3 + ["ERROR"]
    paths = ["/api/v1/users", "/api/v1/orders", "/static/app.js", "/health",
             "/api/v2/search", "/login", "/api/v1/orders/items"]
    lines, t = [], 1_700_000_000
    size = 0
    while size < 60_000:
        t += rng.randint(0, 3)
        line = (f"{t} {rng.choice(levels):5s} req={rng.randrange(16**6):06x} "
                f"GET {rng.choice(paths)} status={rng.choice([200, 200, 200, 304, 404, 500])} "
                f"ms={rng.expovariate(1 / 40):.1f}\n")
        lines.append(line)
        size += len(line)
    return {"data": "".join(lines).encode("ascii"), "window_bits": 16}


def experiment(data):
    return run_codec(data["data"], data["window_bits"])


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
