"""What kind of turn recall was given: a request, a question, a statement or small talk.

An agent passes recall the user's latest turn as it came, and each kind needs different memories
first: a request ("book me a train to Cardiff") the playbook and the constraints that shape the action,
a question about the user ("where do I live again?") the current fact, small talk ("cheers!") nothing
in particular. Rules on the text decide — a few compiled patterns, no model, so the classification runs
on every licence and on the embedded engine and costs microseconds (measured in docs/recall-quality.md).
They read English turns; a turn in another language that no rule recognises is a statement, which gets
no prior (memory.recall.turn_priors), i.e. ranks exactly as without turn ranking.
"""

from __future__ import annotations

import re

REQUEST = "request"
QUESTION = "question"
STATEMENT = "statement"
SMALL_TALK = "small_talk"
TURN_KINDS = (REQUEST, QUESTION, STATEMENT, SMALL_TALK)

# Verbs a request starts with (after "please", "can you", "could you please", …): the user asks the agent
# to do something, not to tell them something.
_ACTIONS = (
    "add arrange ask block book buy call cancel change check create draft email fill find fix get give help "
    "look make move note order organise organize pack pay pick plan prepare put quote rebook remind renew "
    "reply reschedule reserve schedule search send set show sort start suggest text track translate "
    "update work write"
).split()
_POLITE = r"(?:(?:hey|hi|ok|okay|so|right|also|and|now)\b[\s,!.]*)*(?:please\s+|pls\s+|plz\s+)?"
_ASK = (
    r"(?:(?:can|could|would|will)\s+(?:you|u)\s+(?:please\s+)?|i\s+(?:need|want|would\s+like|'d\s+like)\s+you\s+to\s+)?"
)
_REQUEST_START = re.compile(rf"^{_POLITE}{_ASK}(?:please\s+)?(?:{'|'.join(_ACTIONS)})\b")
# Asking for advice on what to do is a request for the way to do it: "what should we bring…", "how do I…".
_HOW_TO = re.compile(r"^(?:so\s+)?(?:what\s+should\s+(?:i|we)|how\s+(?:do|can|should)\s+(?:i|we)(?!\s+usually))\b")
# A request later in the turn: "We're off to Lisbon in May, can you sort out who has Biscuit?", "…, help me
# get ready".
_REQUEST_INSIDE = re.compile(
    rf"[,.;:!-]\s*{_ASK}(?:please\s+)?(?:{'|'.join(_ACTIONS)})\b|\b(?:help\s+me|can\s+you|could\s+you)\s+(?:please\s+)?(?:{'|'.join(_ACTIONS)})\b"
)
_NEED = re.compile(
    r"^(?:i|we)(?:'d|\s+would)?\s+(?:need|want|like)\s+(?:to\s+(?:book|order|get|find|buy)\b|a\s|an\s|some\s)"
)

# A question without its "?" (typed fast): one that starts with a question word. One that starts with an
# auxiliary ("did the same as last time") is a question only with its "?".
_QUESTION_START = re.compile(
    r"^(?:so\s+|and\s+|quick\s+question,?\s+)?"
    r"(?:(?:what|where|when|who|which|why|how)'s|whats|"
    r"(?:what|where|when|who|whose|which|why|how)(?:\s+\w+)?\s+"
    r"(?:is|are|am|do|does|did|can|could|was|were|will|would|should|has|have|had)\b)"
)
# "Remind me, who's…" asks; "remind me to…" is a request.
_REMIND_ME = re.compile(r"^remind\s+me\s*,\s*")

# Small talk: a short turn made only of these words (greetings, thanks, acknowledgements, laughter).
_SMALL_TALK_WORDS = frozenset(
    """
    hi hey hello hiya morning good night evening afternoon day bye goodbye later talk see you ya soon cya
    thanks thank thx ty ta cheers takk gracias merci danke obrigado grazie
    ok okay k kk alright right sure cool nice great awesome perfect brilliant lovely fine fab amazing wow
    yes yeah yep yup no nope nah maybe hmm hm um uh oh ah lol lmao haha hahaha hehe xd
    that's thats is was sounds fair enough one mate man dude buddy the best you're youre your a have much so
    really very too it all good done got noted again there back im i'm everyone folks guys
    """.split()
)
_MAX_SMALL_TALK_WORDS = 6
_WORD = re.compile(r"[a-z']+")


def turn_classify(*, text: str) -> str:
    """The kind of ``text`` (one of TURN_KINDS)."""
    lowered = " ".join(text.lower().replace("’", "'").split())
    words = _WORD.findall(lowered)
    if not words or (len(words) <= _MAX_SMALL_TALK_WORDS and all(w in _SMALL_TALK_WORDS for w in words)):
        return SMALL_TALK
    start = _REMIND_ME.sub("", lowered.lstrip("\"'([ "))
    if _REQUEST_START.match(start) or _HOW_TO.match(start) or _NEED.match(start) or _REQUEST_INSIDE.search(start):
        return REQUEST
    if "?" in lowered or _QUESTION_START.match(start):
        return QUESTION
    return STATEMENT


def turn_asks(*, text: str) -> bool:
    """Whether a stored turn asked something (a question or a request) rather than stated it: what the user
    asked before is weaker evidence about them than what they said."""
    if "?" in text:
        return True
    start = " ".join(text.lower().replace("’", "'").split()).lstrip("\"'([ ")
    return bool(_REQUEST_START.match(start) or _HOW_TO.match(start))


# The user speaking of themselves: "where do I live?", "what's my dog called?", "when did we move?".
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine|myself|we|we're|we've|us|our|ours)\b")


def turn_in_first_person(*, text: str) -> bool:
    """Whether ``text`` speaks of its writer ("where do I live?"), as an agent's user does, rather than of
    someone by name ("where does Kofi live?"), as a search does. A question in the first person asks about
    the user, which a current fact answers; a search-style question often needs the conversation itself."""
    return bool(_FIRST_PERSON.search(" ".join(text.lower().replace("’", "'").split())))
