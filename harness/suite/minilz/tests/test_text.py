"""Prose-like text with a skewed word distribution, 4 KiB window."""
import perfkit
from common import check_equivalence, load_result, run_codec, store_result, synthetic_text  # noqa: F401


def setup():
    return {"data": synthetic_text(120_000, seed=77), "window_bits": 12}


def experiment(data):
    return run_codec(data["data"], data["window_bits"])


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
