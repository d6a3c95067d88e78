"""BM25 scored in the app over recall's candidates (memory/recall/lexical.py): the analyzers' steps as
Elasticsearch's and Lucene's BM25 formula.

References: the `english` analyzer is, per Elasticsearch's reference ("Language analyzers", english
analyzer, its reimplementation as a custom analyzer), the standard tokenizer, then
`english_possessive_stemmer`, `lowercase`, `english_stop` (Lucene's EnglishAnalyzer stop set) and
`stemmer` with language `english`, which is Lucene's PorterStemFilter; the `standard` analyzer has no
stop words by default. Lucene's BM25Similarity: idf = ln(1 + (N − df + 0.5) / (df + 0.5)), tf part
tf·(k1 + 1) / (tf + k1·(1 − b + b·dl/avgdl)), k1 = 1.2, b = 0.75 (ES 8 drops the old (k1 + 1) factor
from the score, which changes no order; we keep it, which changes no order either)."""

from __future__ import annotations

import math

import pytest

from memory.recall.lexical import english_terms, pool_bm25, standard_terms


def test_the_english_analyzer_steps() -> None:
    assert english_terms("Which hospital unit did Amara's sister transfer to? Running runs") == [
        "which",
        "hospit",
        "unit",
        "did",
        "amara",
        "sister",
        "transfer",
        "run",
        "run",
    ]
    assert english_terms("the THE a An it is") == []  # Lucene's English stop words, any case
    assert standard_terms("Amara's JL44 flight") == ["amara's", "jl44", "flight"]  # no stop words, no stems


def _episode(memory_id: str, text: str) -> dict:
    return {"_id": memory_id, "_source": {"memory_type": "episodic", "text": text}}


def test_scores_are_lucenes_bm25_over_the_pool_best_field_counting() -> None:
    hits = [_episode("a", "Amara moved to the cardiac unit"), _episode("b", "dinner plans"), _episode("c", "unit")]
    scores = pool_bm25("Amara unit", hits)
    assert set(scores) == {"a", "c"}  # b matches no term: left out

    def bm25(tf: int, df: int, dl: int, n: int, avgdl: float) -> float:
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl))

    # text (english, ×2): a = [amara, move, cardiac, unit] (4 terms), b 2, c 1 → avgdl 7/3; "amara" df 1,
    # "unit" df 2. text.exact (standard, ×2): a has 6 tokens, b 2, c 1 → avgdl 3. The best field counts.
    english_a = 2 * (bm25(1, 1, 4, 3, 7 / 3) + bm25(1, 2, 4, 3, 7 / 3))
    exact_a = 2 * (bm25(1, 1, 6, 3, 3) + bm25(1, 2, 6, 3, 3))
    assert scores["a"] == pytest.approx(max(english_a, exact_a))
    assert scores["c"] == pytest.approx(max(2 * bm25(1, 2, 1, 3, 7 / 3), 2 * bm25(1, 2, 1, 3, 3)))


def test_a_playbook_is_read_in_its_own_fields() -> None:
    playbook = {
        "_id": "p",
        "_source": {"memory_type": "procedural", "text": "steps", "name": "hospital visit", "trigger_text": "x"},
    }
    assert set(pool_bm25("hospital", [playbook, _episode("e", "nothing here")])) == {"p"}
