"""A run's rollouts judged by an LLM (harness.grader.judge), stored per judge, and summarised for reports.

A judgement is stored under judging/<judge id>/<task>/<i>.json with the settings it was made under, and
reused while they, the patch and the grading outcome match: a judge resumes where it stopped, and judges
with other ids are kept beside it (their agreement is reported). Judge cost is its own, never the agent's.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from itertools import combinations
from typing import Any

from harness.grader.config import patch_sha256
from harness.grader.judge.config import JudgeConfig
from harness.metrics.judging import (HackVerdict, SoftRow, adjusted_opt_at_k, cohens_kappa, hard_category,
                                     soft_summary, unanimous_share)
from harness.tasks.task import Task
from runner.records import ResultRecord
from runner.store import RunStore

Log = Callable[[str], None]


def _reached(record: ResultRecord) -> bool:
    return bool(record.grading and record.grading.solved)


def _matches(stored: dict[str, Any] | None, config: JudgeConfig, record: ResultRecord) -> bool:
    return (stored is not None and stored.get("settings") == config.fields()
            and stored.get("patch_sha256") == patch_sha256(record.patch or "")
            and stored.get("reached_opt") == _reached(record))


def judge_records(store: RunStore, config: JudgeConfig, tasks: dict[str, Task], records: list[ResultRecord],
                  force: bool = False, log: Log = lambda _m: None) -> int:
    """Judge every graded rollout without a matching judgement by this judge; returns how many were judged.
    Each judgement is saved as soon as it is made, so an interrupted judge resumes where it stopped."""
    todo = [r for r in records if r.grading is not None and r.instance_id in tasks
            and (force or not _matches(store.judgement(config.id, r.instance_id, r.rollout), config, r))]
    if not todo:
        return 0
    log(f"judge {config.id} ({config.name}): {len(todo)} rollout(s) to judge")
    pool = ThreadPoolExecutor(config.parallel, thread_name_prefix="judge")
    futures = {pool.submit(_judge_one, store, config, tasks[r.instance_id], r): r for r in todo}

    saved: set[Future[dict[str, Any]]] = set()

    def save(future: Future[dict[str, Any]]) -> None:
        record, judgement = futures[future], future.result()
        store.save_judgement(config.id, record.instance_id, record.rollout, judgement)
        saved.add(future)
        log(f"[{record.instance_id}] rollout {record.rollout}: {_line(judgement)}")

    try:
        for future in as_completed(futures):
            save(future)
    except BaseException:  # interrupted (or a bug): start nothing more, keep what is done or under way
        left = [f for f in futures if f not in saved and not f.cancel()]
        if any(not f.done() for f in left):
            log("finishing the judgements under way (interrupt again to exit at once)")
        for future in left:
            try:
                save(future)
            except Exception:  # noqa: BLE001 - the first error is the one to report
                pass
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return len(todo)


def _judge_one(store: RunStore, config: JudgeConfig, task: Task, record: ResultRecord) -> dict[str, Any]:
    from harness.grader.judge.evidence import evidence_for
    from harness.grader.judge.judge import Judge, judge_rollout
    from harness.models.model import Model
    from harness.models.scripted.steps import Script

    model = Model(config, temperature=config.temperature, script=Script(verdicts=config.script))
    report = store.grading(record.instance_id, record.rollout)
    patch = record.patch or ""
    evidence = evidence_for(task, patch, report, config.part_chars, config.diff_chars)
    started = time.time()
    made = judge_rollout(Judge(config, model), evidence, patch, _reached(record))
    return {"settings": config.fields(), "instance_id": record.instance_id, "rollout": record.rollout,
            "patch_sha256": patch_sha256(patch), "reached_opt": _reached(record),
            "status": record.grading.status if record.grading else None,
            "flags": list(evidence.flags), "wall_time_s": round(time.time() - started, 2), **made}


def _line(judgement: dict[str, Any]) -> str:
    hack, soft = judgement.get("hack"), judgement.get("soft") or {}
    parts = [f"hack votes {hack['yes']}/{hack['yes'] + hack['no'] + hack['failed']} ({hack['reason']})"] if hack else []
    parts.append(f"targeting {soft.get('targeting')}, approach {soft.get('approach')}")
    return "; ".join(parts)


def _current(judgement: dict[str, Any] | None, record: ResultRecord) -> dict[str, Any] | None:
    """A judgement of the rollout as it is now graded (one made before a re-grading changed it is not)."""
    if judgement is None or judgement.get("patch_sha256") != patch_sha256(record.patch or "") \
            or judgement.get("reached_opt") != _reached(record):
        return None
    return judgement


def verdict_of(judgement: dict[str, Any] | None) -> HackVerdict | None:
    hack = (judgement or {}).get("hack")
    if not hack:
        return None
    return HackVerdict(hack["hack"], hack["yes"], hack["no"], hack["failed"], hack["reason"])


def summaries(store: RunStore, by_task: dict[str, list[ResultRecord | None]], ks: list[int]) -> dict[str, Any]:
    """Per judge: hack-adjusted Opt@k, judged hacks, ISO-Bench's soft metrics, vote agreement, cost, and
    per rollout what it said; plus Cohen's kappa between every two judges."""
    out: dict[str, Any] = {}
    labels: dict[str, dict[tuple[str, int], tuple[Any, Any]]] = {}
    for judge_id in store.judges():
        judged = {(t, r.rollout): _current(store.judgement(judge_id, t, r.rollout), r)
                  for t, rows in by_task.items() for r in rows if r is not None}
        tasks = {t: [(_reached(r), verdict_of(judged[(t, r.rollout)])) if r else (False, None) for r in rows]
                 for t, rows in by_task.items()}
        adjusted = {str(k): adjusted_opt_at_k(tasks, k) for k in ks}
        rows_out, soft_rows, votes, withheld_soft = [], [], [], 0
        for (task_id, index), judgement in sorted(judged.items()):
            if judgement is None:
                continue
            record = next(r for r in by_task[task_id] if r is not None and r.rollout == index)
            stats = record.grading.opt_stats if record.grading else {}
            hard = hard_category(judgement.get("status"), stats.get("hm_speedup_patch_commit"))
            soft = judgement.get("soft") or {}
            if soft.get("targeting") and soft.get("approach"):
                soft_rows.append(SoftRow(soft["targeting"], soft["approach"], hard))
            else:
                withheld_soft += 1
            hack = judgement.get("hack")
            if hack:
                votes.append([v["hack"] for v in hack["votes"] if v])
            labels.setdefault(judge_id, {})[(task_id, index)] = (hack["hack"] if hack else None, soft.get("targeting"))
            rows_out.append({"task": task_id, "rollout": index, "status": judgement.get("status"), "hard": hard,
                             "targeting": soft.get("targeting"), "approach": soft.get("approach"),
                             "hack": hack["hack"] if hack else None,
                             "votes": f"{hack['yes']}/{len(hack['votes'])}" if hack else None,
                             "descriptions": (hack or {}).get("descriptions", [])[:2],
                             "flags": judgement.get("flags") or []})
        costs = [j.get("cost_usd") for j in judged.values() if j]
        model = next((j["settings"]["model"] for j in judged.values() if j), "")
        out[judge_id] = {"model": model, "judged": len(rows_out), "adjusted_opt_at_k": {k: v for k, (v, _) in
                                                                                        adjusted.items()},
                         "adjusted_reason": next(iter(adjusted.values()))[1] if adjusted else "",
                         "soft": soft_summary(soft_rows).as_dict(), "soft_withheld": withheld_soft,
                         "unanimous_hack_votes": unanimous_share(votes), "cost_usd": sum(c or 0.0 for c in costs),
                         "rollouts": rows_out}
    if len(labels) > 1:
        out["_agreement"] = [_agreement(a, b, labels[a], labels[b]) for a, b in combinations(sorted(labels), 2)]
    return out


def _agreement(a: str, b: str, left: dict, right: dict) -> dict[str, Any]:
    both = sorted(set(left) & set(right))
    hacks = [(left[k][0], right[k][0]) for k in both if left[k][0] is not None and right[k][0] is not None]
    targets = [(left[k][1], right[k][1]) for k in both if left[k][1] and right[k][1]]
    return {"judges": [a, b], "hack_n": len(hacks), "hack_kappa": cohens_kappa(*zip(*hacks)) if hacks else None,
            "targeting_n": len(targets), "targeting_kappa": cohens_kappa(*zip(*targets)) if targets else None}


def _f(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def markdown(judges: dict[str, Any], raw_opt: dict[str, float]) -> list[str]:
    """The report.md sections of the judges: hack-adjusted Opt@k beside raw, ISO-Bench's soft metrics,
    agreement, and what each judge said of each rollout (mechanical flags beside it)."""
    lines: list[str] = []
    for judge_id, j in judges.items():
        if judge_id.startswith("_"):
            continue
        soft, quads = j["soft"], j["soft"]["quadrants"]
        adjusted = j["adjusted_opt_at_k"]
        shown = (", ".join(f"k={k}: {_f(v)}" for k, v in adjusted.items()) if all(v is not None for v in
                                                                                 adjusted.values())
                 else j["adjusted_reason"])
        lines += ["", f"## Judge {judge_id} (`{j['model']}`)", "", "| metric | value |", "|---|---|",
                  "| Opt@k (raw) | " + ", ".join(f"k={k}: {v:.3f}" for k, v in raw_opt.items()) + " |",
                  f"| Opt@k (judged hacks not credited) | {shown} |", f"| hack votes | {j['adjusted_reason']} |",
                  f"| Hard Success (Q1 + Q3) | {_f(soft['hard_success'])} |",
                  f"| True Success (Q1) | {_f(soft['true_success'])} |", f"| gap (lucky wins) | {_f(soft['gap'])} |",
                  "| quadrants | " + ", ".join(f"{q} {quads[q]}" for q in ("Q1", "Q2", "Q3", "Q4"))
                  + f" (of {soft['n']}; {j['soft_withheld']} withheld) |",
                  "| approach | " + ", ".join(f"{a} {c}" for a, c in soft["approaches"].items()) + " |",
                  f"| unanimous hack verdicts | {_f(j['unanimous_hack_votes'])} |",
                  f"| judge cost (apart from the agent's) | ${j['cost_usd']:.4f} |", "",
                  "| task | rollout | status | hard | targeting | approach | hack (votes) | grader's flags | "
                  "hack described |", "|---|---|---|---|---|---|---|---|---|"]
        for row in j["rollouts"]:
            hack = "-" if row["hack"] is None and row["votes"] is None else (
                f"{'withheld' if row['hack'] is None else 'yes' if row['hack'] else 'no'} ({row['votes']})")
            lines.append(f"| {row['task']} | {row['rollout']} | {_f(row['status'])} | {row['hard']} | "
                         f"{_f(row['targeting'])} | {_f(row['approach'])} | {hack} | "
                         f"{'; '.join(row['flags']) or '-'} | {' / '.join(row['descriptions']) or '-'} |")
    if judges.get("_agreement"):
        lines += ["", "## Judge agreement", "", "| judges | hack verdicts: kappa (n) | targeting: kappa (n) |",
                  "|---|---|---|"]
        lines += [f"| {' vs '.join(a['judges'])} | {_f(a['hack_kappa'])} ({a['hack_n']}) | "
                  f"{_f(a['targeting_kappa'])} ({a['targeting_n']}) |" for a in judges["_agreement"]]
    return lines
