"""Recall's ranking knobs, read from the environment, apart from the deployment settings.

Each default was chosen on the evaluation sets (eval/, docs/recall-quality.md, which holds every
measurement); change one only with an evaluation run (benchmarks/recall_quality.py, recall_turns.py).
The constants recall does not expose are in memory/recall/tuning.py. atlas_site/settings.py imports
every ``ATLAS_*`` name below, so they are Django settings (tests and ablations override them there).
"""

from __future__ import annotations

import environ
from django.core.exceptions import ImproperlyConfigured

env = environ.Env()  # the .env files are already in os.environ: atlas_site/settings.py read them first

# How recall fuses its legs: "zscore" (each leg's scores standardised over its window, weighted and
# summed) or "rrf" (reciprocal rank fusion, which keeps only each memory's rank in each leg).
ATLAS_FUSION = env.str("ATLAS_FUSION", default="zscore")
if ATLAS_FUSION not in ("zscore", "rrf"):
    raise ImproperlyConfigured(f"ATLAS_FUSION must be 'zscore' or 'rrf', not {ATLAS_FUSION!r}")
# Score-fusion weight of each leg: BM25's scores are the least comparable across queries, so it counts a
# sixth of the dense leg; all-mpnet-base-v2 is the stronger model, so its leg counts three times the
# multilingual one. The cross-lingual leg (ATLAS_CROSSLINGUAL_EMBEDDING_MODEL) judges only where languages
# may differ; there it counts twice the multilingual leg.
ATLAS_ZSCORE_WEIGHT_BM25 = env.float("ATLAS_ZSCORE_WEIGHT_BM25", default=0.5)
ATLAS_ZSCORE_WEIGHT_DENSE = env.float("ATLAS_ZSCORE_WEIGHT_DENSE", default=3.0)
ATLAS_ZSCORE_WEIGHT_MULTILINGUAL = env.float("ATLAS_ZSCORE_WEIGHT_MULTILINGUAL", default=1.0)
ATLAS_ZSCORE_WEIGHT_CROSSLINGUAL = env.float("ATLAS_ZSCORE_WEIGHT_CROSSLINGUAL", default=2.0)
# The time leg (memory.recall.legs, issue 34 point 5): for a question naming a time ("in May", "last
# week"), the main model's kNN over the memories about that time only; its weight in score fusion and in
# reciprocal rank fusion (0 = off). Calibrated on conversations_v1 and temporal_v1 (docs/recall-quality.md).
ATLAS_ZSCORE_WEIGHT_TIME = env.float("ATLAS_ZSCORE_WEIGHT_TIME", default=10.0)
ATLAS_RRF_WEIGHT_TIME = env.float("ATLAS_RRF_WEIGHT_TIME", default=1.0)
# For a question asking when ("When did I move to Lisbon?") and naming no time, the time leg searches the
# memories whose text names a date, with a score-fusion weight of its own.
ATLAS_TIME_LEG_WHEN = env.bool("ATLAS_TIME_LEG_WHEN", default=True)
# A question bounded by an event ("before I moved to Lisbon") is dated by a first search (memory.recall.anchor).
ATLAS_TIME_LEG_EVENT = env.bool("ATLAS_TIME_LEG_EVENT", default=True)
ATLAS_ZSCORE_WEIGHT_TIME_WHEN = env.float("ATLAS_ZSCORE_WEIGHT_TIME_WHEN", default=6.0)
# A newer, not yet consolidated turn placed under the first fact it may change (memory.recall.newer) when the
# main dense leg ranks it among its first this many (0 = off).
ATLAS_NEWER_DENSE_RANK = env.int("ATLAS_NEWER_DENSE_RANK", default=10)
if not 0 <= ATLAS_NEWER_DENSE_RANK <= 100:
    raise ImproperlyConfigured(f"ATLAS_NEWER_DENSE_RANK must be from 0 to 100, not {ATLAS_NEWER_DENSE_RANK}")
if min(ATLAS_ZSCORE_WEIGHT_TIME, ATLAS_ZSCORE_WEIGHT_TIME_WHEN, ATLAS_RRF_WEIGHT_TIME) < 0:
    raise ImproperlyConfigured("the time leg's weights (ATLAS_*_WEIGHT_TIME*) must not be negative")
# Language-aware fusion: a memory that does not read as English, or any memory when the question does
# not, is ranked by the legs that read every language (multilingual, cross-lingual) alone, scaled to the
# whole weight — BM25's english analyzer and the English model cannot judge it.
ATLAS_LANGUAGE_AWARE_FUSION = env.bool("ATLAS_LANGUAGE_AWARE_FUSION", default=True)
# The dense (ATLAS_EMBEDDING_MODEL) leg ranked by plain similarity, without the decay, use and prior
# factors (which then reach the fused ranking through the BM25 leg alone), as the multilingual leg is.
ATLAS_DENSE_PLAIN_SIMILARITY = env.bool("ATLAS_DENSE_PLAIN_SIMILARITY", default=True)
# How recall sends its kNN legs (docs/recall-latency.md): one search per index and leg, merged by score
# as Elasticsearch merges shards (True), or one search per leg over all the indices (False) — the same
# hits either way. And whether the kNN legs wait for the BM25 leg's round trip (two _msearch calls, the
# query embeddings overlapping the first) or all legs go in one _msearch once the embeddings are ready.
ATLAS_KNN_SEARCH_PER_INDEX = env.bool("ATLAS_KNN_SEARCH_PER_INDEX", default=False)
ATLAS_RECALL_ONE_MSEARCH = env.bool("ATLAS_RECALL_ONE_MSEARCH", default=False)
# When recall searches its BM25 leg: for every question ("always"), or only for one that names something
# literally or asks about time ("literal": memory/recall/tuning.py BM25_LEG_QUERY_PATTERN), where BM25
# finds what embeddings blur; any other question is then the dense legs' alone. "always" by default: on
# real Elasticsearch BM25 costs milliseconds and wins recall quality; `make run` (the embedded engine scans
# every document per search) chooses "literal" (docs/recall-latency.md).
ATLAS_BM25_LEG = env.str("ATLAS_BM25_LEG", default="always")
if ATLAS_BM25_LEG not in ("always", "literal"):
    raise ImproperlyConfigured(f"ATLAS_BM25_LEG must be 'always' or 'literal', not {ATLAS_BM25_LEG!r}")
# Under `literal`, a question the engine's BM25 search is skipped for still gets the BM25 leg's judgement of
# the memories the dense legs found, scored in the app (memory.recall.lexical).
ATLAS_BM25_POOL = env.bool("ATLAS_BM25_POOL", default=True)
# A reply shares its question's relevance: an episode gains this share of its session's previous
# turn's fused score when that turn is a candidate too (0 = off).
ATLAS_REPLY_INHERITANCE = env.float("ATLAS_REPLY_INHERITANCE", default=0.5)
if not 0 <= ATLAS_REPLY_INHERITANCE <= 1:
    raise ImproperlyConfigured(f"ATLAS_REPLY_INHERITANCE must be between 0 and 1, not {ATLAS_REPLY_INHERITANCE}")
# Ranking for turns (memory.recall.turn_priors): priors by the kind of turn recall was given, each a
# multiplier of the fused score above the candidates' floor (1 = off), each swept on eval/turns_v1 with the
# gates of atlas_v1 and hard_v1 held (docs/recall-quality.md "Ranking for turns"). A request favours
# playbooks and constraint/preference facts, a question and a statement current facts; a question in the
# first person asks about the user, as an agent's turn does, and its facts get the second prior on top of
# the first (the first stays off: it costs hard_v1's search-style questions their gate); a past turn that
# asked something is weaker evidence than one that stated it; a past turn repeating this one (word-set
# Jaccard at least ATLAS_TURN_REPEAT_JACCARD; 0 = off) never ranks first.
ATLAS_TURN_QUESTION_FACT_PRIOR = env.float("ATLAS_TURN_QUESTION_FACT_PRIOR", default=1.0)
ATLAS_TURN_OWN_QUESTION_FACT_PRIOR = env.float("ATLAS_TURN_OWN_QUESTION_FACT_PRIOR", default=2.0)
ATLAS_TURN_STATEMENT_FACT_PRIOR = env.float("ATLAS_TURN_STATEMENT_FACT_PRIOR", default=2.0)
ATLAS_TURN_REQUEST_PLAYBOOK_PRIOR = env.float("ATLAS_TURN_REQUEST_PLAYBOOK_PRIOR", default=1.75)
# A statement that describes a situation a playbook is for ("we're almost out of onions again").
ATLAS_TURN_STATEMENT_PLAYBOOK_PRIOR = env.float("ATLAS_TURN_STATEMENT_PLAYBOOK_PRIOR", default=2.0)
ATLAS_TURN_REQUEST_FACT_PRIOR = env.float("ATLAS_TURN_REQUEST_FACT_PRIOR", default=2.0)
ATLAS_TURN_ASKED_PRIOR = env.float("ATLAS_TURN_ASKED_PRIOR", default=0.5)
ATLAS_TURN_REPEAT_JACCARD = env.float("ATLAS_TURN_REPEAT_JACCARD", default=0.5)
for _name in (
    "QUESTION_FACT",
    "OWN_QUESTION_FACT",
    "STATEMENT_FACT",
    "STATEMENT_PLAYBOOK",
    "REQUEST_PLAYBOOK",
    "REQUEST_FACT",
    "ASKED",
):
    if not 0 < globals()[f"ATLAS_TURN_{_name}_PRIOR"] <= 10:
        raise ImproperlyConfigured(f"ATLAS_TURN_{_name}_PRIOR must be above 0 and at most 10")
if not 0 <= ATLAS_TURN_REPEAT_JACCARD <= 1:
    raise ImproperlyConfigured(f"ATLAS_TURN_REPEAT_JACCARD must be between 0 and 1, not {ATLAS_TURN_REPEAT_JACCARD}")
# Reciprocal rank fusion (ATLAS_FUSION=rrf) weight of each recall leg: the dense leg counts double; the
# BM25 leg's weight for queries without a literal token (no code, number or acronym) may differ.
ATLAS_RRF_WEIGHT_BM25 = env.float("ATLAS_RRF_WEIGHT_BM25", default=1.0)
ATLAS_RRF_WEIGHT_DENSE = env.float("ATLAS_RRF_WEIGHT_DENSE", default=2.0)
ATLAS_RRF_WEIGHT_MULTILINGUAL = env.float("ATLAS_RRF_WEIGHT_MULTILINGUAL", default=2.0)
ATLAS_RRF_WEIGHT_CROSSLINGUAL = env.float("ATLAS_RRF_WEIGHT_CROSSLINGUAL", default=2.0)
ATLAS_RRF_WEIGHT_BM25_NATURAL = env.float("ATLAS_RRF_WEIGHT_BM25_NATURAL", default=ATLAS_RRF_WEIGHT_BM25)
# Near-duplicates in recall: a memory whose word set overlaps one ranked above it by at least this
# Jaccard share moves below the distinct ones (0 = off).
ATLAS_DEDUP_JACCARD = env.float("ATLAS_DEDUP_JACCARD", default=0.0)
# The relevance floor (memory.recall.floor): a memory whose main dense similarity (Elasticsearch's cosine
# score, (1 + cos) / 2, with ATLAS_DENSE_PLAIN_SIMILARITY) is below it is not recalled, so recall returns
# fewer than k — or nothing — when nothing fits (0 = off; calibrated by benchmarks/recall_floor.py).
ATLAS_RECALL_FLOOR = env.float("ATLAS_RECALL_FLOOR", default=0.55)
if not 0 <= ATLAS_RECALL_FLOOR < 1:
    raise ImproperlyConfigured(f"ATLAS_RECALL_FLOOR must be from 0 up to 1, not {ATLAS_RECALL_FLOOR}")
# Contextual embeddings for episodes: a turn's vector also encodes the session date and the previous turn
# of its session (the stored text stays the turn alone), blended with the turn alone's vector: this share
# of the stored vector is the contextual one.
ATLAS_CONTEXTUAL_EPISODES = env.bool("ATLAS_CONTEXTUAL_EPISODES", default=True)
ATLAS_CONTEXT_BLEND = env.float("ATLAS_CONTEXT_BLEND", default=0.7)

__all__ = [name for name in list(globals()) if name.startswith("ATLAS_")]
