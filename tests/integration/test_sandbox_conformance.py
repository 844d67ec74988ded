"""Every environment kwrl ships passes the conformance suite (`kwrl.sandbox.conformance.suite`).

One entry of `ENVIRONMENTS` per environment: its import path (or preset), its kwargs, and why it
is skipped where it cannot run. The default run has the fast suite; the whole one (one generated
task per family, every attack) is marked slow. A subclass that breaks one duty shows the suite
failing by name.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from kwrl.sandbox.conformance.suite import FAST_ATTACKS, conform
from kwrl.sandbox.contract import INITIAL_OVERLAY, INITIAL_WORLD
from kwrl.sandbox.docker.images import docker_missing
from kwrl.sandbox.local import LocalEnvironment

_LOCAL_OK = os.geteuid() == 0 and shutil.which("bwrap") is not None
_DOCKER_MISSING = docker_missing()

ENVIRONMENTS = [
    pytest.param(
        "kwrl.sandbox.local:LocalEnvironment",
        {},
        marks=pytest.mark.skipif(not _LOCAL_OK, reason="needs root and bubblewrap"),
        id="local",
    ),
    pytest.param(
        "kwrl.sandbox.docker:DockerEnvironment",
        {},
        # The fast suite: 54 s near idle, ~3 min on a busy 2-core box; CI starts no dockerd.
        marks=[
            pytest.mark.docker,
            pytest.mark.slow,
            pytest.mark.skipif(_DOCKER_MISSING is not None, reason=_DOCKER_MISSING or ""),
        ],
        id="docker",
    ),
]


@pytest.mark.parametrize(("env", "kwargs"), ENVIRONMENTS)
async def test_an_environment_passes_the_fast_suite(
    env: str, kwargs: dict[str, object], tmp_path: Path
) -> None:
    report = await conform(env, tmp_path, env_kwargs=kwargs)
    names = {c.name for c in report.checks}
    duties = {"verifier_phase", "diff", "gateway", "egress"}
    assert {f"attack:{a}" for a in FAST_ATTACKS} | duties <= names
    assert {"limits:memory", "limits:refused", "leftovers", "oracle:plain", "nop:plain"} <= names
    assert sum(n.startswith("oracle:") for n in names) >= 3
    assert report.ok, "\n".join(f"{c.name}: {c.detail}" for c in report.failed())


@pytest.mark.slow
@pytest.mark.parametrize(("env", "kwargs"), ENVIRONMENTS)
async def test_an_environment_passes_the_whole_suite(
    env: str, kwargs: dict[str, object], tmp_path: Path
) -> None:
    report = await conform(env, tmp_path, env_kwargs=kwargs, full=True)
    assert sum(c.name.startswith("oracle:") for c in report.checks) >= 17  # one per family
    assert report.ok, "\n".join(f"{c.name}: {c.detail}" for c in report.failed())


class SwappedInitial(LocalEnvironment):
    """Breaks one duty: the verifier's initial world is the task overlay, not the world seed."""

    def initial_layers(self, empty: Path) -> dict[str, Path]:
        layers = super().initial_layers(empty)
        return {**layers, INITIAL_WORLD: layers[INITIAL_OVERLAY]}


@pytest.mark.skipif(not _LOCAL_OK, reason="needs root and bubblewrap")
def test_the_cli_names_the_duty_an_environment_breaks(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from kwrl.cli import app

    env = f"{__name__}:SwappedInitial"
    args = ["sandbox", "conform", "--sandbox.environment", env, "--only", "verifier_phase",
            "--work", str(tmp_path)]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output
    assert "FAIL verifier_phase" in result.output and "initial_world_wrong" in result.output
    assert "failed: verifier_phase" in result.output
    report = json.loads((tmp_path / "conformance.json").read_text())
    assert {c["name"] for c in report["checks"]} == {"oracle:plain", "verifier_phase", "leftovers"}
