"""The terminus scaffold: keystrokes into a tmux session, replies in JSON or XML (after terminus-2)."""
from scaffolds.terminus.agent import TerminusConfig, TerminusScaffold

__all__ = ["TerminusConfig", "TerminusScaffold"]
