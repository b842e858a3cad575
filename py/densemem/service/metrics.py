"""Prometheus text exposition, without a client library.

Counters and histograms live in process memory; /metrics renders them in
the text format (version 0.0.4). Gauges read from the database at scrape
time (search freshness, degraded recall branches) are rendered by the app.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Iterable, Sequence

LATENCY_BUCKETS: tuple[float, ...] = (
    0.002,
    0.005,
    0.01,
    0.02,
    0.03,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)

# The phases of one request are fractions of a millisecond to tens of milliseconds.
PHASE_BUCKETS: tuple[float, ...] = (
    0.0001,
    0.0002,
    0.0005,
    0.001,
    0.002,
    0.005,
    0.01,
    0.02,
    0.05,
    0.1,
    0.5,
    2.5,
)

Labels = tuple[tuple[str, str], ...]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def render_labels(labels: Labels) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{name}="{_escape(value)}"' for name, value in labels) + "}"


def _number(value: float) -> str:
    if value == float("inf"):
        return "+Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


class Counter:
    def __init__(self, name: str, help_text: str) -> None:
        self.name, self.help_text = name, help_text
        self._values: dict[Labels, float] = {}
        self._lock = threading.Lock()

    def inc(self, labels: Labels = (), amount: float = 1.0) -> None:
        with self._lock:
            self._values[labels] = self._values.get(labels, 0.0) + amount

    def value(self, labels: Labels = ()) -> float:
        with self._lock:
            return self._values.get(labels, 0.0)

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help_text}", f"# TYPE {self.name} counter"]
        with self._lock:
            for labels, value in sorted(self._values.items()):
                lines.append(f"{self.name}{render_labels(labels)} {_number(value)}")
        return lines


class Histogram:
    def __init__(self, name: str, help_text: str, buckets: Sequence[float] = LATENCY_BUCKETS) -> None:
        self.name, self.help_text = name, help_text
        self.buckets = tuple(sorted(buckets))
        self._counts: dict[Labels, list[int]] = {}
        self._sums: dict[Labels, float] = {}
        self._lock = threading.Lock()

    def observe(self, value: float, labels: Labels = ()) -> None:
        index = bisect_left(self.buckets, value)
        with self._lock:
            counts = self._counts.setdefault(labels, [0] * (len(self.buckets) + 1))
            counts[index] += 1
            self._sums[labels] = self._sums.get(labels, 0.0) + value

    def count(self, labels: Labels = ()) -> int:
        with self._lock:
            return sum(self._counts.get(labels, []))

    def total(self, labels: Labels = ()) -> float:
        with self._lock:
            return self._sums.get(labels, 0.0)

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help_text}", f"# TYPE {self.name} histogram"]
        with self._lock:
            for labels, counts in sorted(self._counts.items()):
                cumulative = 0
                for bound, count in zip((*self.buckets, float("inf")), counts, strict=True):
                    cumulative += count
                    bucket_labels = (*labels, ("le", _number(bound)))
                    lines.append(f"{self.name}_bucket{render_labels(bucket_labels)} {cumulative}")
                lines.append(f"{self.name}_sum{render_labels(labels)} {self._sums[labels]!r}")
                lines.append(f"{self.name}_count{render_labels(labels)} {cumulative}")
        return lines


def gauge_lines(name: str, help_text: str, samples: Iterable[tuple[Labels, float]]) -> list[str]:
    lines = [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
    lines.extend(f"{name}{render_labels(labels)} {_number(value)}" for labels, value in samples)
    return lines


MODEL_WALL: Labels = (("clock", "wall"),)
MODEL_CPU: Labels = (("clock", "cpu"),)


class ServiceMetrics:
    """Everything the service counts itself."""

    def __init__(self) -> None:
        self.requests = Counter("densemem_http_requests_total", "HTTP requests by route, method and status.")
        self.latency = Histogram(
            "densemem_http_request_duration_seconds", "HTTP request latency by route and method, in seconds."
        )
        self.embedding_latency = Histogram(
            "densemem_query_embedding_duration_seconds", "Time to embed one recall query, in seconds."
        )
        self.recall_phases = Histogram(
            "densemem_recall_phase_seconds",
            "Where a recall's time goes, per phase, in seconds (wall clock on the server): parse (key "
            "header, body read, validation), authenticate (the extra key check of a key not seen "
            "recently), embed (waiting for and running the query embedding), pool (waiting for a "
            "database connection, including the hand-off to the worker thread), round_trip (the one "
            "pipelined transaction: role, key, recall), handoff (returning the connection and back "
            "to the event loop), respond (building the answer). The rest of "
            "densemem_http_request_duration_seconds is middleware and sending the answer.",
            PHASE_BUCKETS,
        )
        self.embedding_model = Histogram(
            "densemem_query_embedding_model_seconds",
            "One model call of the query embedder (a batch of concurrent queries), in seconds: "
            'clock="wall" and clock="cpu" (CPU time of the calling thread, including the '
            "onnxruntime work it runs itself).",
            PHASE_BUCKETS,
        )
        self.embedding_model_queries = Counter(
            "densemem_query_embedding_model_queries_total", "Queries embedded by the model calls."
        )
        self.overlapped = Counter(
            "densemem_recall_overlapped_total",
            "Recalls whose query was embedded in their database thread while the key was checked "
            "(the model was idle; the others queue for a batched model call).",
        )
        self.degraded = Counter(
            "densemem_degraded_total",
            "Requests the service answered with a degraded branch (query_embedding: the provider failed, "
            "the query vector was passed as NULL and the ranking profile decided).",
        )

    def observe_model(self, wall_seconds: float, cpu_seconds: float, queries: int) -> None:
        """One model call of the query batcher (densemem.service.embedding.QueryBatcher)."""
        self.embedding_model.observe(wall_seconds, MODEL_WALL)
        self.embedding_model.observe(cpu_seconds, MODEL_CPU)
        self.embedding_model_queries.inc((), float(queries))

    def render(self) -> list[str]:
        lines: list[str] = []
        for metric in (
            self.requests,
            self.latency,
            self.embedding_latency,
            self.recall_phases,
            self.embedding_model,
            self.embedding_model_queries,
            self.overlapped,
            self.degraded,
        ):
            lines.extend(metric.render())
        return lines
