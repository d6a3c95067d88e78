"""When a failed attempt is tried again, and after how long: the one retry rule of both clients.

Three kinds of call, by what a second attempt risks:

- ``READ`` (GETs, recall): nothing; retried on connection errors, 429 and 503.
- ``KEYED`` (POSTs that take an ``Idempotency-Key``): nothing either, as every attempt carries the same
  key and the server replays the first answer (a write whose answer was lost lands on the same memory);
  retried on connection errors, 429, 503 and the 409 "still running".
- ``UNKEYED`` (PATCH, DELETE, creating a subject): a second attempt could act twice, so only when the
  first surely never ran: the connection was never made, or the rate limit refused it (429).

Waits honour ``Retry-After``; otherwise they grow from ``backoff`` (doubling, jittered, at most
``max_wait``). The budget is both a number of attempts and a total of seconds since the first.
"""

from __future__ import annotations

import enum
import random
import time
from dataclasses import dataclass

import httpx

from .errors import ConnectionFailed, error_from, retry_after_of


class Kind(enum.Enum):
    READ = "read"
    KEYED = "keyed"
    UNKEYED = "unkeyed"


@dataclass(frozen=True, kw_only=True)
class Retry:
    """The retry budget: ``attempts`` in all (1: never retry) within ``total_seconds`` of the first."""

    attempts: int = 5
    total_seconds: float = 60.0
    backoff: float = 0.5
    max_wait: float = 10.0


NEVER = Retry(attempts=1)
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)  # the request never left


def _retryable(kind: Kind, outcome: httpx.Response | httpx.TransportError) -> bool:
    if isinstance(outcome, httpx.TransportError):
        return kind is not Kind.UNKEYED or isinstance(outcome, _NOT_SENT)
    if outcome.status_code == 429:
        return True
    if outcome.status_code == 503:
        return kind is not Kind.UNKEYED
    if outcome.status_code == 409 and kind is Kind.KEYED:
        return error_from(outcome).code == "idempotency_running"
    return False


class Attempts:
    """One call's attempts so far, against its budget."""

    def __init__(self, policy: Retry, kind: Kind) -> None:
        self.policy = policy
        self.kind = kind
        self.made = 0
        self.started = time.monotonic()

    def settle(self, outcome: httpx.Response | httpx.TransportError) -> float | httpx.Response:
        """The successful answer, or the seconds to wait before the next attempt; raises the error when the
        outcome is final or the budget is spent."""
        self.made += 1
        if isinstance(outcome, httpx.Response) and outcome.is_success:
            return outcome
        wait = self._delay(outcome) if _retryable(self.kind, outcome) else None
        if wait is not None:
            return wait
        if isinstance(outcome, httpx.TransportError):
            raise ConnectionFailed(f"{type(outcome).__name__}: {outcome}") from outcome
        raise error_from(outcome)

    def wait(self, outcome: httpx.Response | httpx.TransportError) -> float:
        """``settle`` for an outcome that is not a success: the seconds to wait, or the error raised."""
        settled = self.settle(outcome)
        if isinstance(settled, httpx.Response):
            raise TypeError("a successful answer has nothing to wait for")
        return settled

    def _delay(self, outcome: httpx.Response | httpx.TransportError) -> float | None:
        if self.made >= self.policy.attempts:
            return None
        hinted = retry_after_of(outcome.headers) if isinstance(outcome, httpx.Response) else None
        if hinted is None:
            grown = min(self.policy.max_wait, self.policy.backoff * 2 ** (self.made - 1))
            hinted = grown * (0.5 + random.random() / 2)  # noqa: S311 - jitter, not a secret
        if time.monotonic() - self.started + hinted > self.policy.total_seconds:
            return None
        return hinted
