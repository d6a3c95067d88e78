"""A fake LLM for tests: a real local HTTP server speaking OpenAI's ``POST /v1/chat/completions``
(structured output included), scripted per test, recording every request it was sent.

Script it with replies, used in order (the last one repeats):
- a dict → a valid completion whose message content is that dict as JSON;
- ``Reply(...)`` → anything else: raw ``content`` (invalid or truncated JSON), ``finish_reason``,
  ``status`` (500, 429 …) with an error body, ``delay`` seconds before answering (timeouts),
  ``refuse_schema`` (400 when the request carries ``response_format``, as servers without structured
  output answer);
- a callable ``f(request_json) -> dict | Reply`` → computed from what was sent (the benchmark and the
  worker tests answer from the prompt).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    content: str | None = None
    answer: dict[str, Any] | None = None
    status: int = 200
    finish_reason: str = "stop"
    delay: float = 0.0
    refuse_schema: bool = False
    prompt_tokens: int = 100
    completion_tokens: int = 50
    headers: dict[str, str] | None = None


def empty_plan(**parts: Any) -> dict[str, Any]:
    plan = {k: [] for k in ("facts", "supersessions", "confirmations", "playbooks", "refinements", "outcomes")}
    plan.update(parts)
    return plan


def fact(text: str, episodes: list[str], *, fact_type: str = "preference", confidence: float = 0.9) -> dict[str, Any]:
    return {"text": text, "fact_type": fact_type, "confidence": confidence, "source_episodes": episodes}


class FakeLlm:
    def __init__(self) -> None:
        self.replies: list[Any] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._calls = 0
        # Set to hold every request until released (a test kills a worker meanwhile).
        self.gate = threading.Event()
        self.gate.set()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path.split("?")[0] not in ("/v1/chat/completions", "/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._send(400, {"error": {"message": "body is not JSON"}})
                    return
                with fake._lock:
                    fake.requests.append(body)
                    fake.headers.append(dict(self.headers))
                    reply = fake._next()
                fake.gate.wait(timeout=120)
                if callable(reply):
                    reply = reply(body)
                if isinstance(reply, dict):
                    reply = Reply(answer=reply)
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.refuse_schema and "response_format" in body:
                    self._send(
                        400,
                        {
                            "error": {
                                "message": "response_format json_schema is not supported",
                                "type": "invalid_request_error",
                            }
                        },
                    )
                    return
                if reply.status != 200:
                    self._send(reply.status, {"error": {"message": f"scripted {reply.status}"}}, reply.headers)
                    return
                content = reply.content if reply.content is not None else json.dumps(reply.answer)
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{len(fake.requests)}",
                        "object": "chat.completion",
                        "model": body.get("model", "fake"),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": content},
                                "finish_reason": reply.finish_reason,
                            }
                        ],
                        "usage": {
                            "prompt_tokens": reply.prompt_tokens,
                            "completion_tokens": reply.completion_tokens,
                            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
                        },
                    },
                )

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="fake-llm", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def script(self, *replies: Any) -> FakeLlm:
        with self._lock:
            self.replies = list(replies)
            self._calls = 0
        return self

    def _next(self) -> Any:
        if not self.replies:
            return Reply(status=500)
        reply = self.replies[min(self._calls, len(self.replies) - 1)]
        self._calls += 1
        return reply

    def prompts(self) -> list[dict[str, Any]]:
        """The JSON input document of each request (the user message)."""
        return [json.loads(r["messages"][-1]["content"]) for r in self.requests]

    def start(self) -> FakeLlm:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.gate.set()
        self.server.shutdown()
        self.server.server_close()


def prompt_of(request: dict[str, Any]) -> dict[str, Any]:
    return json.loads(request["messages"][-1]["content"])


def turns_of(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [turn for session in prompt_of(request)["new_turns_by_session"] for turn in session["turns"]]


FACT_MARK = "remember:"


def remembering(request: dict[str, Any]) -> dict[str, Any]:
    """An instant, valid answer computed from the prompt: one fact per turn that contains
    ``remember: <fact>`` (the benchmark's and the worker tests' LLM). Asked in two stages
    (memory/consolidation/ask.py), the extraction answers those facts as statements and the judgement
    keeps every candidate statement as a new fact."""
    prompt = prompt_of(request)
    if "candidate_statements" in prompt:
        return empty_plan(facts=prompt["candidate_statements"])
    facts = []
    for turn in turns_of(request):
        text = turn["text"]
        if FACT_MARK in text:
            facts.append(fact(text.split(FACT_MARK, 1)[1].strip(), [turn["id"]]))
    schema = ((request.get("response_format") or {}).get("json_schema") or {}).get("name")
    if schema == "memory_extraction":
        return {"statements": facts, "procedures": []}
    return empty_plan(facts=facts)


@contextmanager
def llm_serving(settings: Any, **overrides: Any) -> Iterator[FakeLlm]:
    """A fake LLM started and configured as the app's LLM (model ``fake-model``; ``overrides``: more
    settings, e.g. ``ATLAS_LLM_RETRIES=1``), stopped afterwards: the body of a test's ``llm`` fixture."""
    fake = FakeLlm().start()
    settings.ATLAS_LLM_BASE_URL = fake.base_url
    settings.ATLAS_LLM_MODEL = "fake-model"
    for name, value in overrides.items():
        setattr(settings, name, value)
    try:
        yield fake
    finally:
        fake.stop()


CHARS_PER_TOKEN = 4


def billed_in(request: dict[str, Any]) -> int:
    """The tokens ``billed`` counts for a request's input: its messages and structured-output schema."""
    sent = sum(len(m["content"]) for m in request["messages"]) + len(json.dumps(request.get("response_format", {})))
    return -(-sent // CHARS_PER_TOKEN)


def billed(answer: Any) -> Any:
    """``answer`` (a callable reply) with usage counted as a paid LLM would bill it, about 4 characters a
    token: the prompt's messages in, the answer's JSON out (the token benchmark's and budget tests' LLM)."""

    def reply(request: dict[str, Any]) -> Reply:
        plan = answer(request)
        return Reply(
            answer=plan,
            prompt_tokens=billed_in(request),
            completion_tokens=-(-len(json.dumps(plan)) // CHARS_PER_TOKEN),
        )

    return reply
