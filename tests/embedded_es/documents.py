"""elasticsearch.dsl Document classes and data shared by the embedded_es tests."""

from __future__ import annotations

from elasticsearch import Elasticsearch
from elasticsearch.dsl import DenseVector, Document, Keyword, Text

# Two tenants, two users in t1, and t1's catalog (no user_id), in one shared
# index — the layout Atlas Memory uses, where only DLS keeps them apart.
DOCS = [
    ("u1-pie", "t1", "u1", "apple pie recipe from grandma", [1.0, 0.0, 0.0]),
    ("u1-car", "t1", "u1", "drives a blue car", [0.0, 1.0, 0.0]),
    ("u2-tart", "t1", "u2", "apple tart with cinnamon", [0.9, 0.1, 0.0]),
    ("cat-apple", "t1", None, "apple varieties catalog", [0.8, 0.2, 0.0]),
    ("t2-juice", "t2", "u9", "apple juice every morning", [1.0, 0.0, 0.0]),
    ("t2-cat", "t2", None, "apple orchard catalog", [0.95, 0.05, 0.0]),
]


class Memory(Document):
    tenant_id = Keyword()
    user_id = Keyword()
    text = Text()
    embedding = DenseVector(dims=3, similarity="cosine", index=True)


def load_memories(admin: Elasticsearch, index: str) -> None:
    """Create ``index`` (behind the alias ``<index>-alias``) and fill it with DOCS."""
    Memory.init(index=index, using=admin)
    admin.indices.put_alias(index=index, name=f"{index}-alias")
    for doc_id, tenant, user, text, vector in DOCS:
        doc = Memory(meta={"id": doc_id}, tenant_id=tenant, text=text, embedding=vector)
        if user:
            doc.user_id = user
        doc.save(index=index, using=admin, refresh="wait_for")


def user_dls(tenant: str, user: str) -> dict:
    """Own memories plus the tenant's catalog: tenant = T AND (user = U OR no user)."""
    return {
        "bool": {
            "filter": [{"term": {"tenant_id": tenant}}],
            "should": [
                {"term": {"user_id": user}},
                {"bool": {"must_not": [{"exists": {"field": "user_id"}}]}},
            ],
            "minimum_should_match": 1,
        }
    }


def read_role(names: list[str], query: dict | None = None, privileges: list[str] | None = None) -> dict:
    group: dict = {"names": names, "privileges": privileges or ["read"]}
    if query is not None:
        group["query"] = query
    return {"memory_reader": {"cluster": [], "indices": [group]}}
