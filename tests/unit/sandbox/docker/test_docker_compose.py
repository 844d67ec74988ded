"""kwrl's compose override of the docker preset's main service, without a docker engine."""

from __future__ import annotations

from pathlib import Path

import pytest
from harbor.models.task.task import Task
from harbor.models.trial.paths import TrialPaths

from kwrl.errors import ConfigError, SandboxError
from kwrl.sandbox.conformance.testing import make_dataset
from kwrl.sandbox.docker import DockerEnvironment


def _environment(task_dir: Path, trial_dir: Path) -> DockerEnvironment:
    task = Task(task_dir)
    paths = TrialPaths(trial_dir=trial_dir)
    paths.mkdir()
    env = DockerEnvironment(
        environment_dir=task.paths.environment_dir,
        environment_name=task.short_name,
        session_id="t__env",
        trial_paths=paths,
        task_env_config=task.config.environment,
    )
    env._tmp = trial_dir / "tmp"  # what start() makes
    return env


def test_the_main_service_has_no_network_no_new_privileges_read_only_initial_layers_and_sized_disks(
    tmp_path: Path,
) -> None:
    task = make_dataset(tmp_path, 1)[0]
    (task / "environment" / "overlay" / "filesystem").mkdir(parents=True)
    env = _environment(task, tmp_path / "trial")
    main = env._kwrl_compose("kwrl-task-x:1")["services"]["main"]
    assert main["image"] == "kwrl-task-x:1"
    assert main["network_mode"] == "none"
    assert main["init"] is True and main["security_opt"] == ["no-new-privileges:true"]
    assert main["pids_limit"] == env.settings.pids_max
    binds = {v["target"]: (v["source"], v["read_only"]) for v in main["volumes"] if "source" in v}
    assert binds["/kwrl/run"] == (str(tmp_path / "trial" / "tmp" / "run"), False)
    assert binds["/kwrl/initial/world"] == (str(env.world.world_dir), True)
    assert binds["/kwrl/initial/overlay"] == (str(task.resolve() / "environment" / "overlay"), True)
    # storage: every dir the agent may write on tmpfs of the task's storage_mb and inodes (the
    # world's roots filled at start, so theirs hold the world's entries too), the rest of the
    # root read-only; every capability dropped but those root needs; the gateway's files and the
    # container's log capped
    assert main["read_only"] is True and main["cap_drop"] == ["ALL"]
    assert set(main["cap_add"]) == {"CHOWN", "SETUID", "SETGID", "DAC_READ_SEARCH"}
    tmpfs = dict(t.split(":", 1) for t in main["tmpfs"])
    size = env.task_env_config.storage_mb * 2**20  # type: ignore[operator]
    inodes = max(4096, env.task_env_config.storage_mb * 64)  # type: ignore[operator]
    world = sum(1 for _ in env.world.world_dir.rglob("*")) + 1  # type: ignore[union-attr]
    world += 2  # the overlay dir and its filesystem/
    writable = ("/filesystem", "/.apps_data", "/tmp", "/logs/agent", "/logs/artifacts")
    assert tmpfs == {
        t: f"rw,nosuid,nodev,exec,mode=1777,size={size},"
        f"nr_inodes={inodes + (world if t in ('/filesystem', '/.apps_data') else 0)}"
        for t in writable
    }
    assert main["environment"] == {"KWRL_POPULATE_WORLD": "1", "KWRL_GATEWAY_FSIZE": str(size)}
    assert main["logging"]["options"]["max-size"] == "1m"


def test_a_task_without_overlay_gets_an_empty_read_only_one_and_a_public_task_a_network(
    tmp_path: Path,
) -> None:
    task = make_dataset(tmp_path, 1)[0]
    toml = task / "task.toml"
    toml.write_text(
        toml.read_text().replace("[environment]\n", '[environment]\nnetwork_mode = "public"\n', 1)
    )
    env = _environment(task, tmp_path / "trial")
    main = env._kwrl_compose("img")["services"]["main"]
    assert "network_mode" not in main  # the task asked for the network itself
    binds = {v["target"]: (v["source"], v["read_only"]) for v in main["volumes"] if "source" in v}
    assert binds["/kwrl/initial/overlay"] == (str(tmp_path / "trial" / "tmp" / "empty"), True)


def test_bad_environment_kwargs_are_config_errors(tmp_path: Path) -> None:
    task = make_dataset(tmp_path, 1)[0]
    with pytest.raises(ConfigError, match="pids_max"):
        DockerEnvironment(
            environment_dir=task / "environment",
            environment_name="t",
            session_id="t__env",
            trial_paths=TrialPaths(trial_dir=tmp_path / "trial"),
            task_env_config=Task(task).config.environment,
            pids_max="many",
        )


def test_uploads_to_tests_and_solution_are_the_hosts_own_writes(tmp_path: Path) -> None:
    """harbor's uploads to /tests and /solution land in the host's /kwrl/run dir (the images link
    there): nothing runs inside the container to put them there; others go in as the agent."""
    task = make_dataset(tmp_path, 1)[0]
    env = _environment(task, tmp_path / "trial")
    run = tmp_path / "trial" / "tmp" / "run"
    assert env._host_upload("/tests") == run / "tests"
    assert env._host_upload("/tests/test.sh") == run / "tests" / "test.sh"
    assert env._host_upload("/solution/solve.sh") == run / "solution" / "solve.sh"
    assert env._host_upload("/testsuite/x") is None and env._host_upload("/tmp/x") is None
    with pytest.raises(SandboxError, match="escapes /tests"):
        env._host_upload("/tests/../kwrl/run/gateway.sock")
