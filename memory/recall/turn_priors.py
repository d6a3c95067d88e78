"""Ranking for turns: per-kind priors on the fused list (memory.recall.turn_kind says the kind).

- a request favours playbooks and the constraint and preference facts that shape the action;
- a question about the user favours current facts, and so does a statement (what the agent knows that
  the statement bears on: the fact it updates or qualifies); a statement may also describe a situation a
  playbook is for ("the wifi is acting up again tonight"), so it can favour playbooks too;
- a past turn that only repeats the turn (nearly the same words) is not an answer: it never ranks first;
- a turn in which the user asked something (a question or request) is weaker evidence than one in which they
  stated something: asked turns are demoted, whatever the new turn's kind.

A prior multiplies a candidate's fused score above the list's floor (its lowest fused score), so it works
the same under z-score fusion (scores may be negative) and rank fusion, and a prior of 1 changes nothing.
Each lever is a setting (ATLAS_TURN_*), each measured on eval/turns_v1 (docs/recall-quality.md); the
work is a pass over candidates already fetched: no search, no model.
"""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings

from .turn_kind import QUESTION, REQUEST, STATEMENT, turn_asks, turn_in_first_person

Ranked = list[tuple[str, float, dict[str, Any]]]

SHAPING_FACT_TYPES = ("constraint", "preference")  # the facts that shape what a request does
_WORD = re.compile(r"\w+")


def _words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


def turn_prior(
    source: dict[str, Any], *, kind: str, asked: bool, first_person: bool = False, held_then: bool = False
) -> float:
    """The prior one candidate gets for a turn of ``kind`` (``first_person``: the turn speaks of its writer):
    the product of the levers that apply to it. ``held_then``: the question names a time and the replaced
    versions among the candidates held during it, so they count as the facts of that time."""
    memory_type = source.get("memory_type")
    prior = 1.0
    if memory_type == "episodic":
        if asked:
            prior *= settings.ATLAS_TURN_ASKED_PRIOR
    elif memory_type == "semantic" and (held_then or not (source.get("superseded_by") or source.get("retracted"))):
        if kind == QUESTION:
            prior *= settings.ATLAS_TURN_QUESTION_FACT_PRIOR
            if first_person:
                prior *= settings.ATLAS_TURN_OWN_QUESTION_FACT_PRIOR
        elif kind == STATEMENT:
            prior *= settings.ATLAS_TURN_STATEMENT_FACT_PRIOR
        elif kind == REQUEST and source.get("fact_type") in SHAPING_FACT_TYPES:
            prior *= settings.ATLAS_TURN_REQUEST_FACT_PRIOR
    elif memory_type == "procedural" and kind == REQUEST:
        prior *= settings.ATLAS_TURN_REQUEST_PLAYBOOK_PRIOR
    elif memory_type == "procedural" and kind == STATEMENT:
        prior *= settings.ATLAS_TURN_STATEMENT_PLAYBOOK_PRIOR
    return prior


def turn_priors_apply(
    fused: Ranked,
    *,
    text: str,
    kind: str,
    window: int,
    priors: dict[str, float] | None = None,
    held_then: bool = False,
) -> Ranked:
    """``fused`` re-ranked with each candidate's prior for a turn ``text`` of ``kind``, within the first
    ``window`` candidates (beyond it nothing reaches the top k; the rest keep their order below). A past
    turn repeating this one (word-set Jaccard ≥ ATLAS_TURN_REPEAT_JACCARD) is never first. ``priors``
    (explain) receives each prior that is not 1."""
    if not fused:
        return fused
    head, tail = fused[:window], fused[window:]
    floor = min(score for _, score, _ in fused)
    threshold = settings.ATLAS_TURN_REPEAT_JACCARD
    turn_words = _words(text) if threshold else frozenset()
    first_person = kind == QUESTION and turn_in_first_person(text=text)
    rescored: Ranked = []
    repeats: set[str] = set()
    for memory_id, score, hit in head:
        source = hit["_source"]
        repeat = asked = False
        if source.get("memory_type") == "episodic":
            episode = source.get("text") or ""
            asked = settings.ATLAS_TURN_ASKED_PRIOR != 1 and turn_asks(text=episode)
            if threshold and turn_words:
                words = _words(episode)
                repeat = bool(words) and len(words & turn_words) / len(words | turn_words) >= threshold
        prior = turn_prior(source, kind=kind, asked=asked, first_person=first_person, held_then=held_then)
        if repeat:
            repeats.add(memory_id)
        if priors is not None and prior != 1.0:
            priors[memory_id] = prior
        rescored.append((memory_id, floor + prior * (score - floor), hit))
    rescored.sort(key=lambda item: (-item[1], item[0]))
    if rescored[0][0] in repeats:  # a repeat of the turn is not its answer: the first memory that is not one
        first = next((i for i, item in enumerate(rescored) if item[0] not in repeats), None)
        if first is not None:
            rescored.insert(0, rescored.pop(first))
    return rescored + tail
