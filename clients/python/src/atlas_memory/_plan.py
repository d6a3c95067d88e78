"""Adapters' work written once for both clients: a *plan* is a generator that yields the calls it needs
(``call("memory_get", subject=…, memory_id=…)``) and is sent each answer, or thrown the call's
``AtlasError``; ``run`` drives it with ``Atlas``, ``arun`` with ``AsyncAtlas``."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, TypeVar

from ._async import AsyncAtlas
from ._client import Atlas
from .errors import AtlasError

T = TypeVar("T")


@dataclass(frozen=True)
class Call:
    """One operation of the clients, by its method's name, with its keyword arguments."""

    method: str
    arguments: dict[str, Any]


def call(method: str, **arguments: Any) -> Call:
    return Call(method, arguments)


Plan = Generator[Call, Any, T]


def run(client: Atlas, plan: Plan[T]) -> T:
    """The plan's answer, each of its calls made with the sync client."""
    try:
        step = next(plan)
        while True:
            try:
                answer = getattr(client, step.method)(**step.arguments)
            except AtlasError as exc:
                step = plan.throw(exc)
            else:
                step = plan.send(answer)
    except StopIteration as done:
        return done.value


async def arun(client: AsyncAtlas, plan: Plan[T]) -> T:
    """The plan's answer, each of its calls awaited on the async client."""
    try:
        step = next(plan)
        while True:
            try:
                answer = await getattr(client, step.method)(**step.arguments)
            except AtlasError as exc:
                step = plan.throw(exc)
            else:
                step = plan.send(answer)
    except StopIteration as done:
        return done.value


def pages(method: str, items: str, **arguments: Any) -> Plan[list[Any]]:
    """Every item of a paged list (``memory_list``, ``subject_list`` …), page after page."""
    found: list[Any] = []
    cursor = None
    while True:
        page = yield call(method, **arguments, cursor=cursor)
        found.extend(getattr(page, items))
        cursor = page.next_cursor
        if not cursor:
            return found
