"""A run's plan as the operator's CLI prints it: one line per change, as a diff."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings

if TYPE_CHECKING:
    from .run import Outcome


def plan_diff(outcome: Outcome) -> list[str]:
    """What a plan changes, one line per change, as a diff: + new, - superseded, ~ changed, ! dropped."""
    plan = outcome.plan or {}
    lines: list[str] = []
    for fact in plan.get("facts", []):
        lines.append(
            f"+ fact [{fact['fact_type']} {fact['confidence']:.2f}] {fact['text']!r}  (episodes {', '.join(fact['source_episodes'])})"
        )
    for item in plan.get("supersessions", []):
        for target, text in zip(item["targets"], item["target_texts"], strict=True):
            verb = "retract" if item["contradiction"] == "harsh" else "supersede"
            lines.append(f"- fact {target} {text!r}  ({verb})")
        lines.append(
            f"+ fact [{item['fact_type']} {item['confidence']:.2f}] {item['text']!r}  "
            f"(replaces {', '.join(item['targets'])}, {item['contradiction']}; episodes {', '.join(item['source_episodes'])})"
        )
    for item in plan.get("confirmations", []):
        old = item.get("from_confidence")
        new = min(1.0, (old or 0.0) + settings.ATLAS_CONSOLIDATION_CONFIRM_BOOST)
        why = f", {item['why']}" if item.get("why") else ""
        lines.append(
            f"~ fact {item['fact_id']} {item['text']!r}  confidence {old} → {new:.2f} (confirmed by {', '.join(item['source_episodes'])}{why})"
        )
    for item in plan.get("playbooks", []):
        lines.append(
            f"+ playbook {item['name']!r} when {item['trigger_text']!r}  (episodes {', '.join(item['source_episodes'])})"
        )
        lines += [
            f"+     {n}. {s['instruction']}" + (f" [{s['tool']}]" if s.get("tool") else "")
            for n, s in enumerate(item["steps"], 1)
        ]
    for item in plan.get("refinements", []):
        version = item.get("version") or 1
        lines.append(f"~ playbook {item['playbook_id']} {item['name']!r}  v{version} → v{version + 1}")
        lines += [f"-     {n}. {s['instruction']}" for n, s in enumerate(item["old_steps"], 1)]
        lines += [f"+     {n}. {s['instruction']}" for n, s in enumerate(item["steps"], 1)]
    for item in plan.get("outcomes", []):
        lines.append(
            f"~ playbook {item['playbook_id']} {item['name']!r}  outcome: {'success' if item['success'] else 'failure'}"
        )
    for item in outcome.rejected:
        lines.append(
            f"! dropped {item['kind']}: {item['reason']}" + (f"  {item['text']!r}" if item.get("text") else "")
        )
    return lines
