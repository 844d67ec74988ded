"""`kwrl serve MODEL`: an OpenAI-compatible server (vLLM's completions shapes) over the engine.

Loads MODEL (a packaged name, a local folder or a hub id; default the packaged SmolLM2-135M)
into an in-process `Engine`, binds HOST:PORT (port 0 picks a free one) and, once requests are
accepted, prints one line on stdout: `kwrl-serve ready http://HOST:PORT/v1`. On stderr: a line
when the model starts loading and when it is loaded (with its seconds), then one line per request
(`kwrl.llm.server.request_line`: method, path, status, seconds, prompt+completion tokens). Its
flags are `ServeConfig`'s fields (`kwrl.cli_config`): the engine's (`EngineConfig`: `--dtype`,
`--device`, `--max_batch_size`, `--prefix_cache_mb`, `--continuous/--no-continuous`, ...) and the
server's (`--port`, `--host`, `--served_name`, `--tool_call_parser`).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from pydantic import Field, field_validator

from kwrl.cli_config import build_config, config_flags
from kwrl.llm.engines.local import EngineConfig
from kwrl.llm.packaged import DEFAULT_MODEL


class ServeConfig(EngineConfig):
    """`kwrl serve`'s config: the engine it loads (`EngineConfig`) and where and how it answers."""

    port: int = Field(default=8000, ge=0, le=65535)
    """TCP port (0 picks a free one)."""
    host: str = "127.0.0.1"
    """Interface to bind (loopback by default)."""
    served_name: str | None = None
    """Model name reported by /v1/models (default: MODEL)."""
    tool_call_parser: str = "hermes"
    """Tool-call format of chat completions (vLLM's setting): hermes (Qwen2.5, SmolLM2), qwen3_xml
    (Qwen3-Coder, Qwen3.5) or glm4; tools a model's template does not render are written in it,
    and calls in it come back as OpenAI tool_calls."""

    @field_validator("tool_call_parser")
    @classmethod
    def _known_format(cls, value: str) -> str:
        from kwrl.llm.formats import get_format

        get_format(value)  # a ValueError naming the known ones
        return value


@config_flags(ServeConfig, exclude={"model"}, switches={"continuous"})
def serve(
    model: Annotated[
        str, typer.Argument(help="Packaged model name, local HF folder, or hub id.")
    ] = DEFAULT_MODEL,
    *,
    overrides: dict[str, Any],
) -> None:
    """Serve MODEL over HTTP: /v1/completions, /v1/chat/completions, /v1/models, /health."""
    import os
    import sys
    import time

    # Idle OpenMP workers sleep instead of spinning: on a shared CPU, spinning workers of a
    # 2-thread torch ran ~8x slower (and burnt ~7x the CPU) than sleeping ones. Must precede torch.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import asyncio

    import uvicorn

    from kwrl.llm.engines.local import Engine
    from kwrl.llm.packaged import check_model
    from kwrl.llm.server import build_app

    cfg = build_config(ServeConfig, {**overrides, "model": model}, "kwrl serve")  # bad: exit 2
    check_model(model, "MODEL")  # a typo'd packaged name: one line, no network
    t0 = time.monotonic()
    print(f"kwrl-serve loading {model} ({cfg.dtype}, {cfg.device})", file=sys.stderr, flush=True)
    engine = Engine.from_config(cfg)
    print(
        f"kwrl-serve loaded {model} in {time.monotonic() - t0:.1f} s", file=sys.stderr, flush=True
    )

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    app = build_app(engine, cfg.served_name or model, cfg.tool_call_parser, log=log)
    from kwrl.net import bind_tcp

    host = cfg.host
    sock = bind_tcp(host, cfg.port)
    bound = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))

    async def announce() -> None:
        while not server.started:
            if server.should_exit:
                return
            await asyncio.sleep(0.01)
        url_host = f"[{host}]" if ":" in host else host
        print(f"kwrl-serve ready http://{url_host}:{bound}/v1", flush=True)

    async def main() -> None:
        await asyncio.gather(server.serve(sockets=[sock]), announce())

    try:
        asyncio.run(main())
    finally:
        engine.close()
