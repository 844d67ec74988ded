"""A policy server on loopback, for tests and benchmarks: the other end of a `http://...#NAME` spec.

`LoopbackPolicy` is a stdlib `ThreadingHTTPServer` on 127.0.0.1 that speaks the two routes kwrl's
token client uses (`kwrl.llm.openai_completions.OpenAICompletionsClient`, vLLM's shapes):
`GET /v1/models` (the served name and its `max_model_len`) and `POST /v1/completions` with a
token-id prompt, answered with `token_ids` and `token_logprobs`; and `POST /v1/chat/completions`,
what a `litellm:openai/NAME` policy with `api_base` = `url` asks (the turn's text as the message's
content, tool calls written in it, no `usage`, as some OpenAI-compatible servers answer). It
samples nothing: each trial replays a script of assistant turns, `script(first prompt's text)`,
one turn a request (then "Done." once it has run out): on the completions route the trial is its
`X-Session-ID` and the script is chosen on its first request; on the chat route the turn is the
one after the assistant messages the request holds. A turn's ids are the tokenizer's
for its text plus the end-of-turn token, as a sampler that stopped there returns them, so the
agent's TITO record is real.

`delay_s` holds every answer that long (a slow endpoint, as the soak's fault injector plays it);
a turn whose text is `HANG` is answered only by `close()`; every request at
`/fault/policy_delay/v1` waits `fault_delay_s` more (the fault injector's `policy_delay`,
`kwrl.rollout.faults`). The chat route needs no tokenizer
(`tokenizer=None`). A policy over HTTP that
answers at once lets a test put the whole agent timeout on the tools (issue: a tool call cut by the
clock was charged to the policy endpoint's first turn).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from kwrl.net import LoopbackServer, send_json

_CLOSED = (503, {"error": {"message": "the loopback policy was closed"}})

HANG = "<kwrl-loopback: the endpoint never answers this turn>"
"""A script turn that is never answered (until `close()`): a hung endpoint."""


class LoopbackPolicy(LoopbackServer):
    """A scripted completions server on 127.0.0.1 (see the module doc); `close()` stops it."""

    def __init__(
        self,
        tokenizer: Any | None,
        script: Callable[[str], list[str]] | list[str],
        *,
        name: str = "loopback",
        max_model_len: int = 32768,
        delay_s: float = 0.0,
    ) -> None:
        self.tokenizer = tokenizer
        self.script = script if callable(script) else (lambda _prompt, s=list(script): list(s))
        """The turns a session replays, from its first prompt's text."""
        self.name = name
        self.max_model_len = max_model_len
        self.delay_s = delay_s
        """Seconds every answer waits before going out."""
        self.fault_delay_s = 5.0
        """Seconds more every answer at `/fault/policy_delay/v1` waits (the fault injector's
        `policy_delay`)."""
        self.requests: list[dict[str, Any]] = []
        """Every completions request: {"session", "prompt_tokens", "max_tokens"}."""
        self._sessions: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        self.end_id = tokenizer.convert_tokens_to_ids("<|im_end|>") if tokenizer else None
        policy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, obj: dict[str, Any]) -> None:
                send_json(self, status, obj)

            def do_GET(self) -> None:
                if self.path.removeprefix("/fault/policy_delay").rstrip("/") != "/v1/models":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                card = {"id": policy.name, "object": "model", "max_model_len": policy.max_model_len}
                self._send(200, {"object": "list", "data": [card]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                session = self.headers.get("X-Session-ID") or ""
                path = self.path
                if path.startswith("/fault/policy_delay/"):  # a slow endpoint for this trial
                    policy.release.wait(policy.fault_delay_s)
                    path = path.removeprefix("/fault/policy_delay")
                if path == "/v1/completions":
                    self._send(*policy.answer(body, session))
                elif path == "/v1/chat/completions":
                    self._send(*policy.answer_chat(body))
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

        super().__init__(Handler)

    def _turn(
        self, session: str, prompt: str, prompt_tokens: int, max_tokens: int, index: int | None
    ) -> str | None:
        """The session's next scripted turn (`index`: that turn of the script), after the answer's
        delay; None for a `HANG` turn (answered once `close()` released it)."""
        with self._lock:
            self.requests.append(
                {"session": session, "prompt_tokens": prompt_tokens, "max_tokens": max_tokens}
            )
            turns = self._sessions.get(session) if index is None else None
        if turns is None:
            turns = list(self.script(prompt))
            if index is not None:
                turns = turns[index:]
            else:
                with self._lock:
                    self._sessions[session] = turns
        text = turns.pop(0) if turns else "Done."
        if self.delay_s:
            self.release.wait(self.delay_s)
        if text == HANG:
            self.release.wait()
            return None
        return text

    def answer(self, body: dict[str, Any], session: str) -> tuple[int, dict[str, Any]]:
        """(HTTP status, JSON answer) to one completions request of `session`."""
        if self.tokenizer is None:
            return 400, {"error": {"message": "this loopback policy has no tokenizer: chat only"}}
        prompt = [int(t) for t in body.get("prompt") or []]
        max_tokens = int(body.get("max_tokens") or 16)
        prompt_text = self.tokenizer.decode(prompt)
        text = self._turn(session, prompt_text, len(prompt), max_tokens, None)
        if text is None:
            return _CLOSED
        ids = [*self.tokenizer.encode(text, add_special_tokens=False), self.end_id]
        finish = "stop"
        if len(ids) > max_tokens:
            ids, finish = ids[:max_tokens], "length"
            text = self.tokenizer.decode(ids)
        choice = {
            "index": 0,
            "text": text,
            "token_ids": ids,
            "logprobs": {"token_logprobs": [-0.01] * len(ids)},
            "finish_reason": finish,
        }
        usage = {"prompt_tokens": len(prompt), "completion_tokens": len(ids)}
        return 200, {"object": "text_completion", "choices": [choice], "usage": usage}

    def answer_chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """(HTTP status, JSON answer) to one chat-completions request: the turn after the
        assistant messages it holds, of the script its first two messages (system, task) pick."""
        messages = body.get("messages") or []
        first = "\n".join(str(m.get("content") or "") for m in messages[:2])
        done = sum(1 for m in messages if m.get("role") == "assistant")
        text = self._turn("chat", first, 0, int(body.get("max_tokens") or 16), done)
        if text is None:
            return _CLOSED
        message = {"role": "assistant", "content": text}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        return 200, {"object": "chat.completion", "model": body.get("model"), "choices": [choice]}

    @property
    def spec(self) -> str:
        """The policy spec that names this server (`URL#NAME`)."""
        return f"{self.url}#{self.name}"
