"""Pure parts of the sandbox: world resolution, the bwrap command line, presets, settings."""

from __future__ import annotations

from pathlib import Path

import pytest
from harbor.models.trial.config import TaskConfig, TrialConfig

from kwrl.errors import ConfigError, TaskFormatError
from kwrl.sandbox.base import SandboxSpec, base_env, bwrap_argv, resolve_world, storage_inodes
from kwrl.sandbox.conformance.testing import make_dataset
from kwrl.sandbox.presets import DOCKER_IMPORT_PATH, LOCAL_IMPORT_PATH, environment_config


def test_a_task_finds_its_world_seed_and_overlay(tmp_path: Path) -> None:
    task = make_dataset(tmp_path, 1)[0]
    (task / "environment" / "overlay" / "filesystem").mkdir(parents=True)
    world = resolve_world(task)
    assert (
        world.world_dir
        == (tmp_path / "worlds").resolve() / next((tmp_path / "worlds").iterdir()).name
    )
    assert world.overlay_dir == task.resolve() / "environment" / "overlay"
    assert world.lowers == [world.overlay_dir, world.world_dir]


def test_a_task_without_archipelago_json_runs_on_an_empty_world(tmp_path: Path) -> None:
    (tmp_path / "t" / "environment").mkdir(parents=True)
    world = resolve_world(tmp_path / "t")
    assert world.world_dir is None and world.lowers == []


def test_a_missing_world_names_the_file_and_field(tmp_path: Path) -> None:
    task = make_dataset(tmp_path, 1)[0]
    import shutil

    shutil.rmtree(tmp_path / "worlds")
    with pytest.raises(TaskFormatError, match=r"archipelago.json: world_id"):
        resolve_world(task)


def test_the_agent_sandbox_has_no_network_and_no_capabilities(tmp_path: Path) -> None:
    argv = bwrap_argv(SandboxSpec(root=tmp_path, env={"A": "1"}), ["true"])
    assert "--unshare-net" in argv and "--unshare-pid" in argv and "--die-with-parent" in argv
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    assert "--clearenv" in argv and argv[-2:] == ["--", "true"]
    i = argv.index("/filesystem")
    assert argv[i - 2 : i] == ["--bind", str(tmp_path / "merged" / "filesystem")]
    assert "/root" not in argv and "/work/main/.venv/bin" not in argv


def test_the_verifier_sandbox_shares_the_network(tmp_path: Path) -> None:
    argv = bwrap_argv(
        SandboxSpec(root=tmp_path, share_net=True, binds=[("/x", "/tests", True)]), ["true"]
    )
    assert "--unshare-net" not in argv
    i = argv.index("/tests")
    assert argv[i - 2 : i] == ["--ro-bind", "/x"]
    assert "CAP_DAC_READ_SEARCH" not in argv
    argv = bwrap_argv(SandboxSpec(root=tmp_path, read_all=True), ["true"])
    assert argv[argv.index("--cap-add") + 1] == "CAP_DAC_READ_SEARCH"


def test_only_a_nesting_command_may_switch_user_and_map_a_user_namespace(tmp_path: Path) -> None:
    """The verifier keeps what the grader needs for LibreOffice's own sandbox (grading.recalc)."""
    nest = ["CAP_SETUID", "CAP_SETGID", "CAP_SETFCAP"]
    argv = bwrap_argv(SandboxSpec(root=tmp_path, read_all=True), ["true"])
    assert not set(nest) & set(argv)
    argv = bwrap_argv(SandboxSpec(root=tmp_path, read_all=True, nest=True), ["true"])
    added = [argv[i + 1] for i, a in enumerate(argv) if a == "--cap-add"]
    assert added == ["CAP_DAC_READ_SEARCH", *nest]
    i = argv.index("/etc")  # searchable by the user the nested sandbox runs as
    assert argv[i - 3 : i] == ["--perms", "0755", "--dir"]


def test_commands_inside_get_a_clean_environment_with_the_gateway() -> None:
    env = base_env("/kwrl/run/gateway.sock")
    assert env["KWRL_GATEWAY"] == "unix:///kwrl/run/gateway.sock"
    assert Path(env["KWRL_PYTHON"]).name == "python"
    assert not any("KEY" in k or "TOKEN" in k for k in env)


@pytest.mark.parametrize("name", ["local", "docker", "modal", "my.mod:Env"])
def test_presets_validate_as_harbor_trial_configs(name: str, tmp_path: Path) -> None:
    env = environment_config(name, {"k": 1} if name == "my.mod:Env" else None)
    cfg = TrialConfig.model_validate(
        {"task": TaskConfig(path=tmp_path).model_dump(), "environment": env.model_dump(mode="json")}
    )
    assert cfg.environment == env
    if name == "local":
        assert env.import_path == LOCAL_IMPORT_PATH
    elif name == "docker":
        assert env.import_path == DOCKER_IMPORT_PATH
    elif name == "modal":
        assert env.type is not None and env.type.value == name


def test_an_unknown_preset_says_what_is_accepted() -> None:
    with pytest.raises(ConfigError, match="local, docker, modal"):
        environment_config("kubernetes")


def test_bad_environment_kwargs_are_config_errors(tmp_path: Path) -> None:
    from kwrl.sandbox.conformance.testing import make_environment

    task = make_dataset(tmp_path, 1)[0]
    with pytest.raises(ConfigError, match="pids_max"):
        make_environment(task, tmp_path / "trial", pids_max="many")


def test_a_trials_inode_bound_follows_its_storage_unless_set() -> None:
    assert storage_inodes(10240, None) == 655_360
    assert storage_inodes(16, None) == 4096  # the floor: a small task still copies up a world
    assert storage_inodes(16, 100) == 100
