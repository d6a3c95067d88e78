"""The demo tenant's memories for ``make run`` (atlas_demo_seed): what an agent might have learnt about two
people over a few weeks of conversations, in the import format (memory.portable.lines).

Alice: four sessions of turns, facts learnt from them — one corrected twice (Berlin → Lisbon → Porto, a
three-step supersession chain) — and playbooks, one of which has outcomes recorded. Bob: a short session
and two facts, so a tenant admin sees more than one subject. The catalog: the tenant's shared entries.
"""

from __future__ import annotations

from typing import Any

SESSIONS = {
    "trip-planning": (
        40,
        [
            "I'm planning a trip to Japan in the spring",
            "I'd like to see the cherry blossoms in Kyoto",
            "I prefer trains to flying when I can",
            "Please keep hotels under 150 euros a night",
            "I'm vegetarian, so restaurant tips need to fit that",
            "Book window seats if there is a choice",
            "My partner Sam is coming too",
        ],
    ),
    "moving-house": (
        25,
        [
            "We're moving from Berlin to Lisbon next month",
            "The new flat is in Alfama, near the castle",
            "I need to find a Portuguese course for beginners",
            "Remind me to cancel the Berlin gym membership",
            "The movers come on the 14th",
            "I work remotely for a design studio",
        ],
    ),
    "home-network": (
        12,
        [
            "My internet keeps dropping in the evening",
            "Restarting the router fixed it last time",
            "The router is a FritzBox 7590",
            "It happened again, the restart worked",
            "Still dropping today even after the restart",
        ],
    ),
    "new-job": (
        4,
        [
            "Big news: I got a job offer in Porto",
            "We decided to move again, to Porto this time",
            "I start at the new studio on the first of the month",
            "I'll commute by metro, no car",
            "Can you find me a running club in Porto?",
            "I run about 20 km a week",
        ],
    ),
}

FACTS = [
    ("f-home-1", "Alice lives in Berlin", "identity", 60, None, []),
    (
        "f-home-2",
        "Alice lives in Lisbon, in the Alfama district",
        "identity",
        25,
        "f-home-1",
        ["moving-house-1", "moving-house-2"],
    ),
    ("f-home-3", "Alice lives in Porto", "identity", 4, "f-home-2", ["new-job-2"]),
    ("f-diet", "Alice is vegetarian", "constraint", 40, None, ["trip-planning-5"]),
    ("f-trains", "Alice prefers trains to flying", "preference", 40, None, ["trip-planning-3"]),
    ("f-hotels", "Alice keeps hotels under 150 euros a night", "constraint", 40, None, ["trip-planning-4"]),
    ("f-seat", "Alice prefers window seats", "preference", 40, None, ["trip-planning-6"]),
    ("f-partner", "Alice's partner is called Sam", "identity", 40, None, ["trip-planning-7"]),
    ("f-work", "Alice works remotely for a design studio", "identity", 25, None, ["moving-house-6"]),
    ("f-router", "Alice's router is a FritzBox 7590", "world", 12, None, ["home-network-3"]),
    ("f-running", "Alice runs about 20 km a week", "preference", 4, None, ["new-job-6"]),
    ("f-commute", "Alice commutes by metro and has no car", "constraint", 4, None, ["new-job-4"]),
]

PLAYBOOKS = [
    (
        "p-router",
        "internet drops",
        "Alice's internet drops in the evening",
        12,
        [
            ("Unplug the FritzBox for 30 seconds", None),
            ("Plug it back in and wait for the DSL light", None),
            ("Check the connection log in the FritzBox web interface", "browser"),
        ],
    ),
    (
        "p-trip",
        "plan a trip",
        "Alice asks to plan a trip",
        40,
        [
            ("Prefer train connections to flights", None),
            ("Filter hotels to under 150 euros a night", "hotel_search"),
            ("Add vegetarian restaurants near the hotel", "maps"),
        ],
    ),
]
# How the router playbook went, in order: (success, refined steps or None).
ROUTER_OUTCOMES = [(True, None), (True, None), (False, None)]

BOB = {
    "sessions": {"support": (6, ["I can't log in to the customer portal", "My account email is bob@example.org"])},
    "facts": [
        ("b-lang", "Bob prefers answers in short bullet points", "preference", 6),
        ("b-plan", "Bob is on the Pro plan", "world", 6),
    ],
}

CATALOG = [
    (
        "c-returns",
        "Return policy",
        "Items can be returned within 30 days with the receipt.",
        "policy",
        ["policy", "returns"],
    ),
    ("c-hours", "Support hours", "Support answers on weekdays from 9:00 to 18:00 CET.", "support", ["support"]),
    ("c-pro", "Pro plan", "The Pro plan includes priority support and 100 GB of storage.", "plans", ["plans"]),
    (
        "c-travel",
        "Travel partner discounts",
        "Rail partners give members 10% off international trains.",
        "travel",
        ["travel", "trains"],
    ),
]


def _episodes(user: str, sessions: dict[str, tuple[int, list[str]]]) -> list[dict[str, Any]]:
    records = []
    for session, (days_ago, turns) in sessions.items():
        for n, text in enumerate(turns, start=1):
            # A session's turns a few minutes apart, in order.
            records.append({
                "id": f"{session}-{n}", "user_id": user, "memory_type": "episodic", "text": text,
                "session_id": session, "days_ago": days_ago - n * 0.003,
            })  # fmt: skip
    return records


def demo_records() -> list[dict[str, Any]]:
    """Every demo memory as an import record (ids are external ids, so a re-import overwrites, never doubles)."""
    records = _episodes("alice", SESSIONS)
    for fact_id, text, fact_type, days_ago, supersedes, sources in FACTS:
        record = {
            "id": fact_id, "user_id": "alice", "memory_type": "semantic", "text": text,
            "fact_type": fact_type, "days_ago": days_ago, "source_episodes": sources,
        }  # fmt: skip
        if supersedes:
            record.update(supersedes=[supersedes], contradiction="natural")
        records.append(record)
    for playbook_id, name, trigger, days_ago, steps in PLAYBOOKS:
        records.append({
            "id": playbook_id, "user_id": "alice", "memory_type": "procedural", "name": name,
            "trigger_text": trigger, "days_ago": days_ago,
            "steps": [{"instruction": i, **({"tool": t} if t else {})} for i, t in steps],
        })  # fmt: skip
    records += _episodes("bob", BOB["sessions"])
    for fact_id, text, fact_type, days_ago in BOB["facts"]:
        records.append({
            "id": fact_id, "user_id": "bob", "memory_type": "semantic", "text": text,
            "fact_type": fact_type, "days_ago": days_ago,
        })  # fmt: skip
    for entry_id, title, text, category, tags in CATALOG:
        records.append({
            "id": entry_id, "memory_type": "catalog", "title": title, "text": text, "category": category, "tags": tags,
        })  # fmt: skip
    return records
