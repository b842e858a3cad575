"""Per-request timelines of recall, and the collector's pauses, for finding what makes the tail.

The /metrics histograms give each phase's mean and distribution, not which phases made one
request slow. With DENSEMEM_PHASE_LOG=<file> the service appends one JSON line per recall:
its query, each phase's milliseconds (parse, pool, embed, round_trip, handoff, respond; the
overlapped path also the model's thread CPU), whether it took the overlapped path, and the
garbage collector's pauses while it ran (count, milliseconds, and whether a full collection
ran). `densemem bench http --phase-log FILE` turns it on in the benchmark's server and prints
what the slowest 5% of one-client requests are made of.

The collector's pauses are measured by a gc.callbacks hook (`GcClock`), installed at start-up
whether or not the log is on (two perf_counter calls per collection; the young collections of
a request take tens of microseconds).
"""

from __future__ import annotations

import gc
import threading
import time
from pathlib import Path
from typing import Any

import orjson


class GcClock:
    """Cumulative pause time and collection counts of the garbage collector (all threads)."""

    def __init__(self) -> None:
        self.pause_seconds = 0.0
        self.collections = 0
        self.full_collections = 0
        self._started = 0.0

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        self.pause_seconds += time.perf_counter() - self._started
        self.collections += 1
        if info.get("generation") == 2:
            self.full_collections += 1

    def install(self) -> None:
        if self._callback not in gc.callbacks:
            gc.callbacks.append(self._callback)

    def uninstall(self) -> None:
        if self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)

    def snapshot(self) -> tuple[float, int, int]:
        return self.pause_seconds, self.collections, self.full_collections


GC_CLOCK = GcClock()


def freeze_start_up_objects() -> int:
    """Collect once, then move every object alive now (the model, torch, transformers, the
    routes: about 460k objects) to the collector's permanent generation.

    A full collection walks every tracked object: with the model loaded that took 0.2-0.6 s
    here, a pause that lands inside whichever request triggers it. Frozen objects are never
    walked again, and the young collections a request triggers do not change. Returns how many
    objects were frozen.
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


class PhaseLog:
    """Appends one JSON line per recall to a file (thread-safe; line-buffered writes)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._file = open(self.path, "ab", buffering=0)  # noqa: SIM115 - closed by close()

    def write(self, record: dict[str, Any]) -> None:
        line = orjson.dumps(record) + b"\n"
        with self._lock:
            self._file.write(line)

    def close(self) -> None:
        with self._lock:
            self._file.close()


class Timeline:
    """One recall's phases in milliseconds, plus the collector's pauses over its lifetime."""

    def __init__(self, query: str, began: float) -> None:
        """`began` is the request's perf_counter() start (before its body was read)."""
        self.began = began
        self._gc = GC_CLOCK.snapshot()
        self.record: dict[str, Any] = {"at": round(time.time(), 4), "query": query}

    def phase(self, name: str, seconds: float) -> None:
        self.record[name] = round(seconds * 1000, 3)

    def finish(self) -> dict[str, Any]:
        pause, collections, full = GC_CLOCK.snapshot()
        self.record["total"] = round((time.perf_counter() - self.began) * 1000, 3)
        self.record["gc_ms"] = round((pause - self._gc[0]) * 1000, 3)
        self.record["gc_collections"] = collections - self._gc[1]
        self.record["gc_full"] = full - self._gc[2]
        return self.record
