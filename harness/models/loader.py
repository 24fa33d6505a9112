"""Importing litellm: once, lazily, quietly, with the local price map.

litellm's import costs ~3 s; `--help` and config errors must not pay for it. Without
LITELLM_LOCAL_MODEL_COST_MAP every import tries to download the price map and stalls offline.
"""
from __future__ import annotations

import logging
import os
import threading
from typing import Any

# Must be set before litellm is first imported.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
_lock = threading.Lock()


def litellm_module() -> Any:
    """litellm, imported and configured on first use."""
    import litellm

    with _lock:
        if not getattr(litellm, "_optrunner_ready", False):
            litellm.suppress_debug_info = True
            litellm.drop_params = True  # a provider that lacks `seed` etc. should not fail the call
            logging.getLogger("LiteLLM").setLevel(logging.ERROR)
            litellm._optrunner_ready = True
    return litellm
