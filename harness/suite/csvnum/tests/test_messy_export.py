"""A messy spreadsheet export: ';' separator, CRLF, comments, blank lines, ragged rows,
scientific notation, unit suffixes and padding."""
import numpy as np

import csvnum
import perfkit
from common import check_equivalence, load_result, store_result  # noqa: F401


def setup():
    rng = np.random.default_rng(77)
    lines = ["# exported by LabSuite 4.2", "time;temp;pressure;flow;voltage;note", ""]
    for i in range(14_000):
        r = rng.random()
        if r < 0.02:
            lines.append("# calibration checkpoint")
            continue
        if r < 0.04:
            lines.append("")
            continue
        fields = [
            f"{i * 0.25:.2f}",
            f"{rng.normal(21.5, 0.8):.3f}",
            f"{rng.lognormal(11.5, 0.1):.4e}",
            f" {rng.normal(3.2, 1.1):.3f}ml ",
            f"{rng.uniform(-5, 5):+.4f}",
            rng.choice(["ok", "", "12", "NA"]),
        ]
        if rng.random() < 0.05:
            fields[rng.integers(1, 5)] = rng.choice(["", "n/a", "-", "ERR"])
        if rng.random() < 0.03:
            fields = fields[: rng.integers(1, 5)]  # ragged row
        lines.append(";".join(fields))
    return {"text": "\r\n".join(lines) + "\r\n"}


def experiment(data):
    matrix = csvnum.parse(data["text"], delimiter=";", header=True)
    return {"matrix": matrix, "header": csvnum.parse_header(data["text"], delimiter=";")}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
