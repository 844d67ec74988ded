"""The judge's HTTP endpoint, faked: a real OpenAI-compatible chat-completions server on loopback.

`FakeJudge` is the one faked seam (AGENTS.md): a stdlib ThreadingHTTPServer speaking the
chat-completions protocol on 127.0.0.1. It records every request, plays scripted faults first
(an HTTP status such as `429`, `500`, `401` with a plain error body; `"malformed"`,
`"wrong_schema"`, `"hang"`; a provider's own error answer by name, `ERROR_FAULTS`; `"filtered"`, a
200 whose `finish_reason` is `content_filter` and whose content is empty), then answers with a
verdict decided by `decide` (default: the criterion's quoted expectation appears in the prompt's
agent output). Two standing modes play a real model's limits on every request without a script:
`context_chars` (a prompt longer than that overflows: vLLM's 400) and `refuse_marker` (a prompt
holding that text is refused: Azure's content-filter 400). tests/conftest.py serves one per test
as the `judge` fixture; this module sits beside it so any test imports it by name
(`from fake_judge import FakeJudge`).
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Fault = int | str

_VLLM_OVERFLOW = (
    "This model's maximum context length is 32768 tokens. However, you requested 41210 tokens "
    "(37114 in the messages, 4096 in the completion). Please reduce the length of the messages "
    "or completion."
)
_AZURE_FILTER = (
    "The response was filtered due to the prompt triggering Azure OpenAI's content management "
    "policy. Please modify your prompt and retry."
)
ERROR_FAULTS: dict[str, tuple[int, dict[str, Any]]] = {
    # vLLM's OpenAI server (recent releases nest the error; the code is the HTTP status)
    "overflow": (400, {"error": {"message": _VLLM_OVERFLOW, "type": "BadRequestError",
                                 "param": None, "code": 400}}),
    # older vLLM: a flat body, and its other wording ("... maximum model length ...")
    "overflow_flat": (400, {"object": "error", "type": "BadRequestError", "param": None,
                            "code": 400, "message": "The decoder prompt (length 40012) is longer "
                            "than the maximum model length of 32768. Make sure that `max_model_len` "
                            "is no smaller than the number of text tokens plus multimodal tokens."}),
    # OpenAI
    "overflow_openai": (400, {"error": {"message": "This model's maximum context length is 128000 "
                                        "tokens. However, your messages resulted in 131072 tokens. "
                                        "Please reduce the length of the messages.",
                                        "type": "invalid_request_error", "param": "messages",
                                        "code": "context_length_exceeded"}}),
    # Azure OpenAI's content filter on the prompt
    "content_filter": (400, {"error": {"message": _AZURE_FILTER, "type": None, "param": "prompt",
                                       "code": "content_filter", "status": 400,
                                       "innererror": {"code": "ResponsibleAIPolicyViolation",
                                                      "content_filter_result": {
                                                          "violence": {"filtered": True,
                                                                       "severity": "high"}}}}}),
    # OpenAI's safety system
    "content_policy": (400, {"error": {"message": "Your request was rejected as a result of our "
                                       "safety system.", "type": "invalid_request_error",
                                       "param": None, "code": "content_policy_violation"}}),
}  # fmt: skip
"""Provider error answers a fault can name: (status, JSON body) as the provider sends them."""


def agent_output(user_prompt: str) -> str:
    m = re.search(r"<AGENT_OUTPUT>\n(.*)\n</AGENT_OUTPUT>", user_prompt, re.S)
    return m.group(1) if m else ""


def criterion_of(user_prompt: str) -> str:
    m = re.search(r"<CRITERION>\n(.*)\n</CRITERION>", user_prompt, re.S)
    return m.group(1) if m else ""


def default_decide(body: dict[str, Any]) -> bool:
    """Pass when every 'quoted' string of the criterion appears in the agent output."""
    user = body["messages"][-1]["content"]
    wanted = re.findall(r"'([^']+)'", criterion_of(user))
    out = agent_output(user)
    return bool(wanted) and all(w in out for w in wanted)


class FakeJudge:
    """A judge server on 127.0.0.1 (see the module doc); `close()` stops it."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.faults: deque[Fault] = deque()
        self.decide: Callable[[dict[str, Any]], bool] = default_decide
        self.context_chars: int | None = None
        """When set, a request whose messages hold more characters overflows (`"overflow"`)."""
        self.refuse_marker: str | None = None
        """When set, a request whose messages hold this text is refused (`"content_filter"`)."""
        self.release = threading.Event()
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with judge._lock:
                    judge.requests.append(
                        {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
                    )
                    fault = judge.faults.popleft() if judge.faults else None
                    judge.in_flight += 1
                    judge.max_in_flight = max(judge.max_in_flight, judge.in_flight)
                try:
                    self._answer(body, fault)
                finally:
                    with judge._lock:
                        judge.in_flight -= 1

            def _answer(self, body: dict[str, Any], fault: Fault | None) -> None:
                if self.path != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                fault = fault if fault is not None else judge._standing(body)
                if isinstance(fault, int):
                    self._send(fault, {"error": {"message": f"scripted {fault}"}})
                    return
                if isinstance(fault, str) and fault in ERROR_FAULTS:
                    self._send(*ERROR_FAULTS[fault])
                    return
                if fault == "hang":
                    judge.release.wait(10)
                finish = "stop"
                if fault == "malformed":
                    content = "I believe the criterion is met."
                elif fault == "filtered":
                    content, finish = "", "content_filter"
                elif fault == "wrong_schema":
                    content = json.dumps({"verdict": "yes"})
                else:
                    ok = judge.decide(body)
                    content = (
                        "```json\n"
                        + json.dumps(
                            {
                                "rationale": f"scripted: {'met' if ok else 'not met'}",
                                "is_criteria_true": ok,
                            }
                        )
                        + "\n```"
                    )
                self._send(
                    200,
                    {
                        "id": "cmpl-fake",
                        "object": "chat.completion",
                        "model": body.get("model"),
                        "choices": [{"index": 0, "finish_reason": finish,
                                     "message": {"role": "assistant", "content": content}}],
                    },
                )  # fmt: skip

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @property
    def spec(self) -> str:
        return f"{self.url}#fake-judge"

    def _standing(self, body: dict[str, Any]) -> Fault | None:
        """The standing modes' answer to `body`: `"content_filter"`, `"overflow"` or None."""
        text = "".join(str(m.get("content") or "") for m in body.get("messages", []))
        if self.refuse_marker is not None and self.refuse_marker in text:
            return "content_filter"
        if self.context_chars is not None and len(text) > self.context_chars:
            return "overflow"
        return None

    def user_prompts(self) -> list[str]:
        return [r["body"]["messages"][-1]["content"] for r in self.requests]

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)
