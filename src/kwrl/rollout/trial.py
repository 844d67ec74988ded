"""What a finished trial left in its dir, read once: `read_trial(trial_dir) -> TrialFiles`.

harbor writes `result.json` when a trial ends; its `agent_result.metadata` is KwrlAgent's record
(TITO arrays, per-turn stats, stop reason; docs/contracts.md), read as `kwrl.agent.meta.AgentMeta`.
kwrl's runner writes the trial's run manifest, `manifest.json` (`kwrl.rollout.manifest`). The
grader writes `verifier/grades.json`, read as its own `kwrl.grading.grade.CriterionGrade`s (one per
criterion), and the agent `agent/final_answer.txt`; harbor's phase timestamps
(`environment_setup`, `agent_setup`, `agent_execution`, `verifier`) read as seconds per phase.
Every consumer of a finished trial (the local trainer and its disaggregated workers, the SkyRL
generator, evaluation) reads those files through here and never opens them itself; the cause,
reward and retries of the same trial are in `kwrl.rollout.runner.TrialRecord`.

A file that is missing or unreadable (a trial that crashed before its first turn) reads as empty:
no tokens, no turns, no grades. A record that is JSON but not of its type (a field of the wrong
type) is an error naming the file and the field; a record an older kwrl wrote reads, its missing
fields at their defaults.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from kwrl.agent.meta import AgentMeta, TurnStats
from kwrl.errors import TrialFormatError
from kwrl.grading.grade import CriterionGrade
from kwrl.rollout.manifest import RunManifest, read_manifest


def read_json(path: Path) -> Any:
    """`path`'s JSON, or None where it is missing or not JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None


CRITERION_PREFIX = "criterion/"
"""How reward.json named a criterion's score before it kept `reward` alone (older trial dirs, other
graders), and how metrics name one: built and parsed only in this module (`criterion_key`,
`trial_scores`)."""


def criterion_key(verifier_id: str) -> str:
    """The name of criterion `verifier_id`'s score: `criterion/<id>` (SkyRL's metrics)."""
    return CRITERION_PREFIX + verifier_id


def trial_scores(
    trial_dir: Path | str, rewards: dict[str, float]
) -> tuple[dict[str, float], bool | None]:
    """A trial's score per criterion ({verifier_id: score}) and whether it passed, from kwrl's
    verifier/grades.json; where that has none, from reward.json's `criterion/<id>` and `pass` keys
    (`rewards`: trials written before reward.json kept `reward` alone, other graders). None: no
    pass recorded."""
    grades = read_json(Path(trial_dir) / "verifier" / "grades.json")
    rows = grades.get("grades") if isinstance(grades, dict) else None
    if isinstance(rows, list) and rows:
        criteria = {
            str(g["verifier_id"]): float(g["score"])
            for g in rows
            if isinstance(g, dict)
            and "verifier_id" in g
            and isinstance(g.get("score"), int | float)
        }
        passed = grades.get("pass") if isinstance(grades, dict) else None
        return criteria, passed if isinstance(passed, bool) else None
    criteria = {
        k.removeprefix(CRITERION_PREFIX): v
        for k, v in rewards.items()
        if k.startswith(CRITERION_PREFIX)
    }
    return criteria, None if "pass" not in rewards else rewards["pass"] == 1.0


@dataclass(frozen=True)
class TrialFiles:
    """A finished trial's files: the agent's metadata, its token counts, grades, final answer."""

    agent_meta: AgentMeta = field(default_factory=AgentMeta)
    """result.json `agent_result.metadata` (KwrlAgent's TITO arrays and turn stats)."""
    n_input_tokens: int | None = None
    n_output_tokens: int | None = None
    grades: list[CriterionGrade] = field(default_factory=list)
    """verifier/grades.json `grades`: one per criterion."""
    final_answer: str = ""
    phase_seconds: dict[str, float] = field(default_factory=dict)
    """Seconds of each harbor phase that started and ended (`PHASES`), from result.json."""
    manifest: RunManifest | None = None
    """manifest.json: what reproduces the trial's score; None for a trial without one."""

    @property
    def prompt_ids(self) -> list[int]:
        return self.agent_meta.prompt_token_ids

    @property
    def response_ids(self) -> list[int]:
        return self.agent_meta.response_ids

    @property
    def loss_mask(self) -> list[int]:
        return self.agent_meta.loss_mask

    @property
    def logprobs(self) -> list[float]:
        return self.agent_meta.rollout_logprobs

    @property
    def turn_stats(self) -> list[TurnStats]:
        return self.agent_meta.turn_stats

    @property
    def turn_versions(self) -> list[int]:
        """Weight version of every policy turn (that of the turn's first token)."""
        return [t.weight_version for t in self.turn_stats if t.weight_version is not None]


PHASES = ("environment_setup", "agent_setup", "agent_execution", "verifier")
"""harbor's timed phases of a trial, in order (result.json keys with started_at/finished_at)."""


def phase_seconds(result: Any) -> dict[str, float]:
    """Seconds of each phase in `PHASES` that result.json timed (start and end both set)."""
    out: dict[str, float] = {}
    for name in PHASES:
        span = result.get(name) if isinstance(result, dict) else None
        if isinstance(span, dict) and span.get("started_at") and span.get("finished_at"):
            start = datetime.fromisoformat(str(span["started_at"]))
            out[name] = (datetime.fromisoformat(str(span["finished_at"])) - start).total_seconds()
    return out


_GRADES = TypeAdapter(list[CriterionGrade])


def read_grades(entries: Any, source: Path) -> list[CriterionGrade]:
    """grades.json's `grades` as the grader's own records (extra keys, e.g. `passed`, ignored; a
    record another grader wrote without kwrl's `method`, `rationale` or `criteria` gets `unknown`
    and empty text)."""
    if isinstance(entries, list):
        missing = {"method": "unknown", "rationale": "", "criteria": ""}
        entries = [{**missing, **e} if isinstance(e, dict) else e for e in entries]
    try:
        return _GRADES.validate_python(entries or [])
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise TrialFormatError(f"{source}: grades.{loc}: {first['msg']}") from e


def read_trial(trial_dir: Path | str) -> TrialFiles:
    """The files of the finished trial in `trial_dir` (see the module doc)."""
    trial_dir = Path(trial_dir)
    result = read_json(trial_dir / "result.json")
    agent = (result.get("agent_result") if isinstance(result, dict) else None) or {}
    grades_path = trial_dir / "verifier" / "grades.json"
    grades = read_json(grades_path)
    answer = trial_dir / "agent" / "final_answer.txt"
    return TrialFiles(
        agent_meta=AgentMeta.read(agent.get("metadata"), str(trial_dir / "result.json")),
        n_input_tokens=agent.get("n_input_tokens"),
        n_output_tokens=agent.get("n_output_tokens"),
        grades=read_grades(grades.get("grades") if isinstance(grades, dict) else None, grades_path),
        final_answer=(
            answer.read_text(encoding="utf-8", errors="replace") if answer.is_file() else ""
        ),
        phase_seconds=phase_seconds(result),
        manifest=read_manifest(trial_dir),
    )
