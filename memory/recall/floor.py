"""Silence when nothing fits (issue 34 point 4): recall returns fewer than k memories — or none — rather
than fill an agent's prompt with the least bad of the irrelevant.

Fused scores cannot say this: z-score fusion standardises each leg over its own window, so the best of
nothing scores as high as the best of something. The main dense leg's plain similarity can: it is an
absolute measure (Elasticsearch's cosine score, (1 + cos) / 2), and the floor below it was calibrated
on the evaluation sets (benchmarks/recall_floor.py, docs/recall-quality.md "Relevance floor"). A memory
passes when its similarity clears the floor — a fact lifted by its evidence with the turn's similarity, a
reply with its question's when replies inherit (ATLAS_REPLY_INHERITANCE) —
or when the question names something literally (a code, a number) and BM25 found it, which embeddings
blur, or when the question names a time and the memory is about it (the time leg). Where the question or the memory does not read as English the English model cannot judge it (the
multilingual legs do, memory.recall.fusion), so no floor applies there. Small talk ("cheers!", "hello again") recalls nothing. A request's ``min_score`` replaces both with a
floor of its own on the returned (fused) score.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from memory import recall_constants as rc
from memory.inference.language_detection import memory_reads_as_english

from .folding import Lifted
from .fusion import Leg
from .turn_kind import SMALL_TALK

Ranked = list[tuple[str, float, dict[str, Any]]]


@dataclass
class Floored:
    """The ranking once the floor is applied; ``dropped``: memory id → why, in words (explain, expect)."""

    ranked: Ranked
    dropped: dict[str, str] = field(default_factory=dict)
    rule: str = ""  # which floor applied, in words


def floor_apply(
    lifted: Lifted,
    *,
    legs: list[tuple[str, Leg]],
    text: str,
    kind: str,
    floor: float,
    min_score: float | None,
    question_reads_english: bool = True,
    time_named: bool = False,
) -> Floored:
    """The memories of ``lifted`` that clear this recall's floor, in their order."""
    if min_score is not None:
        return _kept(lifted.ranked, f"min_score {min_score}", lambda _id, score, _hit: score >= min_score or (
            f"score {score:.3f} below min_score {min_score}"
        ))  # fmt: skip
    if kind == SMALL_TALK:
        return Floored(
            ranked=[], dropped={m: "small talk: nothing to recall" for m, _, _ in lifted.ranked}, rule="small talk"
        )
    dense = dict(legs).get("dense")
    if not floor or dense is None:
        return Floored(ranked=list(lifted.ranked), rule="no floor")
    similarity = {hit["_id"]: float(hit["_score"] or 0.0) for hit in dense.hits}
    for fact, turn in lifted.lifted.items():  # a lifted fact stands where its turn stood
        similarity[fact] = max(similarity.get(fact, 0.0), similarity.get(turn, 0.0))
    if settings.ATLAS_REPLY_INHERITANCE:  # a reply shares its question's relevance ("the first one, no question")
        for memory_id, _, hit in lifted.ranked:
            question = hit["_source"].get("previous_turn_id")
            if question in similarity:
                similarity[memory_id] = max(similarity.get(memory_id, 0.0), similarity[question])
    lowest = min(similarity.values(), default=0.0)
    named = re.search(rc.LITERAL_QUERY_PATTERN, text) is not None
    found_by_bm25 = {hit["_id"] for hit in dict(legs).get("bm25", Leg(hits=[], weight=0)).hits} if named else set()
    # A memory about the time the question names (the time leg, when the question names one) fits it by that alone.
    about_time = {hit["_id"] for hit in dict(legs).get("time", Leg(hits=[], weight=0)).hits} if time_named else set()

    def verdict(memory_id: str, _score: float, hit: dict[str, Any]) -> bool | str:
        if (
            memory_id in found_by_bm25
            or memory_id in about_time
            or not (question_reads_english and memory_reads_as_english(hit["_source"]))
        ):
            return True
        value = similarity.get(memory_id)
        if value is None:  # beyond the dense leg's window: below its lowest
            return (
                lowest >= floor or f"below the floor: beyond the dense leg's window (its lowest {lowest:.3f} < {floor})"
            )
        return value >= floor or f"below the floor: similarity {value:.3f} < {floor}"

    return _kept(lifted.ranked, f"similarity floor {floor}", verdict)


def _kept(ranked: Ranked, rule: str, verdict) -> Floored:
    out = Floored(ranked=[], rule=rule)
    for memory_id, score, hit in ranked:
        why = verdict(memory_id, score, hit)
        if why is True:
            out.ranked.append((memory_id, score, hit))
        else:
            out.dropped[memory_id] = why
    return out
