"""Celery's tasks measured through its signals (counts by state, durations, a span per task), and the
broker's queue depth read at scrape time.

Queue depth: kombu's passive ``queue_declare`` answers how many messages wait — Redis' LLEN over the
queue's lists, and for the embedded filesystem broker the message files in its queue folder. Neither counts
the messages a worker has taken and not yet acknowledged (the filesystem broker moves a message out of its
folder when a worker fetches it), so the depth is the backlog no worker has started.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from celery.signals import task_failure, task_postrun, task_prerun
from prometheus_client.core import GaugeMetricFamily

from . import metrics as m
from .tracing import tracer

log = logging.getLogger(__name__)
_started: dict[str, tuple[float, Any, Any]] = {}  # task id → (start, span, context token)
_lock = threading.Lock()


@task_prerun.connect
def _task_started(task_id: str | None = None, task: Any = None, **_kwargs: Any) -> None:
    current, token = None, None
    if tracer() is not None and task_id:
        from opentelemetry import context, trace

        current = tracer().start_span(
            f"celery.task {task.name}", attributes={"celery.task_name": task.name, "celery.task_id": task_id}
        )
        token = context.attach(trace.set_span_in_context(current))
    with _lock:
        _started[task_id or ""] = (time.perf_counter(), current, token)


@task_failure.connect
def _task_failed(task_id: str | None = None, exception: BaseException | None = None, **_kwargs: Any) -> None:
    with _lock:
        entry = _started.get(task_id or "")
    if entry is not None and entry[1] is not None:
        from opentelemetry.trace import Status, StatusCode

        # The exception's type only: its message may quote what the task worked on.
        entry[1].set_status(Status(StatusCode.ERROR, type(exception).__name__))


@task_postrun.connect
def _task_finished(task_id: str | None = None, task: Any = None, state: str | None = None, **_kwargs: Any) -> None:
    with _lock:
        entry = _started.pop(task_id or "", None)
    name = getattr(task, "name", None) or "unknown"
    m.CELERY_TASKS.labels(name, state or "UNKNOWN").inc()
    if entry is None:
        return
    started, current, token = entry
    m.CELERY_TASK_LATENCY.labels(name).observe(time.perf_counter() - started)
    if current is not None:
        from opentelemetry import context

        current.set_attribute("celery.state", state or "UNKNOWN")
        current.end()
        context.detach(token)


class QueueDepthCollector:
    """``atlas_celery_queue_depth{queue}``: the messages waiting in each of the app's queues, read from the broker
    when Prometheus scrapes (a broker that cannot say is left out and logged)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def queues(self) -> list[str]:
        names = [self.app.conf.task_default_queue or "celery"]
        for queue in self.app.conf.task_queues or ():
            names.append(getattr(queue, "name", str(queue)))
        return sorted(set(names))

    def collect(self):
        family = GaugeMetricFamily(
            "atlas_celery_queue_depth",
            "Messages waiting in a Celery queue (no worker has taken them).",
            labels=["queue"],
        )
        try:
            with self.app.connection_for_read() as conn:
                conn.ensure_connection(max_retries=1, timeout=2)
                channel = conn.default_channel
                for queue in self.queues():
                    family.add_metric([queue], float(_depth(channel, queue)))
        except Exception as exc:  # a scrape must answer even when the broker does not
            log.warning("queue depth unavailable: %s: %s", type(exc).__name__, exc)
            return
        yield family


def _depth(channel: Any, queue: str) -> int:
    from kombu.exceptions import ChannelError

    try:
        return channel.queue_declare(queue=queue, passive=True).message_count
    except ChannelError:  # Redis: a queue with no message has no list at all
        return 0
    except FileNotFoundError:  # the filesystem broker makes its folder with the first message
        return 0
