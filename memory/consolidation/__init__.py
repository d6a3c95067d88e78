"""Consolidation: an LLM reads one subject's new episodes and proposes facts, supersessions,
confirmations, playbooks, refinements and outcomes; what survives validation is written through the
ordinary write services.

A run, in order (docs/consolidation.md):
1. takes the subject's lease (one run per subject at a time; a crashed worker's lease lapses) — ``lease``;
2. resumes the subject's unfinished run if there is one — its stored plan is applied again, so a
   redelivered task writes the same documents and asks the LLM nothing — otherwise gathers the
   episodes after the watermark (in conversation order, each with its previous turn) and the
   subject's current facts and playbooks that hybrid recall finds for them — ``gather``;
3. asks the LLM (secrets redacted) for JSON fitting :data:`schema.PLAN_SCHEMA`; a bad, truncated or
   missing answer writes nothing and is recorded as failed — ``schema``, ``run``;
4. validates every item (ids this run showed the model, episodes of this run cited, confidence floor,
   secrets, instruction-like text, harsh needs high confidence, duplicates become confirmations) and
   refuses the whole plan if it would supersede too large a share of the subject's facts
   (needs_review) — ``validation``, ``guards``;
5. stores the plan, applies it with ids derived from (subject, window, item) and per-run event ids,
   and only then advances the watermark, in the same transaction that marks the run done — ``apply``,
   ``run``.

``scheduling`` picks the subjects a run is due for (the Celery tasks queue them), ``diff`` prints a plan,
``keys`` derives the ids (a leaf: the review of proposals uses it too). Import from the module that
defines a name: this package's ``__init__`` stays empty, so importing ``keys`` or ``guards`` (as the
review and the write gate do) loads nothing else.
"""
