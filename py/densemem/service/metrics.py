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
        self.degraded = Counter(
            "densemem_degraded_total",
            "Requests the service answered with a degraded branch (query_embedding: the provider failed, "
            "the query vector was passed as NULL and the ranking profile decided).",
        )

    def render(self) -> list[str]:
        lines: list[str] = []
        for metric in (self.requests, self.latency, self.embedding_latency, self.degraded):
            lines.extend(metric.render())
        return lines
