"""Metrics as pure functions: numbers in, numbers out. No I/O, no Docker.

verdicts.py    speedups, gm/hm, GSO's opt_base and Opt_p, AutoLab's log-stretch score
aggregates.py  Opt@K (unbiased and GSO's first-K), Avg@k, Best@k, Dominance
summary.py     the one summary of a set of rollouts used by every report
judging.py     an LLM judge's numbers: GSO's hack vote, hack-adjusted Opt@K, ISO-Bench's quadrants, agreement
bootstrap.py   percentile bootstrap intervals for Opt@K, Avg@k, Best@k and paired comparisons of systems
               (numpy: imported by its own name, harness.metrics.bootstrap, never from here)

Definitions follow GSO and AutoLab exactly, so numbers stay comparable with the papers.
"""
from harness.metrics.aggregates import (avg_at_k, best_at_k, dominance, expected_max_of_k, opt_at_k, opt_at_k_first,
                                        suite_opt_at_k)
from harness.metrics.verdicts import (DEFAULT_P, GSO_MIN_SPEEDUP, MIN_OPT_SPEEDUP, OptStats, cv, gm, gso_round, hm,
                                      log_stretch_score, mean, opt_base, opt_base_from, opt_p, opt_p_from, opt_stats,
                                      opt_stats_from, speedups)

__all__ = ["DEFAULT_P", "GSO_MIN_SPEEDUP", "MIN_OPT_SPEEDUP", "OptStats", "avg_at_k", "best_at_k", "cv", "dominance",
           "expected_max_of_k", "gm", "gso_round", "hm", "log_stretch_score", "mean", "opt_at_k", "opt_at_k_first",
           "opt_base", "opt_base_from", "opt_p", "opt_p_from", "opt_stats", "opt_stats_from", "speedups",
           "suite_opt_at_k"]

