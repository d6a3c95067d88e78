"""Consolidation's memory-poisoning guards: secrets that must never become facts, and instructions that
must never become playbooks.

Secrets are found by pattern and, where the kind has one, by checksum (Luhn for card numbers, ISO 13616
mod-97 for IBANs), so an order number or a phone number is not taken for a card. The same finder
redacts what is sent to the LLM: a secret should not leave the cluster for a third-party model either.
"""

from __future__ import annotations

import re
from typing import NamedTuple


class Finding(NamedTuple):
    kind: str
    start: int
    end: int


# 13–19 digits, optionally grouped by single spaces or dashes (as people type card numbers).
_CARD = re.compile(r"(?<![\w-])(?:\d[ -]?){12,18}\d(?![\w-])")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]){11,30}\b", re.IGNORECASE)
# US SSNs (not the never-issued 000/666/9xx areas, 00 groups, 0000 serials), and national ids written
# with their name in front of them (passport, national id, tax id ...).
_SSN = re.compile(r"\b(?!000|666|9\d\d)\d{3}[- ](?!00)\d{2}[- ](?!0000)\d{4}\b")
_NAMED_ID = re.compile(
    r"\b(?:ssn|social security(?: number)?|passport(?: number| no\.?)?|national (?:id|insurance)(?: number)?|"
    r"tax (?:id|number)|steuer-?id|nif|nie|dni|bsn|personnummer|aadhaar)\s*(?:is|:|=|#)?\s*[A-Z0-9][A-Z0-9 -]{5,20}",
    re.IGNORECASE,
)
_API_KEYS = re.compile(
    r"\b(?:sk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}"  # OpenAI, Anthropic
    r"|(?:AKIA|ASIA)[A-Z0-9]{16}"  # AWS access key ids
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"  # GitHub
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"  # Slack
    r"|AIza[A-Za-z0-9_-]{35}"  # Google
    r"|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"  # Stripe
    r"|glpat-[A-Za-z0-9_-]{20}"  # GitLab
    r"|atlas_[A-Za-z0-9]{6,16}_[A-Za-z0-9_-]{20,}"  # our own bearer tokens
    r"|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,})"  # JWTs
)
_PRIVATE_KEY = re.compile(r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----")
# "password is hunter2", "pwd: x", "my PIN is 1234", "api key = abc…", "secret token: …".
_CREDENTIAL = re.compile(
    r"\b(?:pass(?:word|wort|phrase|code)?|pwd|pin(?: code)?|api[ _-]?key|access[ _-]?token|secret(?: key| token)?"
    r"|auth(?:orization)? token|mot de passe|contraseña|senha)\b['\"]?\s*(?:is|was|:|=|->)\s*['\"]?(?P<value>\S{3,})",
    re.IGNORECASE,
)


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = int(ch)
        if i % 2:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


def _iban_ok(candidate: str) -> bool:
    compact = candidate.replace(" ", "").upper()
    if not 15 <= len(compact) <= 34:
        return False
    rearranged = compact[4:] + compact[:4]
    try:
        number = int("".join(str(int(ch, 36)) for ch in rearranged))
    except ValueError:
        return False
    return number % 97 == 1


def secret_findings(text: str) -> list[Finding]:
    """Every secret in ``text``, by kind: card_number, iban, government_id, api_key, private_key, password."""
    found: list[Finding] = []
    for match in _CARD.finditer(text):
        digits = re.sub(r"\D", "", match.group())
        if 13 <= len(digits) <= 19 and len(set(digits)) > 1 and _luhn_ok(digits):
            found.append(Finding("card_number", match.start(), match.end()))
    for match in _IBAN.finditer(text):
        # The pattern may run on into the next word ("… 0130 00 please"): the longest prefix that
        # passes the checksum is the IBAN.
        positions = [match.start() + i for i, ch in enumerate(match.group()) if ch != " "]
        for length in range(len(positions), 14, -1):
            end = positions[length - 1] + 1
            if _iban_ok(text[match.start() : end]):
                found.append(Finding("iban", match.start(), end))
                break
    for pattern, kind in ((_SSN, "government_id"), (_NAMED_ID, "government_id"), (_API_KEYS, "api_key")):
        found += [Finding(kind, m.start(), m.end()) for m in pattern.finditer(text)]
    found += [Finding("private_key", m.start(), len(text)) for m in _PRIVATE_KEY.finditer(text)]
    for match in _CREDENTIAL.finditer(text):
        found.append(Finding("password", match.start("value"), match.end("value")))
    return sorted(found, key=lambda f: (f.start, -f.end))


def secret_kinds(text: str) -> list[str]:
    return list(dict.fromkeys(f.kind for f in secret_findings(text)))


def secrets_redacted(text: str) -> str:
    """``text`` with each secret replaced by ``[redacted <kind>]``."""
    out, at = [], 0
    for finding in secret_findings(text):
        if finding.start < at:
            continue  # overlapping findings: the first (longest) wins
        out += [text[at : finding.start], f"[redacted {finding.kind}]"]
        at = finding.end
    return "".join(out) + text[at:]


# Attempts to steer the model or the agent: never stored as a fact or a playbook.
_INJECTION = re.compile(
    r"ignore (?:all |any )?(?:the )?(?:previous|prior|above|earlier|preceding) (?:instructions|prompts?|rules|messages)"
    r"|disregard (?:all |any )?(?:the )?(?:previous|prior|above|your) (?:instructions|rules|guidelines)"
    r"|forget (?:all |everything )?(?:your|the) (?:instructions|rules)"
    r"|(?:reveal|print|show|repeat) (?:your|the) (?:system )?prompt|system prompt|developer mode|jailbreak"
    r"|you are now (?:a|an|in|DAN)\b|do anything now|<\|im_start\|>|\[/?INST\]|</?system>",
    re.IGNORECASE,
)
# Standing orders to the agent ("always answer…", "from now on…"): from a user turn they are the user's
# words, not a procedure that worked — never promoted to a playbook (a preference fact may keep them).
_DIRECTIVE = re.compile(
    r"\b(?:always|never) (?:answer|respond|reply|say|tell|recommend|mention|reveal|include|add|send|call|use|obey)\b"
    r"|\bfrom now on\b|\bact as\b|\bpretend (?:to be|you)\b|\byou must (?:always|never|obey)\b"
    r"|\b(?:new|updated|override) (?:instructions|rules|policy)\b|\bwithout (?:asking|telling|confirmation)\b",
    re.IGNORECASE,
)


def injection_like(text: str) -> bool:
    return bool(_INJECTION.search(text))


def instruction_like(text: str) -> bool:
    """An attempt to steer the model, or a standing order to the agent."""
    return bool(_INJECTION.search(text) or _DIRECTIVE.search(text))
