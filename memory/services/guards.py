"""Consolidation's memory-poisoning guards: secrets that must never become facts, instructions that
must never become playbooks, and memories that would send conversations or data out.

One set of patterns serves twice: :func:`secrets_redacted` cleans what is sent to the LLM (a secret
should not leave the cluster for a third-party model either), and the write guard refuses any fact or
playbook in which :func:`secret_kinds` still finds one. Episodes are stored as the user said them — a
transcript, read with the subject's own key — so neither applies to the turn itself.

Where the line is:

- Secrets are found by pattern and, where the kind has one, by checksum (Luhn for card numbers, ISO
  13616 mod-97 for IBANs), so an order number or a phone number is not taken for a card.
- A credential is a credential word with its value. Words: password (passwd, pwd, pw, pass code,
  passcode, passphrase, Passwort, mot de passe, contraseña, senha), PIN (PIN code, PIN number, door /
  alarm / access code, security code, CVV, one-time code), API key, access / auth / bearer / refresh
  token, secret, client secret; "login" / "credentials" followed by ``user / password`` or
  ``user:password``; ``scheme://user:password@host``; ``Bearer <token>``.
  After a connector (is, was, are, :, =, ->, is now, was changed to, set to; ist, es, est), the value is
  any word except the few that describe the credential instead ("my password is wrong", "is too short",
  "is in 1Password"). Straight after the word ("password hunter2") only a value holding a digit or a
  symbol counts, so "password manager", "password reset" stay. A PIN or code is digits. A key or token
  value is at least 6 characters and holds a digit, "_", "-" or a lower-upper change ("the token is
  revoked" stays). The word without a value is not a secret: "I forgot my password again, how do I
  reset it?" is an episode, distilled as it was said.
- Exfiltration: a fact or playbook (name, trigger, description, each step) in which one sentence ties a
  sending verb (send, forward, upload, post, share, copy, e-mail, text, sync, export, report, bcc …) and
  what the assistant holds (conversations, chats, chat logs, transcripts, messages, history, memories,
  context, data, credentials, "what the user says"; "it" / "them" when the memory names one elsewhere)
  to a concrete destination (a URL or domain, an e-mail address, a phone number, an IP, a webhook).
  Dropped whether worded as an order or as a description ("the assistant has to forward every
  conversation to …"): stored memories are read back into an agent's context. Sending other things
  ("send me the invoice by e-mail", "e-mail the confirmation to maya@…"), sending to people without an
  address ("Alice forwards newsletters to her partner") and calling ("call the restaurant at …") stay.
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
# Credentials. A credential word followed by its value; the word alone ("I forgot my password again") is
# not a secret. Values after a connector ("is", ":", "=", "is now", "was changed to"...) are any word but
# the few that describe the credential instead ("my password is wrong"); values right after the word
# ("password hunter2") must hold a digit or a symbol, so "password manager" and "password reset" stay.
_PW_WORD = (
    r"(?:(?:wi-?fi|login|account|admin|root|master|user|e-?mail|bank|router|network|door|alarm)\s+)?"
    r"(?:pass(?:word|wort|wd|phrase|\s?code)s?|pwd|pw|mot de passe|contrase(?:ñ|n)a|senha|kennwort|parola)"
)
_PIN_WORD = (
    r"(?:pin(?:\s?(?:code|number|no\.?|#))?|security code|cvv2?|cvc|verification code|one[- ]time (?:pass)?code"
    r"|otp|(?:door|gate|alarm|garage|access|entry|unlock|lock|safe|locker)\s?code)"
)
_KEY_WORD = (
    r"(?:api[ _-]?(?:key|token|secret)|access[ _-]?(?:key|token)|secret(?:[ _-]?(?:key|token))?|client[ _-]?secret"
    r"|auth(?:orization|entication)?[ _-]?token|bearer[ _-]?token|refresh[ _-]?token|session[ _-]?token"
    r"|private[ _-]?key|token)"
)
_CONNECTOR = (
    r"(?:\s+(?:for|to|of|on|at|in)(?:\s+[^\s:=]+){1,3}?)?"  # "for my bank", "to the office wifi"
    r"\s*(?:\bis\s+(?:now\s+|still\s+|set\s+to\s+|just\s+)?|\bwas\s+(?:changed\s+to\s+)?|\bare\s+|"
    r"\bchanged\s+to\s+|\bset\s+to\s+|\b(?:ist|es|est|é|è)\b\s*:?\s*|:|=|->|=>)\s*['\"“‘]?"
)
# Words that say something about a credential rather than being one ("my password is too short").
_NOT_A_VALUE = frozenset(
    """a an the my your his her their our its this that it not no too very so still also just now already
    wrong incorrect correct right expired expiring weak strong secure insecure safe unsafe same different
    changed reset required needed missing lost forgotten invalid valid long short case sensitive saved
    stored protected hard easy new old set ok okay fine good bad great terrible annoying simple
    complicated complex unknown blank empty none being what something somewhere which where how in on at
    under hidden written there here kept managed one locked blocked disabled enabled working broken
    asked requested needed updated due going about""".split()
)
_CREDENTIAL = re.compile(
    rf"\b(?P<word>{_PW_WORD}|{_KEY_WORD}){_CONNECTOR}(?P<value>[^\s'\"”’,;]{{3,}})",
    re.IGNORECASE,
)
_CREDENTIAL_BARE = re.compile(rf"\b(?:{_PW_WORD})\s+['\"“‘]?(?P<value>[^\s'\"”’]{{4,}})", re.IGNORECASE)
_TRAILING = ".,;:!?)]}"
_PIN = re.compile(rf"\b{_PIN_WORD}(?:{_CONNECTOR}|\s+)(?P<value>\d[\d -]{{1,14}}\d#?)(?!\d)", re.IGNORECASE)
# "login: bob / hunter2", "credentials are bob:hunter2", "login for the portal is bob / password hunter2"
_LOGIN = re.compile(
    rf"\b(?:log-?in|sign-?in|credentials?|creds|user(?:name)?\s*(?:and|&|/)\s*password){_CONNECTOR}"
    r"(?P<value>[^\s/:]+\s*(?:/|:|\||,)\s*(?:password\s+)?[^\s,;]+)",
    re.IGNORECASE,
)
# Credentials inside a URL: scheme://user:password@host
_URL_CREDENTIAL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s/:@]+:(?P<value>[^\s/@]+)@", re.IGNORECASE)
_BEARER = re.compile(r"\bBearer\s+(?P<value>[A-Za-z0-9._~+/-]{16,}=*)")


def _password_findings(text: str) -> list[Finding]:
    found = []
    for match in _CREDENTIAL.finditer(text):
        value = match.group("value").rstrip(_TRAILING)
        if value.lower() in _NOT_A_VALUE or len(value) < 3:
            continue
        is_key = re.fullmatch(_KEY_WORD, match.group("word"), re.IGNORECASE) is not None
        if is_key and (len(value) < 6 or not re.search(r"[\d_\-]|[a-z][A-Z]", value)):
            continue  # "the token is revoked", "the secret is out": a key or token is a long mixed string
        found.append(Finding("password", match.start("value"), match.start("value") + len(value)))
    for match in _CREDENTIAL_BARE.finditer(text):
        value = match.group("value").rstrip(_TRAILING)
        if len(value) >= 4 and re.search(r"[^A-Za-z]", value):  # "password hunter2", not "password manager"
            found.append(Finding("password", match.start("value"), match.start("value") + len(value)))
    for pattern in (_PIN, _LOGIN, _URL_CREDENTIAL, _BEARER):
        found += [Finding("password", m.start("value"), m.end("value")) for m in pattern.finditer(text)]
    return found


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
    found += _password_findings(text)
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


# Exfiltration: a fact or playbook that ties sending (forwarding, uploading, posting, sharing, copying...)
# the conversations or what the assistant holds (chat logs, transcripts, messages, memories, data,
# credentials) to a concrete destination — a URL or domain, an e-mail address, a phone number, a webhook.
# All three in one sentence (in any order; "it"/"them" stands for an object named elsewhere in the same
# memory). Sending other things ("send me the invoice by e-mail"), or to people without an address
# ("Alice forwards newsletters to her partner"), or calling someone ("call the restaurant at …") stays.
_EXFIL_VERB = re.compile(
    r"\b(?:send|sends|sent|sending|forward(?:s|ed|ing)?|upload(?:s|ed|ing)?|post(?:s|ed|ing)?|shar(?:e|es|ed|ing)"
    r"|cop(?:y|ies|ied|ying)|e-?mail(?:s|ed|ing)?|mail(?:s|ed|ing)?|text(?:s|ed|ing)?|sms|transmit(?:s|ted|ting)?"
    r"|leak(?:s|ed|ing)?|export(?:s|ed|ing)?|sync(?:s|ed|ing)?|mirror(?:s|ed|ing)?|relay(?:s|ed|ing)?"
    r"|submit(?:s|ted|ting)?|paste(?:s|d)?|dump(?:s|ed|ing)?|exfiltrat\w*|push(?:es|ed|ing)?|pipe(?:s|d)?"
    r"|stream(?:s|ed|ing)?|b?cc|report(?:s|ed|ing)?|deliver(?:s|ed|ing)?|transfer(?:s|red|ring)?|fax(?:es|ed)?)\b",
    re.IGNORECASE,
)
_EXFIL_OBJECT = re.compile(
    r"\b(?:conversations?|chats?|chat[ -]?logs?|chat history|transcripts?|messages?|dialog(?:ue)?s?|history"
    r"|logs?|memor(?:y|ies)|context|data|everything|credentials|passwords?|api keys?|tokens?"
    r"|what (?:the user|users|i|they|she|he|we) (?:say|says|said|write|writes|wrote|type|types|typed))\b",
    re.IGNORECASE,
)
_EXFIL_PRONOUN = re.compile(r"\b(?:it|them|this|these|all of it)\b", re.IGNORECASE)
_DESTINATION = re.compile(
    r"\b(?:https?|s?ftp|wss?|file)://\S*|\bwww\.\S+"  # a URL, however it ends (http://…/collect)
    r"|\b[\w-]+(?:\.[\w-]+)*\.(?:com|net|org|io|ai|co|me|app|dev|xyz|info|biz|site|online|top|ru|cn|tk|example"
    r"|invalid|test|local)\b"  # a domain
    r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"  # an e-mail address
    r"|(?<![\w+])\+?\d[\d ().-]{6,}\d(?!\w)"  # a phone number
    r"|\b(?:webhook|pastebin|ngrok|requestbin|\d{1,3}(?:\.\d{1,3}){3})\b",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+|;\s*")


def exfiltration_like(text: str) -> bool:
    """Whether ``text`` ties sending conversations or data to a URL, an e-mail address or a phone number."""
    named = bool(_EXFIL_OBJECT.search(text))
    for sentence in _SENTENCE_END.split(text):
        if not (_EXFIL_VERB.search(sentence) and _DESTINATION.search(sentence)):
            continue
        if _EXFIL_OBJECT.search(sentence) or (named and _EXFIL_PRONOUN.search(sentence)):
            return True
    return False
