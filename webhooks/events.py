"""The events an endpoint can subscribe to (docs/webhooks.md describes each one's ``data``)."""

MEMORY_CREATED = "memory.created"
MEMORY_UPDATED = "memory.updated"
MEMORY_SUPERSEDED = "memory.superseded"
MEMORY_FORGOTTEN = "memory.forgotten"
PROPOSAL_CREATED = "proposal.created"
PROPOSAL_DECIDED = "proposal.decided"
CONSOLIDATION_FINISHED = "consolidation.finished"
SUBJECT_FORGOTTEN = "subject.forgotten"

EVENT_TYPES = (
    MEMORY_CREATED,
    MEMORY_UPDATED,
    MEMORY_SUPERSEDED,
    MEMORY_FORGOTTEN,
    PROPOSAL_CREATED,
    PROPOSAL_DECIDED,
    CONSOLIDATION_FINISHED,
    SUBJECT_FORGOTTEN,
)
