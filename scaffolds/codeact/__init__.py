"""CodeAct: OpenHands CodeActAgent (v0.35) as GSO ran it. See agent.py."""
from scaffolds.codeact.agent import CodeActConfig, CodeActScaffold

__all__ = ["CodeActConfig", "CodeActScaffold"]
