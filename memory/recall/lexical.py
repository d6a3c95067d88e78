"""BM25 over the candidates the dense legs found, scored in the app: the BM25 leg's judgement of a
natural-language question without the engine's BM25 search (ATLAS_BM25_LEG=literal, ATLAS_BM25_POOL).

Why: on the embedded engine a BM25 search reads every document of the indices whatever the filters (a
term query over 10,000 short documents: ≈ 230 ms, the same with a filter that leaves 100 — measured in
docs/recall-latency.md), so ``literal`` skips it for questions that name nothing literally; those
questions then lose what BM25 adds to the ranking of the memories the dense legs found (a person's name,
a rare word: eval/conversations_v1's single-hop MRR@10 0.658 → 0.632). This scores those memories as the
BM25 leg's query would — the same fields and boosts (``multi_match`` best field), the ``english``
analyzer's steps for a field (standard tokens, possessive ``'s`` dropped, lower case, Lucene's English
stop words, Porter stemming) and the ``standard`` analyzer's for its ``.exact`` sub-field, Lucene's BM25
(k1 1.2, b 0.75) — with one difference: document frequencies and lengths come from the candidates, not
the index. It finds nothing the dense legs did not (the engine's search is what finds by words alone);
it costs a few milliseconds of Python and no search.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache
from typing import Any

import snowballstemmer

from memory import recall_constants as rc

# Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET, which Elasticsearch's `english` analyzer uses.
ENGLISH_STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these "
    "they this to was will with".split()
)
_TOKEN = re.compile(r"\w+(?:['’]\w+)*")  # the standard tokenizer's words, apostrophes inside kept
K1 = 1.2
B = 0.75
_STEMMER = snowballstemmer.stemmer("porter")


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return _STEMMER.stemWord(word)


def standard_terms(text: str) -> list[str]:
    """The ``standard`` analyzer: Unicode words, lower case (no stop words: Elasticsearch's default)."""
    return [token.lower() for token in _TOKEN.findall(text)]


def english_terms(text: str) -> list[str]:
    """The ``english`` analyzer: standard words, the possessive ``'s`` dropped, lower case, stop words out,
    Porter-stemmed."""
    out = []
    for token in standard_terms(text):
        token = re.sub(r"['’]s$", "", token)
        if token and token not in ENGLISH_STOP_WORDS:
            out.append(_stem(token))
    return out


def _field_spec(spec: str) -> tuple[str, str, float]:
    """``"title.exact^2"`` → (``title``, ``exact``, 2.0); ``"name"`` → (``name``, ``""``, 1.0)."""
    name, _, boost = spec.partition("^")
    base, _, sub = name.partition(".")
    return base, sub, float(boost or 1)


#: Each memory type's BM25 fields as (field, sub-field, boost), parsed once.
_FIELD_SPECS = {t: [_field_spec(f) for f in fields] for t, fields in rc.BM25_FIELDS_BY_TYPE.items()}


@lru_cache(maxsize=16384)
def _counted(value: str, sub: str) -> tuple[Counter, int]:
    """A field value's term counts (shared between calls: never changed) and length under the field's
    analyzer. Cached: the same memories come back as candidates recall after recall, and analysing them is
    most of this module's time."""
    terms = standard_terms(value) if sub == "exact" else english_terms(value)
    return Counter(terms), len(terms)


def pool_bm25(query: str, hits: list[dict[str, Any]]) -> dict[str, float]:
    """Each hit's BM25 score for ``query`` (``hits``: documents with ``_id`` and ``_source``), over the
    fields the BM25 leg reads for its type, the best field counting; hits matching no term are left out."""
    specs = _FIELD_SPECS
    query_terms = {"": set(english_terms(query)), "exact": set(standard_terms(query))}
    # One document's terms per (field, sub-field), and the pool's statistics per (field, sub-field).
    analysed: dict[str, list[tuple[Counter, int, tuple[str, str], float]]] = {}
    doc_freq: dict[tuple[str, str], Counter] = {}
    docs: Counter = Counter()
    total_length: Counter = Counter()
    for hit in hits:
        source = hit["_source"]
        fields = []
        for base, sub, boost in specs.get(source.get("memory_type"), []):
            value = source.get(base)
            if not isinstance(value, str) or not value:
                continue
            counts, length = _counted(value, sub)
            if not length:
                continue
            key = (base, sub)
            fields.append((counts, length, key, boost))
            doc_freq.setdefault(key, Counter()).update(counts.keys() & query_terms[sub])
            docs[key] += 1
            total_length[key] += length
        analysed[hit["_id"]] = fields
    scores: dict[str, float] = {}
    for memory_id, fields in analysed.items():
        best = 0.0
        for counts, length, key, boost in fields:
            n, average = docs[key], total_length[key] / docs[key]
            score = 0.0
            for term in query_terms[key[1]] & counts.keys():
                df = doc_freq[key][term]
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                tf = counts[term]
                score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))
            best = max(best, boost * score)
        if best > 0:
            scores[memory_id] = best
    return scores
