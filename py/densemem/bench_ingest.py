"""`densemem bench recall-under-ingest`: recall latency while another connection ingests evidence.

Runs on the database `densemem bench recall` built (`densemem_bench_recall`),
as it is configured: the GIN options measured are the ones the indexes have
(the report lists them). A writer thread commits `dm.ingest_evidence` batches
into the bench teams (a team picked with probability proportional to its
size, text drawn from the bench vocabulary) at a steady rate, through the
real write path as densemem_app; the main connection meanwhile times
`dm.recall_memory` of the bench queries inside the database, bucket after
bucket, as `densemem bench recall` does. Before the writer starts, one pass
gives the idle figures.

Why: GIN's `fastupdate` parks new entries in a pending list that every GIN
search reads in full, so a recall's full-text cost grows with the writes
since the last flush; a bench with no writer cannot see it (docs/RECALL.md,
session 16).

Afterwards the ingested rows (sources whose external id starts with the run's
prefix, their revisions, evidence and search documents) are deleted, the
statistics deltas they left folded, the GIN pending lists flushed and the
tables vacuumed, so the bench database ends as it started.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import psycopg

from densemem import db
from densemem.bench_discovery import bench_commands, percentile
from densemem.bench_recall import (
    MEASURE_FUNCTIONS,
    backend_cpu_ms,
    bench_urls,
    query_set,
    vocabulary,
)
from densemem.config import Settings

SOURCE_PREFIX = "bench-ingest:"
INGEST_TABLES = ["sources", "source_revisions", "evidence", "search_documents", "search_statistics_deltas"]

GIN_INDEXES = """
SELECT c.oid::regclass::text, coalesce(array_to_string(c.reloptions, ','), '')
FROM pg_catalog.pg_class AS c
JOIN pg_catalog.pg_am AS am ON am.oid = c.relam
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
WHERE am.amname = 'gin' AND n.nspname = 'dm_private' AND c.relkind = 'i'
ORDER BY 1
"""


@dataclass
class BucketUnderIngest:
    bucket: str
    idle_p50_ms: float
    idle_p95_ms: float
    p50_ms: float
    p95_ms: float
    calls: int


@dataclass
class IngestFigures:
    target_per_second: float
    achieved_per_second: float
    evidence: int
    batch: int
    # client time of one committed dm.ingest_evidence batch (call and commit),
    # divided by the batch size
    ms_per_evidence_p50: float
    ms_per_evidence_p95: float
    ms_per_evidence_max: float
    backend_cpu_ms_per_evidence: float | None


@dataclass
class UnderIngestFigures:
    gin_options: dict[str, str]
    seconds: float
    buckets: list[BucketUnderIngest]
    ingest: IngestFigures
    # summed pending tuples of the GIN indexes, sampled after each bucket
    # pass (only when pgstattuple is installed)
    pending_tuples_mean: float | None
    pending_tuples_max: int | None
    cleaned_evidence: int
    date: str = field(default_factory=lambda: time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))


class Writer(threading.Thread):
    """Commits ingest batches at a steady rate until stopped; keeps each batch's time."""

    def __init__(self, url: str, rate: float, batch: int, seed: int) -> None:
        super().__init__(daemon=True)
        self.url, self.rate, self.batch = url, rate, batch
        self.rng = np.random.default_rng(seed + 7)
        # the load's first draw: the same dictionary words the bench text uses
        self.words = vocabulary(np.random.default_rng(seed))
        weights = 1.0 / np.arange(1, len(self.words) + 1)
        self.word_weights = weights / weights.sum()
        self.stop = threading.Event()
        self.batch_ms: list[float] = []
        self.cpu_ms: float | None = None
        self.error: BaseException | None = None
        self.run_id = uuid.uuid4().hex[:8]

    def items(self, number: int) -> str:
        texts = []
        for i in range(self.batch):
            picked = self.rng.choice(len(self.words), size=int(self.rng.integers(8, 24)), p=self.word_weights)
            texts.append(
                {
                    "text": " ".join(self.words[int(w)] for w in picked),
                    "source": {"external_id": f"{SOURCE_PREFIX}{self.run_id}:{number}:{i}", "kind": "doc"},
                }
            )
        return json.dumps(texts)

    def run(self) -> None:
        try:
            with psycopg.connect(self.url, autocommit=True) as conn:
                authors = conn.execute(
                    "SELECT d.team_id, p.profile_id, count(*) FROM dm_private.search_documents AS d "
                    "JOIN LATERAL (SELECT profile_id FROM dm_private.profiles AS p "
                    "WHERE p.team_id = d.team_id ORDER BY profile_id LIMIT 1) AS p ON true "
                    "GROUP BY d.team_id, p.profile_id ORDER BY d.team_id"
                ).fetchall()
                sizes = np.array([float(r[2]) for r in authors])
                cpu_before = backend_cpu_ms(conn)
                started = time.perf_counter()
                number = 0
                while not self.stop.is_set():
                    due = started + number * self.batch / self.rate
                    if (wait := due - time.perf_counter()) > 0 and self.stop.wait(wait):
                        break
                    team, profile, _ = authors[int(self.rng.choice(len(authors), p=sizes / sizes.sum()))]
                    payload = self.items(number)
                    began = time.perf_counter()
                    with conn.transaction():
                        conn.execute(
                            "SELECT set_config('role', 'densemem_app', true), "
                            "set_config('densemem.team_id', %s, true), "
                            "set_config('densemem.profile_id', %s, true)",
                            (str(team), str(profile)),
                        )
                        conn.execute("SELECT dm.ingest_evidence(%s, %s::jsonb)", (team, payload))
                    self.batch_ms.append((time.perf_counter() - began) * 1000)
                    number += 1
                cpu_after = backend_cpu_ms(conn)
                if cpu_before is not None and cpu_after is not None:
                    self.cpu_ms = cpu_after - cpu_before
        except BaseException as error:  # reported by the main thread
            self.error = error


def pending_tuples(conn: psycopg.Connection[Any], indexes: list[str]) -> int | None:
    if conn.execute("SELECT to_regprocedure('pgstatginindex(regclass)') IS NULL").fetchone() != (False,):
        return None
    row = conn.execute(
        "SELECT sum((pgstatginindex(i::regclass)).pending_tuples)::bigint FROM unnest(%s::text[]) AS i",
        (indexes,),
    ).fetchone()
    return int(row[0]) if row is not None and row[0] is not None else 0


def recall_pass(conn: psycopg.Connection[Any], items: list[tuple[Any, str, str]]) -> list[float]:
    """In-database time of each recall of one bucket's queries (the bench recall measure)."""
    with conn.transaction():
        conn.execute("SELECT set_config('role', 'densemem_app', true)")
        rows = conn.execute(
            "SELECT elapsed_ms FROM pg_temp.bench_recall(%s, %s, %s, 0)",
            ([t for t, _, _ in items], [q for _, q, _ in items], [v for _, _, v in items]),
        ).fetchall()
    return [float(r[0]) for r in rows]


def clean_up(conn: psycopg.Connection[Any], indexes: list[str]) -> int:
    """Deletes what the writer ingested, folds the deltas it left, flushes GIN lists, vacuums."""
    with conn.transaction():
        conn.execute(
            "CREATE TEMP TABLE bench_ingested ON COMMIT DROP AS "
            "SELECT e.team_id, e.evidence_id FROM dm_private.sources AS s JOIN dm_private.evidence AS e "
            "ON e.team_id = s.team_id AND e.source_id = s.source_id WHERE s.external_id LIKE %s",
            (SOURCE_PREFIX + "%",),
        )
        conn.execute(
            "DELETE FROM dm_private.search_documents AS d USING bench_ingested AS g "
            "WHERE d.team_id = g.team_id AND d.subject_kind = 'evidence' AND d.subject_id = g.evidence_id"
        )
        deleted = conn.execute(
            "DELETE FROM dm_private.evidence AS e USING bench_ingested AS g "
            "WHERE e.team_id = g.team_id AND e.evidence_id = g.evidence_id"
        ).rowcount
        conn.execute(
            "DELETE FROM dm_private.source_revisions AS r USING dm_private.sources AS s "
            "WHERE r.team_id = s.team_id AND r.source_id = s.source_id AND s.external_id LIKE %s",
            (SOURCE_PREFIX + "%",),
        )
        conn.execute("DELETE FROM dm_private.sources WHERE external_id LIKE %s", (SOURCE_PREFIX + "%",))
    # the ingest's deltas and the deletion's cancel out: folding writes nothing
    conn.execute("SELECT dm.compact_search_statistics(NULL)")
    for index in indexes:
        conn.execute("SELECT gin_clean_pending_list(%s::regclass)", (index,))
    conn.execute("VACUUM " + ", ".join(f"dm_private.{t}" for t in INGEST_TABLES))
    return deleted


def measure_under_ingest(
    url: str, rate: float, batch: int, seconds: float, per_bucket: int, seed: int
) -> UnderIngestFigures:
    with psycopg.connect(url, autocommit=True) as conn:
        gin = {str(r[0]): str(r[1]) for r in conn.execute(GIN_INDEXES).fetchall()}
        queries = query_set(conn, per_bucket, seed)
        conn.execute(MEASURE_FUNCTIONS)
        idle: dict[str, list[float]] = {}
        for name, items in queries.items():
            recall_pass(conn, items[:5])  # warm-up
            idle[name] = recall_pass(conn, items)
        writer = Writer(url, rate, batch, seed)
        busy: dict[str, list[float]] = {name: [] for name in queries}
        pending: list[int] = []
        writer.start()
        started = time.perf_counter()
        try:
            while time.perf_counter() - started < seconds and writer.error is None:
                for name, items in queries.items():
                    busy[name] += recall_pass(conn, items)
                    if (count := pending_tuples(conn, list(gin))) is not None:
                        pending.append(count)
        finally:
            writer.stop.set()
            writer.join()
            elapsed = time.perf_counter() - started
            cleaned = clean_up(conn, list(gin))
        if writer.error is not None:
            raise writer.error
    per_evidence = [ms / batch for ms in writer.batch_ms]
    evidence = len(writer.batch_ms) * batch
    return UnderIngestFigures(
        gin_options=gin,
        seconds=round(elapsed, 1),
        buckets=[
            BucketUnderIngest(
                bucket=name,
                idle_p50_ms=round(statistics.median(idle[name]), 3),
                idle_p95_ms=round(percentile(idle[name], 0.95), 3),
                p50_ms=round(statistics.median(busy[name]), 3),
                p95_ms=round(percentile(busy[name], 0.95), 3),
                calls=len(busy[name]),
            )
            for name in queries
            if busy[name]
        ],
        ingest=IngestFigures(
            target_per_second=rate,
            achieved_per_second=round(evidence / elapsed, 1),
            evidence=evidence,
            batch=batch,
            ms_per_evidence_p50=round(statistics.median(per_evidence), 3),
            ms_per_evidence_p95=round(percentile(per_evidence, 0.95), 3),
            ms_per_evidence_max=round(max(per_evidence), 3),
            backend_cpu_ms_per_evidence=(round(writer.cpu_ms / evidence, 3) if writer.cpu_ms else None),
        ),
        pending_tuples_mean=round(statistics.fmean(pending), 1) if pending else None,
        pending_tuples_max=max(pending) if pending else None,
        cleaned_evidence=cleaned,
    )


def _bench_recall_under_ingest(args: argparse.Namespace, settings: Settings) -> int:
    _, url = bench_urls(db.database_url(settings))
    try:
        figures = measure_under_ingest(url, args.rate, args.batch, args.seconds, args.queries, args.seed)
    except psycopg.Error as error:
        print(f"densemem bench recall-under-ingest: {error}", file=sys.stderr)
        return 1
    print(json.dumps(asdict(figures), indent=2))
    for b in figures.buckets:
        print(
            f"{b.bucket:>7}: idle p50 {b.idle_p50_ms:.2f} p95 {b.idle_p95_ms:.2f} ms; "
            f"under ingest p50 {b.p50_ms:.2f} p95 {b.p95_ms:.2f} ms ({b.calls} calls)"
        )
    i = figures.ingest
    print(
        f"ingest {i.achieved_per_second}/s (target {i.target_per_second}), {i.evidence} evidence "
        f"in batches of {i.batch}: {i.ms_per_evidence_p50:.3f} ms/evidence p50, "
        f"{i.ms_per_evidence_p95:.3f} p95; "
        f"pending tuples mean {figures.pending_tuples_mean} max {figures.pending_tuples_max}; "
        f"cleaned {figures.cleaned_evidence} evidence"
    )
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = bench_commands(commands).add_parser(
        "recall-under-ingest",
        help="recall latency per bucket while evidence is ingested at a steady rate (on bench recall's db)",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    parser.add_argument("--rate", type=float, default=100.0, help="evidence per second")
    parser.add_argument("--batch", type=int, default=10, help="evidence per dm.ingest_evidence call")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--queries", type=int, default=20, help="queries per team-size bucket")
    parser.add_argument("--seed", type=int, default=11)
    parser.set_defaults(handler=_bench_recall_under_ingest)
