"""What every request handler is given: the engine, the name resolver, and who owns which search context."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from ..errors import EsError
from ..exchange import Engine, Incoming
from ..principal import Principal
from ..resolution import Resolver

_MAX_CONTEXTS = 10_000  # scroll/PIT contexts remembered per gateway (the engine expires them itself)


class SearchContexts:
    """Scroll and PIT contexts belong to whoever opened them, as in Elasticsearch
    (SecuritySearchOperationListener checks the authentication on every use)."""

    def __init__(self) -> None:
        self._owner: dict[str, str] = {}
        self._pit_indices: dict[str, list[str]] = {}

    def own(self, context_id: str, principal: Principal) -> None:
        if len(self._owner) >= _MAX_CONTEXTS:
            oldest = next(iter(self._owner))
            self._owner.pop(oldest)
            self._pit_indices.pop(oldest, None)
        self._owner[context_id] = principal.owner_key

    def own_pit(self, pit_id: str, principal: Principal, names: list[str]) -> None:
        self.own(pit_id, principal)
        self._pit_indices[pit_id] = names

    def pit_indices(self, pit_id: str) -> list[str]:
        return self._pit_indices.get(pit_id, [])

    def check_owner(self, principal: Principal, context_id: str) -> None:
        # SecuritySearchOperationListener.ensureAuthenticatedUserIsSame: another user's context, or one
        # this gateway never handed out, is "missing".
        if self._owner.get(context_id) != principal.owner_key:
            raise EsError(404, "search_context_missing_exception", f"No search context found for id [{context_id}]")

    def forget_scroll(self, scroll_id: str) -> None:
        self._owner.pop(scroll_id, None)

    def forget_pit(self, pit_id: str) -> None:
        self._owner.pop(pit_id, None)
        self._pit_indices.pop(pit_id, None)

    def clear(self) -> None:
        self._owner.clear()
        self._pit_indices.clear()


@dataclass(frozen=True, slots=True)
class Backend:
    """The gateway's parts a handler acts through (never the gateway itself: handlers do not import it)."""

    engine: Engine
    resolver: Resolver
    contexts: SearchContexts


Handler = Callable[[Backend, Incoming, Principal], Awaitable[web.Response]]


def merged(slots: list[Any], answers: Iterable[Any]) -> list[Any]:
    """A multi-item answer in request order: each ``None`` slot (an item sent to the engine) takes the
    engine's next answer, every other slot is the gateway's own answer for that item."""
    it = iter(answers)
    return [next(it) if slot is None else slot for slot in slots]
