"""Per-rollout limits a scaffold checks before every step; also the base of the runner's `budget` schema.

Defaults are GSO's (100 steps, 20 minutes per action); the budget presets in conf/budget set their own.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Limits:
    max_steps: int | None = 100  # in the scaffold's unit: agent actions for codeact (GSO), model calls otherwise
    max_cost_usd: float | None = None
    wall_clock_s: float | None = None
    command_timeout_s: float = 1200.0  # hard cap on one action (GSO: 20 min)
    snapshot_every: int = 10  # steps between diff snapshots; 0 = never
    checkpoint_every: int = 0  # steps between checkpoints an interrupted rollout continues from; 0 = never

    def problems(self) -> list[str]:
        """What is out of range, one phrase per field (empty when the limits are usable)."""
        out = [f"{key} must be positive or null, got {getattr(self, key)}"
               for key in ("max_steps", "wall_clock_s", "max_cost_usd")
               if getattr(self, key) is not None and getattr(self, key) <= 0]
        if self.command_timeout_s <= 0:
            out.append(f"command_timeout_s must be positive, got {self.command_timeout_s}")
        if self.snapshot_every < 0:
            out.append(f"snapshot_every must be 0 (never) or more, got {self.snapshot_every}")
        if self.checkpoint_every < 0:
            out.append(f"checkpoint_every must be 0 (never) or more, got {self.checkpoint_every}")
        return out
