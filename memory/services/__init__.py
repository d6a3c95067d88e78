"""Services that write memories: episodes, facts (with supersession), playbooks, outcomes, forgetting, import."""
