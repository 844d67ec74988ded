"""The environment contract's own pieces: the initial copy's layers and the limits report."""

from __future__ import annotations

import json
from pathlib import Path

from kwrl.sandbox.conformance.testing import make_dataset, make_environment
from kwrl.sandbox.contract import INITIAL_OVERLAY, INITIAL_WORLD, KwrlEnvironment, LimitsReport


def test_the_initial_copy_is_the_seed_and_the_overlay_or_an_empty_dir(tmp_path: Path) -> None:
    task = make_dataset(tmp_path / "ds", 1)[0]
    env = make_environment(task, tmp_path / "trial")
    assert isinstance(env, KwrlEnvironment)
    empty = tmp_path / "empty"
    world = env.world.world_dir
    assert world is not None and (world / "filesystem" / "reports" / "q3.txt").is_file()
    assert env.initial_layers(empty) == {INITIAL_WORLD: world, INITIAL_OVERLAY: empty}
    (task / "environment" / "overlay" / "filesystem").mkdir(parents=True)
    env = make_environment(task, tmp_path / "trial2")
    assert env.initial_layers(empty)[INITIAL_OVERLAY] == task.resolve() / "environment" / "overlay"


def test_the_limits_report_says_only_what_happened(tmp_path: Path) -> None:
    limits = {"memory_mb": 512, "pids": 64, "cpus": 1.0, "storage_mb": 64}
    LimitsReport(limits=limits).write(tmp_path)
    assert json.loads((tmp_path / "sandbox.json").read_text()) == {"limits": limits}
    full = LimitsReport(
        limits=limits,
        events={"pids_max": 0, "oom_kill": 1},
        verifier_events={"pids_max": 0, "oom_kill": 0},
        verifier_memory_mb=700,
        unenforced=["cpus=1.0"],
        dropped=[f"/logs/agent/l{i}" for i in range(150)],
    ).as_json()
    assert full["events"] == {"pids_max": 0, "oom_kill": 1} and full["verifier_memory_mb"] == 700
    assert full["unenforced"] == ["cpus=1.0"] and len(full["dropped"]) == 100
