"""The LLM client: any OpenAI-compatible chat-completions endpoint, answering JSON that a schema checks.

Works with OpenAI, Azure OpenAI (``ATLAS_LLM_API_VERSION`` + ``ATLAS_LLM_AUTH_HEADER=api-key``), vLLM,
Ollama (``/v1``) and llama.cpp's server. Structured output is asked for with ``response_format:
json_schema``; a server that refuses it (400/422 naming ``response_format``, or ``ATLAS_LLM_STRUCTURED=
prompt``) is asked again with the schema in the prompt, and the answer is validated here either way —
a server that accepted the schema is not trusted to have kept it. Timeouts, 429 and 5xx are retried
with exponential backoff (``Retry-After`` honoured, capped). Token usage is summed over every attempt
that reported one.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import jsonschema
import requests
from django.conf import settings

from atlas_site.observability.hooks import llm_request

log = logging.getLogger(__name__)
RETRIED_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
MAX_RETRY_AFTER_SECONDS = 30.0
# Servers that refused response_format=json_schema once (by base URL): asked with the prompt from then on.
_SCHEMA_REFUSED: set[str] = set()


class LlmError(Exception):
    """The LLM could not give a usable answer; ``usage`` holds the tokens spent on the way."""

    def __init__(self, message: str, *, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.usage = usage or Usage()


class LlmUnavailable(LlmError):
    """Timeouts, connection errors, 429/5xx after every retry, or an answer the client cannot use."""


class LlmBadAnswer(LlmError):
    """The server answered, but not with JSON that fits the schema (invalid, truncated, refused)."""


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0

    def add(self, usage: Any) -> None:
        self.requests += 1
        if isinstance(usage, dict):
            self.prompt_tokens += _int(usage.get("prompt_tokens"))
            self.completion_tokens += _int(usage.get("completion_tokens"))

    def cost(self, model: str) -> float:
        """What these tokens cost with ``model`` (:func:`llm_cost`)."""
        return llm_cost(model=model, prompt_tokens=self.prompt_tokens, completion_tokens=self.completion_tokens)


def llm_cost(*, model: str, prompt_tokens: int, completion_tokens: int) -> float:
    """The one place LLM tokens become money (run records, the usage ledger, the metrics): the model's
    prices in ATLAS_LLM_PRICES (USD per million tokens in and out), else ATLAS_LLM_PRICE_PROMPT /
    _COMPLETION (0 when unset: not priced)."""
    price = settings.ATLAS_LLM_PRICES.get(model)
    per_in, per_out = (
        (price["input"], price["output"])
        if price is not None
        else (settings.ATLAS_LLM_PRICE_PROMPT, settings.ATLAS_LLM_PRICE_COMPLETION)
    )
    return round((prompt_tokens * per_in + completion_tokens * per_out) / 1_000_000, 6)


@dataclass
class LlmAnswer:
    data: dict[str, Any]
    model: str
    usage: Usage = field(default_factory=Usage)
    structured: str = "json_schema"  # how the answer was asked for: json_schema | prompt


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def llm_configured() -> bool:
    return bool(settings.ATLAS_LLM_BASE_URL and settings.ATLAS_LLM_MODEL)


def llm_model_name() -> str:
    return settings.ATLAS_LLM_MODEL or ""


class ChatClient:
    """One endpoint's chat completions; built from the settings by :func:`chat_client`."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "",
        timeout: float = 60.0,
        retries: int = 3,
        backoff: float = 1.0,
        structured: str = "auto",
        api_version: str = "",
        auth_header: str = "bearer",
        temperature: float = 0.0,
        max_tokens: int = 4096,
    ) -> None:
        if structured not in ("auto", "json_schema", "prompt"):
            raise ValueError(f"ATLAS_LLM_STRUCTURED must be auto, json_schema or prompt, not {structured!r}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.structured = structured
        self.api_version = api_version
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.session = requests.Session()
        if api_key:
            if auth_header == "api-key":  # Azure OpenAI
                self.session.headers["api-key"] = api_key
            else:
                self.session.headers["Authorization"] = f"Bearer {api_key}"

    @property
    def url(self) -> str:
        url = f"{self.base_url}/chat/completions"
        return f"{url}?api-version={self.api_version}" if self.api_version else url

    def chat_json(self, *, system: str, user: str, schema: dict[str, Any], schema_name: str) -> LlmAnswer:
        """Ask for one JSON object fitting ``schema``; raises LlmBadAnswer or LlmUnavailable."""
        usage = Usage()
        with_schema = self.structured == "json_schema" or (
            self.structured == "auto" and self.base_url not in _SCHEMA_REFUSED
        )
        if with_schema:
            body = self._body(system, user)
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema_name, "schema": schema, "strict": True},
            }
            status, data = self._post(body, usage)
            if status in (400, 422) and self.structured == "auto" and _mentions_response_format(data):
                log.warning("%s refused response_format=json_schema: asking with the schema in the prompt", self.url)
                _SCHEMA_REFUSED.add(self.base_url)
                with_schema = False
            else:
                return self._answer(status, data, schema, usage, "json_schema")
        prompt = (
            f"{system}\n\nAnswer with one JSON object and nothing else (no prose, no code fence). "
            f"It must validate against this JSON schema:\n{json.dumps(schema, separators=(',', ':'))}"
        )
        body = self._body(prompt, user)
        status, data = self._post(body, usage)
        return self._answer(status, data, schema, usage, "prompt")

    def _body(self, system: str, user: str) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }

    def _post(self, body: dict[str, Any], usage: Usage) -> tuple[int, Any]:
        """POST with retries on timeouts, connection errors, 429 and 5xx; returns (status, parsed body)."""
        last = "no attempt"
        last_retry_after: str | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self._delay(attempt, last_retry_after))
            last_retry_after = None
            try:
                with llm_request(self.model) as call:
                    response = self.session.post(self.url, json=body, timeout=self.timeout)
                    call.status = response.status_code
            except requests.Timeout:
                last = f"timed out after {self.timeout:g} s"
                continue
            except requests.ConnectionError as err:
                last = f"could not connect ({type(err).__name__})"
                continue
            try:
                data = response.json()
            except ValueError:
                data = None
            if response.status_code in RETRIED_STATUSES:
                usage.add(data.get("usage") if isinstance(data, dict) else None)
                last = f"HTTP {response.status_code}"
                last_retry_after = response.headers.get("Retry-After")
                continue
            usage.add(data.get("usage") if isinstance(data, dict) else None)
            return response.status_code, data
        raise LlmUnavailable(f"the LLM at {self.base_url} {last} ({self.retries + 1} attempts)", usage=usage)

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        delay = self.backoff * 2 ** (attempt - 1)
        if retry_after:
            try:
                delay = max(delay, float(retry_after))
            except ValueError:
                pass
        return min(delay, MAX_RETRY_AFTER_SECONDS)

    def _answer(self, status: int, data: Any, schema: dict[str, Any], usage: Usage, structured: str) -> LlmAnswer:
        if status != 200 or not isinstance(data, dict):
            raise LlmUnavailable(f"the LLM answered HTTP {status}: {_error_text(data)}", usage=usage)
        try:
            choice = data["choices"][0]
            content = choice["message"].get("content")
        except (KeyError, IndexError, TypeError, AttributeError):
            raise LlmBadAnswer("the LLM's answer has no choices[0].message", usage=usage) from None
        if choice.get("finish_reason") == "length":
            raise LlmBadAnswer("the LLM's answer was cut off (finish_reason=length)", usage=usage)
        refusal = choice["message"].get("refusal")
        if refusal:
            raise LlmBadAnswer(f"the LLM refused: {str(refusal)[:200]}", usage=usage)
        if not isinstance(content, str) or not content.strip():
            raise LlmBadAnswer("the LLM's answer is empty", usage=usage)
        try:
            parsed = json.loads(_strip_fence(content))
        except ValueError as err:
            raise LlmBadAnswer(f"the LLM's answer is not JSON ({err.msg} at {err.pos})", usage=usage) from None
        try:
            jsonschema.validate(parsed, schema)
        except jsonschema.ValidationError as err:
            where = "/".join(str(p) for p in err.absolute_path) or "(top)"
            raise LlmBadAnswer(
                f"the LLM's answer does not fit the schema at {where}: {err.message[:200]}", usage=usage
            ) from None
        return LlmAnswer(data=parsed, model=str(data.get("model") or self.model), usage=usage, structured=structured)


def _strip_fence(content: str) -> str:
    """Models asked by prompt often wrap JSON in a Markdown fence anyway."""
    text = content.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        if text.rstrip().endswith("```"):
            text = text.rstrip()[:-3]
    return text


def _mentions_response_format(data: Any) -> bool:
    text = json.dumps(data).lower() if data is not None else ""
    return any(word in text for word in ("response_format", "json_schema", "structured", "grammar"))


def _error_text(data: Any) -> str:
    if isinstance(data, dict) and isinstance(data.get("error"), dict):
        return str(data["error"].get("message", ""))[:200]
    if isinstance(data, dict) and "error" in data:
        return str(data["error"])[:200]
    return "(no error message)"


def stage_models() -> tuple[str, str]:
    """Consolidation's extraction and judgement models (ATLAS_LLM_MODEL_EXTRACTION / _JUDGEMENT, each
    ATLAS_LLM_MODEL when unset)."""
    default = settings.ATLAS_LLM_MODEL or ""
    return settings.ATLAS_LLM_MODEL_EXTRACTION or default, settings.ATLAS_LLM_MODEL_JUDGEMENT or default


def chat_client(model: str | None = None) -> ChatClient:
    """The configured endpoint (check :func:`llm_configured` first), asking ``model`` (ATLAS_LLM_MODEL
    by default)."""
    return ChatClient(
        base_url=settings.ATLAS_LLM_BASE_URL,
        model=model or settings.ATLAS_LLM_MODEL,
        api_key=settings.ATLAS_LLM_API_KEY,
        timeout=settings.ATLAS_LLM_TIMEOUT,
        retries=settings.ATLAS_LLM_RETRIES,
        backoff=settings.ATLAS_LLM_BACKOFF,
        structured=settings.ATLAS_LLM_STRUCTURED,
        api_version=settings.ATLAS_LLM_API_VERSION,
        auth_header=settings.ATLAS_LLM_AUTH_HEADER,
        temperature=settings.ATLAS_LLM_TEMPERATURE,
        max_tokens=settings.ATLAS_LLM_MAX_TOKENS,
    )
