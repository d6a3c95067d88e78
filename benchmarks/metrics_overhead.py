"""What metrics and their hooks add to a recall: 200 recalls in-process, alternating with the hooks as
shipped and with every hook replaced by a no-op (the recall's stage() wrappers, its decorator, the engine's
measuring transport, the models' inference timer), one run on one stack; plus the request middleware's
own bookkeeping per request. Traces are off, as by default (OTEL_* unset).
Usage: python benchmarks/metrics_overhead.py [--memories 200] [--rounds 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from contextlib import nullcontext

from _stack import atlas_stack, progress

QUESTIONS = ["where does the user live?", "what does the user eat?", "how do I reset the router?", "favourite music?"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    with atlas_stack():
        from elastic_transport import Transport

        import memory.inference.local_models as local_models
        import memory.recall.legs as legs
        import memory.recall.recall as recall_module
        from atlas_site.observability import hooks
        from atlas_site.observability.engine import MeasuredTransport
        from memory.services.writes import fact_write
        from tenants import services

        tenant = services.tenant_create(slug="bench", name="Bench", actor="benchmark")
        subject = services.subject_create(tenant=tenant, external_id="alice", actor="benchmark")
        progress(f"storing {args.memories} facts …")
        for n in range(args.memories):
            fact_write(
                subject=subject,
                text=f"The user mentioned topic {n % 37} and detail {n}",
                refresh=n == args.memories - 1,
            )
        measured = MeasuredTransport.perform_request

        def hooks_on(on: bool) -> None:
            def off_stage(*_a, **_k):
                return nullcontext()

            legs.stage = recall_module.stage = hooks.stage if on else off_stage
            local_models.inference = hooks.inference if on else off_stage
            MeasuredTransport.perform_request = measured if on else Transport.perform_request

        def recall(i: int, on: bool) -> float:
            hooks_on(on)
            fn = recall_module.memory_recall if on else recall_module.memory_recall.__wrapped__
            t0 = time.perf_counter()
            fn(subject=subject, query=QUESTIONS[i % len(QUESTIONS)], k=10)
            return (time.perf_counter() - t0) * 1000

        for i in range(10):  # warm-up: model sessions, query caches, connections
            recall(i, True)
            recall(i, False)
        progress(f"timing {args.rounds} recalls each way …")
        with_hooks, without = [], []
        for i in range(args.rounds):
            for on in (True, False) if i % 2 == 0 else (False, True):
                (with_hooks if on else without).append(recall(i, on))
        hooks_on(True)

        # The middleware's bookkeeping for one request: a counter and a histogram by pattern and status.
        from django.test import RequestFactory
        from django.urls import resolve

        from atlas_site.observability.http import _observe

        request = RequestFactory().get("/healthz")
        request.resolver_match = resolve("/healthz")
        t0 = time.perf_counter()
        for _ in range(10_000):
            _observe(request, 200, time.perf_counter(), None)
        middleware_us = (time.perf_counter() - t0) / 10_000 * 1e6

        p50_on, p50_off = statistics.median(with_hooks), statistics.median(without)
        print(
            f"\n{args.memories} facts, {args.rounds} recalls each way (alternating), one run; load {os.getloadavg()[0]:.1f}"
        )
        print("| recall (k=10), in-process | p50 ms | mean ms |")
        print("|---|---:|---:|")
        print(f"| hooks as shipped | {p50_on:.2f} | {statistics.mean(with_hooks):.2f} |")
        print(f"| hooks replaced by no-ops | {p50_off:.2f} | {statistics.mean(without):.2f} |")
        print(
            f"| difference | {p50_on - p50_off:+.2f} | {statistics.mean(with_hooks) - statistics.mean(without):+.2f} |"
        )
        print(f"\nrequest middleware bookkeeping: {middleware_us:.1f} µs per request")


if __name__ == "__main__":
    main()
