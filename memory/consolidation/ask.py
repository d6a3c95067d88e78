"""Asking the LLM for a run's plan: one call that extracts and judges (the default), or two with a model
per stage (ATLAS_LLM_MODEL_EXTRACTION, ATLAS_LLM_MODEL_JUDGEMENT, docs/consolidation.md "A model per
stage") — a cheaper model reads the new turns and lists what they say (EXTRACTION_SCHEMA), then the
judgement model decides the plan over that list and the related memories (PLAN_SCHEMA), without reading
the turns again. Either way the answer is a plan the validator checks against the run's input: a stage
cannot cite a turn or a memory the run was not given."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memory.inference.llm import LlmError, Usage, chat_client, stage_models

from .budget import call_tokens_estimate
from .schema import (
    EXTRACTION_PROMPT,
    EXTRACTION_SCHEMA,
    JUDGEMENT_PROMPT,
    PLAN_SCHEMA,
    SYSTEM_PROMPT,
    ConsolidationInput,
)


@dataclass
class Asked:
    """The plan (unvalidated), the model(s) that made it, and each call's usage with its model."""

    data: dict[str, Any]
    model: str
    spent: list[tuple[Usage, str]] = field(default_factory=list)


class AskFailed(Exception):
    """A call failed (``error``); ``spent``: what every call made so far cost, the failed one included."""

    def __init__(self, error: LlmError, spent: list[tuple[Usage, str]]) -> None:
        super().__init__(str(error))
        self.error = error
        self.spent = spent


def staged() -> bool:
    """Whether consolidation asks two models, one per stage (they differ), or one call."""
    extraction, judgement = stage_models()
    return extraction != judgement


def plan_ask(data: ConsolidationInput, *, prompt: str) -> Asked:
    """The run's plan from the LLM: one call over ``prompt`` (the whole input), or the two stages."""
    extraction, judgement = stage_models()
    if extraction == judgement:
        answer = _call(
            extraction, [], system=SYSTEM_PROMPT, user=prompt, schema=PLAN_SCHEMA, name="memory_consolidation"
        )
        return Asked(answer.data, answer.model, [(answer.usage, answer.model)])
    found = _call(
        extraction, [], system=EXTRACTION_PROMPT, user=data.extraction_prompt(), schema=EXTRACTION_SCHEMA,
        name="memory_extraction",
    )  # fmt: skip
    spent = [(found.usage, found.model)]
    answer = _call(
        judgement, spent, system=JUDGEMENT_PROMPT, user=data.judgement_prompt(found.data), schema=PLAN_SCHEMA,
        name="memory_consolidation",
    )  # fmt: skip
    return Asked(answer.data, f"{found.model} → {answer.model}", [*spent, (answer.usage, answer.model)])


def _call(model: str, spent: list[tuple[Usage, str]], *, system: str, user: str, schema: dict, name: str) -> Any:
    try:
        return chat_client(model).chat_json(system=system, user=user, schema=schema, schema_name=name)
    except LlmError as err:
        raise AskFailed(err, [*spent, (err.usage, model)]) from err


def ask_tokens_estimate(data: ConsolidationInput, *, prompt: str) -> int:
    """The most tokens asking may spend (memory.consolidation.budget): the one call's, or both stages' —
    the judgement's input taken as large as the whole input (its candidates are shorter than the turns
    they come from), so the estimate stays above the truth and a budget stops a run before it starts."""
    if not staged():
        return call_tokens_estimate(system=SYSTEM_PROMPT, user=prompt)
    extraction = call_tokens_estimate(system=EXTRACTION_PROMPT, user=data.extraction_prompt())
    return extraction + call_tokens_estimate(system=JUDGEMENT_PROMPT, user=prompt)
