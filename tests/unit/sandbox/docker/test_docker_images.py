"""The docker and modal presets' image definitions, without a docker engine: what each image
holds, when it is rebuilt, and that the modal preset builds and starts what the docker preset does."""

from __future__ import annotations

import asyncio
import io
import json
import tarfile
from pathlib import Path

import pytest

from kwrl.sandbox.docker import images
from kwrl.sandbox.docker.init import IMAGE_ENV, START_ARGV
from kwrl.sandbox.docker.modal import (
    MODAL_KEEPALIVE,
    START_COMMAND,
    docker_task_image,
    modal_task_image,
)
from kwrl.sandbox.presets import environment_config
from kwrl.synth.generate import SynthConfig, generate
from kwrl.tasks.taskdir import SANDBOX_UID, task_dirs


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth") / "d"
    generate(SynthConfig(out=out, worlds=1, tasks_per_world=12, control=False), progress=False)
    return out


def _with_overlay(dataset: Path) -> Path:
    tasks = [t for t in task_dirs(dataset / "tasks") if (t / "environment" / "overlay").is_dir()]
    assert tasks, "the generator writes at least one task with an overlay"
    return tasks[0]


def test_the_runtime_image_holds_python_kwrl_and_its_needs_and_starts_the_gateway() -> None:
    python = images.python_spec()
    spec = images.runtime_spec(python)
    names = set(python.context) | set(spec.context)
    assert any(n.startswith("python/lib/python3.12/json/") for n in names)
    assert not any(n.startswith("python/lib/python3.12/test/") for n in names)
    assert not any("/site-packages/" in n for n in names if n.startswith("python/"))
    assert "kwrl/kwrl/worlds/gateway.py" in names
    assert "kwrl/kwrl/grading/judges/judge_prompt.txt" in names  # package data travels
    assert not any("__pycache__" in n for n in names if n.startswith("kwrl/"))
    assert any(n.startswith("site/openpyxl/") for n in names)
    assert any(n.startswith("site/joserfc/") for n in names)  # via fastmcp-slim[server]
    assert any(n.startswith("site/litellm/") for n in names)  # the grader's litellm judges
    for left_out in ("harbor/", "pyarrow/", "matplotlib/"):
        assert not any(n.startswith("site/" + left_out) for n in names), left_out
    assert f"ENTRYPOINT {json.dumps(list(START_ARGV))}" in spec.dockerfile
    assert f"KWRL_GATEWAY={IMAGE_ENV['KWRL_GATEWAY']}" in spec.dockerfile
    assert spec.tag == f"kwrl-runtime:{spec.key}" and f"FROM {python.tag}" in spec.dockerfile
    assert python.tag == f"kwrl-python:{python.key}" and spec.parent_key == python.key
    assert not any(n.startswith("kwrl/") for n in python.context)  # kwrl edits: a small layer


def test_leaving_out_more_puts_less_in() -> None:
    spec = images.python_spec(images.DockerImageConfig(exclude=["harbor", "litellm"]))
    assert not any(n.startswith(("site/litellm/", "site/openai/")) for n in spec.context)
    assert any(n.startswith("site/openpyxl/") for n in spec.context)
    assert spec.key != images.python_spec().key


def test_world_and_task_images_carry_the_world_the_overlay_and_their_initial_copies(
    dataset: Path,
) -> None:
    task = _with_overlay(dataset)
    _, runtime, world, spec = images.specs_for_task(task)
    assert world.tag.startswith("kwrl-world-world_") and world.tag.endswith(":latest")
    assert f"FROM {runtime.tag}" in world.dockerfile
    assert "COPY --chown=0:0 world/ /kwrl/initial/world/" in world.dockerfile
    assert f"COPY --chown={SANDBOX_UID}:{SANDBOX_UID} world/ /" in world.dockerfile
    assert {n.split("/")[1] for n in world.context} == {"filesystem", ".apps_data"}
    assert not any(n.endswith("world.json") for n in world.context)  # world metadata stays out
    assert spec.dockerfile.splitlines()[3:] == [
        f"FROM {world.tag}",
        "COPY --chown=0:0 overlay/ /kwrl/initial/overlay/",
        f"COPY --chown={SANDBOX_UID}:{SANDBOX_UID} overlay/ /",
    ]
    assert spec.context and all(n.startswith("overlay/filesystem") for n in spec.context)


def test_a_changed_overlay_rebuilds_the_task_image_alone(dataset: Path) -> None:
    task = _with_overlay(dataset)
    _, _, world, before = images.specs_for_task(task)
    f = next(p for p in (task / "environment" / "overlay").rglob("*") if p.is_file())
    f.write_bytes(f.read_bytes() + b" ")
    _, _, world2, after = images.specs_for_task(task)
    assert world2.key == world.key
    assert after.key != before.key and after.tag != before.tag


def test_the_build_context_is_a_tar_with_the_dockerfile_and_root_owned_files(
    dataset: Path,
) -> None:
    task = _with_overlay(dataset)
    spec = images.specs_for_task(task)[-1]
    buf = io.BytesIO()
    spec.write_tar(buf)
    with tarfile.open(fileobj=io.BytesIO(buf.getvalue())) as tar:
        members = {m.name: m for m in tar.getmembers()}
        dockerfile = tar.extractfile(members["Dockerfile"])
        assert dockerfile is not None and dockerfile.read().decode() == spec.dockerfile
    assert set(members) == {"Dockerfile", *spec.context}
    assert {(m.uid, m.gid) for m in members.values()} == {(0, 0)}


def test_the_task_dockerfile_kwrl_writes_is_the_one_the_docker_preset_builds(
    dataset: Path,
) -> None:
    for task in task_dirs(dataset / "tasks"):
        spec = images.specs_for_task(task)[-1]
        assert (task / "environment" / "Dockerfile").read_text() == spec.dockerfile, task.name


def test_modal_builds_and_starts_what_docker_does(dataset: Path) -> None:
    env = environment_config("modal")
    assert env.kwargs["keepalive"] == MODAL_KEEPALIVE == list(START_COMMAND)
    for task in task_dirs(dataset / "tasks"):
        docker = docker_task_image(task)
        assert docker.command[: len(START_ARGV)] == START_ARGV
        assert modal_task_image(task) == docker, task.name


def test_image_builds_wait_on_a_lock_in_one_event_loop_after_another() -> None:
    """Trials of a second `asyncio.run` (a second conformance run in one process) wait on the
    build lock too; one lock for all loops raised "bound to a different event loop"."""

    async def contended() -> None:
        async with images.build_lock("kwrl-task-x:1"):
            waiter = asyncio.create_task(images.build_lock("kwrl-task-x:1").acquire())
            await asyncio.sleep(0)
            assert not waiter.done()
        assert await waiter
        images.build_lock("kwrl-task-x:1").release()

    asyncio.run(contended())
    asyncio.run(contended())
