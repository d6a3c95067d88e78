"""AtlasStore with the real langgraph against the live server: LangGraph's BaseStore semantics (the parts of
its own store tests that apply: put/get/delete, search by prefix with filter, limit and offset, query search,
list_namespaces with prefix, suffix, wildcards, max_depth), sync and async, inside a compiled graph, and one
subject's token never reaching another subject's items."""

from __future__ import annotations

import asyncio
import json

import pytest
from atlas_memory import AsyncAtlas, Forbidden, NotFound
from atlas_memory.langgraph import AtlasStore, external_id_of
from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import GetOp, InvalidNamespaceError, Item, PutOp
from typing_extensions import TypedDict

from .conftest import FAST

pytestmark = pytest.mark.django_db(transaction=True)

VALUE = {"name": "Zoë", "likes": ["pizza", "çay"], "age": 41, "height": 1.0, "vegan": False, "pet": None}


def _store_facts(atlas, subject: str) -> list:
    return [m for m in atlas.memory_list_iter(subject=subject, types=["semantic"]) if m.external_id]


def test_put_then_get_returns_the_value_and_put_again_replaces_it(world, atlas) -> None:
    store = AtlasStore(client=atlas)
    store.put(("alice", "profile"), "me", VALUE)
    item = store.get(("alice", "profile"), "me")
    assert isinstance(item, Item) and (item.namespace, item.key) == (("alice", "profile"), "me")
    assert item.value == VALUE and list(item.value) == list(VALUE)  # equal, and in the same key order
    (fact,) = _store_facts(atlas, "alice")
    assert fact.external_id == external_id_of(("profile",), "me") and fact.type == "semantic"
    assert json.loads(fact.text) == {"scope": ["profile"], "key": "me", "value": VALUE}
    assert item.created_at == item.updated_at == fact.created_at

    store.put(("alice", "profile"), "me", VALUE)  # the same put again: the same fact
    assert [m.id for m in _store_facts(atlas, "alice")] == [fact.id]
    store.put(("alice", "profile"), "me", {"name": "Zoë", "age": 42})
    assert store.get(("alice", "profile"), "me").value == {"name": "Zoë", "age": 42}
    (replaced,) = _store_facts(atlas, "alice")  # the old fact was forgotten, not kept beside it
    assert json.loads(replaced.text)["value"] == {"name": "Zoë", "age": 42}
    assert replaced.id == fact.id  # the id derives from the external id: the key's fact keeps its id
    assert store.get(("alice",), "me") is None and store.get(("alice", "other"), "me") is None

    store.put(("alice", "profile"), "me", None)  # a None value deletes
    assert store.get(("alice", "profile"), "me") is None and _store_facts(atlas, "alice") == []
    store.put(("alice",), "top", {"at": "the subject itself"})
    store.delete(("alice",), "top")
    store.delete(("alice",), "top")  # deleting what is gone is no error
    assert store.get(("alice",), "top") is None


def test_a_batch_reads_before_its_puts_and_keeps_the_last_put_of_a_key(world, atlas) -> None:
    store = AtlasStore(client=atlas)
    store.put(("alice",), "k", {"v": 0})
    ops = [PutOp(("alice",), "k", {"v": 1}), GetOp(("alice",), "k"), PutOp(("alice",), "k", {"v": 2})]
    put, got, put_again = store.batch(ops)
    assert put is None and put_again is None and got.value == {"v": 0}  # as LangGraph's InMemoryStore answers
    assert store.get(("alice",), "k").value == {"v": 2} and len(_store_facts(atlas, "alice")) == 1


def test_what_cannot_be_stored_is_refused_before_anything_is_written(world, atlas) -> None:
    store = AtlasStore(client=atlas)
    with pytest.raises(InvalidNamespaceError):
        store.put((), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.put(("alice", "a.b"), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(("alice", ""), "k", {"v": 1})])
    with pytest.raises(ValueError):
        store.put(("alice",), "k", {"v": float("nan")})
    with pytest.raises(TypeError):  # the batch fails whole: its first put is not sent either
        store.batch([PutOp(("alice",), "first", {"v": 1}), PutOp(("alice",), "second", {"v": {1, 2}})])
    with pytest.raises(NotImplementedError):
        store.put(("alice",), "k", {"v": 1}, ttl=5)
    assert _store_facts(atlas, "alice") == []


def test_search_lists_a_prefix_newest_first_with_filter_limit_and_offset(world, atlas) -> None:
    store = AtlasStore(client=atlas)
    docs = [
        ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
        ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
        ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
        ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
    ]
    for key, value in docs:
        store.put(("alice", "test"), key, value)
    store.put(("alice", "test", "deeper"), "doc5", {"text": "nested", "color": "red", "score": 1})
    store.put(("alice", "other"), "doc6", {"text": "elsewhere", "color": "red"})
    atlas.fact_write(subject="alice", text="Alice likes red apples")  # not the store's: never an item

    assert [i.key for i in store.search(("alice",), limit=10)] == ["doc6", "doc5", "doc4", "doc3", "doc2", "doc1"]
    assert [i.key for i in store.search(("alice", "test"))] == ["doc5", "doc4", "doc3", "doc2", "doc1"]
    assert [i.namespace for i in store.search(("alice", "test", "deeper"))] == [("alice", "test", "deeper")]
    assert [i.key for i in store.search(("alice", "test"), filter={"color": "red"})] == ["doc5", "doc2", "doc1"]
    assert [i.key for i in store.search(("alice", "test"), filter={"score": {"$gt": 3.2}})] == ["doc4", "doc3", "doc1"]
    assert [i.key for i in store.search(("alice",), filter={"score": {"$gte": 4.0}, "color": "green"})] == ["doc3"]
    assert [i.key for i in store.search(("alice", "test"), filter={"color": {"$ne": "red"}})] == ["doc4", "doc3"]
    assert [i.key for i in store.search(("alice", "test"), limit=2)] == ["doc5", "doc4"]
    assert [i.key for i in store.search(("alice", "test"), limit=2, offset=2)] == ["doc3", "doc2"]
    assert [i.key for i in store.search(("alice", "test"), limit=2, offset=4)] == ["doc1"]
    assert store.search(("alice", "nothing")) == [] and store.search(("nobody",)) == []
    listed = store.search(("alice", "test"), limit=1)[0]
    assert listed.score is None and listed.value == {"text": "nested", "color": "red", "score": 1}


def test_search_with_a_query_recalls_best_first_within_the_prefix_and_filter(world, atlas) -> None:
    store = AtlasStore(client=atlas)
    for key, value in [
        ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
        ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
        ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
        ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
    ]:
        store.put(("alice", "test"), key, value)
    store.put(("alice", "elsewhere"), "doc5", {"text": "red apple", "color": "red"})
    store.put(("bob", "test"), "doc1", {"text": "red apple", "color": "red"})

    apples = store.search(("alice", "test"), query="apple", filter={"color": "red"})
    assert [i.key for i in apples] == ["doc1", "doc2"] and apples[0].score > apples[1].score
    assert [i.key for i in store.search(("alice", "test"), query="car", filter={"color": "red"})] == ["doc2", "doc1"]
    assert [i.key for i in store.search(("alice", "test"), query="green apple", filter={"score": {"$gte": 4.0}})] == [
        "doc3",
        "doc1",
    ]
    everything = store.search(("alice", "test"), query="apple", limit=10)
    assert sorted(i.key for i in everything) == ["doc1", "doc2", "doc3", "doc4"]  # no floor: all, ranked
    assert [i.key for i in store.search(("alice", "test"), query="apple", limit=2, offset=2)] == [
        i.key for i in everything[2:4]
    ]
    assert {i.namespace for i in store.search(("alice",), query="red apple")} == {
        ("alice", "test"),
        ("alice", "elsewhere"),
    }
    assert store.search(("alice", "test"), query="") == store.search(("alice", "test"))  # "" lists


def test_list_namespaces_keeps_langgraphs_semantics(world, atlas) -> None:
    for subject in ("a", "b", "users", "admin"):
        atlas.subject_create(id=subject)
    store = AtlasStore(client=atlas)
    namespaces = [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
        ("users", "456", "settings"),
        ("admin", "users", "789"),
    ]
    store.batch([PutOp(ns, f"id_{i}", {"data": f"value_{i:02d}"}) for i, ns in enumerate(namespaces)])

    assert store.list_namespaces(prefix=("a", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")]
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == [("a", "b", "c"), ("a", "b", "d", "e")]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == [("a", "b", "d", "i"), ("a", "b", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(suffix=("*", "f")) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []
    assert store.list_namespaces(prefix=("users", "*")) == [("users", "123"), ("users", "456", "settings")]
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert store.list_namespaces(prefix=("users", "123")) == [("users", "123")]
    assert store.list_namespaces(max_depth=2) == [
        ("a", "b"),
        ("a", "c"),
        ("admin", "users"),
        ("b", "a"),
        ("users", "123"),
        ("users", "456"),
    ]
    assert store.list_namespaces() == sorted(namespaces)
    store.delete(("users", "123"), "id_6")
    assert store.list_namespaces(prefix=("users",)) == [("users", "456", "settings")]


def test_the_async_methods_run_on_the_async_client(world) -> None:
    async def agent() -> None:
        async with AsyncAtlas(world.url, world.svc, retry=FAST) as client:
            store = AtlasStore(async_client=client)
            await asyncio.gather(*(store.aput(("alice", "notes"), f"n{n}", {"n": n}) for n in range(3)))
            # Two puts of one key at once: one value stays, in one fact.
            await asyncio.gather(store.aput(("alice",), "race", {"v": 1}), store.aput(("alice",), "race", {"v": 2}))
            assert (await store.aget(("alice",), "race")).value in ({"v": 1}, {"v": 2})
            raced = [m async for m in client.memory_list_iter(subject="alice", types=["semantic"])]
            assert [m.external_id for m in raced].count(external_id_of((), "race")) == 1
            await store.adelete(("alice",), "race")
            assert (await store.aget(("alice", "notes"), "n1")).value == {"n": 1}
            assert sorted(i.key for i in await store.asearch(("alice", "notes"))) == ["n0", "n1", "n2"]
            assert [i.key for i in await store.asearch(("alice",), filter={"n": {"$lt": 1}})] == ["n0"]
            await store.aput(("alice", "notes"), "n1", {"n": 10})
            assert (await store.aget(("alice", "notes"), "n1")).value == {"n": 10}
            await store.adelete(("alice", "notes"), "n0")
            assert await store.aget(("alice", "notes"), "n0") is None
            assert await store.alist_namespaces(prefix=("alice",)) == [("alice", "notes")]
            recalled = await store.asearch(("alice", "notes"), query="the number ten")
            assert sorted(i.key for i in recalled) == ["n1", "n2"] and all(i.score is not None for i in recalled)
            with pytest.raises(ValueError, match="client=Atlas"):
                store.get(("alice", "notes"), "n1")

    asyncio.run(agent())


def test_a_compiled_graph_reads_and_writes_through_the_store(world, atlas) -> None:
    class State(TypedDict):
        subject: str
        said: str
        known: list[str]

    def remember(state: State) -> dict:
        store = get_store()
        store.put((state["subject"], "facts"), "said", {"text": state["said"]})
        return {"known": [item.value["text"] for item in store.search((state["subject"], "facts"))]}

    graph = StateGraph(State)
    graph.add_node("remember", remember)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", END)
    app = graph.compile(store=AtlasStore(client=atlas))
    out = app.invoke({"subject": "alice", "said": "I moved to Lisbon", "known": []})
    assert out["known"] == ["I moved to Lisbon"]
    assert [json.loads(m.text)["value"] for m in _store_facts(atlas, "alice")] == [{"text": "I moved to Lisbon"}]


def test_a_subjects_token_never_reaches_another_subjects_items(world, atlas) -> None:
    tenant_store = AtlasStore(client=atlas)
    tenant_store.put(("bob", "prefs"), "food", {"likes": "herring"})
    tenant_store.put(("alice", "prefs"), "food", {"likes": "pizza"})
    with world.client(world.own) as own:
        alices = AtlasStore(client=own)
        assert alices.get(("bob", "prefs"), "food") is None
        assert alices.search(("bob",)) == [] and alices.search(("bob",), query="herring") == []
        assert [i.value for i in alices.search(())] == [{"likes": "pizza"}]  # every subject it may read: alice
        assert [i.value for i in alices.search((), query="what food")] == [{"likes": "pizza"}]
        assert alices.list_namespaces() == [("alice", "prefs")]
        with pytest.raises(NotFound):
            alices.put(("bob", "prefs"), "food", {"likes": "pizza"})
        alices.put(("alice", "prefs"), "drink", {"likes": "tea"})
        # Overwriting forgets the old fact first, and alice's token has no forget scope: refused, nothing changed.
        with pytest.raises(Forbidden):
            alices.put(("alice", "prefs"), "food", {"likes": "soup"})
        assert alices.get(("alice", "prefs"), "food").value == {"likes": "pizza"}
    assert tenant_store.get(("bob", "prefs"), "food").value == {"likes": "herring"}
    assert [i.key for i in tenant_store.search(("bob",))] == ["food"]


def test_an_item_changed_outside_the_store_and_one_waiting_for_review(world, atlas) -> None:
    store = AtlasStore(client=atlas)
    store.put(("alice", "prefs"), "food", {"likes": "pizza"})
    external_id = external_id_of(("prefs",), "food")
    # The person's (here: the API's) correction is a new version without the external id.
    atlas.fact_edit(subject="alice", memory_id=external_id, text="Alice likes soup")
    assert store.get(("alice", "prefs"), "food").value == {"likes": "pizza"}  # the value as it was put
    assert store.search(("alice",)) == [] and store.list_namespaces() == []
    store.put(("alice", "prefs"), "food", {"likes": "figs"})  # putting again takes the key back
    assert [i.value for i in store.search(("alice",))] == [{"likes": "figs"}]

    world.tenant.review_mode = "agents"
    world.tenant.save(update_fields=["review_mode"])
    store.put(("alice", "prefs"), "drink", {"likes": "tea"})
    assert store.get(("alice", "prefs"), "drink").value == {"likes": "tea"}
    assert atlas.memory_get(subject="alice", memory_id=external_id_of(("prefs",), "drink")).status == "pending"
    assert [i.key for i in store.search(("alice",))] == ["food"]  # a proposal is listed once accepted
