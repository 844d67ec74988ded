"""The no-op control: a task's criteria graded on its untouched world with an empty final answer.

A criterion that passes when the agent does nothing rewards doing nothing (a check that matches a
file the world already holds, a pattern the empty answer satisfies); a policy learns to stop. So
every criterion of a task must fail the control (Archipelago's open PR #170 asks the same of its
tasks). `control_task(task_dir)` grades one task as the verifier would after a no-op agent: the
initial and the final state are both `[world seed, task overlay]`, the answer is '', and
`kwrl.grading.grade.prepare` decides every criterion it can without a judge (machine checks, and
the expected-file-type rule). A criterion that still needs the judge is not graded here (no judge
is asked): it is counted as `unjudged`, so a report says how much the control did not cover.

`python -m kwrl.grading.control ROOT` runs it on every task dir under ROOT and prints one JSON
object (`ControlReport.as_json`) on stdout; exit 0 when every graded criterion fails the control,
1 when some criterion passes it or a task's world could not be graded, 2 on bad input. `kwrl data validate` and `kwrl data synth` run it
this way (`kwrl.tasks.validate.run_control`): the data layer sits below grading and names this
module, as it names the verifier, instead of importing it. A task dir that does not load is
skipped (`unloadable`); `kwrl data validate` reports why.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kwrl.errors import KwrlError, TaskFormatError
from kwrl.grading.diff import StateView, task_layers
from kwrl.grading.evidence import Evidence
from kwrl.grading.grade import prepare
from kwrl.tasks.taskdir import load_task, task_dirs


@dataclass(frozen=True)
class ControlPass:
    """A criterion that passed the no-op control: the task rewards doing nothing."""

    task: str
    """The task dir's name."""
    index: int
    """The criterion's position in tests/verifiers.json."""
    verifier_id: str
    criteria: str
    method: str
    """How it was decided ('machine': its kwrl_check)."""
    rationale: str

    @property
    def field(self) -> str:
        """The criterion's field in tests/verifiers.json."""
        return f"{self.index}.verifier_values"

    @property
    def message(self) -> str:
        return (
            f"criterion {self.verifier_id} ({self.criteria!r}) passes the no-op control "
            f"(untouched world, empty answer; {self.method}: {self.rationale}): the task rewards "
            "doing nothing"
        )

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "field": self.field, "message": self.message}


@dataclass
class ControlReport:
    tasks: int = 0
    """Task dirs found."""
    graded: int = 0
    """Criteria decided without a judge."""
    unjudged: int = 0
    """Criteria that need the judge (no machine check): not graded by the control."""
    passes: list[ControlPass] = field(default_factory=list)
    unloadable: list[str] = field(default_factory=list)
    """Task dirs that did not load (their faults are `kwrl data validate`'s to report)."""
    errors: dict[str, str] = field(default_factory=dict)
    """Task dir -> why grading its untouched world failed (a check raising on the world's own
    files): the control could not clear it."""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.passes and not self.errors

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "passes": [p.as_json() for p in self.passes], "ok": self.ok}


def control_task(task_dir: Path) -> tuple[list[ControlPass], int, int]:
    """The criteria of one task that pass on its untouched world with an empty answer, and the
    counts of criteria graded and left to the judge. Raises `TaskFormatError` for a task dir that
    does not load."""
    td = load_task(task_dir)
    state = StateView.of(task_layers(td.world_dir, td.overlay_dir))
    evidence = Evidence.collect(task=td.instruction, answer="", initial=state, final=state)
    prepared = prepare(td.verifiers, evidence)
    index = {v.verifier_id: i for i, v in enumerate(td.verifiers)}
    passes = [
        ControlPass(td.path.name, index[g.verifier_id], g.verifier_id, g.criteria, g.method,
                    g.rationale)
        for g in prepared.grades.values()
        if g.passed
    ]  # fmt: skip
    # A check that cannot decide leaves a fail and a judge's prompt: the judge would grade it.
    unjudged = {r.verifier.verifier_id for r in prepared.requests}
    graded = len(prepared.grades.keys() - unjudged)
    return sorted(passes, key=lambda p: p.index), graded, len(unjudged)


def control_dataset(root: Path) -> ControlReport:
    """`control_task` on every task dir under `root` (a dataset, a folder of task dirs, or one)."""
    t0 = time.perf_counter()
    dirs = task_dirs(root)
    report = ControlReport(tasks=len(dirs))
    for d in dirs:
        try:
            passes, graded, unjudged = control_task(d)
        except TaskFormatError:
            report.unloadable.append(d.name)
            continue
        except Exception as e:  # one task's world or check failing must not hide the others
            report.errors[d.name] = f"{type(e).__name__}: {e}"
            continue
        report.passes.extend(passes)
        report.graded += graded
        report.unjudged += unjudged
    report.seconds = round(time.perf_counter() - t0, 3)
    return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m kwrl.grading.control", description=(__doc__ or "").split("\n")[0]
    )
    p.add_argument("root", type=Path, help="a dataset, a folder of task dirs, or one task dir")
    args = p.parse_args(argv)
    try:
        if not args.root.is_dir():
            raise TaskFormatError(args.root, None, "dataset dir not found")
        report = control_dataset(args.root)
    except KwrlError as e:
        print(f"kwrl control: {e}", file=sys.stderr)
        return 2
    print(json.dumps(report.as_json()))
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
