"""The run manifest: one model that names the code, settings, seeds, judge and world of a score."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

import kwrl
from kwrl.agent.config import AgentConfig
from kwrl.errors import TrialFormatError
from kwrl.eval.config import EvalConfig
from kwrl.rollout.manifest import (
    MANIFEST_JSON,
    TRIAL_SEED,
    RunManifest,
    checkout_state,
    config_hash,
    config_seeds,
    read_manifest,
    run_manifest,
    world_digest,
    write_manifest,
)
from kwrl.rollout.runner import TrialSettings, build_rollout_config
from kwrl.rollout.settings import SandboxSettings


def test_the_same_settings_hash_the_same_wherever_the_run_goes_and_any_setting_changes_it() -> None:
    base = EvalConfig(dataset=Path("D"), model="oracle", out=Path("a"))
    same = EvalConfig(dataset=Path("/elsewhere/D"), model="oracle", out=Path("b"))
    assert config_hash(base) == config_hash(same)
    assert re.fullmatch(r"[0-9a-f]{16}", config_hash(base))
    changed = [
        EvalConfig(dataset=Path("D"), model="nop"),
        EvalConfig(dataset=Path("D"), model="oracle", agent=AgentConfig(max_steps=3)),
        EvalConfig(dataset=Path("D"), model="oracle", sample_seed=1),
        EvalConfig(dataset=Path("D"), model="oracle", sandbox=SandboxSettings(gateway=False)),
    ]
    hashes = {config_hash(c) for c in changed}
    assert len(hashes) == len(changed) and config_hash(base) not in hashes


def test_every_seed_the_config_sets_is_named_by_its_dotted_key() -> None:
    cfg = EvalConfig(dataset=Path("D"), model="m", sample_seed=5, agent=AgentConfig(seed=9))
    assert config_seeds(cfg) == {"sample_seed": 5, "agent.seed": 9, "bootstrap.seed": 0}
    assert config_seeds(EvalConfig(dataset=Path("D"), model="m")) == {"bootstrap.seed": 0}


def test_a_run_names_its_judge_and_prompt_only_when_it_has_a_judge() -> None:
    judged = run_manifest(TrialSettings(judge="litellm:openai/gpt-x"), "litellm:openai/gpt-x")
    assert judged.judge == "litellm:openai/gpt-x"
    assert judged.judge_prompt_hash is not None and len(judged.judge_prompt_hash) == 16
    bare = run_manifest(TrialSettings(), None)
    assert (bare.judge, bare.judge_prompt_hash) == (None, None)
    assert bare.kwrl_version == kwrl.__version__


def test_every_verb_s_rollout_carries_the_run_s_manifest() -> None:
    settings = TrialSettings(concurrency=3)
    rcfg = build_rollout_config(settings, "oracle")
    assert rcfg.manifest is not None and rcfg.manifest.config_hash == config_hash(settings)


def _task(root: Path, world_file: str = "q3 figures") -> Path:
    world = root / "worlds" / "w1"
    (world / "filesystem").mkdir(parents=True, exist_ok=True)
    (world / "filesystem" / "report.txt").write_text(world_file)
    task = root / "tasks" / "t1"
    (task / "environment" / "overlay" / "filesystem").mkdir(parents=True, exist_ok=True)
    (task / "environment" / "overlay" / "filesystem" / "note.txt").write_text("task note")
    meta = {"task_id": "t1", "task_name": "t", "task_slug": "t1", "world_id": "w1"}
    (task / "archipelago.json").write_text(json.dumps(meta))
    return task


def test_the_world_digest_changes_with_any_world_or_overlay_file(tmp_path: Path) -> None:
    a = world_digest(_task(tmp_path / "a"))
    assert a is not None and a == world_digest(_task(tmp_path / "a2"))  # same bytes, other place
    assert world_digest(_task(tmp_path / "b", world_file="q4 figures")) != a
    task = _task(tmp_path / "c")
    (task / "environment" / "overlay" / "filesystem" / "note.txt").write_text("other note")
    assert world_digest(task) != a
    (tmp_path / "bare").mkdir()
    assert world_digest(tmp_path / "bare") is None


def test_a_trial_s_manifest_adds_its_world_and_seed_to_the_run_s(tmp_path: Path) -> None:
    run = RunManifest(kwrl_version="1", config_hash="c" * 16, seeds={"sample_seed": 2})
    trial = run.for_trial(_task(tmp_path), seed=77)
    assert trial.world_digest == world_digest(_task(tmp_path))
    assert trial.seeds == {"sample_seed": 2, TRIAL_SEED: 77}
    assert trial.run_part() == run
    assert run.for_trial(tmp_path, seed=None).seeds == {"sample_seed": 2}


def test_a_manifest_round_trips_through_the_trial_dir(tmp_path: Path) -> None:
    assert read_manifest(tmp_path) is None  # an older kwrl's trial
    m = RunManifest(kwrl_version="1", git_commit="ab" * 20, config_hash="0" * 16, seeds={"x": 1})
    write_manifest(tmp_path, m)
    assert read_manifest(tmp_path) == m
    (tmp_path / MANIFEST_JSON).write_text('{"seeds": "many"}')
    with pytest.raises(TrialFormatError, match=r"manifest\.json: seeds"):
        read_manifest(tmp_path)


def test_the_commit_is_the_checkout_s_and_none_outside_one(tmp_path: Path) -> None:
    assert checkout_state(tmp_path) == (None, None)
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "f").write_text("1")
    subprocess.run([*git, "add", "f"], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    assert checkout_state(tmp_path) == (head.stdout.strip(), False)
    (tmp_path / "f").write_text("2")
    assert checkout_state(tmp_path) == (head.stdout.strip(), True)
    (tmp_path / "sub").mkdir()
    assert checkout_state(tmp_path / "sub") == (None, None)  # inside, but not the checkout's top


def test_the_terminal_line_names_version_commit_config_seeds_and_judge() -> None:
    m = RunManifest(
        kwrl_version="0.1", git_commit="abcdef0123456789", git_dirty=True, config_hash="h" * 16,
        seeds={"sample_seed": 3}, judge="litellm:x/y", judge_prompt_hash="p" * 16,
    )  # fmt: skip
    line = m.line()
    for part in ("kwrl 0.1", "abcdef012345+dirty", "h" * 16, "sample_seed=3", "litellm:x/y"):
        assert part in line
