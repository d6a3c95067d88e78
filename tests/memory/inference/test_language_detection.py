"""Which memories read as English: the test behind language-aware fusion."""

from __future__ import annotations

import pytest

from memory.inference.language_detection import (
    ENGLISH_FUNCTION_WORDS,
    FOREIGN_FUNCTION_WORDS,
    memory_reads_as_english,
    reads_as_english,
)


@pytest.mark.parametrize(
    "text",
    [
        "Lucía es alérgica al kiwi y al látex; en la cocina usa siempre guantes de nitrilo.",
        "Die Kaution sind drei Nettokaltmieten, 4.200 Euro.",
        "Nous avons signé le bail pour l'appartement à Laval.",
        "A minha irmã casou-se em setembro com o Pedro, não foi?",
        "Ik heb het contract niet getekend, dat doe ik morgen.",
    ],
)
def test_sentences_in_other_languages_do_not_read_as_english(text: str) -> None:
    assert reads_as_english(text) is False


@pytest.mark.parametrize(
    "text",
    [
        "What do you do for a living?",
        "Tom's RT-AX88U runs firmware 3.0.0.4.388_22525.",
        "site crashed twice",
        "Dinner at Le Bernardin with the team was lovely",
        "The master craftsman exam (Meisterprüfung) for pastry chefs has four parts.",
        "",
    ],
)
def test_english_and_wordless_texts_read_as_english(text: str) -> None:
    """Names, codes and a foreign word inside an English sentence stay English: the English legs can
    still match them literally."""
    assert reads_as_english(text) is True


def test_the_two_word_lists_share_no_word() -> None:
    assert ENGLISH_FUNCTION_WORDS & FOREIGN_FUNCTION_WORDS == frozenset()


def test_a_memory_reads_by_its_title_and_text_together() -> None:
    """A catalog entry's Spanish title tips a short text that alone would stay English."""
    assert memory_reads_as_english({"text": "Abre a las ocho."}) is True
    assert memory_reads_as_english({"title": "Horario de la clínica", "text": "Abre a las ocho."}) is False
    assert memory_reads_as_english({"title": None, "text": "The clinic opens at eight."}) is True
