"""A small pipeline: filter, group by a negative/positive integer key, then sort the summary.

Also groups an empty selection and a single-row table (edge cases).
"""
import numpy as np

import groupagg as ga
import perfkit
from common import check_equivalence, load_result, store_result, table_to_plain


def setup():
    rng = np.random.default_rng(404)
    n = 600_000
    return ga.Table({
        "account": rng.integers(-500, 500, n).astype(np.int64),
        "amount": rng.normal(0.0, 250.0, n),
        "fee_cents": rng.integers(0, 300, n).astype(np.int64),
        "channel": rng.choice(np.array(["web", "app", "branch", "phone"]), n, p=[0.5, 0.3, 0.15, 0.05]),
    })


def experiment(table):
    debits = table.filter(table["amount"] < 0)
    summary = debits.group_by("account").agg(
        spent=("amount", "sum"),
        biggest=("amount", "min"),
        fees=("fee_cents", "sum"),
        max_fee=("fee_cents", "max"),
    ).sort_by("spent")
    nothing = table.filter(table["amount"] > 1e9).group_by(["channel", "account"]).agg(
        total=("amount", "sum"), n=("fee_cents", "count"))
    single = table.head(1).group_by("channel").agg(total=("amount", "mean"))
    return {
        "debits": table_to_plain(summary),
        "empty": table_to_plain(nothing),
        "single": table_to_plain(single),
    }


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
