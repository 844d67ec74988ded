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
then `grades.json` and `reward.json`. On a judge failure it writes `grades.json` with the error,
no `reward.json`, and exits 3: the trial is an error, never a silent 0. Bad inputs exit 2.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from kwrl.errors import JudgeError, KwrlError, TaskFormatError
from kwrl.grading.diff import StateView, write_changes_archive
from kwrl.grading.evidence import Evidence
from kwrl.grading.files import read_answer
from kwrl.grading.grade import TrialGrades, grade_trial, needs_judge
from kwrl.grading.judges import JudgeConfig, build_judge
from kwrl.io import write_json
from kwrl.tasks.models import Verifier

EXIT_JUDGE = 3
EXIT_INPUT = 2

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
    """Grade one trial from its states; the judge is built only when a criterion needs it."""
    ev = evidence or Evidence.collect(task=task, answer=answer, initial=initial, final=final)
    if judge_config is None or not any(needs_judge(v) for v in verifiers):
        return await grade_trial(verifiers, ev, None, scoring=scoring)
    async with build_judge(judge_config) as judge:
        return await grade_trial(verifiers, ev, judge, scoring=scoring)


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
    try:
        verifiers = load_verifiers(args.tests / "verifiers.json")
        task = read_optional(args.instruction or _instruction_file(args.tests))
        answer = read_answer(args.answer)  # agent-written: never through a link, capped
        initial = StateView.of(args.initial)
        final = StateView.of([args.final])
        ev = Evidence.collect(task=task, answer=answer, initial=initial, final=final)
        write_changes_archive(ev.changes, args.out / "changes.tar.gz")
        judge_config = JudgeConfig.from_env(args.judge)
        grades = asyncio.run(
            grade_states(
                verifiers=verifiers,
                task=task,
                answer=answer,
                initial=initial,
                final=final,
                judge_config=judge_config,
                evidence=ev,
                scoring=args.scoring,
            )
        )
    except JudgeError as e:
        write_json(args.out / "grades.json", {"error": f"JudgeError: {e}"})
        print(f"kwrl verify: judge failed, no reward written: {e}", file=sys.stderr)
        return EXIT_JUDGE
    except KwrlError as e:
        print(f"kwrl verify: {e}", file=sys.stderr)
        return EXIT_INPUT
    write_json(args.out / "grades.json", grades.grades_json())
    write_json(args.out / "reward.json", grades.reward_json())
    print(
        f"kwrl verify: reward {grades.score:.3f} pass {int(grades.passed)} "
        f"({sum(g.passed for g in grades.grades)}/{len(grades.grades)} criteria, "
        f"{grades.judge_calls} judge calls, {grades.cache_hits} cached, {time.perf_counter() - t0:.2f}s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
