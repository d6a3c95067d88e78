"""Compare the local embedding models on retrieval quality, speed and memory.

For each evaluation directory (``documents.jsonl``: ``id``, ``text``, optional ``user_id``,
``memory_type``; ``queries.jsonl``: ``qid``, ``user_id``, ``query``, ``gold_ids``) and each local
candidate of ``memory.inference.local_models.LOCAL_MODELS`` that is installed:

- embeds every document (docs/s, median of ``--rounds``) and every query one at a time,
  uncached, ``--rounds`` times (p50/p95 ms over all of them);
- ranks the documents the query's user may see (same ``user_id``, or no ``user_id``: the
  tenant catalog) by cosine, and reports dense-only recall@1/5/10 and MRR@10;
- reports the model's load time and how much the process's RSS grew (after loading, and after
  the whole run).

Each candidate runs in its own child process, so load time and RSS are its own and no engine's
thread pool competes with another's. Nothing here needs Django settings or Elasticsearch.
Progress goes to stderr, the Markdown tables to stdout.

Usage: python benchmarks/embedding_candidates.py --eval-dir DIR [DIR ...] [--candidates ID ...] [--threads N] [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
# The model files come from installed packages; a model hub is never reachable here.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402

from memory.inference.local_models import LOCAL_MODELS, local_embedding_provider
from memory.inference.provider import EmbeddingModelUnavailable  # noqa: E402

KS = (1, 5, 10)


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def rss_mib() -> float:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource  # not Linux: peak RSS is the best we have

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024 if sys.platform == "darwin" else 1024)


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def load_eval(directory: Path) -> tuple[list[dict], list[dict]]:
    documents = read_jsonl(directory / "documents.jsonl")
    queries = read_jsonl(directory / "queries.jsonl")
    ids = {d["id"] for d in documents}
    usable = []
    for query in queries:
        gold = [g for g in query.get("gold_ids") or [] if g in ids]
        if not gold:
            progress(f"  {directory.name}: query {query.get('qid')} has no gold id among the documents; skipped")
            continue
        usable.append({**query, "gold_ids": gold})
    return documents, usable


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def score(documents: list[dict], doc_vectors: np.ndarray, queries: list[dict], query_vectors: np.ndarray) -> dict:
    owners = [d.get("user_id") or None for d in documents]
    doc_ids = [d["id"] for d in documents]
    recall = {k: [] for k in KS}
    reciprocal_ranks = []
    for query, vector in zip(queries, query_vectors, strict=True):
        visible = np.array([owner is None or owner == query.get("user_id") for owner in owners])
        candidates = np.flatnonzero(visible)
        scores = doc_vectors[candidates] @ vector
        ranked = [doc_ids[i] for i in candidates[np.argsort(-scores, kind="stable")]]
        gold = set(query["gold_ids"])
        for k in KS:
            recall[k].append(len(gold.intersection(ranked[:k])) / len(gold))
        first = next((rank for rank, doc_id in enumerate(ranked[:10], 1) if doc_id in gold), None)
        reciprocal_ranks.append(1 / first if first else 0.0)
    return {
        **{f"recall@{k}": statistics.fmean(values) for k, values in recall.items()},
        "mrr@10": statistics.fmean(reciprocal_ranks),
    }


def run_candidate(model_id: str, eval_dirs: list[Path], threads: int, batch_size: int, rounds: int) -> dict:
    """In a child process: load one model, run every eval dir, return the numbers."""
    baseline = rss_mib()
    provider = local_embedding_provider(model_id, threads=threads, batch_size=batch_size, query_cache_size=0)
    started = time.perf_counter()
    try:
        provider.load()
    except EmbeddingModelUnavailable as exc:
        return {"model_id": model_id, "unavailable": str(exc)}
    load_seconds = time.perf_counter() - started
    rss_after_load = rss_mib() - baseline
    progress(f"[{model_id}] loaded in {load_seconds:.2f}s, RSS +{rss_after_load:.0f} MiB")
    provider.embed_documents(["warm-up document"])
    provider.embed_query("warm-up query")

    results = []
    for directory in eval_dirs:
        documents, queries = load_eval(directory)
        texts = [d["text"] for d in documents]
        rates = []
        for round_ in range(1, rounds + 1):
            progress(f"[{model_id}] {directory}: embedding {len(documents)} documents (round {round_}/{rounds})")
            started = time.perf_counter()
            doc_vectors = np.asarray(provider.embed_documents(texts), dtype=np.float32)
            rates.append(len(documents) / (time.perf_counter() - started))
        latencies, query_vectors = [], []
        for round_ in range(1, rounds + 1):
            progress(f"[{model_id}] {directory}: embedding {len(queries)} queries one by one (round {round_}/{rounds})")
            for query in queries:
                started = time.perf_counter()
                vector = provider.embed_query(query["query"])
                latencies.append((time.perf_counter() - started) * 1000)
                if round_ == 1:
                    query_vectors.append(vector)
        metrics = score(documents, doc_vectors, queries, np.asarray(query_vectors, dtype=np.float32))
        results.append(
            {
                "eval_dir": str(directory),
                "documents": len(documents),
                "queries": len(queries),
                "docs_per_second": statistics.median(rates),
                "query_p50_ms": statistics.median(latencies),
                "query_p95_ms": percentile(latencies, 0.95),
                **metrics,
            }
        )
    return {
        "model_id": model_id,
        "load_seconds": load_seconds,
        "rss_load_mib": rss_after_load,
        "rss_run_mib": rss_mib() - baseline,
        "results": results,
    }


def table(eval_dir: str, outcomes: list[dict]) -> str:
    header = (
        "| candidate | load s | RSS +MiB (load / run) | docs/s | query p50 ms | query p95 ms "
        "| R@1 | R@5 | R@10 | MRR@10 |"
    )
    lines = [header, "|" + "---|" * 10]
    first = None
    for outcome in outcomes:
        if "unavailable" in outcome:
            lines.append(f"| {outcome['model_id']} | not available: {outcome['unavailable']} |" + " |" * 8)
            continue
        row = next(r for r in outcome["results"] if r["eval_dir"] == eval_dir)
        first = first or row
        lines.append(
            f"| {outcome['model_id']} | {outcome['load_seconds']:.2f} "
            f"| {outcome['rss_load_mib']:.0f} / {outcome['rss_run_mib']:.0f} "
            f"| {row['docs_per_second']:.0f} | {row['query_p50_ms']:.1f} | {row['query_p95_ms']:.1f} "
            f"| {row['recall@1']:.3f} | {row['recall@5']:.3f} | {row['recall@10']:.3f} | {row['mrr@10']:.3f} |"
        )
    title = f"### {eval_dir}"
    if first:
        title += f" ({first['documents']} documents, {first['queries']} queries)"
    return "\n".join([title, "", *lines, ""])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--eval-dir", nargs="+", required=True, type=Path, help="directories with the two jsonl files")
    parser.add_argument("--candidates", nargs="+", default=list(LOCAL_MODELS), choices=list(LOCAL_MODELS))
    parser.add_argument("--threads", type=int, default=1, help="CPU threads per inference (default 1, as served)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3, help="times every document and query is embedded (timing)")
    parser.add_argument("--worker", choices=list(LOCAL_MODELS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    for directory in args.eval_dir:
        for name in ("documents.jsonl", "queries.jsonl"):
            if not (directory / name).is_file():
                parser.error(f"{directory / name} does not exist")

    if args.worker:
        outcome = run_candidate(args.worker, args.eval_dir, args.threads, args.batch_size, args.rounds)
        print(json.dumps(outcome))
        return

    outcomes = []
    for model_id in args.candidates:
        progress(f"== {model_id}")
        command = [sys.executable, __file__, "--worker", model_id, "--threads", str(args.threads)]
        command += ["--batch-size", str(args.batch_size), "--rounds", str(args.rounds)]
        command += ["--eval-dir", *map(str, args.eval_dir)]
        child = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False)
        if child.returncode != 0:
            outcomes.append({"model_id": model_id, "unavailable": f"the run failed (exit {child.returncode})"})
            continue
        outcome = json.loads(child.stdout.strip().splitlines()[-1])
        if "unavailable" in outcome:
            progress(f"[{model_id}] skipped: {outcome['unavailable']}")
        outcomes.append(outcome)

    print(
        f"threads per inference: {args.threads}, document batch size: {args.batch_size}, rounds: {args.rounds}, "
        f"cpus: {os.cpu_count()}; docs/s is the median round, query latencies pool every round (uncached)\n"
    )
    for directory in args.eval_dir:
        print(table(str(directory), outcomes))


if __name__ == "__main__":
    main()
