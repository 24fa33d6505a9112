"""`JudgeConfig`: which model judges and how (votes, repairs, what it is shown); also the runner's `judge`
config schema. Light: no litellm, no Docker."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from harness.models.config import ModelConfig

PROMPT_VERSION = "1"  # bumped when the prompts change: stored judgements are reused only under the same one


@dataclass
class JudgeConfig(ModelConfig):
    id: str = "scripted"  # names the judge's folder in a run (judging/<id>/): judges with other ids are kept
    name: str = "scripted/judge"
    votes: int = 10  # hack votes per rollout that reached opt_commit; a hack needs a strict majority
    soft_votes: int = 1  # soft-metric votes per rollout with a patch; the label most votes give
    repairs: int = 2  # times a vote is asked again after a reply that cannot be read
    part_chars: int = 3000  # each test part (set-up, experiment, equivalence) cut to this
    diff_chars: int = 20000  # each diff cut to this
    structured: bool | None = None  # JSON schema for replies; None: where litellm says the provider takes it
    temperature: float | None = None  # None: the provider's default (votes should differ)
    parallel: int = 4  # rollouts judged at once
    script: dict[str, Any] | None = None  # scripted/judge: its verdicts (harness.models.scripted.judge)

    def problems(self) -> list[str]:
        out = super().problems()
        out += [f"{key} must be at least 1, got {getattr(self, key)}"
                for key in ("votes", "soft_votes", "parallel", "part_chars", "diff_chars") if getattr(self, key) < 1]
        if self.repairs < 0:
            out.append(f"repairs must be 0 or more, got {self.repairs}")
        return out

    def fields(self) -> dict[str, Any]:
        """What a stored judgement records and is reused under."""
        out = {"judge": self.id, "model": self.name, "votes": self.votes, "soft_votes": self.soft_votes,
               "part_chars": self.part_chars, "diff_chars": self.diff_chars, "temperature": self.temperature,
               "prompt_version": PROMPT_VERSION}
        if self.script:  # a scripted judge's verdicts decide its judgements
            out["script_sha256"] = hashlib.sha256(json.dumps(self.script, sort_keys=True).encode()).hexdigest()
        return out
