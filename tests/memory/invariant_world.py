"""The invariant machine's world (tests/memory/test_invariants.py): what the model knows of each memory,
the counts the benchmark prints, the REST client every principal uses, and the fake LLM and operators the
machine's steps act with."""

from __future__ import annotations

import logging
import string
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
from django.contrib.auth.models import Permission

from tenants import services
from tenants.models import ApiKeyCredential, Person
from tests.fake_llm import FakeLlm


def canary_new() -> str:
    """A word no text shares: letters only, so no secret guard or tokenizer splits it."""
    return "zq" + "".join(string.ascii_lowercase[int(c, 16)] for c in uuid.uuid4().hex[:10])


@dataclass
class Known:
    """A memory an interface acknowledged, as the model expects it to stay."""

    id: str
    type: str
    text: str
    canary: str
    authority: str = "agent"
    author: str = ""  # the expected written_by (facts and playbooks)
    steps: list[str] = field(default_factory=list)
    pending: bool = False
    replaced: bool = False
    agent: str | None = None  # the agent_id it carries (docs/scoping.md): a correction keeps it
    proposal_for: list[str] = field(default_factory=list)  # pending: what it would replace, never a forgotten id


def known_of(body: dict[str, Any], canary: str, author: str) -> Known:
    """A memory as an interface answered it, as the model expects it to stay."""
    return Known(
        body["id"],
        body["type"],
        body.get("text") or "",
        canary,
        body.get("authority", "agent"),
        author,
        [s["instruction"] for s in body.get("steps") or []],
        body.get("status") == "pending",
        agent=body.get("agent_id"),
        proposal_for=list(body.get("proposal_for") or []),
    )


class Stats:
    """What the machine did and checked, for the benchmark's table."""

    def __init__(self) -> None:
        self.operations: Counter = Counter()
        self.answers: Counter = Counter()
        self.checks: Counter = Counter()
        self.steps = 0


STATS = Stats()

#: The extraction and the judgement model the machine's consolidation asks.
STAGE_MODELS = ("fake-extraction", "fake-judgement")


def stages_checked(asked: list[dict[str, Any]], outcome: Any) -> None:
    """A run that asked the LLM asked the extraction model about the turns, then the judgement model about
    what it found — never the turns themselves — and its record names both."""
    if not asked:
        return
    assert [request["model"] for request in asked] == list(STAGE_MODELS), [r["model"] for r in asked]
    judged = asked[1]["messages"][-1]["content"]
    assert "new_turns_by_session" not in judged and "remember:" not in judged, judged[:300]
    assert outcome.run is not None and outcome.run.llm_model == " → ".join(STAGE_MODELS), outcome.run
    STATS.checks["consolidation asks each stage's model; the judgement never reads the turns"] += 1


class Api:
    def __init__(self, base: str, secret: str | None, name: str) -> None:
        self.base, self.name, self.secret = base, name, secret
        self.session = requests.Session()
        if secret:
            self.session.headers["Authorization"] = f"Bearer {secret}"

    def __call__(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        response = self.session.request(method, f"{self.base}/api/v1/{path}", timeout=120, **kwargs)
        STATS.answers[response.status_code // 100 * 100] += 1
        assert response.status_code < 500, (method, path, response.status_code, response.text[:500])
        return response


@contextmanager
def world_opened(*, atlas_server: Any, atlas_es: Any, settings: Any, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """The fake LLM, an operator holding the memory permissions and a staff user without them, and every
    log line written while the machine runs."""
    llm = FakeLlm().start()
    settings.ATLAS_LLM_BASE_URL = llm.base_url
    settings.ATLAS_LLM_MODEL = "fake-model"
    # A model per stage (memory/consolidation/ask.py): the fake LLM answers both, each under its own name.
    settings.ATLAS_LLM_MODEL_EXTRACTION, settings.ATLAS_LLM_MODEL_JUDGEMENT = STAGE_MODELS
    settings.ATLAS_WEBHOOKS_ALLOW_LOOPBACK = True  # the machine's endpoint (tests/memory/invariant_ledgers.py)
    settings.ATLAS_LLM_API_KEY = "sk-test-fake-key"
    settings.ATLAS_LLM_RETRIES = 0
    settings.ATLAS_USAGE_RECORDING = "off"  # no worker here: a queued use-count task would wait forever
    settings.ATLAS_API_RATE = "100000/min"  # the machine's pace is not what is under test
    services.shared_credential_ensure(kind=ApiKeyCredential.Kind.WRITER, actor="test")
    operator = Person.objects.create_user(email=f"ops-{uuid.uuid4().hex[:6]}@example.com", password="x")
    operator.is_staff = True
    operator.save()
    codenames = ("view_memory", "change_memory", "forget_memory")
    operator.user_permissions.set(Permission.objects.filter(content_type__app_label="tenants", codename__in=codenames))
    staff = Person.objects.create_user(email=f"staff-{uuid.uuid4().hex[:6]}@example.com", password="x")
    staff.is_staff = True
    staff.save()
    staff.user_permissions.set(
        Permission.objects.filter(content_type__app_label="tenants").exclude(codename__in=codenames)
    )
    log = _LogLines()
    logging.getLogger().addHandler(log)
    try:
        yield {
            "log": log.lines,
            "tmp": tmp_path,
            "llm": llm,
            "server": atlas_server,
            "es": atlas_es.admin(),
            "data_dir": atlas_es.server.data_dir if atlas_es.server else None,
            "operator": operator,
            "staff": staff,
        }
    finally:
        llm.stop()
        logging.getLogger().removeHandler(log)


class _LogLines(logging.Handler):
    """Every log line any logger writes while the machine runs (memory text must never be logged)."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())
