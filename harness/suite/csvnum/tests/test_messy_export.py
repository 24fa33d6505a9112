"""A batch of messy spreadsheet exports: ';' separator, CRLF, comments, blank lines,
ragged rows, scientific notation, unit suffixes and padding."""
import numpy as np

import csvnum
import perfkit
from common import check_equivalence, load_result, store_result  # noqa: F401

NOTES = ["ok", "", "12", "NA"]
BAD = ["", "n/a", "-", "ERR"]


def make_export(rng, n):
    """One export of ``n`` lines after the preamble (random numbers drawn in bulk)."""
    kind = rng.random(n)
    temp = rng.normal(21.5, 0.8, n)
    pressure = rng.lognormal(11.5, 0.1, n)
    flow = rng.normal(3.2, 1.1, n)
    volt = rng.uniform(-5, 5, n)
    note = rng.integers(0, len(NOTES), n)
    bad = rng.random(n) < 0.05
    bad_col = rng.integers(1, 5, n)
    bad_tok = rng.integers(0, len(BAD), n)
    ragged = rng.random(n) < 0.03
    keep = rng.integers(1, 5, n)
    lines = ["# exported by LabSuite 4.2", "time;temp;pressure;flow;voltage;note", ""]
    for i in range(n):
        if kind[i] < 0.02:
            lines.append("# calibration checkpoint")
            continue
        if kind[i] < 0.04:
            lines.append("")
            continue
        fields = [
            f"{i * 0.25:.2f}",
            f"{temp[i]:.3f}",
            f"{pressure[i]:.4e}",
            f" {flow[i]:.3f}ml ",
            f"{volt[i]:+.4f}",
            NOTES[note[i]],
        ]
        if bad[i]:
            fields[bad_col[i]] = BAD[bad_tok[i]]
        if ragged[i]:
            fields = fields[: keep[i]]
        lines.append(";".join(fields))
    return "\r\n".join(lines) + "\r\n"


def setup():
    rng = np.random.default_rng(77)
    return {"texts": [make_export(rng, int(n)) for n in rng.integers(2_700, 3_400, size=28)]}


def experiment(data):
    matrices, headers = [], []
    for text in data["texts"]:
        matrices.append(csvnum.parse(text, delimiter=";", header=True))
        headers.append(csvnum.parse_header(text, delimiter=";"))
    return {"matrices": matrices, "headers": headers}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
