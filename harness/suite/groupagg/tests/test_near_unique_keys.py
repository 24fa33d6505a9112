"""Keys that are almost all distinct (string session tokens): nearly as many groups as rows, per-group overhead dominates."""
import numpy as np

import groupagg as ga
import perfkit
from common import check_equivalence, load_result, store_result, table_to_plain


def setup():
    rng = np.random.default_rng(505)
    n = 54_000
    ids = rng.integers(0, 10 * n, n).astype(np.int64)
    # A few sessions repeat many times.
    ids[rng.integers(0, n, 2_000)] = rng.integers(0, 5, 2_000)
    # Opaque tokens sharing a long prefix, as session ids usually are.
    session = np.char.add("session:eu-west-1:prod:web:2024-", np.char.zfill(ids.astype(str), 8))
    return ga.Table({
        "session": session,
        "clicks": rng.poisson(3.0, n).astype(np.int64),
        "dwell_s": rng.exponential(30.0, n),
    })


def experiment(table):
    out = table.group_by("session").agg(
        clicks=("clicks", "sum"),
        dwell=("dwell_s", "sum"),
        first_dwell=("dwell_s", "min"),
        events=("clicks", "count"),
    )
    return {"by_session": table_to_plain(out)}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
