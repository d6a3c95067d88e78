"""The scoped memories every interface's filter table reads, and the table itself: filter → expected keys.

Maya holds an episode, two facts and a playbook scoped by agent, app, run, session and metadata of every
value type (string, number, boolean, date) and one fact with no scope; the tenant has a catalog entry
(no scope: never in a filtered read) and Tom holds the same scope values (another subject: never seen).
"""

from __future__ import annotations

from typing import Any

from memory.services.catalog import catalog_entry_write
from memory.services.writes import episode_write, fact_write, playbook_write
from tenants.models import MemorySubject

APOLLO = {"priority": 9, "project": "apollo", "urgent": True, "due": "2026-03-01"}
ZEUS = {"priority": 10, "project": "zeus", "urgent": False, "due": "2026-11-15"}
SMALL = {"priority": 2.5, "project": "apollo"}

#: (filters, the keys of Maya's memories it finds). Numbers 9 and 10 are the mem0#7157 case: compared as
#: strings "10" < "9", a range would miss one of them.
TABLE: list[tuple[dict[str, Any], set[str]]] = [
    ({"agent_id": "planner"}, {"e1", "f1"}),
    ({"agent_id": {"in": ["coder", "nobody"]}}, {"p1"}),
    ({"app_id": "web"}, {"e1", "p1"}),
    ({"run_id": {"exists": True}}, {"e1", "f1"}),
    ({"run_id": {"exists": False}}, {"p1", "f2"}),
    ({"session_id": "s1"}, {"e1"}),
    ({"metadata.project": "apollo"}, {"e1", "p1"}),
    ({"metadata.project": {"in": ["zeus", "hera"]}}, {"f1"}),
    ({"metadata.priority": 10}, {"f1"}),
    ({"metadata.priority": {"in": [2.5, 9]}}, {"e1", "p1"}),
    ({"metadata.priority": {"gte": 9}}, {"e1", "f1"}),
    ({"metadata.priority": {"gt": 9}}, {"f1"}),
    ({"metadata.priority": {"lt": 3}}, {"p1"}),
    ({"metadata.priority": {"lte": 9}}, {"e1", "p1"}),
    ({"metadata.urgent": True}, {"e1"}),
    ({"metadata.urgent": False}, {"f1"}),
    ({"metadata.due": "2026-03-01"}, {"e1"}),
    ({"metadata.due": {"gte": "2026-06-01"}}, {"f1"}),
    ({"metadata.due": {"lt": "2026-06-01T00:00:00Z"}}, {"e1"}),
    ({"metadata.urgent": {"exists": True}}, {"e1", "f1"}),
    ({"metadata.urgent": {"exists": False}}, {"p1", "f2"}),
    ({"metadata.nothere": 1}, set()),
    ({"metadata.project": 9}, set()),
    ({"not": {"agent_id": "planner"}}, {"p1", "f2"}),
    ({"agent_id": "planner", "not": {"app_id": "mobile"}}, {"e1"}),
    ({"agent_id": "planner", "metadata.priority": {"gte": 2}}, {"e1", "f1"}),
]

#: One row per value type and operator family, for the interfaces each run the table through a process.
SHORT_TABLE = [TABLE[i] for i in (0, 4, 7, 10, 14, 18, 20, 23)]


#: Maya's memories (key → REST route and body), as every interface's test writes them.
WRITES = {
    "e1": (
        "episodes",
        {
            "text": "Maya asked the planner about the apollo launch checklist",
            "session_id": "s1",
            "agent_id": "planner",
            "app_id": "web",
            "run_id": "r1",
            "metadata": APOLLO,
        },
    ),
    "f1": (
        "facts",
        {
            "text": "Maya leads the zeus launch checklist",
            "agent_id": "planner",
            "app_id": "mobile",
            "run_id": "r2",
            "metadata": ZEUS,
        },
    ),
    "p1": (
        "playbooks",
        {
            "name": "Launch checklist",
            "trigger_text": "when Maya prepares a launch checklist",
            "steps": ["List the launch tasks", "Check each one"],
            "agent_id": "coder",
            "app_id": "web",
            "metadata": SMALL,
        },
    ),
    "f2": ("facts", {"text": "Maya keeps her launch checklist in a notebook"}),
}


SERVICE_WRITES = {"episodes": episode_write, "facts": fact_write, "playbooks": playbook_write}


def scoped_memories_write(*, maya: MemorySubject, tom: MemorySubject) -> dict[str, str]:
    """WRITES through the services: Maya's scoped memories (key → id), Tom's look-alikes (the same scope,
    another subject) and a catalog entry."""
    ids = {key: SERVICE_WRITES[route](subject=maya, **body)["id"] for key, (route, body) in WRITES.items()}
    for route, body in WRITES.values():
        SERVICE_WRITES[route](subject=tom, **body)
    catalog_entry_write(
        tenant=maya.tenant, actor="test", title="Launch checklist", text="The launch checklist of the tenant"
    )
    return ids


QUERY = "launch checklist"
