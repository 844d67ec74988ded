"""An OpenAI-compatible HTTP server over an in-process engine (`kwrl.llm.engines`) (what `kwrl serve` runs).

Routes (vLLM's shapes, so the same client talks to `kwrl serve` and a vLLM fleet):
- `POST /v1/completions`: `prompt` as text, token ids, or a list of either; `max_tokens`,
  `temperature`, `top_p`, `stop`, `seed`, `n`, `logprobs` (the sampled token's logprob per step;
  `top_logprobs` holds only that token), vLLM's `return_token_ids` (the choice then carries
  `prompt_token_ids` and `token_ids`). `session_id`, `cache_salt` and `user` are accepted and
  ignored: one process has one cache and no routing.
- `POST /v1/chat/completions`: `messages`, `tools` (rendered into the template; calls written in
  the server's tool-call format, `kwrl serve --tool_call_parser` (vLLM's `--tool-call-parser`): Hermes'
  `<tool_call>` JSON by default, `qwen3_xml` or `glm4` for those models, come back as OpenAI
  `tool_calls`, finish reason `tool_calls`, each call with an id of its own), `tool_choice`
  (`auto`; `none`; `required` or a named function force a call: the format's call opening,
  `call_prefix`, naming the function when it is named or the only tool, is written after the
  assistant's turn starts, so the model writes the rest; a sample that does not parse or calls
  a tool not offered is drawn again, at most `FORCED_TRIES` in all, then a 400 (the engine has
  no grammar to constrain a name among several);
  an unknown form or a name not among the tools is a 400), `logprobs`, `return_token_ids` (a forced
  call's opening is among the prompt's tokens). Message contents are tokenized with special tokens split
  (`tool_prompt.chat_prompt_ids`): a `<|im_end|>` written in a message is text, never a turn.
- `GET /v1/models`, `GET /health`; `POST /kwrl/load_weights {"path"}` loads safetensors weights
  between batches and returns the new `weight_version` (also in every response).

Context: a prompt that leaves no room in the context window is a 400 (vLLM's wording); a
completion cut by the window ends with `finish_reason: "length"`, `stop_reason: "context"`.
No streaming.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from kwrl.errors import KwrlError
from kwrl.llm.base import FinishReason, SamplingParams
from kwrl.llm.engines.base import EngineOutput, SamplingEngine
from kwrl.llm.formats import get_format
from kwrl.llm.tool_prompt import chat_prompt_ids, parse_tool_calls


class BadRequest(Exception):
    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def build_app(
    engine: SamplingEngine,
    served_name: str | None = None,
    tool_call_parser: str = "hermes",
    log: Callable[[str], None] | None = None,
) -> Starlette:
    """The ASGI app serving `engine` under model name `served_name` (any requested name is
    accepted); chat tool calls are rendered and parsed in format `tool_call_parser`
    (`kwrl.llm.formats`; a ValueError naming the known ones otherwise). `log`, when given, gets
    one line per request (`request_line`)."""
    name = served_name or engine.name
    fmt = get_format(tool_call_parser).name

    async def health(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "weight_version": engine.weight_version})

    async def models(_: Request) -> JSONResponse:
        card = {
            "id": name,
            "object": "model",
            "created": 0,
            "owned_by": "kwrl",
            "max_model_len": engine.max_context,
        }
        return JSONResponse({"object": "list", "data": [card]})

    async def completions(request: Request) -> JSONResponse:
        body = await _json(request)
        prompts = _prompts(engine, body.get("prompt"))
        params = _params(body, default_max=16)
        n = _int(body, "n", 1)
        want_logprobs = body.get("logprobs") is not None
        ids = bool(body.get("return_token_ids"))
        jobs = [(p, _nth(params, k)) for p in prompts for k in range(n)]
        outs = await _generate_all(engine, jobs)
        choices = []
        for i, ((prompt, _), out) in enumerate(zip(jobs, outs, strict=True)):
            choice: dict[str, Any] = {
                "index": i,
                "text": out.text,
                "logprobs": _completion_logprobs(engine, out) if want_logprobs else None,
                **_finish(out),
            }
            if ids:
                choice["prompt_token_ids"] = prompt
                choice["token_ids"] = out.token_ids
            choices.append(choice)
        used = sum(len(p) for p in prompts)
        return _response("text_completion", "cmpl", name, choices, used, outs, engine)

    async def chat(request: Request) -> JSONResponse:
        body = await _json(request)
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequest("messages: expected a non-empty list of chat messages")
        tools = body.get("tools") or None
        tools, prefix = forced_call(body.get("tool_choice"), tools, fmt)
        if "max_completion_tokens" in body and "max_tokens" not in body:
            body["max_tokens"] = body["max_completion_tokens"]
        params = _params(body, default_max=engine.max_context)
        prompt = chat_prompt_ids(engine.tokenizer, messages, tools, fmt=fmt)
        if prefix:  # the call's opening is the prompt's: the model continues inside a call
            prompt += list(engine.tokenizer.encode(prefix, add_special_tokens=False))
        _check_room(engine, prompt)
        n = _int(body, "n", 1)
        jobs = [(prompt, _nth(params, k)) for k in range(n)]
        outs = await _generate_all(engine, jobs)
        for attempt in range(1, FORCED_TRIES if prefix else 1):  # a forced call must parse
            bad = [
                k
                for k, o in enumerate(outs)
                if not calls_offered(chat_choice(k, o, tools, fmt, prefix), tools)
            ]
            if not bad:
                break
            again = [(prompt, _nth(params, k + attempt * n)) for k in bad]
            for k, o in zip(bad, await _generate_all(engine, again), strict=True):
                outs[k] = o
        ids = bool(body.get("return_token_ids"))
        choices = []
        for i, out in enumerate(outs):
            choice = chat_choice(i, out, tools, fmt, prefix)
            if prefix and not calls_offered(choice, tools):
                raise BadRequest(
                    f"tool_choice: the model wrote no parseable {fmt} call of the tools "
                    f"{_tool_names(tools)} in {FORCED_TRIES} samples (name the function to force "
                    "its name)",
                    code="tool_call_not_parsed",
                )
            if body.get("logprobs"):
                choice["logprobs"] = {"content": _chat_logprobs(engine, out)}
            if ids:
                choice["prompt_token_ids"] = prompt
                choice["token_ids"] = out.token_ids
            choices.append(choice)
        return _response("chat.completion", "chatcmpl", name, choices, len(prompt), outs, engine)

    async def load_weights(request: Request) -> JSONResponse:
        body = await _json(request)
        path = body.get("path")
        if not isinstance(path, str):
            raise BadRequest("path: expected the path of a safetensors file or folder")
        version = await asyncio.to_thread(engine.load_weights, path)
        return JSONResponse({"weight_version": version})

    async def on_bad_request(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, BadRequest | KwrlError)
        message = exc.message if isinstance(exc, BadRequest) else str(exc)
        code = exc.code if isinstance(exc, BadRequest) else None
        err = {"message": message, "type": "BadRequestError", "param": None, "code": code or 400}
        return JSONResponse({"object": "error", "error": err, **err}, status_code=400)

    def logged(handler: Handler) -> Handler:
        if log is None:
            return handler

        async def run(request: Request) -> Response:
            t0 = time.perf_counter()
            resp: Response | None = None
            try:
                resp = await handler(request)
            except (BadRequest, KwrlError) as e:
                resp = await on_bad_request(request, e)
            finally:
                took = time.perf_counter() - t0
                assert log is not None
                log(request_line(request.method, request.url.path, resp, took))
            assert resp is not None  # an exception other than a bad request went on up
            return resp

        return run

    return Starlette(
        routes=[
            Route("/health", logged(health), methods=["GET"]),
            Route("/v1/models", logged(models), methods=["GET"]),
            Route("/v1/completions", logged(completions), methods=["POST"]),
            Route("/v1/chat/completions", logged(chat), methods=["POST"]),
            Route("/kwrl/load_weights", logged(load_weights), methods=["POST"]),
        ],
        exception_handlers={BadRequest: on_bad_request, KwrlError: on_bad_request},
    )


Handler = Callable[[Request], Awaitable[Response]]


def request_line(method: str, path: str, resp: Response | None, seconds: float) -> str:
    """`kwrl-serve POST /v1/chat/completions 200 1.84 s tokens 312+41`: one request, its status
    (500 when it raised), seconds and token counts (prompt + completion, where it has usage)."""
    status = 500 if resp is None else resp.status_code
    line = f"kwrl-serve {method} {path} {status} {seconds:.2f} s"
    if resp is not None and path.endswith("completions") and status == 200:
        usage = json.loads(bytes(resp.body)).get("usage") or {}
        line += f" tokens {usage.get('prompt_tokens', 0)}+{usage.get('completion_tokens', 0)}"
    return line


async def _json(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError as e:
        raise BadRequest(f"request body is not JSON: {e}") from e
    if not isinstance(body, dict):
        raise BadRequest("request body: expected a JSON object")
    if body.get("stream"):
        raise BadRequest("stream: streaming is not supported by kwrl serve")
    return body


def _int(body: dict[str, Any], key: str, default: int) -> int:
    value = body.get(key, default)
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise BadRequest(f"{key}: expected a positive integer, got {value!r}")
    return value


def _params(body: dict[str, Any], *, default_max: int) -> SamplingParams:
    stop = body.get("stop") or []
    if isinstance(stop, str):
        stop = [stop]
    temperature = body.get("temperature")
    top_p = body.get("top_p")
    try:
        return SamplingParams(
            max_tokens=_int(body, "max_tokens", default_max),
            temperature=1.0 if temperature is None else temperature,
            top_p=1.0 if top_p is None else top_p,
            stop=stop,
            seed=body.get("seed"),
        )
    except ValueError as e:
        raise BadRequest(f"sampling parameters: {e}") from e


def _nth(params: SamplingParams, k: int) -> SamplingParams:
    """The k-th of n samples: distinct seeds when a seed is given, else independent draws."""
    if k == 0 or params.seed is None:
        return params
    return params.model_copy(update={"seed": params.seed + k})


def _prompts(engine: SamplingEngine, prompt: Any) -> list[list[int]]:
    """vLLM's prompt forms: "text", [ids], ["text", ...], [[ids], ...]."""
    if isinstance(prompt, str):
        items: list[Any] = [prompt]
    elif isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
        items = [prompt]
    elif isinstance(prompt, list) and prompt:
        items = prompt
    else:
        raise BadRequest("prompt: expected text, a list of token ids, or a list of either")
    out: list[list[int]] = []
    for item in items:
        if isinstance(item, str):
            ids = list(engine.tokenizer.encode(item, add_special_tokens=True))
        elif isinstance(item, list) and item and all(isinstance(t, int) for t in item):
            ids = list(item)
        else:
            raise BadRequest("prompt: each prompt must be text or a non-empty list of token ids")
        _check_room(engine, ids)
        out.append(ids)
    return out


def _check_room(engine: SamplingEngine, ids: list[int]) -> None:
    if len(ids) >= engine.max_context:
        raise BadRequest(
            f"This model's maximum context length is {engine.max_context} tokens. However, your "
            f"request has {len(ids)} input tokens. Please reduce the length of the input messages.",
            code="context_length_exceeded",
        )


FORCED_TRIES = 3
"""Samples a forced tool call (`tool_choice` required or named) gets to parse before a 400."""

CHOICE_FORMS = '"auto", "none", "required" or {"type": "function", "function": {"name": NAME}}'


def forced_call(
    tool_choice: Any, tools: list[dict[str, Any]] | None, fmt: str
) -> tuple[list[dict[str, Any]] | None, str]:
    """A request's `tool_choice` -> (the tools to render, the text that opens the forced call).

    `auto` (or none given): no prefix; `none`: no tools; `required`: the format's call opening
    (naming the tool when only one is offered); a named function: the opening of that call, so
    the model writes only its arguments. Anything else, a forced call without tools or a name not
    among them is a BadRequest (400)."""
    if tool_choice in (None, "auto"):
        return tools, ""
    if tool_choice == "none":
        return None, ""
    names = _tool_names(tools)
    if tool_choice == "required":
        name = names[0] if len(names) == 1 else None
    elif (
        isinstance(tool_choice, dict)
        and tool_choice.get("type") == "function"
        and isinstance(tool_choice.get("function"), dict)
        and isinstance(tool_choice["function"].get("name"), str)
    ):
        name = tool_choice["function"]["name"]
        if name not in names:
            raise BadRequest(f"tool_choice: function {name!r} is not among the tools {names}")
    else:
        raise BadRequest(f"tool_choice: expected {CHOICE_FORMS}, got {tool_choice!r}")
    if not names:
        raise BadRequest(f"tool_choice {tool_choice!r}: the request offers no tools")
    try:
        return tools, get_format(fmt).call_prefix(name)
    except NotImplementedError as e:
        raise BadRequest(f"tool_choice: {e}") from None


def chat_choice(
    index: int,
    out: EngineOutput,
    tools: list[dict[str, Any]] | None,
    fmt: str = "hermes",
    prefix: str = "",
) -> dict[str, Any]:
    """One chat completion choice: the sampled text (after `prefix`,
    a forced call's opening written into the prompt), its tool calls in format `fmt` split out as
    OpenAI `tool_calls` when the request offered tools (finish reason `tool_calls` then), each
    with an id of its own."""
    text = prefix + out.text
    content, calls = parse_tool_calls(text, fmt, tools) if tools else (text, [])
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        for call in calls:
            call["id"] = f"call_{uuid.uuid4().hex[:24]}"
        message["content"] = content or None
        message["tool_calls"] = calls
    choice: dict[str, Any] = {"index": index, "message": message, **_finish(out)}
    if calls and out.finish_reason == FinishReason.STOP:
        choice["finish_reason"] = "tool_calls"
    return choice


def calls_offered(choice: dict[str, Any], tools: list[dict[str, Any]] | None) -> bool:
    """Whether a chat choice calls tools, each of them one `tools` offers (a forced call's test)."""
    calls = choice["message"].get("tool_calls") or []
    offered = set(_tool_names(tools))
    return bool(calls) and all(c["function"]["name"] in offered for c in calls)


def _tool_names(tools: list[dict[str, Any]] | None) -> list[str]:
    return [
        t["function"].get("name")
        for t in tools or []
        if isinstance(t, dict) and isinstance(t.get("function"), dict)
    ]


async def _generate_all(
    engine: SamplingEngine, jobs: list[tuple[list[int], SamplingParams]]
) -> list[EngineOutput]:
    return list(await asyncio.gather(*(engine.generate(p, sp) for p, sp in jobs)))


def _finish(out: EngineOutput) -> dict[str, Any]:
    if out.finish_reason == FinishReason.CONTEXT:
        return {"finish_reason": "length", "stop_reason": "context"}
    return {"finish_reason": out.finish_reason.value, "stop_reason": None}


def _token_strings(engine: SamplingEngine, out: EngineOutput) -> list[str]:
    return [str(engine.tokenizer.decode([t])) for t in out.token_ids]


def _completion_logprobs(engine: SamplingEngine, out: EngineOutput) -> dict[str, Any]:
    tokens = _token_strings(engine, out)
    offsets, pos = [], 0
    for t in tokens:
        offsets.append(pos)
        pos += len(t)
    return {
        "tokens": tokens,
        "token_logprobs": out.logprobs,
        "top_logprobs": [{t: lp} for t, lp in zip(tokens, out.logprobs, strict=True)],
        "text_offset": offsets,
    }


def _chat_logprobs(engine: SamplingEngine, out: EngineOutput) -> list[dict[str, Any]]:
    tokens = _token_strings(engine, out)
    return [
        {
            "token": t,
            "logprob": lp,
            "bytes": list(t.encode("utf-8")),
            "top_logprobs": [{"token": t, "logprob": lp, "bytes": list(t.encode("utf-8"))}],
        }
        for t, lp in zip(tokens, out.logprobs, strict=True)
    ]


def _response(
    obj: str,
    prefix: str,
    name: str,
    choices: list[dict[str, Any]],
    prompt_tokens: int,
    outs: list[EngineOutput],
    engine: SamplingEngine,
) -> JSONResponse:
    completion_tokens = sum(len(o.token_ids) for o in outs)
    return JSONResponse(
        {
            "id": f"{prefix}-{uuid.uuid4().hex}",
            "object": obj,
            "created": int(time.time()),
            "model": name,
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
            "kwrl_weight_version": max(
                (o.weight_version for o in outs), default=engine.weight_version
            ),
        }
    )
