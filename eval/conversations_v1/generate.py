"""Compose eval/conversations_v1 from the hand-written pieces in content.py (seeded: the same files every run).

Usage: python eval/conversations_v1/generate.py   (writes documents.jsonl and queries.jsonl beside it)

Each conversation is one subject. A session opens with greetings, carries the events scheduled into it
(each the speaker's turn and the other's answer), small talk between them and a goodbye. Every turn is an
episodic memory "<Speaker>: <text>" with the session's id and a timestamp a few minutes after the
previous turn, so dates like "last weekend" resolve only from the session's date.
"""

from __future__ import annotations

import json
import random
import sys
from datetime import datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from content import CONVERSATIONS  # noqa: E402

SEED = 20261203

# Where each thread's parts sit in the conversation (share of the sessions), in the order of "threads".
THREAD_POSITIONS = {
    "amara-jonah": [(0.0, 0.12), (0.55, 0.95), (0.78, 0.92)],
    "devika-tomasz": [(0.7, 0.82), (0.1, 0.5), (0.3, 0.6)],
    "lena-marcus": [(0.8, 0.95), (0.2, 0.6), (0.68, 0.9)],
    "rosa-hana": [(0.05, 0.5), (0.1, 0.4), (0.2, 0.96)],
    "kwame-sofia": [(0.3, 0.6), (0.75, 0.9), (0.6, 0.75)],
    "ines-callum": [(0.4, 0.55), (0.3, 0.6), (0.3, 0.95)],
}

# Each speaker's everyday life, for the small talk that fills every session (never the answer to a question).
LIVES = {
    "Amara": {
        "city": "Leeds",
        "work": ["the ward", "nights", "the rota", "handover"],
        "moan": [
            "we were three nurses down again",
            "I did two hours of charting after my shift",
            "the agency cover never turned up",
        ],
        "food": ["leftover jollof", "a meal deal from the hospital shop", "beans on toast"],
        "show": ["Happy Valley", "the Bake Off final", "that true crime podcast"],
    },
    "Jonah": {
        "city": "Leeds",
        "work": ["school", "the workshop", "marking", "parents' evening"],
        "moan": [
            "the bandsaw needs a new blade and there's no budget",
            "year 9 glued their fingers together again",
            "Ofsted rumours all week",
        ],
        "food": ["a massive pot of chilli", "fish and chips in the van", "toast, honestly just toast"],
        "show": ["The Repair Shop", "a documentary about Norwegian boat builders", "old Top Gear reruns"],
    },
    "Devika": {
        "city": "Plymouth",
        "work": ["the lab", "my thesis", "the microscope", "lab meeting"],
        "moan": ["the centrifuge is booked solid", "my code crashed at 3am", "reviewer two strikes again"],
        "food": ["instant noodles over the keyboard", "Mum's frozen dal", "a pasty on the Hoe"],
        "show": ["Blue Planet again", "The Great British Sewing Bee", "a Tamil film with my cousins"],
    },
    "Tomasz": {
        "city": "Oxford",
        "work": ["the bakery", "the 4am shift", "the ovens", "the morning rush"],
        "moan": ["butter prices went up again", "the mixer is making a noise", "we were short-staffed at the till"],
        "food": ["day-old croissants", "żurek my mum made", "a bacon roll standing up"],
        "show": ["football highlights", "Kitchen Nightmares", "cartoons with Kuba"],
    },
    "Lena": {
        "city": "Bristol",
        "work": ["client emails", "the studio", "a logo brief", "invoicing"],
        "moan": [
            "a client wanted the logo bigger again",
            "I chased an invoice for a month",
            "the laptop froze mid-export",
        ],
        "food": ["toast with one hand", "a lasagne my neighbour dropped round", "cold pizza at midnight"],
        "show": ["Gilmore Girls for the third time", "a design podcast", "whatever's on at 3am feeds"],
    },
    "Marcus": {
        "city": "Bristol",
        "work": ["the station", "night watch", "training drills", "the engine checks"],
        "moan": [
            "four false alarms from the same office block",
            "the new kit is too stiff",
            "paperwork after every shout",
        ],
        "food": ["a station curry", "a protein shake and a banana", "a Greggs on the way home"],
        "show": ["Match of the Day", "Line of Duty", "a boxing documentary"],
    },
    "Rosa": {
        "city": "Harrogate",
        "work": ["the allotment", "the church rota", "the grandchildren", "the WI"],
        "moan": ["the slugs have had all my lettuces", "my knees are complaining", "the bus was late again"],
        "food": ["soup and a roll", "a Yorkshire curd tart", "a boiled egg and soldiers"],
        "show": ["Gardeners' World", "The Archers", "a Poirot repeat"],
    },
    "Hana": {
        "city": "Edinburgh",
        "work": ["revision", "lectures", "the library", "coursework"],
        "moan": ["I've got three deadlines on one day", "the wifi in halls is dreadful", "my alarm didn't go off"],
        "food": ["pesto pasta again", "a meal deal", "cereal for dinner"],
        "show": ["All Creatures Great and Small", "Love Island, don't judge", "a vet vlog"],
    },
    "Kwame": {
        "city": "Lisbon",
        "work": ["sprint planning", "code review", "on-call", "the standup"],
        "moan": [
            "another meeting that could have been an email",
            "the pager went off at 2am",
            "a flaky test ate my morning",
        ],
        "food": ["a pastel de nata, or three", "bifana from the corner place", "rice and stew I batch-cooked"],
        "show": ["the Champions League", "a tech conference talk", "Succession reruns"],
    },
    "Sofia": {
        "city": "Porto",
        "work": ["surgery", "the clinic", "consults", "the night emergency line"],
        "moan": [
            "an owner refused the treatment plan",
            "we ran out of the good sutures",
            "back-to-back vaccinations all morning",
        ],
        "food": ["caldo verde", "a tosta mista between consults", "my mum's bacalhau"],
        "show": ["a Spanish crime series", "cat videos, honestly", "the Eurovision heats"],
    },
    "Ines": {
        "city": "Belfast",
        "work": ["rehearsal", "scales", "the orchestra schedule", "practice"],
        "moan": [
            "the conductor changed the tempo on us again",
            "my C string keeps slipping",
            "four hours of rehearsal and my back knows it",
        ],
        "food": ["an Ulster fry", "toast and tea between rehearsals", "a curry from the place on Ormeau Road"],
        "show": ["Derry Girls", "a cello masterclass on YouTube", "the Proms on iPlayer"],
    },
    "Callum": {
        "city": "Belfast",
        "work": ["the truck", "prep", "the lunch rush", "the suppliers"],
        "moan": ["chip prices are mental", "the gas bottle ran out mid-service", "it rained on the whole market"],
        "food": ["leftover tacos", "a fry at my ma's", "cold chips, the chef's diet"],
        "show": ["The Bear, too real", "a Rick Stein series", "Ulster rugby"],
    },
}

GREETINGS = [
    "Hey {other}! How's your week been?",
    "Hiya, long time no chat! What's new?",
    "Morning {other}, got five minutes?",
    "Heyyy, sorry I went quiet, it's been a lot",
    "Evening! Finally sat down with a cup of tea",
    "{other}! I have news, but you first, how are you?",
    "Hi hi, are you around?",
    "Right, I've got ten minutes before bed, catch me up",
]
GREETING_REPLIES = [
    "Hey! All good here, tired but good",
    "Hiya! Busy as ever, but I'm here",
    "Yes! Perfect timing, I just got in",
    "Ha, no worries, life happens",
    "Same old, same old. Go on then, tell me everything",
    "I'm good! Bit knackered",
    "Always around for you",
]
CLOSINGS = [
    "Anyway I'd better go, speak soon!",
    "Right, bed is calling. Night!",
    "Gotta run, this was lovely",
    "Okay I need to cook dinner, talk later x",
    "Let's catch up properly next week",
    "That's me for tonight, take care",
]
CLOSING_REPLIES = [
    "Night! Talk soon",
    "Bye! Look after yourself",
    "Speak soon x",
    "Yes let's, have a good one",
    "Take care, love you",
]
# Small talk: a line one speaker says about their own life, with the other's answer.
SMALL_TALK = [
    ("Work has been relentless, {moan}", "That sounds exhausting"),
    ("It's been raining in {city} for about a week straight", "Same here, I've forgotten what the sun looks like"),
    ("Had {food} for dinner, living the dream", "Honestly that sounds great right now"),
    ("Have you been watching {show}? I can't stop", "Not yet, is it good?"),
    ("I need a holiday so badly, {work} is wearing me down", "You really do, book something"),
    ("Bit of a quiet one, just {work} and sleep", "Quiet is good sometimes"),
    ("I was so tired I fell asleep on the sofa at nine", "Ha, that's me every night"),
    ("Spent the whole evening on {work}, not even joking", "Please take a break"),
    ("Guess who forgot to defrost anything, so {food} it is", "A classic"),
    ("Ugh, {moan}. Anyway", "Oof, sorry"),
    ("The days are getting shorter, it's dark by the time I finish {work}", "I hate that bit of the year"),
    ("Binged half of {show} last night instead of sleeping", "No regrets though?"),
    ("Got caught in the rain walking home, soaked through", "Classic {city} weather"),
    ("Finally cleaned the kitchen, I feel like a new person", "That's the best feeling"),
    ("Everyone at {work} has a cold, I'm next I can feel it", "Vitamin C and early nights!"),
    ("My phone screen cracked, again", "Get a proper case this time!"),
    ("I've been trying to drink more water, day three going strong", "Look at you go"),
    ("Honestly, {moan}, but it's fine, it's fine", "Deep breaths"),
    ("Made a to-do list and then ignored it all day", "Relatable"),
    ("Had a lovely walk this evening, first time in ages", "Walks fix everything"),
]
# Questions one asks about the other's life, with the other's answer.
CHECK_INS = [
    ("How's {work} treating you?", "Same as ever, {moan}"),
    ("Are you still watching {show}?", "Yes, nearly finished, no spoilers"),
    ("Did you get any sleep this week?", "Barely, {work} has been mad"),
    ("What did you have for tea?", "{food}, nothing fancy"),
    ("How's the weather in {city}?", "Grey. Always grey"),
    ("Any plans for the weekend?", "Not really, maybe catch up on {work}"),
    ("You sound tired, everything okay?", "Yeah just a long week, {moan}"),
]
# What the speaker adds after the other's answer to their news.
FOLLOW_UPS = [
    "Yeah, still taking it in",
    "I know, right?",
    "Thanks, it means a lot",
    "Honestly it's been a week",
    "Ha, we'll see",
    "Tell me about it",
]

WHEN_DAYS = {
    "this morning": 0,
    "yesterday": 1,
    "last night": 1,
    "a few days ago": 3,
    "last week": 7,
    "two weeks ago": 14,
    "a couple of weeks ago": 14,
    "last month": 30,
}
WEEKDAYS = {"on Friday": 4, "on Saturday": 5, "on Sunday": 6}


def event_date(when: str, session_day: datetime) -> tuple[datetime, str]:
    """The day an event happened and how a person would name it, from how the speaker dated it."""
    if when in WHEN_DAYS:
        day = session_day - timedelta(days=WHEN_DAYS[when])
        if when in ("last week", "two weeks ago", "a couple of weeks ago", "a few days ago"):
            return day, f"the week of {day:%-d %B %Y}"
        if when == "last month":
            return day, f"{day:%B %Y}"
        return day, f"{day:%-d %B %Y}"
    if when in WEEKDAYS:
        back = (session_day.weekday() - WEEKDAYS[when]) % 7 or 7
        day = session_day - timedelta(days=back)
        return day, f"{day:%-d %B %Y}"
    if when == "last weekend":
        back = (session_day.weekday() - 5) % 7
        back = back + 7 if back < 2 else back  # on a Saturday or Sunday, "last weekend" is the one before
        day = session_day - timedelta(days=back)
        return day, f"the weekend of {day:%-d %B %Y}"
    raise ValueError(f"unknown time expression {when!r}")


def parse_events(block: str) -> list[dict]:
    events = []
    for line in block.strip().splitlines():
        when, say, reply, questions = (part.strip() for part in line.split(" | "))
        qs = []
        for q in questions.split(" ;; "):
            kind, text = q.split(": ", 1)
            qs.append((kind.strip(), text.strip()))
        events.append({"when": when, "say": say, "reply": reply, "questions": qs})
    return events


def parse_threads(block: str) -> list[dict]:
    threads = []
    for line in block.strip().splitlines():
        *parts, question = (p.strip() for p in line.split(" || "))
        steps = []
        for part in parts:
            who, when, say, reply = (p.strip() for p in part.split(" | "))
            steps.append({"who": who, "when": when, "say": say, "reply": reply})
        kind, text = question.split(": ", 1)
        threads.append({"steps": steps, "kind": kind, "question": text})
    return threads


def fill(template: str, life: dict, rng: random.Random, other: str = "") -> str:
    return template.format(
        other=other,
        city=life["city"],
        work=rng.choice(life["work"]),
        moan=rng.choice(life["moan"]),
        food=rng.choice(life["food"]),
        show=rng.choice(life["show"]),
    )


def conversation_build(conv: dict, rng: random.Random) -> tuple[list[dict], list[dict]]:
    key, names, sessions = conv["key"], {"a": conv["a"], "b": conv["b"]}, conv["sessions"]
    # Session dates: every 9 to 24 days, an evening hour.
    day = datetime.fromisoformat(conv["start"]).replace(hour=19)
    session_days = []
    for _ in range(sessions):
        session_days.append(day.replace(hour=rng.randint(18, 21), minute=rng.choice((0, 5, 12, 20, 31, 44))))
        day += timedelta(days=rng.randint(9, 24))
    # Which session each event goes to: in story order, spread evenly, one speaker's events never share one.
    plan: list[list[tuple[str, dict, str | None]]] = [[] for _ in range(sessions)]
    for who in ("a", "b"):
        events = parse_events(conv[f"{who}_events"])
        for i, event in enumerate(events):
            slot = min(sessions - 1, int((i + rng.random() * 0.8) * sessions / len(events)))
            plan[slot].append((who, event, None))
    threads = parse_threads(conv["threads"])
    for t, (thread, positions) in enumerate(zip(threads, THREAD_POSITIONS[key], strict=True)):
        for step, position in zip(thread["steps"], positions, strict=True):
            plan[round(position * (sessions - 1))].append((step["who"], step, f"thread-{t}"))
    documents: list[dict] = []
    gold_of: dict[str, list[str]] = {}
    queries: list[dict] = []
    dated: list[tuple[str, tuple[datetime, str], str]] = []
    for s, events in enumerate(plan, start=1):
        sid = f"cv-{key}-s{s:02d}"
        at = session_days[s - 1]
        turns: list[tuple[str, str, str | None]] = []  # (speaker key, text, marker of an evidence turn)
        used: set[str] = set()
        first = rng.choice("ab")
        second = "b" if first == "a" else "a"
        turns.append((first, rng.choice(GREETINGS).format(other=names[second]), None))
        turns.append((second, rng.choice(GREETING_REPLIES), None))
        rng.shuffle(events)
        for n, (who, event, thread) in enumerate(events):
            other = "b" if who == "a" else "a"
            for _ in range(rng.randint(1, 3) if n else rng.randint(0, 2)):
                turns.extend(small_talk(rng, names, used))
            when = event["when"]
            text = event["say"].format(when=when) if when != "-" else event["say"]
            marker = thread or f"event-{id(event)}"
            turns.append((who, text, marker))
            turns.append((other, event["reply"], None))
            if rng.random() < 0.25:
                turns.append((who, rng.choice(FOLLOW_UPS), None))
            event["_session"] = (s, at, when)
        for _ in range(rng.randint(1, 3)):
            turns.extend(small_talk(rng, names, used))
        closer = rng.choice("ab")
        turns.append((closer, rng.choice(CLOSINGS), None))
        turns.append(("b" if closer == "a" else "a", rng.choice(CLOSING_REPLIES), None))
        for t, (who, text, marker) in enumerate(turns, start=1):
            doc_id = f"cv-{key}-s{s:02d}-t{t:02d}"
            at = at + timedelta(minutes=rng.randint(1, 4))
            documents.append(
                {
                    "id": doc_id,
                    "user_id": key,
                    "memory_type": "episodic",
                    "text": f"{names[who]}: {text}",
                    "timestamp": at.strftime("%Y-%m-%dT%H:%M:00Z"),
                    "role": "user",
                    "event_type": "message",
                    "session_id": sid,
                }
            )
            if marker:
                gold_of.setdefault(marker, []).append(doc_id)
        for who, event, thread in events:
            if thread:
                continue
            (gold,) = gold_of[f"event-{id(event)}"]
            _, s_at, when = event["_session"]
            if when != "-":
                dated.append((who, event_date(when, s_at), gold))
            for kind, text in event["questions"]:
                query = {"user_id": key, "query": text, "gold_ids": [gold], "kind": kind}
                if kind == "temporal":
                    query["answer"] = event_date(when, s_at)[1]
                queries.append(query)
    queries += dated_questions(dated, names, key, rng)
    for t, thread in enumerate(threads):
        queries.append(
            {"user_id": key, "query": thread["question"], "gold_ids": gold_of[f"thread-{t}"], "kind": thread["kind"]}
        )
    return documents, queries


DATED_QUESTIONS = [
    "What did {name} get up to {phrase}?",
    "What was {name} doing {phrase}?",
    "Anything notable happen to {name} {phrase}?",
    "What happened in {name}'s life {phrase}?",
]


def dated_questions(dated: list, names: dict, key: str, rng: random.Random) -> list[dict]:
    """Two questions per speaker that name only a date ("What was Amara doing over the weekend of 4 March
    2023?"): the turn says "last weekend", so only its session's date places it. An event qualifies when
    it is dated to the day, the weekend or the week and no other event of the speaker is within ten days."""
    out = []
    for who in ("a", "b"):
        mine = [(day, phrase, gold) for w, (day, phrase), gold in dated if w == who]
        usable = [
            (day, phrase, gold)
            for day, phrase, gold in mine
            if not phrase[0].isalpha() or phrase.startswith("the ")
            if all(abs((day - other).days) > 10 for other, _, g in mine if g != gold)
        ]
        for _day, phrase, gold in rng.sample(usable, min(2, len(usable))):
            phrase = phrase.replace("the weekend of", "over the weekend of").replace("the week of", "in the week of")
            phrase = phrase if phrase.startswith(("over", "in")) else f"on {phrase}"
            text = rng.choice(DATED_QUESTIONS).format(name=names[who], phrase=phrase)
            out.append({"user_id": key, "query": text, "gold_ids": [gold], "kind": "temporal", "answer": phrase})
    return out


def small_talk(rng: random.Random, names: dict, used: set) -> list[tuple[str, str, None]]:
    """Two turns of small talk, never a line already used in this session (``used``)."""
    speaker = rng.choice("ab")
    other = "b" if speaker == "a" else "a"
    if rng.random() < 0.35:
        ask, answer = rng.choice([pair for pair in CHECK_INS if pair[0] not in used])
        used.add(ask)
        life = LIVES[names[other]]
        return [(speaker, fill(ask, life, rng), None), (other, fill(answer, life, rng), None)]
    line, answer = rng.choice([pair for pair in SMALL_TALK if pair[0] not in used])
    used.add(line)
    life = LIVES[names[speaker]]
    return [(speaker, fill(line, life, rng), None), (other, fill(answer, life, rng), None)]


def main() -> None:
    rng = random.Random(SEED)
    documents, queries = [], []
    for conv in CONVERSATIONS:
        docs, qs = conversation_build(conv, rng)
        documents += docs
        queries += qs
    for n, q in enumerate(queries, start=1):
        q["qid"] = f"cq-{n:03d}"
    with (HERE / "documents.jsonl").open("w") as out:
        for doc in documents:
            out.write(json.dumps(doc, ensure_ascii=False) + "\n")
    with (HERE / "queries.jsonl").open("w") as out:
        for q in queries:
            ordered = {k: q[k] for k in ("qid", "user_id", "query", "gold_ids", "kind", "answer") if k in q}
            out.write(json.dumps(ordered, ensure_ascii=False) + "\n")
    kinds: dict[str, int] = {}
    for q in queries:
        kinds[q["kind"]] = kinds.get(q["kind"], 0) + 1
    print(
        f"{len(documents)} turns, {len({d['session_id'] for d in documents})} sessions, {len(queries)} queries {kinds}"
    )


if __name__ == "__main__":
    main()
