"""Whether a memory's text reads as English — what recall's fusion needs to know about a memory's language.

The BM25 leg (the ``english`` analyzer) and the main embedding (all-mpnet-base-v2, trained on English)
cannot judge a memory written in Spanish or German: for them it is a bag of unknown words that ranks
low whatever it says. Fusion must not count that as a vote against it (memory.recall.fusion.fuse).

The test is function words: each language's commonest short words make up a large share of any
sentence in it, and the lists below barely overlap. A text reads as foreign when it holds at least
two function words of the other languages and more of them than English ones; short notes, names,
numbers and code stay English, which is what the English legs can still match literally.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

ENGLISH_FUNCTION_WORDS = frozenset(
    """the and of to is are was were be been it this that you he she we they my his her our their me him
    us them not no does did have has had will would can could just but if from by as about what when
    where who how which there here then than also very with for on at""".split()
)
# Spanish, German, French, Portuguese, Italian and Dutch function words that are not also common
# English words (so no "do", "per", "hat", "den", "al", "da"; "die" stays: German needs it, and an
# English text with "die" also needs a second foreign word and fewer English ones).
FOREIGN_FUNCTION_WORDS = frozenset(
    """de en el la los las que y un una es por con para del se lo su sus mi mis muy pero como más ya está
    están hay fue der die das und ist nicht ein eine einen mein meine wie ich wir sie mit auf für
    von zu zum zur dem des im sind haben aber auch noch nach bei le les et est une du qui dans
    pour pas sur avec au aux ce cette mais je nous vous elle il os em uma é não com dos ao mas
    gli della che non sono anche più het een ik niet op dat""".split()
)
_WORD = re.compile(r"[^\W\d_]+")
MIN_FOREIGN_WORDS = 2


def reads_as_english(text: str) -> bool:
    words = _WORD.findall(text.lower())
    foreign = sum(word in FOREIGN_FUNCTION_WORDS for word in words)
    english = sum(word in ENGLISH_FUNCTION_WORDS for word in words)
    return not (foreign >= MIN_FOREIGN_WORDS and foreign > english)


def memory_reads_as_english(source: Mapping[str, Any]) -> bool:
    """Whether a memory document (its ``_source``) reads as English: its title (catalog) and text."""
    return reads_as_english(" ".join(part for part in (source.get("title"), source.get("text")) if part))
