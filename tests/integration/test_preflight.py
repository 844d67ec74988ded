"""A mistake in a run's model, tokenizer or endpoints costs one line and seconds, before any trial
(`kwrl.rollout.preflight`), typed as a user types it through the `kwrl` console script.

Before: `--model engine:nosuch-model` retried the hub for 64 s and printed a 141-line traceback;
`--model http://127.0.0.1:9/v1#x` retried the hub for the tokenizer `x` for 2 min 39 s, then said
"no trial graded"; a dead judge was found trial by trial. Every run here goes through a proxy that
records connections: a packaged name must touch no network at all.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kwrl.net import bind_tcp

LIMIT_S = 60.0
"""The old code's hub retries ran past this; the new checks take a few seconds (done-when: 5 s,
unloaded; the bound here leaves room for a loaded machine)."""


class Proxy:
    """A listener standing in for the network: every connection to it is counted and closed."""

    def __init__(self) -> None:
        self.sock = bind_tcp("127.0.0.1", 0)
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.connections = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()


@pytest.fixture
def proxy() -> Iterator[Proxy]:
    p = Proxy()
    yield p
    p.sock.close()


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from kwrl.synth.generate import SynthConfig, generate

    cwd = tmp_path_factory.mktemp("user")
    generate(
        SynthConfig(out=cwd / "D", worlds=1, tasks_per_world=1, seed=3, workers=1, control=False),
        progress=False,
    )
    return cwd


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def kwrl(
    cwd: Path, proxy: Proxy, *argv: str, env: dict[str, str] | None = None
) -> tuple[int, str, float]:
    """`kwrl ARGV` in `cwd` as a process, every HTTP(S) request sent to `proxy`: (rc, stderr, s)."""
    full = {
        k: v for k, v in os.environ.items() if not k.startswith(("HF_HUB_OFFLINE", "KWRL_DEBUG"))
    }
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        full[var] = proxy.url
    full["NO_PROXY"] = full["no_proxy"] = ""
    full.update(env or {})
    t0 = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-m", "kwrl.cli", *argv], cwd=cwd, env=full, capture_output=True,
        text=True, timeout=LIMIT_S,
    )  # fmt: skip
    return r.returncode, r.stderr, time.monotonic() - t0


def task(work: Path) -> str:
    return "D/tasks/" + next((work / "D" / "tasks").iterdir()).name


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["trial", "run", "TASK", "--model", "engine:nosuch-model", "--out", "T"], "nosuch-model"),
        (["rollout", "D", "--model", "engine:smolm2", "--out", "R"], "did you mean 'smollm2'"),
        (["eval", "D", "--model", "engine:nosuch-model", "--out", "E"], "nosuch-model"),
        (
            [
                "trial",
                "run",
                "TASK",
                "--model",
                "engine:smollm2",
                "--tokenizer",
                "nosuch",
                "--out",
                "T",
            ],
            "--tokenizer 'nosuch'",
        ),
    ],
)
def test_unknown_packaged_name_lists_the_known_ones_offline(
    work: Path, proxy: Proxy, argv: list[str], names: str
) -> None:
    argv = [task(work) if a == "TASK" else a for a in argv]
    rc, err, took = kwrl(work, proxy, *argv)
    lines = err.strip().splitlines()
    assert rc == 2, err
    assert len(lines) == 1, err
    assert names in lines[0] and "smollm2-135m" in lines[0] and "qwen2.5-coder-0.5b" in lines[0]
    assert "Traceback" not in err
    assert proxy.connections == 0, "a packaged name touched the network"
    assert took < LIMIT_S
    assert not any((work / d).exists() for d in ("T", "R", "E")), "nothing is written"


def test_dead_policy_endpoint_is_one_line_with_its_error(work: Path, proxy: Proxy) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    env = {"NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}  # the endpoint itself, not the hub
    rc, err, _ = kwrl(
        work, proxy, "trial", "run", task(work), "--model", f"{url}#x", "--out", "T", env=env
    )
    assert rc == 2, err
    assert err.strip().splitlines() == [
        f"error: --model: endpoint {url} cannot be reached: ConnectError: [Errno 111] Connection refused"
    ]
    assert proxy.connections == 0


def test_served_name_is_the_tokenizer_and_is_checked(work: Path, proxy: Proxy) -> None:
    """A live endpoint whose served name is no tokenizer kwrl can load: said before any trial
    (before: every trial retried the hub for `x`, then 'no trial graded')."""
    from http.server import BaseHTTPRequestHandler

    from kwrl.net import LoopbackServer  # a live HTTP server: any answer means it is up

    with LoopbackServer(BaseHTTPRequestHandler) as server:
        env = {"NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
        rc, err, _ = kwrl(
            work, proxy, "rollout", "D", "--model", f"{server.url}#x", "--out", "R", env=env
        )
    assert rc == 2, err
    (line,) = err.strip().splitlines()
    assert "its served name (the tokenizer) 'x'" in line and "smollm2-135m" in line
    assert proxy.connections == 0


def test_dead_judge_endpoint_stops_the_run(work: Path, proxy: Proxy) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    env = {"NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
    rc, err, _ = kwrl(
        work, proxy, "eval", "D", "--model", "oracle", "--judge", f"{url}#j", "--out", "E", env=env
    )
    assert rc == 2, err
    (line,) = err.strip().splitlines()
    assert line.startswith(f"error: --judge: endpoint {url} cannot be reached: ConnectError")
    assert not (work / "E").exists()


@pytest.mark.parametrize("how", ["flag", "flag-first", "env"])
def test_debug_shows_the_traceback(work: Path, proxy: Proxy, how: str) -> None:
    argv = ["trial", "run", task(work), "--model", "engine:nosuch-model", "--out", "T"]
    env = {"KWRL_DEBUG": "1"} if how == "env" else {}
    argv = {"flag": [*argv, "--debug"], "flag-first": ["--debug", *argv], "env": argv}[how]
    rc, err, _ = kwrl(work, proxy, *argv, env=env)
    assert rc == 1, err
    assert "Traceback" in err and "kwrl.errors.ConfigError: --model 'nosuch-model'" in err


def test_version(work: Path, proxy: Proxy) -> None:
    from kwrl import __version__

    r = subprocess.run(
        [sys.executable, "-m", "kwrl.cli", "--version"], capture_output=True, text=True
    )
    assert r.returncode == 0 and r.stdout.strip() == f"kwrl {__version__}"


def test_serve_unknown_model_is_one_line(work: Path, proxy: Proxy) -> None:
    rc, err, _ = kwrl(work, proxy, "serve", "smollm", "--port", "0")
    assert rc == 2, err
    (line,) = err.strip().splitlines()
    assert "MODEL 'smollm'" in line and "smollm2-135m" in line
    assert proxy.connections == 0
