"""The seeded request set a service task is measured with.

A task declares the shape of its workload (how many requests, their prompt and output lengths, how they
arrive); a seed turns that shape into concrete requests. The agent develops against one visible seed;
grading draws its requests from seeds drawn afresh for each grading session, which the agent cannot know,
so a server that has the benchmark's prompts answered in advance gains nothing. Everything comes from
`random.Random(seed)`, so a seed gives the same requests on every machine and Python version.

Arrival profiles, as serving benchmarks use them:
- `burst`: every request sent at once (vLLM's `--request-rate inf`);
- `poisson`: exponential gaps at `rate` requests per second (the seed fixes the schedule too);
- `concurrency`: a closed loop keeping `concurrency` requests in flight, the next sent as one ends.
`concurrency` also caps the requests in flight under the other two (0: no cap; vLLM's --max-concurrency).
"""
from __future__ import annotations

import random
import secrets
from dataclasses import dataclass, field
from typing import Any, Literal

Arrival = Literal["burst", "poisson", "concurrency"]
ARRIVALS: tuple[str, ...] = ("burst", "poisson", "concurrency")

# The words prompts are made of. A server's "tokens" are its own business; our CPU tasks count words, and a
# real engine's tokenizer gives a prompt of N words about N-1.3N tokens: lengths are asked for, not promised.
VOCABULARY: tuple[str, ...] = tuple(
    "alpha bravo cedar delta ember fjord garnet harbor indigo juniper kelp lumen maple nectar onyx pebble "
    "quartz raven sierra tundra umber velvet willow xenon yarrow zephyr amber basalt cobalt dune elm flint "
    "glacier heron iris jade kestrel lotus meadow nova orchid prairie quill ridge sable thistle upland "
    "vista wren yucca zinnia anchor beacon canyon drift echo falcon grove haze island jetty knoll lagoon "
    "mesa north orbit pine quiet reef shore tide union valley wave yonder zenith arbor bloom crest dawn"
    .split())


class WorkloadError(ValueError):
    """A workload a task declares that cannot be generated (one line saying what to fix)."""


@dataclass(frozen=True)
class Workload:
    """The shape of a service task's requests (task.yaml's `service.workload`)."""
    requests: int = 32
    prompt_tokens: tuple[int, int] = (16, 64)  # inclusive range, drawn uniformly per request
    output_tokens: tuple[int, int] = (16, 32)
    arrival: Arrival = "burst"
    rate: float = 0.0  # requests per second, for `poisson`
    concurrency: int = 0  # requests in flight: the loop's width for `concurrency`, else a cap (0: none)
    stream: bool = True
    warmup: int = 2  # requests sent first and not measured (their own seed's prompts)
    extra_body: dict[str, Any] = field(default_factory=dict)  # request fields a server wants (ignore_eos ...)

    def __post_init__(self) -> None:
        if self.requests < 1:
            raise WorkloadError(f"workload.requests is {self.requests}: give at least 1")
        for name in ("prompt_tokens", "output_tokens"):
            low, high = getattr(self, name)
            if not 1 <= low <= high:
                raise WorkloadError(f"workload.{name} is [{low}, {high}]: give [min, max] with 1 <= min <= max")
        if self.arrival not in ARRIVALS:
            raise WorkloadError(f"workload.arrival is {self.arrival!r}: use one of {', '.join(ARRIVALS)}")
        if self.arrival == "poisson" and self.rate <= 0:
            raise WorkloadError("workload.arrival is poisson but workload.rate is not positive: give requests/s")
        if self.arrival == "concurrency" and self.concurrency < 1:
            raise WorkloadError("workload.arrival is concurrency but workload.concurrency < 1: give the width")
        if self.concurrency < 0 or self.warmup < 0:
            raise WorkloadError("workload.concurrency and workload.warmup cannot be negative")

    @classmethod
    def from_dict(cls, raw: dict[str, Any] | None) -> "Workload":
        if raw is not None and not isinstance(raw, dict):
            raise WorkloadError(f"workload should be a mapping (requests, prompt_tokens, ...), got {raw!r}")
        raw = dict(raw or {})
        unknown = sorted(set(raw) - set(cls.__dataclass_fields__))
        if unknown:
            raise WorkloadError(f"unknown workload field(s) {', '.join(unknown)}: "
                                f"known are {', '.join(sorted(cls.__dataclass_fields__))}")
        kinds: dict[str, tuple[type | tuple[type, ...], str]] = {
            "requests": (int, "a whole number"), "rate": ((int, float), "a number"),
            "concurrency": (int, "a whole number"), "warmup": (int, "a whole number"),
            "stream": (bool, "true or false"), "extra_body": (dict, "a mapping of request fields"),
            "arrival": (str, "a name")}
        for name, (kind, expected) in kinds.items():
            value = raw.get(name)
            if name in raw and (not isinstance(value, kind) or isinstance(value, bool) and kind is not bool):
                raise WorkloadError(f"workload.{name} should be {expected}, got {value!r}")
        for name in ("prompt_tokens", "output_tokens"):
            if name in raw:
                value = raw[name]
                pair = (value, value) if isinstance(value, int) else tuple(value) if isinstance(value, list) else ()
                if len(pair) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in pair):
                    raise WorkloadError(f"workload.{name} is {value!r}: give one number or [min, max]")
                raw[name] = (int(pair[0]), int(pair[1]))
        return cls(**raw)


@dataclass(frozen=True)
class Request:
    index: int
    prompt: str
    prompt_tokens: int  # words asked for
    max_tokens: int
    at_s: float  # when to send it, from the workload's start (0 for burst and concurrency)


def generate(workload: Workload, seed: int, count: int | None = None) -> list[Request]:
    """The requests seed `seed` gives: the same on every machine. `count` overrides workload.requests."""
    rng = random.Random(f"optrunner-workload-{seed}")  # a str seed is hashed the same everywhere (sha512)
    at = 0.0
    requests = []
    for index in range(workload.requests if count is None else count):
        length = rng.randint(*workload.prompt_tokens)
        words = [rng.choice(VOCABULARY) for _ in range(length)]
        max_tokens = rng.randint(*workload.output_tokens)
        if workload.arrival == "poisson" and index:
            at += rng.expovariate(workload.rate)
        requests.append(Request(index, " ".join(words), length, max_tokens, at))
    return requests


def held_out_seeds(visible: int, rounds: int, secret: int | None = None) -> list[int]:
    """The grading seeds: one per round, none equal to the agent's `visible` seed. They come from `secret`, a
    number the grader draws for each session (and records with the seeds), so no one can compute them from
    the task: an agent that could would know the graded prompts in advance. The same `secret` gives the same
    seeds (a session's states share them; a regrade can repeat them)."""
    rng = random.Random(secrets.randbits(64) if secret is None else secret)
    seeds: list[int] = []
    while len(seeds) < rounds:
        seed = rng.randrange(1, 2**31)
        if seed != visible and seed not in seeds:
            seeds.append(seed)
    return seeds
