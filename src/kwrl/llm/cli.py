"""`kwrl serve MODEL`: an OpenAI-compatible server (vLLM's completions shapes) over the engine.

Loads MODEL (a packaged name, a local folder or a hub id; default the packaged SmolLM2-135M)
into an in-process `Engine`, binds HOST:PORT (port 0 picks a free one) and, once requests are
accepted, prints one line on stdout: `kwrl-serve ready http://HOST:PORT/v1`. On stderr: a line
when the model starts loading and when it is loaded (with its seconds), then one line per request
(`kwrl.llm.server.request_line`: method, path, status, seconds, prompt+completion tokens). Each
flag takes its dashed or its underscored spelling (`--max-batch-size`, `--max_batch_size`).
"""

from __future__ import annotations

import typer

from kwrl.llm.packaged import DEFAULT_MODEL


def serve(
    model: str = typer.Argument(
        DEFAULT_MODEL, help="Packaged model name, local HF folder, or hub id."
    ),
    port: int = typer.Option(8000, help="TCP port (0 picks a free one)."),
    host: str = typer.Option("127.0.0.1", help="Interface to bind (loopback by default)."),
    served_name: str | None = typer.Option(
        None, "--served-name", "--served_name", help="Model name reported by /v1/models."
    ),
    dtype: str = typer.Option("float32", help="float32, bfloat16 or float16."),
    device: str = typer.Option("cpu", help="torch device, e.g. cpu or cuda:0."),
    max_batch_size: int = typer.Option(
        8, "--max-batch-size", "--max_batch_size", help="Most requests decoded together."
    ),
    batch_wait_ms: float = typer.Option(
        5.0,
        "--batch-wait-ms",
        "--batch_wait_ms",
        help="Wait for more requests before a batch (ms).",
    ),
    continuous: bool = typer.Option(
        True,
        "--continuous/--static",
        help="Requests that arrive mid-batch join it at the next decode step (--static: they wait "
        "for the next batch).",
    ),
    max_context: int | None = typer.Option(
        None, "--max-context", "--max_context", help="Context window (default: the model's)."
    ),
    threads: int | None = typer.Option(None, help="torch CPU threads (default: torch's choice)."),
    tool_call_parser: str = typer.Option(
        "hermes",
        "--tool-call-parser",
        "--tool_call_parser",
        help="Tool-call format of chat completions (vLLM's flag): hermes (Qwen2.5, SmolLM2), "
        "qwen3_xml (Qwen3-Coder, Qwen3.5) or glm4; tools a model's template does not render are "
        "written in it, and calls in it come back as OpenAI tool_calls.",
    ),
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

    from kwrl.llm.engines.local import Engine, EngineConfig
    from kwrl.llm.formats import get_format
    from kwrl.llm.packaged import check_model
    from kwrl.llm.server import build_app

    try:
        get_format(tool_call_parser)
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--tool-call-parser") from None
    check_model(model, "MODEL")  # a typo'd packaged name: one line, no network
    cfg = EngineConfig(
        model=model,
        dtype=dtype,  # type: ignore[arg-type]
        device=device,
        max_batch_size=max_batch_size,
        batch_wait_ms=batch_wait_ms,
        continuous=continuous,
        max_context=max_context,
        threads=threads,
    )
    t0 = time.monotonic()
    print(f"kwrl-serve loading {model} ({dtype}, {device})", file=sys.stderr, flush=True)
    engine = Engine.from_config(cfg)
    print(
        f"kwrl-serve loaded {model} in {time.monotonic() - t0:.1f} s", file=sys.stderr, flush=True
    )

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    app = build_app(engine, served_name or model, tool_call_parser, log=log)
    from kwrl.net import bind_tcp

    sock = bind_tcp(host, port)
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
