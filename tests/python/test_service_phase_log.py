"""The per-recall phase log (DENSEMEM_PHASE_LOG), the collector's pause clock, the start-up freeze,
and the benchmark's summary of its slowest requests."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import httpx
import pytest
from service_support import bearer, fresh_database, issue, require_functions, service

from densemem.bench_http import read_phase_log, tail_summary
from densemem.service.phase_log import GC_CLOCK, GcClock, freeze_start_up_objects

PHASES = ("parse", "pool", "embed", "round_trip", "handoff", "respond")


def test_each_recall_writes_one_line_with_its_phases(
    admin_url: str, template_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log_path = tmp_path / "phases.jsonl"
    monkeypatch.setenv("DENSEMEM_PHASE_LOG", str(log_path))
    with fresh_database(admin_url) as url, service(url) as base_url:
        require_functions(url, "dm.recall_memory(text,uuid,vector,jsonb)")
        key = issue(url, "phase-log-team").api_key
        queries = ["who works on Dense-Mem?", "what did the team ship in June?", "x"]
        for query in queries:
            body = {"query": query}
            answer = httpx.post(base_url + "/v1/recall", json=body, headers=bearer(key), timeout=30)
            assert answer.status_code == 200, answer.text
        # A non-recall request writes nothing.
        assert httpx.get(base_url + "/healthz", timeout=30).status_code == 200
    records = [json.loads(line) for line in log_path.read_text().splitlines()]
    assert [r["query"] for r in records] == queries
    # The first recall of a key checks it first; later ones of the same key overlap the embedding.
    assert "authenticate" in records[0] and records[0]["overlapped"] is False
    for record in records[1:]:
        assert record["overlapped"] is True
        assert record["embed_cpu"] >= 0.0
    for record in records:
        for phase in PHASES:
            assert record[phase] >= 0.0, (phase, record)
        parts = sum(record[p] for p in PHASES) + record.get("authenticate", 0.0)
        assert parts <= record["total"] + 0.01, record
        assert record["round_trip"] > 0.0
        assert {"gc_ms", "gc_collections", "gc_full", "at"} <= set(record)


def test_without_the_setting_nothing_is_written(
    admin_url: str, template_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DENSEMEM_PHASE_LOG", raising=False)
    monkeypatch.chdir(tmp_path)
    with fresh_database(admin_url) as url, service(url) as base_url:
        require_functions(url, "dm.recall_memory(text,uuid,vector,jsonb)")
        key = issue(url, "no-log-team").api_key
        answer = httpx.post(base_url + "/v1/recall", json={"query": "q"}, headers=bearer(key), timeout=30)
        assert answer.status_code == 200, answer.text
    assert list(tmp_path.iterdir()) == []


def test_the_gc_clock_counts_pauses_and_full_collections() -> None:
    clock = GcClock()
    clock.install()
    clock.install()  # idempotent: one hook
    try:
        before = clock.snapshot()
        gc.collect(0)
        gc.collect(2)
        pause, collections, full = clock.snapshot()
    finally:
        clock.uninstall()
    assert collections - before[1] == 2
    assert full - before[2] == 1
    assert pause > before[0]
    gc.collect(2)
    assert clock.snapshot()[1] == collections  # uninstalled: no longer counting


def test_the_service_clock_is_installed_at_start(admin_url: str, template_url: str) -> None:
    with fresh_database(admin_url) as url, service(url):
        before = GC_CLOCK.snapshot()[1]
        gc.collect(0)
        assert GC_CLOCK.snapshot()[1] == before + 1


def test_freezing_moves_live_objects_out_of_the_collectors_walk() -> None:
    class Marker:
        pass

    alive = [Marker() for _ in range(10)]
    try:
        frozen = freeze_start_up_objects()
        assert frozen >= 10
        assert not any(o is alive for o in gc.get_objects())
    finally:
        gc.unfreeze()
    assert any(o is alive for o in gc.get_objects())


def test_tail_summary_takes_the_slowest_five_percent(tmp_path: Path) -> None:
    records = [
        {"at": 100.0 + i, "query": f"q{i}", "total": float(i), "embed": 1.0, "round_trip": float(i) - 1.0}
        for i in range(1, 41)
    ]
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    inside = read_phase_log(path, 105.0, 130.0)
    assert [r["query"] for r in inside] == [f"q{i}" for i in range(5, 31)]
    summary = tail_summary(read_phase_log(path, 0.0, 1e9))
    assert summary["requests"] == 40 and summary["tail_requests"] == 2
    assert [r["query"] for r in summary["tail"]] == ["q40", "q39"]
    assert summary["tail_mean"]["total"] == 39.5
    assert summary["rest_mean"]["total"] == 19.5
    assert summary["tail_mean"]["round_trip"] == 38.5
    assert tail_summary([]) == {}
