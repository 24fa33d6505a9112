"""HTML pages: a run's report.html and one page per rollout's trajectory (run_page), an aggregate's
aggregate.html (aggregate_page). Static files that open from disk: styles, scripts and plots inline."""
from runner.pages.aggregate_page import write_aggregate_page
from runner.pages.run_page import write_run_pages

__all__ = ["write_aggregate_page", "write_run_pages"]
