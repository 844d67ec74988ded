"""The verifier phase reaches the judge and nothing else on the host (`kwrl.sandbox.network.egress`).

A real sandbox (`LocalEnvironment`) enters its verifier phase as harbor makes it (uploading
/tests), then runs commands there as harbor runs test.sh: the judge's loopback endpoint answers
through the egress proxy; another loopback server (another trial's gateway, the policy server)
gets nothing, neither through the proxy (403, recorded in sandbox.json) nor directly (the phase has
a network namespace of its own); under harbor's `no-network` there is no way out at all.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from harbor.models.task.config import NetworkMode, NetworkPolicy

from kwrl.sandbox.conformance.testing import (
    loopback_listener,
    make_environment,
    make_task,
    make_world,
)
from kwrl.sandbox.local import LocalEnvironment

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("bwrap") is None, reason="needs root and bubblewrap"
)

# Inside the verifier phase: one request through the proxy variables (as httpx and litellm
# honour them), one connection straight to the port.
_PROBE = """
import os, socket, sys, urllib.error, urllib.request
url = sys.argv[1]
try:
    urllib.request.urlopen(url + "/probe", timeout=10)
    print("via-proxy", 200)
except urllib.error.HTTPError as e:
    print("via-proxy", e.code)
except OSError as e:
    print("via-proxy", type(e).__name__)
host, port = url.split("//")[1].split(":")
try:
    socket.create_connection((host, int(port)), timeout=5).close()
    print("direct", "connected")
except OSError as e:
    print("direct", type(e).__name__)
print("proxy-env", os.environ.get("HTTP_PROXY", "-"))
"""


def _probe(url: str) -> str:
    return f"python3 -I -c '{_PROBE}' {url}"


def _lines(out: str) -> dict[str, str]:
    return {k: v for k, _, v in (ln.partition(" ") for ln in out.splitlines()) if v}


async def _verifier_env(tmp_path: Path, policy: NetworkPolicy | None = None) -> LocalEnvironment:
    world = make_world(tmp_path).name
    task = make_task(tmp_path, "t", world_id=world)
    env = make_environment(task, tmp_path / "trial", sandbox_dir=str(tmp_path / "sbx"))
    await env.start(force_build=False)
    if policy is not None:
        await env.set_network_policy(policy)
    await env.upload_dir(task / "tests", "/tests")  # harbor's cue: the verifier phase starts
    return env


async def test_the_verifier_reaches_the_judge_and_nothing_else_on_the_host(tmp_path: Path) -> None:
    with loopback_listener() as (judge, judge_hits), loopback_listener() as (other, other_hits):
        env = await _verifier_env(tmp_path)
        try:
            judged = {"KWRL_JUDGE": f"{judge}/v1#judge"}
            r = await env.exec(_probe(judge), env=judged)
            seen = _lines(r.stdout or "")
            assert seen["via-proxy"] == "404", r  # the judge's server answered (404 for /probe)
            assert seen["direct"] in ("ConnectionRefusedError", "OSError"), r
            assert seen["proxy-env"].startswith("http://127.0.0.1:"), r
            assert judge_hits == ["/probe"]

            r = await env.exec(_probe(other), env=judged)
            seen = _lines(r.stdout or "")
            assert seen["via-proxy"] == "403", r  # not the judge: refused by the proxy
            assert seen["direct"] in ("ConnectionRefusedError", "OSError"), r
            assert other_hits == []

            # Without a judge, the host's loopback is closed even under harbor's `public` mode.
            r = await env.exec(_probe(judge))
            assert _lines(r.stdout or "")["via-proxy"] == "403", r
            assert judge_hits == ["/probe"]
        finally:
            await env.stop(delete=True)
    report = json.loads((tmp_path / "trial" / "sandbox.json").read_text())
    other_port = other.rsplit(":", 1)[1]
    assert report["egress"]["connected"] == [judge.removeprefix("http://")]
    assert f"127.0.0.1:{other_port}" in report["egress"]["denied"]


async def test_no_network_leaves_the_verifier_without_a_way_out(tmp_path: Path) -> None:
    with loopback_listener() as (judge, judge_hits):
        env = await _verifier_env(tmp_path, NetworkPolicy(network_mode=NetworkMode.NO_NETWORK))
        try:
            r = await env.exec(_probe(judge), env={"KWRL_JUDGE": f"{judge}/v1#judge"})
            seen = _lines(r.stdout or "")
            assert seen["proxy-env"] == "-", r
            assert seen["via-proxy"] != "404" and seen["direct"] != "connected", r
        finally:
            await env.stop(delete=True)
        assert judge_hits == []
