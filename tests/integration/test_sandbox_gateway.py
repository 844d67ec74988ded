"""The world gateway runs inside the sandbox: reachable at mcp_url on the host and at KWRL_GATEWAY inside.

Slow: the first gateway of a process warms the zygote (imports and builds every app), 20-80 s on a
shared 2-core machine. Run with `-m slow`.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from kwrl.sandbox.conformance.testing import make_dataset, make_environment

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("bwrap") is None, reason="needs root and bubblewrap"
    ),
]


@pytest.mark.parametrize("mode", ["fork", "exec"])
async def test_the_gateway_answers_on_mcp_url_and_inside(tmp_path: Path, mode: str) -> None:
    from kwrl.worlds.client import GatewayClient

    task = make_dataset(tmp_path / "ds", 1)[0]
    env = make_environment(
        task, tmp_path / "trial", sandbox_dir=str(tmp_path / "sbx"), gateway_mode=mode
    )
    await env.start(force_build=False)
    try:
        assert env.mcp_url is not None and env.mcp_url.startswith("http://127.0.0.1:")
        async with GatewayClient(env.mcp_url, timeout_s=60) as gw:
            names = [t.name for t in await gw.list_tools()]
            listing = await gw.call_tool("filesystem_list_files", {"path": "/"})
        assert "filesystem_list_files" in names and "mail_send_mail" in names
        assert "readme.txt" in str(listing.content)
        r = await env.exec('curl -sf --unix-socket "${KWRL_GATEWAY#unix://}" http://gateway/health')
        assert r.return_code == 0, r.stderr
        assert '"status":"ok"' in (r.stdout or "").replace(" ", "")
        # non-dumpable: agent code cannot read the gateway's environ or memory
        r = await env.exec(
            "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline | grep -q 'kwrl[.]sandbox[.]' || continue; "
            "( exec 3< $p/mem ) 2> /dev/null && echo MEM-OPEN; "
            "cat $p/environ > /dev/null 2>&1 && echo ENVIRON-READ || echo DENIED; done"
        )
        assert r.stdout.split() == ["DENIED"], r.stdout
        cg = env.cgroups
        assert cg is not None and len(cg.pids("sandbox")) >= 3  # bwrap, the init (pid 1), gateway
    finally:
        await env.stop(delete=True)
    assert env.root is not None and not env.root.exists()
