"""One way to open an ONNX graph for the local embedding models: on the CPU, a fixed number of threads,
no spinning."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def cpu_session(model: str | Path, *, threads: int, custom_ops_library: str | None = None) -> Any:
    """An onnxruntime ``InferenceSession`` over ``model`` with ``threads`` intra-op threads (one inter-op);
    ``custom_ops_library``: a shared library of extra operators the graph uses (onnxruntime-extensions')."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    # Spinning workers burn the core a concurrent request (or Elasticsearch) needs.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if custom_ops_library:
        options.register_custom_ops_library(custom_ops_library)
    return ort.InferenceSession(str(model), sess_options=options, providers=["CPUExecutionProvider"])
