"""Tiny hand-made datasets for sandbox and rollout tests, smoke runs and benchmarks.

`make_dataset(root, n_tasks)` writes `root/worlds/<world_id>/` (a few files, one mailbox) and
`root/tasks/<slug>/` task dirs through `kwrl.tasks.taskdir.write_task_dir`. Each task asks for the
answer 42 in `/filesystem/answer.txt` and in the final answer; `solution/solve.sh` (the oracle)
does both, so the oracle scores 1.0 and the nop agent 0.0.

Two verifiers (`grader=`):
- `"kwrl"`: the real one (`tests/test.sh` from `kwrl.tasks.taskdir`, i.e. `kwrl.grading.verify`)
  with machine checks only, so no judge is called;
- `"shell"`: a self-contained bash verifier writing the same files (reward.json with
  `criterion/<id>` keys, grades.json), for testing the sandbox without the grader.

Agent kinds for failure tests are solve.sh variants (`SOLUTIONS`): `sleep` (outlives any timeout),
`forkbomb`, `memhog`, `daemon` (leaves a background process behind).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kwrl.sandbox.local import LocalEnvironment

SHELL_TEST_SH = r"""#!/usr/bin/env bash
# Shell verifier: two criteria, reward = fraction met.
set -u
c1=0; c2=0
grep -q 42 /filesystem/answer.txt 2>/dev/null && c1=1
grep -q 42 /logs/agent/final_answer.txt 2>/dev/null && c2=1
reward=$(awk "BEGIN{print ($c1+$c2)/2}")
pass=$(( c1 & c2 ))
cat > /logs/verifier/reward.json <<EOF
{"reward": $reward, "pass": $pass, "criterion/c1": $c1, "criterion/c2": $c2}
EOF
cat > /logs/verifier/grades.json <<EOF
{"grades": [{"verifier_id": "c1", "score": $c1, "criteria": "answer.txt holds 42"},
            {"verifier_id": "c2", "score": $c2, "criteria": "final answer says 42"}]}
EOF
"""

SOLUTIONS: dict[str, str] = {
    "oracle": (
        "#!/usr/bin/env bash\nset -e\necho 42 > /filesystem/answer.txt\n"
        "echo 'The answer is 42.' > /logs/agent/final_answer.txt\n"
    ),
    "sleep": "#!/usr/bin/env bash\nsleep 3600\n",
    "forkbomb": "#!/usr/bin/env bash\nbomb() { bomb | bomb & }; bomb\nwait\n",
    "memhog": (
        "#!/usr/bin/env bash\n"
        '"$KWRL_PYTHON" -c "x = []\nwhile True: x.append(bytearray(16 * 1024 * 1024))"\n'
    ),
    "daemon": (
        "#!/usr/bin/env bash\nsetsid sleep 3600 > /dev/null 2>&1 < /dev/null &\n"
        "echo 42 > /filesystem/answer.txt\necho 42 > /logs/agent/final_answer.txt\n"
    ),
}


def _hex(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def make_world(root: Path, name: str = "acme") -> Path:
    """A small world seed at `root/worlds/world_<hex>/`; returns its dir."""
    world_id = f"world_{_hex(name)}"
    wd = root / "worlds" / world_id
    (wd / "filesystem" / "reports").mkdir(parents=True, exist_ok=True)
    (wd / "filesystem" / "reports" / "q3.txt").write_text("Q3 revenue: 42 million\n")
    (wd / "filesystem" / "readme.txt").write_text(f"Shared drive of {name}.\n")
    for app in ("mail", "calendar", "chat"):
        (wd / ".apps_data" / app).mkdir(parents=True, exist_ok=True)
    (wd / "world.json").write_text(
        json.dumps(
            {
                "world_id": world_id,
                "world_name": name,
                "world_description": "test world",
                "domain": "Management Consulting",
                "apps": [],
            }
        )
    )
    return wd


def make_task(
    root: Path,
    slug: str,
    *,
    world_id: str,
    solution: str = "oracle",
    grader: str = "shell",
    agent_timeout_sec: float = 60.0,
    memory_mb: int = 1024,
) -> Path:
    """One task dir at `root/tasks/<slug>` whose solve.sh is `SOLUTIONS[solution]`."""
    from kwrl.tasks.models import ArchipelagoMeta, Verifier, VerifierValues
    from kwrl.tasks.taskdir import TaskDirConfig, TaskSpec, write_task_dir

    verifiers = [
        Verifier(
            verifier_id="c1",
            verifier_values=VerifierValues.model_validate(
                {
                    "criteria": "/filesystem/answer.txt holds 42",
                    "is_primary_objective": True,
                    "kwrl_check": {"kind": "regex", "pattern": "42", "source": "files"},
                }
            ),
        ),
        Verifier(
            verifier_id="c2",
            verifier_index=1,
            verifier_values=VerifierValues.model_validate(
                {
                    "criteria": "The final answer states 42",
                    "kwrl_check": {"kind": "number", "value": 42, "source": "answer"},
                }
            ),
        ),
    ]
    spec = TaskSpec(
        meta=ArchipelagoMeta(
            task_id=f"task_{_hex(slug)}",
            task_name=slug,
            task_slug=slug,
            world_id=world_id,
            domain="Management Consulting",
            expected_output="message_in_console",
        ),
        instruction="Find the Q3 revenue (in millions), write it to /filesystem/answer.txt and say it.",
        verifiers=verifiers,
        solution=SOLUTIONS[solution],
    )
    cfg = TaskDirConfig(agent_timeout_sec=agent_timeout_sec, memory_mb=memory_mb, cpus=1)
    task_dir = write_task_dir(root / "tasks" / slug, spec, cfg)
    if grader == "shell":
        (task_dir / "tests" / "test.sh").write_text(SHELL_TEST_SH)
    return task_dir


def make_dataset(
    root: Path,
    n_tasks: int = 1,
    *,
    solution: str = "oracle",
    grader: str = "shell",
    agent_timeout_sec: float = 60.0,
    memory_mb: int = 1024,
) -> list[Path]:
    """A world and `n_tasks` task dirs under `root`; returns the task dirs."""
    world = make_world(root)
    return [
        make_task(
            root,
            f"t{i:03d}-{solution}",
            world_id=world.name,
            solution=solution,
            grader=grader,
            agent_timeout_sec=agent_timeout_sec,
            memory_mb=memory_mb,
        )
        for i in range(n_tasks)
    ]


def make_environment(task_dir: Path, trial_dir: Path, **settings: Any) -> LocalEnvironment:
    """A `LocalEnvironment` for `task_dir` outside a harbor trial, with harbor's /logs mounts."""
    from harbor.models.task.task import Task
    from harbor.models.trial.config import ServiceVolumeConfig
    from harbor.models.trial.paths import TrialPaths

    from kwrl.sandbox.local import LocalEnvironment

    task = Task(task_dir)
    paths = TrialPaths(trial_dir=trial_dir)
    paths.mkdir()
    mounts = [
        ServiceVolumeConfig(type="bind", source=str(d.resolve()), target=f"/logs/{d.name}")
        for d in (paths.agent_dir, paths.verifier_dir, paths.artifacts_dir)
    ]
    return LocalEnvironment(
        environment_dir=task.paths.environment_dir,
        environment_name=task.short_name,
        session_id=f"{trial_dir.name}__env",
        trial_paths=paths,
        task_env_config=task.config.environment,
        mounts=mounts,
        **settings,
    )
