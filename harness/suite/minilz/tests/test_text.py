"""A batch of prose-like documents with a skewed word distribution, 512-byte window."""
import perfkit
from common import check_equivalence, load_result, run_codec_batch, store_result, synthetic_text  # noqa: F401


def setup():
    docs = [synthetic_text(140_000 + 6_000 * k, seed=77 + k) for k in range(8)]
    return {"docs": docs, "window_bits": 9}


def experiment(data):
    return run_codec_batch(data["docs"], data["window_bits"])


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
