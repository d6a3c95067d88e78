"""LangChain: ``AtlasRetriever``, a retriever over one subject's memories (``pip install
'atlas-memory-client[langchain]'``)::

    retriever = AtlasRetriever(client=Atlas(url, token), subject="alice", k=5)
    docs = retriever.invoke("where does alice live?")   # Documents, best first

Each ``Document`` is one recall hit: its text as ``page_content``, its id as ``id``, and the memory's
metadata (type, score, rank, created_at, authority, the type's own fields such as fact_type …).
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from ._async import AsyncAtlas
from ._client import Atlas
from .models import NOT_IN_SCHEMA, Hit, Recall, RecallOptions

#: Hit fields that are the document itself rather than its metadata.
_NOT_METADATA = {"text", "evidence", "explain"} | NOT_IN_SCHEMA


class AtlasRetriever(BaseRetriever):
    """Recall over ``subject``'s memories and the tenant's catalog, as LangChain ``Document``s.

    ``client`` (``Atlas``) serves ``invoke``; ``async_client`` (``AsyncAtlas``), when given, serves
    ``ainvoke`` without a thread. ``options`` narrows the recall (types, fact_type, since …).
    """

    client: Atlas | None = None
    async_client: AsyncAtlas | None = None
    subject: str
    k: int = 5
    options: RecallOptions | None = None

    def _recall_arguments(self, query: str) -> dict[str, Any]:
        options = self.options.body() if self.options else {}
        return {**options, "subject": self.subject, "query": query, "k": self.k}

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        if self.client is None:
            raise ValueError("AtlasRetriever needs client=Atlas(...) to run synchronously")
        return documents_of(self.client.recall(**self._recall_arguments(query)))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        if self.async_client is None:
            return await super()._aget_relevant_documents(query, run_manager=run_manager)
        return documents_of(await self.async_client.recall(**self._recall_arguments(query)))


def documents_of(recall: Recall) -> list[Document]:
    return [Document(id=hit.id, page_content=hit.text, metadata=metadata_of(hit)) for hit in recall.hits]


def metadata_of(hit: Hit) -> dict[str, Any]:
    """The hit's fields (times as ISO 8601), its type's own fields, and the ids of the episodes it cites."""
    metadata = {
        f.name: getattr(hit, f.name) for f in dataclasses.fields(hit) if f.name not in _NOT_METADATA
    } | hit.extra
    metadata = {k: v.isoformat() if isinstance(v, datetime) else v for k, v in metadata.items() if v is not None}
    if hit.evidence:
        metadata["evidence"] = [e.id for e in hit.evidence]
    return metadata
