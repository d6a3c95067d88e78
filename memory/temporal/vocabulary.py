"""The English words of time the date grammar reads: months, weekdays, seasons, counts and the words that
announce a date (docs/temporal.md "Grammar")."""

from __future__ import annotations

MONTHS = {
    "january": 1,
    "jan": 1,
    "february": 2,
    "feb": 2,
    "march": 3,
    "mar": 3,
    "april": 4,
    "apr": 4,
    "may": 5,
    "june": 6,
    "jun": 6,
    "july": 7,
    "jul": 7,
    "august": 8,
    "aug": 8,
    "september": 9,
    "sept": 9,
    "sep": 9,
    "october": 10,
    "oct": 10,
    "november": 11,
    "nov": 11,
    "december": 12,
    "dec": 12,
}
# "may", "march" and "mar" are also verbs: lower-case, they never name a month.
MONTH_VERBS = frozenset({"may", "march", "mar"})
# A word that starts like a month: context.month_number keeps those that are one ("mayor" is not). Three
# letters and the rest of the word are several times faster to search for than the 24 names.
MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"

WEEKDAYS = {"monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5, "sunday": 6}
# Full names only: "sat", "sun" and "wed" are ordinary words. A plural ("on Mondays") is a habit, no date:
# the \b after the name does not match before an "s".
WEEKDAY = r"(?:" + "|".join(WEEKDAYS) + r")\b"

# Meteorological seasons of the northern hemisphere, by their first month; a winter runs December to February
# and belongs to the year of its December.
SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
SEASON = r"(?:spring|summer|autumn|fall|winter)\b"

# A count: the (lowest, highest) number it may mean. Vague counts cover a range so that the resolved dates
# cover every reading ("a few days ago" is 2 to 4 days back).
COUNTS = {
    "a": (1, 1),
    "an": (1, 1),
    "one": (1, 1),
    "two": (2, 2),
    "three": (3, 3),
    "four": (4, 4),
    "five": (5, 5),
    "six": (6, 6),
    "seven": (7, 7),
    "eight": (8, 8),
    "nine": (9, 9),
    "ten": (10, 10),
    "eleven": (11, 11),
    "twelve": (12, 12),
    "couple": (2, 3),
    "few": (2, 4),
    "several": (3, 6),
}
COUNT = (
    r"(?:\d{1,3}|a\s+couple(?:\s+of)?|couple\s+of|a\s+few|few|several|"
    + "|".join(word for word in COUNTS if word not in {"couple", "few", "several"})
    + r")"
)
UNIT = r"(?P<unit>day|week|month|year)s?\b"

# Words before a bare month, season or year that make it a date ("in May", "since 2019", "end of June"):
# without one, "May" and "March" are verbs and "April", "June" and "August" are given names.
DATE_CUES = frozenset(
    """in during over since until till by before after from through throughout between of early late mid
    for around last next this past""".split()
)
# The relation words a date may open with, and the choice each one makes among the date's occurrences.
RELATIONS = {
    "last": "last",
    "past": "last",
    "previous": "last",
    "next": "next",
    "coming": "next",
    "following": "next",
    "this": "this",
}
RELATION_WORD = r"(?P<relation>last|next|this|coming|past|previous|following)"

# The words that make a turn's clause speak of the future or the past (memory.temporal.tense). A future
# word wins over a past one: "we planned the trip for May" and "I booked flights for Grandma's 90th in
# December" speak of a month to come.
FUTURE_WORDS = frozenset(
    """will won't shall gonna plan plans planned planning scheduled upcoming tomorrow next coming intend
    intends starting starts booked booking reserved""".split()
)
FUTURE_PHRASES = ("going to", "about to", "can't wait", "looking forward", "hope to", "want to", "'ll ")
PAST_WORDS = frozenset(
    """was wasn't were weren't did didn't had hadn't went got came saw made took said told met left bought
    brought thought felt found gave ran began ate drank wrote spoke sent spent lost won paid heard kept slept
    sat stood flew drove rode wore broke chose fell forgot caught taught knew grew threw held built meant ago
    yesterday last""".split()
)
# Words ending in -ed that are no past tense (or are adjectives of the present: "I'm excited about Friday").
NOT_PAST_ED = frozenset(
    """need feed seed speed bed red shed weed bleed breed proceed exceed succeed indeed hundred sacred naked
    wicked excited tired interested worried scared bored supposed expected""".split()
)
