"""The Django permissions that guard a subject's memories. Memories live in Elasticsearch, not in a model,
so the permissions are declared on ``MemorySubject``: viewing, editing and forgetting them, and handing out
access to them (a person link, a membership, a token), each asks for these."""

VIEW, CHANGE, FORGET = "tenants.view_memory", "tenants.change_memory", "tenants.forget_memory"
