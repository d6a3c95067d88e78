"""Every number recall depends on, in one place (ARCHITECTURE.md, "Recall")."""

from __future__ import annotations

import math

# Reciprocal rank fusion, computed in the app: Σ 1 / (RRF_RANK_CONSTANT + rank).
RRF_RANK_CONSTANT = 30
# Each leg returns max(WINDOW_MIN, WINDOW_PER_K · k) candidates.
WINDOW_MIN = 80
WINDOW_PER_K = 8
# kNN looks at this many candidates per result it keeps (exact in the embedded engine).
KNN_CANDIDATES_PER_RESULT = 2

# Gaussian time decay: full weight for DECAY_OFFSET_DAYS, then halves at OFFSET + SCALE.
DECAY_OFFSET_DAYS = 180
DECAY_SCALE_DAYS = 1825
DECAY_AT_SCALE = 0.5
# Use boost for facts and playbooks: 1 + USE_BOOST_WEIGHT · log10(1 + use_count).
USE_BOOST_WEIGHT = 0.2
# Catalog entries are shared world data: a mild prior below the user's own memories.
CATALOG_PRIOR = 0.85
# Playbooks rank by outcome: smoothed success rate (successes + 1) / (runs + 2),
# relative to an untried playbook's 0.5 — so a new playbook keeps its relevance
# score (×1), a proven one gains up to ×2 and a failing one sinks toward ×0.
OUTCOME_PRIOR_SUCCESSES = 1
OUTCOME_PRIOR_RUNS = 2
OUTCOME_NEUTRAL = OUTCOME_PRIOR_SUCCESSES / OUTCOME_PRIOR_RUNS

# BM25 leg fields and boosts per memory type (each also searched unstemmed through its .exact subfield);
# the leg names the fields of the types it searches.
_TEXT = ["text^2", "text.exact^2"]
BM25_FIELDS_BY_TYPE = {
    "episodic": _TEXT,
    "semantic": _TEXT,
    "archive": _TEXT,
    "procedural": [*_TEXT, "name", "name.exact", "description", "trigger_text", "trigger_text.exact"],
    "catalog": [*_TEXT, "title^2", "title.exact^2"],
}

# A query token that names something literally — it has a digit, an inner _ or . or is all capitals
# (JL44, v2.3.1, RT-AX88U, ERR_TIMEOUT, VPN) — is what BM25 finds and embeddings blur.
LITERAL_QUERY_PATTERN = r"\b(?=[\w.-]*\d)[\w.-]+\b|\b\w+[_.]\w[\w.-]*\b|\b[A-Z]{2,}\b"

# A question about time — a month or weekday name, yesterday/tomorrow/tonight, "ago", "last/next/past/this
# week…", or one that opens with "When" (dates and years have a digit: LITERAL_QUERY_PATTERN) — asks for an
# event whose date only its own words carry: BM25 on the event's words finds the turn the dense legs rank
# below small talk (eval/conversations_v1's temporal questions, docs/recall-quality.md "Conversations").
# Month names only capitalised: "may" and "march" are verbs; a mid-sentence "when" is mostly a conjunction.
TEMPORAL_QUERY_PATTERN = (
    r"\b(?:January|February|March|April|May|June|July|August|September|October|November|December)\b"
    r"|(?i:\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b"
    r"|\b(?:yesterday|tomorrow|tonight|ago)\b"
    r"|\b(?:last|next|past|this|previous)\s+(?:week|weekend|month|year|summer|winter|spring|autumn|fall|night)\b"
    r"|^\W*when\b)"
)
# The questions the BM25 leg runs for under ATLAS_BM25_LEG=literal (memory/recall/legs.py).
BM25_LEG_QUERY_PATTERN = f"{LITERAL_QUERY_PATTERN}|{TEMPORAL_QUERY_PATTERN}"

# Limits of the recall call.
MAX_K = 50
MAX_QUERY_CHARS = 2000


def window_size(k: int) -> int:
    return max(WINDOW_MIN, WINDOW_PER_K * k)


def rrf_contribution(rank: int, weight: float = 1.0) -> float:
    """The fused score one leg (with its weight) gives the document at 1-based ``rank``."""
    return weight / (RRF_RANK_CONSTANT + rank)


def decay_multiplier(age_days: float) -> float:
    """Elasticsearch's ``gauss`` decay with our offset/scale/decay, for an age in days."""
    distance = max(0.0, abs(age_days) - DECAY_OFFSET_DAYS)
    sigma_squared = -(DECAY_SCALE_DAYS**2) / (2 * math.log(DECAY_AT_SCALE))
    return math.exp(-(distance**2) / (2 * sigma_squared))


def use_boost(use_count: int) -> float:
    return 1 + USE_BOOST_WEIGHT * math.log10(1 + max(0, use_count))


def outcome_score(successes: int, failures: int) -> float:
    return (successes + OUTCOME_PRIOR_SUCCESSES) / (successes + failures + OUTCOME_PRIOR_RUNS)


def outcome_multiplier(successes: int, failures: int) -> float:
    """What recall multiplies a playbook's relevance by."""
    return outcome_score(successes, failures) / OUTCOME_NEUTRAL
