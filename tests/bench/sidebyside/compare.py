"""Step-by-step comparison of two `SideRun`s and the printed table.

A step is one model call on both sides (the agents' own step counts are compared per run). Per step: the
actions executed, their exit codes (where the upstream agent records them: mini-swe-agent does, terminus-2
does not), and the observation the model was shown next (whitespace-normalised). Per run: the number of
steps (model calls), of actions, the agents' own step counts, and the exit reason. Prompts are not
compared: ours are written in our own words by design, and the first messages are not observations.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from tests.bench.sidebyside.sides import SideRun

WIDTH = 60  # characters of each side shown around a difference


@dataclass
class Difference:
    step: int | None  # None: a run-level field
    field: str
    ours: str
    upstream: str

    def line(self) -> str:
        where = "run" if self.step is None else f"step {self.step + 1}"
        return f"  {where:<8} {self.field:<12} ours: {self.ours}\n  {'':<8} {'':<12} upst: {self.upstream}"


@dataclass
class Comparison:
    case: str
    ours: SideRun
    upstream: SideRun
    differences: list[Difference]

    @property
    def steps_compared(self) -> int:
        return max(len(self.ours.steps), len(self.upstream.steps))

    @property
    def differing_steps(self) -> int:
        return len({d.step for d in self.differences if d.step is not None})

    @property
    def wording_only_steps(self) -> int:
        """Differing steps whose every difference is template wording around the same content."""
        steps = {d.step for d in self.differences if d.step is not None}
        return sum(all(d.field == "wording" for d in self.differences if d.step == s) for s in steps)


def around(a: str, b: str, width: int = WIDTH) -> tuple[str, str]:
    """Both texts cut to `width` characters around their first difference (with the length when long)."""
    p = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    start = max(0, p - width // 4)

    def cut(text: str) -> str:
        piece = text[start:start + width]
        prefix = "…" if start else ""
        suffix = "…" if start + width < len(text) else ""
        size = f" [{len(text)} chars]" if len(text) > width else ""
        return f"{prefix}{piece!r}{suffix}{size}" if text else "(none)"

    return cut(a), cut(b)


_MINI_TAGS = re.compile(r"<(returncode|output|output_head|output_tail)>(.*?)</\1>", re.DOTALL)
_ELIDED = re.compile(r"<elided_chars>\s*(\d+)")
_TERMINAL = re.compile(r"(New Terminal Output|Current Terminal Screen):", re.IGNORECASE)
_BRACKETED = re.compile(r"\[[^\[\]]*\]")  # codeact's status lines: working directory, exit code, notes
_EXIT_CODE = re.compile(r"exit code (-?\d+)")
_STILL_RUNNING = re.compile(r"no new output after \d+ seconds|still running", re.IGNORECASE)  # (exit code -1)


def payload(scaffold: str, text: str) -> tuple[str, ...]:
    """What an observation carries besides its template's wording, to tell a wording-only difference (our
    templates are in our own words by design) from one in what the model learns. mini: the return codes,
    outputs (head, tail) and the elided count; terminus: the terminal text, from its header to the last
    shell prompt (the prose after it is template); codeact: a shell result's exit code and its output without
    the bracketed status lines (an editor's answer is template text). () for a message that is template only."""
    if scaffold == "codeact":
        codes = _EXIT_CODE.findall(text) or (["-1"] if _STILL_RUNNING.search(text) else [])
        return (f"exit={codes[-1]}", " ".join(_BRACKETED.sub(" ", text).split())) if codes else ()
    if scaffold == "mini_swe":
        found = tuple(f"{tag}={body.strip()}" for tag, body in _MINI_TAGS.findall(text))
        return found + tuple(f"elided={n}" for n in _ELIDED.findall(text))
    match = _TERMINAL.search(text)
    if match is None:
        return ()
    body = text[match.end():]
    prompt = body.rfind("<container>:")
    if prompt >= 0 and body.find("#", prompt) >= 0:
        body = body[:body.find("#", prompt) + 1]
    return match.group(1).lower(), body.strip()


def compare(case: str, ours: SideRun, upstream: SideRun, scaffold: str = "mini_swe") -> Comparison:
    diffs: list[Difference] = []
    for i in range(max(len(ours.steps), len(upstream.steps))):
        if i >= len(ours.steps) or i >= len(upstream.steps):
            diffs.append(Difference(i, "step", "present" if i < len(ours.steps) else "missing",
                                    "present" if i < len(upstream.steps) else "missing"))
            continue
        a, b = ours.steps[i], upstream.steps[i]
        if a.actions != b.actions:
            diffs.append(Difference(i, "actions", repr(a.actions)[:WIDTH * 2], repr(b.actions)[:WIDTH * 2]))
        if b.exit_codes and a.exit_codes != b.exit_codes:  # only where upstream has exit codes
            diffs.append(Difference(i, "exit codes", str(a.exit_codes), str(b.exit_codes)))
        if a.observation != b.observation:
            pa, pb = payload(scaffold, a.observation), payload(scaffold, b.observation)
            if pa == pb:
                diffs.append(Difference(i, "wording", *around(a.observation, b.observation)))
            else:
                diffs.append(Difference(i, "observation", *around(" | ".join(pa) or a.observation,
                                                                  " | ".join(pb) or b.observation)))
    for name, x, y in (("steps", len(ours.steps), len(upstream.steps)),
                       ("actions", ours.n_actions, upstream.n_actions),
                       ("model calls", ours.model_calls, upstream.model_calls),
                       ("own steps", ours.own_steps, upstream.own_steps),
                       ("exit reason", ours.exit_reason, upstream.exit_reason)):
        if x != y:
            diffs.append(Difference(None, name, str(x), str(y)))
    return Comparison(case, ours, upstream, diffs)


def table(comparisons: list[Comparison]) -> str:
    """The summary table, then every difference of every case, one entry each."""
    rows = [("case", "upstream", "steps compared", "differing steps", "of them wording only", "calls o/u",
             "own steps o/u", "actions o/u", "exit o/u")]
    for c in comparisons:
        rows.append((c.case, c.upstream.label, str(c.steps_compared), str(c.differing_steps), str(c.wording_only_steps),
                     f"{len(c.ours.steps)}/{len(c.upstream.steps)}", f"{c.ours.own_steps}/{c.upstream.own_steps}",
                     f"{c.ours.n_actions}/{c.upstream.n_actions}",
                     f"{c.ours.exit_reason}/{c.upstream.exit_reason}"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines += ["", "observation: what the model was shown differs in content (shown: the command output part);",
              "wording: only the template text around the same command output differs (ours are in our own words)"]
    for c in comparisons:
        lines.append("")
        run_level = [d for d in c.differences if d.step is None]
        heading = f"{c.case}: {c.differing_steps} of {c.steps_compared} steps differ"
        lines.append(heading + (f", {len(run_level)} run-level difference(s)" if run_level else ""))
        if c.upstream.detail.get("error"):
            lines.append(f"  upstream raised: {c.upstream.detail['error'][:200]}")
        lines += [d.line() for d in c.differences] or ["  (identical)"]
    return "\n".join(lines)
