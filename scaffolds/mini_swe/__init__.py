"""mini-swe-agent style scaffold (bash only, fresh process per command)."""
from scaffolds.mini_swe.agent import MiniSweConfig, MiniSweScaffold

__all__ = ["MiniSweConfig", "MiniSweScaffold"]
