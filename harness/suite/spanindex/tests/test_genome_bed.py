"""Per-chromosome counts (skewed chromosome sizes, one unknown name) for 9500 queries."""
import numpy as np

import perfkit
import spanindex
from common import check_equivalence, load_result, random_intervals, store_result


def setup():
    rng = np.random.default_rng(5)
    chrom_names = ["chr1", "chr2", "chr3", "chr10", "chrX", "chrM"]
    weights = np.array([0.45, 0.2, 0.15, 0.1, 0.08, 0.02])
    n = 350_000
    chroms = rng.choice(chrom_names, size=n, p=weights)
    starts, ends = random_intervals(rng, n, 0, 20_000_000, 800)
    small = chroms == "chrM"
    starts[small] %= 16_000
    ends[small] = starts[small] + 30
    lines = [f"{c}\t{s}\t{e + 1}\tpeak{i}" for i, (c, s, e) in
             enumerate(zip(chroms[:2000], starts[:2000], ends[:2000]))]
    g = spanindex.GenomeIndex.from_bed(["track name=peaks"] + lines)
    g.add_many(chroms[2000:], starts[2000:], ends[2000:])
    nq = 9500
    q_chroms = rng.choice(chrom_names + ["chrUn"], size=nq)
    q_starts = rng.integers(0, 20_000_000, size=nq)
    q_starts[q_chroms == "chrM"] %= 16_000
    q_ends = q_starts + rng.integers(0, 50_000, size=nq)
    return {"genome": g, "chroms": q_chroms, "qs": q_starts, "qe": q_ends}


def experiment(data):
    counts = data["genome"].count_overlaps(data["chroms"], data["qs"], data["qe"])
    return {"counts": counts}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
