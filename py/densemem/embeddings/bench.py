"""`densemem embed bench`: embedding throughput and ingest-to-searchable latency.

Three figures, on a scratch database created next to the configured one
(and dropped afterwards):

1. provider throughput: documents per second through `provider.embed` in
   worker-sized batches, for LoCoMo conversation turns (short, like chat
   evidence) and SciFact abstracts (long, cut by the model at 256 tokens),
   read from ../shared/data at run time;
2. worker throughput: the same turns through claim, embed and store;
3. ingest-to-searchable latency: one evidence ingested through
   dm.ingest_evidence with a worker following (NOTIFY), timed from the
   ingest's commit until its search document is ready (vector stored).
"""

from __future__ import annotations

import json
import os
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from densemem import db
from densemem.config import Settings, project_root
from densemem.embeddings import provider_from_settings
from densemem.embeddings.base import EmbeddingProvider
from densemem.embeddings.worker import EmbeddingWorker, WorkerOptions, start_worker_thread
from densemem.migrate import migrate
from densemem.store import embeddings as store
from densemem.store import write
from densemem.store.session import Principal, acting_as


def _data_dir() -> Path:
    return project_root().parent / "shared" / "data"


def locomo_turns(limit: int) -> list[str]:
    path = _data_dir() / "locomo" / "locomo_dev.json"
    turns: list[str] = []
    if path.is_file():
        for sample in json.loads(path.read_text()):
            conversation = sample["conversation"]
            for key in sorted(k for k in conversation if k.startswith("session_") and k[8:].isdigit()):
                turns.extend(f"{t['speaker']}: {t['text']}" for t in conversation[key])
    if not turns:
        turns = [
            f"Synthetic turn {i}: we talked about the plan for week {i % 52} and the budget."
            for i in range(500)
        ]
    return [turns[i % len(turns)] + ("" if i < len(turns) else f" ({i})") for i in range(limit)]


def scifact_abstracts(limit: int) -> list[str]:
    path = _data_dir() / "scifact" / "corpus.jsonl"
    out: list[str] = []
    if path.is_file():
        with path.open() as handle:
            for line in handle:
                row = json.loads(line)
                out.append(f"{row['title']} {row['text']}")
                if len(out) >= limit:
                    break
    return out


def provider_throughput(provider: EmbeddingProvider, texts: list[str], batch: int) -> tuple[float, float]:
    """Documents per wall-clock second, and per CPU-second of this process (robust to a busy machine)."""
    provider.embed(texts[:batch])  # warm up (model load, first allocation)
    started, cpu_started = time.perf_counter(), time.process_time()
    for i in range(0, len(texts), batch):
        provider.embed(texts[i : i + batch])
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    return len(texts) / wall, len(texts) / max(cpu, 1e-9)


def _scratch_database(url: str) -> tuple[str, str]:
    name = f"densemem_bench_embed_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    info = psycopg.conninfo.conninfo_to_dict(url)
    info["dbname"] = name
    return name, psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in info.items() if v is not None})


def run_bench(settings: Settings, *, documents: int = 2000, latency_runs: int = 20) -> int:
    provider = provider_from_settings(settings)
    batch = min(64, provider.max_batch_size)
    print(f"provider {provider.contract.describe()}, batch {batch}, load average {os.getloadavg()[0]:.1f}")

    turns = locomo_turns(documents)
    rate, per_cpu = provider_throughput(provider, turns, batch)
    mean_chars = sum(map(len, turns)) / len(turns)
    print(
        f"provider throughput, LoCoMo turns (mean {mean_chars:.0f} chars): {rate:.1f} documents/s "
        f"({per_cpu:.1f} per CPU-second)"
    )
    abstracts = scifact_abstracts(max(64, documents // 4))
    if abstracts:
        rate, per_cpu = provider_throughput(provider, abstracts, batch)
        mean_chars = sum(map(len, abstracts)) / len(abstracts)
        print(
            f"provider throughput, SciFact abstracts (mean {mean_chars:.0f} chars): {rate:.1f} documents/s "
            f"({per_cpu:.1f} per CPU-second)"
        )

    base_url = db.database_url(settings)
    name, url = _scratch_database(base_url)
    try:
        migrate(url, settings.migrations_dir, settings.sql_dir)
        with (
            psycopg.connect(url, autocommit=True) as admin,
            admin.cursor(row_factory=psycopg.rows.dict_row) as cur,
        ):
            store.activate_contract(cur, spec=provider.contract)
            team = admin.execute("SELECT dm.ensure_team('bench embed')").fetchone()
            assert team is not None
            team_id = uuid.UUID(str(team[0]))
            profile = admin.execute("SELECT dm.ensure_profile(%s, 'bench')", (team_id,)).fetchone()
            assert profile is not None
            admin.execute(
                "INSERT INTO dm_private.search_documents (team_id, document_id, subject_kind, subject_id, "
                "body, search_vector) SELECT %s, gen_random_uuid(), 'evidence', gen_random_uuid(), b, "
                "to_tsvector('english', b) FROM unnest(%s::text[]) AS b",
                (team_id, turns),
            )
        worker = EmbeddingWorker(url, provider, WorkerOptions(batch_size=batch, progress=False))
        started = time.perf_counter()
        stats = worker.run_once()
        elapsed = time.perf_counter() - started
        worker.close()
        print(
            f"worker throughput (claim, embed, store): {stats.stored / elapsed:.1f} documents/s "
            f"({stats.stored} in {elapsed:.1f} s)"
        )

        principal = Principal(team_id=team_id, profile_id=uuid.UUID(str(profile[0])))
        latencies = _latencies(url, provider, principal, latency_runs)
        ordered = sorted(latencies)
        p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
        print(
            f"ingest-to-searchable, one evidence, worker following ({len(latencies)} runs): "
            f"p50 {statistics.median(latencies) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms, "
            f"max {ordered[-1] * 1000:.1f} ms"
        )
    finally:
        with psycopg.connect(base_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        provider.close()
    return 0


def _latencies(url: str, provider: EmbeddingProvider, principal: Principal, runs: int) -> list[float]:
    thread, stop = start_worker_thread(url, provider, WorkerOptions(poll_seconds=30, progress=False))
    out: list[float] = []
    try:
        time.sleep(0.5)
        with psycopg.connect(url) as conn, psycopg.connect(url, autocommit=True) as watcher:
            for i in range(runs):
                text = f"Bench evidence {i}: the release train leaves on Thursday at {i % 24}:00."
                with acting_as(conn, principal) as cur:
                    [evidence_id] = write.ingest_evidence(
                        cur,
                        team_id=principal.team_id,
                        items=[{"text": text, "source": {"external_id": f"bench-{i}", "kind": "note"}}],
                    )
                committed = time.perf_counter()
                while True:
                    row: Any = watcher.execute(
                        "SELECT search_state::text FROM dm_private.search_documents "
                        "WHERE team_id = %s AND subject_kind = 'evidence' AND subject_id = %s",
                        (principal.team_id, evidence_id),
                    ).fetchone()
                    if row is not None and row[0] == "ready":
                        break
                    if time.perf_counter() - committed > 30:
                        raise RuntimeError("a document was not embedded within 30 s")
                    time.sleep(0.001)
                out.append(time.perf_counter() - committed)
                time.sleep(0.05)
    finally:
        stop.set()
        thread.join(timeout=30)
    return out


__all__ = ["run_bench"]
