"""`python -m kwrl.grading.verify`: the grader a task's `tests/test.sh` runs after the agent.

    python -m kwrl.grading.verify --tests /tests --initial /kwrl/initial/world \
        --initial /kwrl/initial/overlay --final / --answer /logs/agent/final_answer.txt \
        --out /logs/verifier

Inputs (docs/contracts.md): `verifiers.json` in --tests; the task text from `--instruction`, else
`<tests>/instruction.md` or `<tests>/../instruction.md` when present (it is shown to the judge); the initial state as layered roots
(later wins; a missing layer is skipped); the final state's root; the final answer file (missing =
no answer). The judge comes from `--judge` or env `KWRL_JUDGE` (a spec, `kwrl.grading.judges`), its
settings from `KWRL_JUDGE_<FIELD>`, its cache from `KWRL_JUDGE_CACHE`; in a trial, harbor's verifier
env carries them (`judges.judge_env`).

Outputs in --out: `changes.tar.gz` first (so a trial whose grading fails can still be regraded),
then `grades.json` and `reward.json`, and `grader_phase.txt` throughout (`reading`, `judging`,
`done`). Whatever the agent left behind, a reward is written: reading its outputs runs under the
grading budget (`kwrl.grading.budget`: files, depth, text, a deadline), and running out of it, or
failing to read them, fails every criterion with the reason (`grade_within_budget`). On a judge
failure it writes `grades.json` with the error, no `reward.json`, and exits 3: the trial is an
error, never a silent 0. Bad task inputs (verifiers.json, KWRL_JUDGE_* / KWRL_GRADER_* settings)
exit 2.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from kwrl.errors import JudgeError, KwrlError, TaskFormatError
from kwrl.grading.budget import GraderBudget, OverBudget
from kwrl.grading.budget import enforced as budget_enforced
from kwrl.grading.diff import StateView, write_changes_archive
from kwrl.grading.evidence import Evidence
from kwrl.grading.files import read_answer
from kwrl.grading.grade import (
    DEFAULT_MAX_ARTIFACT_CHARS,
    Prepared,
    TrialGrades,
    failed_trial,
    grade_trial,
    judge_prepared,
    needs_judge,
    prepare,
)
from kwrl.grading.judges import JudgeConfig, build_judge
from kwrl.io import write_json, write_text
from kwrl.tasks.models import Verifier

EXIT_JUDGE = 3
EXIT_INPUT = 2
PHASE_FILE = "grader_phase.txt"
"""In --out: the grader's phase in progress (`reading`, `judging`, `done`)."""

_VERIFIERS = TypeAdapter(list[Verifier])


def load_verifiers(path: Path) -> list[Verifier]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TaskFormatError(path, None, "verifiers.json not found") from None
    except json.JSONDecodeError as e:
        raise TaskFormatError(path, None, f"invalid JSON: {e}") from e
    try:
        return _VERIFIERS.validate_python(data)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        raise TaskFormatError(path, loc, first["msg"]) from e


def _instruction_file(tests: Path) -> Path | None:
    """<tests>/instruction.md, else the task dir's instruction.md when tests/ sits inside it."""
    for p in (tests / "instruction.md", tests.parent / "instruction.md"):
        if p.is_file():
            return p
    return None


def read_optional(path: Path | None) -> str:
    if path is None or not path.is_file():
        return ""
    return path.read_text(encoding="utf-8", errors="replace")


async def grade_states(
    *,
    verifiers: list[Verifier],
    task: str,
    answer: str,
    initial: StateView,
    final: StateView,
    judge_config: JudgeConfig | None,
    evidence: Evidence | None = None,
    scoring: str = "apex_v1_grade_score",
) -> TrialGrades:
    """Grade one trial from its states, unbounded; the judge is built only when a criterion needs
    it. The verifier and `kwrl grade` use `grade_within_budget`."""
    ev = evidence or Evidence.collect(task=task, answer=answer, initial=initial, final=final)
    if judge_config is None or not any(needs_judge(v) for v in verifiers):
        return await grade_trial(verifiers, ev, None, scoring=scoring)
    async with build_judge(judge_config) as judge:
        return await grade_trial(verifiers, ev, judge, scoring=scoring)


def over_budget(verifiers: list[Verifier], reason: str, scoring: str) -> TrialGrades:
    """Every criterion failed because the agent's outputs exceeded the grading budget (grades.json
    `error` says so too, the verifier's watchdog included)."""
    grades = failed_trial(
        verifiers, f"evidence over budget: {reason}; every criterion fails", scoring=scoring
    )
    grades.error = f"OverBudget: {reason}"
    return grades


def grade_within_budget(
    *,
    verifiers: list[Verifier],
    task: str,
    answer: str,
    initial: StateView,
    final: StateView,
    judge_config: JudgeConfig | None,
    budget: GraderBudget,
    scoring: str = "apex_v1_grade_score",
    archive: Path | None = None,
    phase: Path | None = None,
    on_hang: Callable[[str], None] | None = None,
) -> tuple[TrialGrades, Evidence | None]:
    """Grade one trial; whatever the agent left behind, this returns grades (docs/contracts.md
    "Grading budget"). Two phases:

    1. reading (under `budget`, `kwrl.grading.budget.enforced`): the evidence, `archive`
       (changes.tar.gz) when given, the machine checks and the judge's prompts. Running out of the
       budget, or any error while reading what the agent made, fails every criterion (reward 0,
       the reason in each rationale and in grades.json `error`): the agent's outputs did it, so the
       trial trains on a 0 rather than being masked as an infrastructure failure;
    2. judging: the judge's calls, bounded by its own timeout and retries; a `JudgeError` (no
       judge, endpoint down, a task the judge cannot take) propagates (infrastructure: no
       reward); what the agent's output provokes in the judge is a grade (`kwrl.grading.grade`).

    `phase`, when given, is a file that holds the phase in progress (`reading`, `judging`, `done`),
    so a trial that harbor's verifier timeout cut off can be classified (`kwrl.rollout.failures`).
    Returns the grades and the evidence (None when it was not read whole)."""
    _mark(phase, "reading")
    chars = judge_config.agent_chars if judge_config else DEFAULT_MAX_ARTIFACT_CHARS
    base = len(initial.files())  # the world seed and overlay: read-only, the task's, unbounded
    try:
        with budget_enforced(budget, on_hang, base_files=base):
            ev = Evidence.collect(task=task, answer=answer, initial=initial, final=final)
            if archive is not None:
                write_changes_archive(ev.changes, archive)
            prepared = prepare(
                verifiers, ev, max_artifact_chars=chars,
                max_judge_artifacts=budget.max_judge_artifacts,
            )  # fmt: skip
    except OverBudget as e:
        return over_budget(verifiers, str(e), scoring), None
    except Exception as e:  # reading what the agent made failed: its doing, never a mask
        traceback.print_exc()
        grades = failed_trial(
            verifiers,
            f"the grader could not read the agent's outputs ({type(e).__name__}: {e}); "
            "every criterion fails",
            scoring=scoring,
        )
        grades.error = f"{type(e).__name__}: {e}"
        return grades, None
    _mark(phase, "judging")
    if not prepared.requests or judge_config is None:
        return asyncio.run(judge_prepared(verifiers, prepared, None, scoring=scoring)), ev
    return asyncio.run(_judge_with(judge_config, verifiers, prepared, scoring)), ev


async def _judge_with(
    config: JudgeConfig, verifiers: list[Verifier], prepared: Prepared, scoring: str
) -> TrialGrades:
    async with build_judge(config) as judge:
        return await judge_prepared(verifiers, prepared, judge, scoring=scoring)


def _mark(phase: Path | None, name: str) -> None:
    if phase is not None:
        write_text(phase, name + "\n")


def _write_grades(out: Path, grades: TrialGrades) -> None:
    write_json(out / "grades.json", grades.grades_json())
    write_json(out / "reward.json", grades.reward_json())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m kwrl.grading.verify", description=(__doc__ or "").split("\n")[0]
    )
    p.add_argument(
        "--tests", type=Path, required=True, help="the task's tests dir (verifiers.json)"
    )
    p.add_argument(
        "--initial", type=Path, action="append", default=[], help="initial state layer (repeatable)"
    )
    p.add_argument(
        "--final", type=Path, required=True, help="final state root (filesystem/, .apps_data/)"
    )
    p.add_argument("--answer", type=Path, help="the agent's final answer file")
    p.add_argument(
        "--instruction", type=Path, help="the task text (default <tests>/instruction.md)"
    )
    p.add_argument(
        "--out", type=Path, required=True, help="where reward.json, grades.json, changes.tar.gz go"
    )
    p.add_argument(
        "--judge",
        help="judge spec: http(s)://HOST:PORT/v1#NAME or litellm:PROVIDER/MODEL (default env KWRL_JUDGE)",
    )
    p.add_argument("--scoring", default="apex_v1_grade_score")
    args = p.parse_args(argv)

    t0 = time.perf_counter()
    phase = args.out / PHASE_FILE
    try:
        verifiers = load_verifiers(args.tests / "verifiers.json")
        task = read_optional(args.instruction or _instruction_file(args.tests))
        judge_config = JudgeConfig.from_env(args.judge)
        budget = GraderBudget.from_env()
        answer = read_answer(args.answer)  # agent-written: never through a link, capped
        initial = StateView.of(args.initial)
        final = StateView.of([args.final])

        def hung(reason: str) -> None:  # the watchdog thread: the main one is stuck in C code
            _write_grades(args.out, over_budget(verifiers, reason, args.scoring))
            _mark(phase, "done")
            print(f"kwrl verify: {reason}; reward 0 written", file=sys.stderr, flush=True)
            os._exit(0)

        grades, _ = grade_within_budget(
            verifiers=verifiers, task=task, answer=answer, initial=initial, final=final,
            judge_config=judge_config, budget=budget, scoring=args.scoring,
            archive=args.out / "changes.tar.gz", phase=phase, on_hang=hung,
        )  # fmt: skip
    except JudgeError as e:
        write_json(args.out / "grades.json", {"error": f"JudgeError: {e}"})
        print(f"kwrl verify: judge failed, no reward written: {e}", file=sys.stderr)
        return EXIT_JUDGE
    except KwrlError as e:
        print(f"kwrl verify: {e}", file=sys.stderr)
        return EXIT_INPUT
    _write_grades(args.out, grades)
    _mark(phase, "done")
    print(
        f"kwrl verify: reward {grades.score:.3f} pass {int(grades.passed)} "
        f"({sum(g.passed for g in grades.grades)}/{len(grades.grades)} criteria, "
        f"{grades.judge_calls} judge calls, {grades.cache_hits} cached, {time.perf_counter() - t0:.2f}s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
