"""`densemem bench recall`: dm.recall_memory latency by team size, stage times, ranking cost, ANN recall.

Builds (or, with --reuse, keeps) a dedicated database `densemem_bench_recall`
on the configured server and loads N evidence rows over T teams whose sizes
follow Zipf's law (team i holds about N / (i * H_T) rows). Text is made of
dictionary words with Zipf frequencies plus topic words per cluster; vectors
are 384-d unit vectors drawn around cluster centres (so nearest neighbours
are not trivial). Loading is bulk: COPY as the superuser (binary COPY for the
vectors), search documents written set-based in SQL with the same columns
the write path fills, then `dm.refresh_vector_indexes()` gives large teams
their partial HNSW index.

Then, as densemem_app under RLS, it measures inside the database
(clock_timestamp around each call, one client, after a warm-up):
- dm.recall_memory per team-size bucket: p50 / p95 / p99 of the second of
  two passes over the bucket's queries on one connection (a long-lived
  connection's steady state), and p50 / p95 of the first pass, where most
  calls are their team's first on the connection (its walk function parsed
  and planned, relation cache entries built);
- time per stage: each stage's median per bucket, warm and alone, called as
  recall_run calls it (pg_temp.bench_stage_times), and the means of
  dm.explain_recall's stage timings (as densemem_operator: cold, and with
  explain's own work in them);
- ranking 100 candidates: dm_private.recall_rank (composite rerank, context
  lift and MMR for 10 picks in one call), exactly as recall_run calls it;
- vector branch recall@50 against the exact oracle, per bucket.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import math
import os
import statistics
import struct
import sys
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from densemem import db
from densemem.bench_discovery import bench_commands, percentile
from densemem.config import Settings
from densemem.embedded import shared_memory
from densemem.migrate import migrate

BENCH_DATABASE = "densemem_bench_recall"
DIMENSIONS = 384
BUCKETS: list[tuple[str, int, int]] = [
    ("1-100", 1, 100),
    ("101-1k", 101, 1_000),
    ("1k-10k", 1_001, 10_000),
    ("10k+", 10_001, 10**12),
]
MEMORY_TYPES = ["semantic", "conversation", "episodic", "workflow", "organizational"]
WORDS_FILE = Path("/usr/share/dict/words")

MEASURE_FUNCTIONS = """
CREATE OR REPLACE FUNCTION pg_temp.bench_recall(teams uuid [], queries text [], embeddings text [],
    warmup integer)
RETURNS TABLE (call_index integer, elapsed_ms double precision, result_count integer)
LANGUAGE plpgsql AS $f$
DECLARE
    i integer;
    started timestamptz;
    answer jsonb;
BEGIN
    FOR i IN 1 .. pg_catalog.array_length(queries, 1) LOOP
        PERFORM pg_catalog.set_config('densemem.team_id', teams[i]::text, true);
        started := pg_catalog.clock_timestamp();
        answer := dm.recall_memory(queries[i], teams[i], embeddings[i]::public.vector, '{}'::jsonb);
        IF i > warmup THEN
            call_index := i - warmup;
            elapsed_ms := EXTRACT(epoch FROM pg_catalog.clock_timestamp() - started) * 1000;
            result_count := pg_catalog.jsonb_array_length(answer -> 'results');
            RETURN NEXT;
        END IF;
    END LOOP;
END
$f$;

CREATE OR REPLACE FUNCTION pg_temp.bench_ranking_prepare(teams uuid [], queries text [], embeddings text [])
RETURNS integer
LANGUAGE plpgsql AS $f$
DECLARE
    i integer;
    settings jsonb;
    req jsonb;
    hits dm_private.recall_branch_hit [];
BEGIN
    -- the inputs of the ranking stages, computed before anything is timed;
    -- settings and request uncompressed, as recall_run holds them
    CREATE TEMP TABLE IF NOT EXISTS bench_ranking_input (
        i integer, team uuid, query text, req jsonb, settings jsonb, fused dm_private.recall_fused []);
    ALTER TABLE bench_ranking_input ALTER req SET STORAGE PLAIN, ALTER settings SET STORAGE PLAIN;
    TRUNCATE bench_ranking_input;
    FOR i IN 1 .. pg_catalog.array_length(queries, 1) LOOP
        PERFORM pg_catalog.set_config('densemem.team_id', teams[i]::text, true);
        settings := dm_private.recall_settings(teams[i], NULL);
        req := dm_private.recall_request(queries[i], '{}'::jsonb, settings);
        hits := ARRAY(SELECT h FROM dm_private.recall_fulltext_candidates(teams[i], queries[i], req,
            settings) AS h)
             || ARRAY(SELECT h FROM dm_private.recall_vector_candidates(teams[i],
                 embeddings[i]::public.vector, req, settings) AS h);
        INSERT INTO bench_ranking_input
        VALUES (i, teams[i], queries[i], req, settings,
                ARRAY(SELECT f FROM dm_private.recall_fuse(hits, settings) AS f));
    END LOOP;
    RETURN pg_catalog.array_length(queries, 1);
END
$f$;

CREATE OR REPLACE FUNCTION pg_temp.bench_ranking(warmup integer)
RETURNS TABLE (call_index integer, elapsed_ms double precision, candidate_count integer)
LANGUAGE plpgsql AS $f$
DECLARE
    r record;
    started timestamptz;
    fused dm_private.recall_fused [];
    picked integer;
BEGIN
    -- composite rerank, context lift and MMR of the fused candidates, timed
    -- alone: the one call recall_run makes (dm_private.recall_rank, without
    -- explain)
    FOR r IN SELECT * FROM bench_ranking_input ORDER BY i LOOP
        PERFORM pg_catalog.set_config('densemem.team_id', r.team::text, true);
        -- an in-memory array, as recall_run holds the fusion's output: the
        -- table's copy is compressed, and each read of it inside the timed
        -- stages would decompress it again
        fused := ARRAY(SELECT f FROM pg_catalog.unnest(r.fused) AS f);
        started := pg_catalog.clock_timestamp();
        SELECT pg_catalog.cardinality(x.ordered_ids) INTO picked
        FROM dm_private.recall_rank(r.team, r.query, fused, r.req, r.settings, '{}', true, 10, false) AS x;
        IF r.i > warmup THEN
            call_index := r.i - warmup;
            elapsed_ms := EXTRACT(epoch FROM pg_catalog.clock_timestamp() - started) * 1000;
            candidate_count := pg_catalog.cardinality(fused);
            RETURN NEXT;
        END IF;
    END LOOP;
END
$f$;

CREATE OR REPLACE FUNCTION pg_temp.bench_stage_times(teams uuid [], queries text [], embeddings text [],
    warmup integer)
RETURNS TABLE (call_index integer, stage text, elapsed_ms double precision)
LANGUAGE plpgsql AS $f$
DECLARE
    i integer;
    started timestamptz;
    query_embedding public.vector;
    team uuid;
    settings jsonb;
    req jsonb;
    parsed jsonb;
    loaded boolean;
    want integer;
    fulltext_hits dm_private.recall_branch_hit [];
    exact_hits dm_private.recall_branch_hit [];
    vector_hits dm_private.recall_branch_hit [];
    fusion record;
    ranking record;
    kept uuid [];
    discovery jsonb;
    telemetry jsonb;
BEGIN
    -- each stage of a recall timed alone, called as dm_private.recall_run
    -- calls it without explain, in its order (so each finds the pages the
    -- stages before it read); hydration is dm_private.recall_hydrate of the
    -- first `limit` ordered ids (the stage function; recall_run runs the
    -- same read inline with its byte budget)
    FOR i IN 1 .. pg_catalog.array_length(queries, 1) LOOP
        PERFORM pg_catalog.set_config('densemem.team_id', teams[i]::text, true);
        query_embedding := embeddings[i]::public.vector;
        call_index := i - warmup;

        started := pg_catalog.clock_timestamp();
        team := dm_private.require_team(teams[i]);
        settings := dm_private.recall_settings(team, NULL);
        req := dm_private.recall_request(queries[i], '{}'::jsonb, settings);
        want := (req ->> 'limit')::integer;
        stage := 'request';
        elapsed_ms := EXTRACT(epoch FROM pg_catalog.clock_timestamp() - started) * 1000;
        IF i > warmup THEN RETURN NEXT; END IF;

        started := pg_catalog.clock_timestamp();
        loaded := public.similarity('', '') IS NOT NULL;
        parsed := dm.parse_query(queries[i], team, (req ->> 'now')::timestamptz);
        req := dm_private.recall_merge_parse(req, '{}'::jsonb, parsed);
        stage := 'parse';
        elapsed_ms := EXTRACT(epoch FROM pg_catalog.clock_timestamp() - started) * 1000;
        IF i > warmup THEN RETURN NEXT; END IF;

        started := pg_catalog.clock_timestamp();
        fulltext_hits := ARRAY(SELECT dm_private.recall_fulltext_candidates(team, queries[i], req,
            settings));
        IF pg_catalog.jsonb_array_length(req -> 'anchors') > 0
           OR pg_catalog.jsonb_array_length(req -> 'phrases') > 0 THEN
            exact_hits := ARRAY(SELECT dm_private.recall_exact_candidates(team, req, settings));
        ELSE
            exact_hits := '{}';
        END IF;
        stage := 'fulltext';
        elapsed_ms := EXTRACT(epoch FROM pg_catalog.clock_timestamp() - started) * 1000;
        IF i > warmup THEN RETURN NEXT; END IF;

        started := pg_catalog.clock_timestamp();
        vector_hits := dm_private.recall_vector_hits(team, query_embedding, req, settings);
        stage := 'vector';
        elapsed_ms := EXTRACT(epoch FROM pg_catalog.clock_timestamp() - started) * 1000;
        IF i > warmup THEN RETURN NEXT; END IF;

        started := pg_catalog.clock_timestamp();
        fusion := dm_private.recall_fuse_branches(fulltext_hits, exact_hits, vector_hits, settings);
        stage := 'fusion';
        elapsed_ms := EXTRACT(epoch FROM pg_catalog.clock_timestamp() - started) * 1000;
        IF i > warmup THEN RETURN NEXT; END IF;

        started := pg_catalog.clock_timestamp();
        ranking := dm_private.recall_rank(team, queries[i], fusion.fused, req, settings, '{}', true, want,
            false, fusion.best_score, fusion.worst_score);
        stage := 'rerank';
        elapsed_ms := EXTRACT(epoch FROM pg_catalog.clock_timestamp() - started) * 1000;
        IF i > warmup THEN RETURN NEXT; END IF;

        started := pg_catalog.clock_timestamp();
        kept := ARRAY(SELECT h.evidence_id
                      FROM dm_private.recall_hydrate(team, (COALESCE(ranking.ordered_ids, '{}'))[1:want],
                                                     req) AS h);
        stage := 'hydrate';
        elapsed_ms := EXTRACT(epoch FROM pg_catalog.clock_timestamp() - started) * 1000;
        IF i > warmup THEN RETURN NEXT; END IF;

        started := pg_catalog.clock_timestamp();
        discovery := dm_private.discovery_for_recall(team, queries[i], COALESCE(parsed, '{}'::jsonb), kept,
            req, settings);
        stage := 'discovery';
        elapsed_ms := EXTRACT(epoch FROM pg_catalog.clock_timestamp() - started) * 1000;
        IF i > warmup THEN RETURN NEXT; END IF;

        started := pg_catalog.clock_timestamp();
        telemetry := dm_private.write_recall_telemetry(
            team, pg_catalog.gen_random_uuid(),
            (settings ->> 'profile_name') || ':v' || (settings ->> 'profile_version'),
            'v' || COALESCE(settings ->> 'index_version', '0'), '{}', true, pg_catalog.cardinality(kept), 0,
            false);
        stage := 'telemetry';
        elapsed_ms := EXTRACT(epoch FROM pg_catalog.clock_timestamp() - started) * 1000;
        IF i > warmup THEN RETURN NEXT; END IF;
    END LOOP;
END
$f$;

CREATE OR REPLACE FUNCTION pg_temp.bench_oracle(teams uuid [], embeddings text [], k integer)
RETURNS TABLE (call_index integer, matched integer, expected integer, access_path text)
LANGUAGE plpgsql AS $f$
DECLARE
    i integer;
    settings jsonb;
    req jsonb;
    approx uuid [];
    exact uuid [];
BEGIN
    FOR i IN 1 .. pg_catalog.array_length(teams, 1) LOOP
        PERFORM pg_catalog.set_config('densemem.team_id', teams[i]::text, true);
        settings := dm_private.recall_settings(teams[i], NULL)
            || pg_catalog.jsonb_build_object('candidates', pg_catalog.jsonb_build_object('vector', k));
        req := dm_private.recall_request('', '{}'::jsonb, settings);
        approx := ARRAY(SELECT h.evidence_id FROM dm_private.recall_vector_candidates(
            teams[i], embeddings[i]::public.vector, req, settings) AS h);
        exact := ARRAY(SELECT h.evidence_id FROM dm_private.recall_vector_candidates(
            teams[i], embeddings[i]::public.vector, req, settings, 'exact') AS h);
        call_index := i;
        matched := (SELECT pg_catalog.count(*) FROM pg_catalog.unnest(approx) AS a (id) WHERE a.id =
            ANY (exact));
        expected := pg_catalog.cardinality(exact);
        access_path := (SELECT a.access_path FROM dm_private.recall_vector_access_path(teams[i]) AS a);
        RETURN NEXT;
    END LOOP;
END
$f$;
"""


@dataclass
class BucketFigures:
    bucket: str
    teams: int
    queries: int
    p50_ms: float = 0.0
    p95_ms: float = 0.0
    p99_ms: float = 0.0
    # the same calls the first time on the bench's connection (p50_ms and
    # the rest are the second time: a long-lived connection's steady state)
    first_pass_p50_ms: float = 0.0
    first_pass_p95_ms: float = 0.0
    mean_results: float = 0.0
    recall_at_50: float = 0.0
    oracle_queries: int = 0
    access_paths: dict[str, int] = field(default_factory=dict)
    cpu_ms_per_call: float | None = None


@dataclass
class RecallBenchFigures:
    rows: int
    teams: int
    largest_team: int
    load_seconds: float
    index_seconds: float
    buckets: list[BucketFigures]
    overall_p50_ms: float
    overall_p95_ms: float
    overall_p99_ms: float
    first_pass_overall_p50_ms: float
    first_pass_overall_p95_ms: float
    client_p50_ms: float
    client_p95_ms: float
    stage_mean_ms: dict[str, float]
    # per bucket, each stage's median, warm and alone, as recall_run calls it
    # (pg_temp.bench_stage_times); stage_mean_ms is dm.explain_recall's
    stage_p50_ms: dict[str, dict[str, float]]
    ranking_100_p50_ms: float
    ranking_100_p95_ms: float
    ranking_calls: int
    ranking_100_cpu_ms: float | None
    load_average_before: list[float]
    load_average_after: list[float]
    # whether the server's shared buffers sit on 2 MB pages: the 1M figures
    # differ with them (docs/BENCHMARKS.md, session 15)
    shared_buffers: str
    huge_pages: str
    date: str


def backend_cpu_ms(conn: psycopg.Connection[Any]) -> float | None:
    """CPU time (user + system) the connection's backend has used, from /proc; None when remote.

    Wall-clock figures on a shared machine follow its load; the backend's CPU
    time per call does much less, so the bench reports both.
    """
    try:
        with open(f"/proc/{conn.info.backend_pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def zipf_sizes(rows: int, teams: int) -> list[int]:
    """Team sizes proportional to 1/rank, at least 1 each, summing to `rows`."""
    harmonic = sum(1.0 / i for i in range(1, teams + 1))
    sizes = [max(1, int(rows / (i * harmonic))) for i in range(1, teams + 1)]
    sizes[0] += rows - sum(sizes)
    return sizes


def vocabulary(rng: np.random.Generator, size: int = 6000) -> list[str]:
    if WORDS_FILE.exists():
        words = sorted(
            {
                w.strip().lower()
                for w in WORDS_FILE.read_text(errors="ignore").split()
                if w.strip().isalpha() and w.strip().isascii() and 3 <= len(w.strip()) <= 10
            }
        )
    else:
        syllables = ["ka", "lo", "mi", "ne", "ru", "ta", "shi", "po", "ve", "dan", "sol", "mer", "tin", "bar"]
        words = sorted(
            {"".join(rng.choice(syllables, size=int(rng.integers(2, 4)))) for _ in range(size * 2)}
        )
    picked = rng.choice(len(words), size=min(size, len(words)), replace=False)
    return [words[int(i)] for i in picked]


def team_uuid(i: int) -> uuid.UUID:
    return uuid.UUID(hashlib.md5(f"bench-recall-team:{i}".encode()).hexdigest())


def halfvec_copy_payload(rows: list[tuple[uuid.UUID, uuid.UUID]], vectors: np.ndarray) -> bytes:
    """Binary COPY rows of document_embeddings (team, document, contract, versions, halfvec)."""
    count = len(rows)
    dtype = np.dtype(
        [
            ("fields", ">i2"),
            ("l_team", ">i4"),
            ("team", "S16"),
            ("l_doc", ">i4"),
            ("doc", "S16"),
            ("l_contract", ">i4"),
            ("contract", ">i4"),
            ("l_dv", ">i4"),
            ("dv", ">i4"),
            ("l_sv", ">i4"),
            ("sv", ">i4"),
            ("l_vec", ">i4"),
            ("dim", ">i2"),
            ("unused", ">i2"),
            ("vec", ">f2", (DIMENSIONS,)),
        ]
    )
    out = np.zeros(count, dtype=dtype)
    out["fields"] = 6
    out["l_team"] = 16
    out["team"] = [t.bytes for t, _ in rows]
    out["l_doc"] = 16
    out["doc"] = [d.bytes for _, d in rows]
    out["l_contract"] = 4
    out["contract"] = 1
    out["l_dv"] = 4
    out["dv"] = 1
    out["l_sv"] = 4
    out["sv"] = 1
    out["l_vec"] = 4 + 2 * DIMENSIONS
    out["dim"] = DIMENSIONS
    out["vec"] = vectors.astype(np.float16)
    return out.tobytes()


def _escape_copy(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\t", " ").replace("\n", " ")


def load(url: str, rows: int, teams: int, seed: int) -> dict[str, Any]:
    """Bulk-load the bench corpus; returns the per-team sizes and a query set source."""
    rng = np.random.default_rng(seed)
    sizes = zipf_sizes(rows, teams)
    vocab = vocabulary(rng)
    word_weights = 1.0 / np.arange(1, len(vocab) + 1)
    word_weights /= word_weights.sum()
    centre_count = 2000
    centres = rng.normal(size=(centre_count, DIMENSIONS)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    topic_words = rng.choice(len(vocab), size=(centre_count, 12))
    base_time = 1_767_225_600.0  # 2026-01-01T00:00:00Z
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET session_replication_role = replica")  # no triggers of other areas on bulk rows
        with conn.transaction():
            with conn.cursor() as cur, cur.copy("COPY dm_private.teams (team_id, name) FROM STDIN") as copy:
                for i in range(teams):
                    copy.write_row((team_uuid(i), f"bench recall team {i}"))
            with (
                conn.cursor() as cur,
                cur.copy("COPY dm_private.profiles (team_id, profile_id, name) FROM STDIN") as copy,
            ):
                for i in range(teams):
                    copy.write_row((team_uuid(i), team_uuid(i + 10**7), "bench author"))
            conn.execute("""
                INSERT INTO dm_private.sources (team_id, source_id, external_id, kind)
                SELECT t.team_id, md5(t.team_id::text || ':source')::uuid, 'bench:source', 'document'
                FROM dm_private.teams AS t;
                INSERT INTO dm_private.source_revisions
                    (team_id, source_id, revision_id, revision_label, revision_number, is_current)
                SELECT t.team_id, md5(t.team_id::text || ':source')::uuid,
                       md5(t.team_id::text || ':rev')::uuid,
                       'v1', 1, true
                FROM dm_private.teams AS t;
            """)
        chunk_rows: list[tuple[uuid.UUID, uuid.UUID]] = []
        chunk_vectors: list[np.ndarray] = []

        def flush() -> None:
            if not chunk_rows:
                return
            payload = halfvec_copy_payload(chunk_rows, np.concatenate(chunk_vectors))
            with (
                conn.cursor() as cur,
                cur.copy(
                    "COPY dm_private.document_embeddings (team_id, document_id, contract_id, "
                    "document_version, "
                    "source_version, embedding) FROM STDIN WITH (FORMAT binary)"
                ) as copy,
            ):
                copy.write(b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0))
                copy.write(payload)
                copy.write(struct.pack(">h", -1))
            chunk_rows.clear()
            chunk_vectors.clear()

        evidence_buffer = io.StringIO()
        written = 0
        for t, size in enumerate(sizes):
            team = team_uuid(t)
            profile = team_uuid(t + 10**7)
            source = uuid.UUID(hashlib.md5(f"{team}:source".encode()).hexdigest())
            revision = uuid.UUID(hashlib.md5(f"{team}:rev".encode()).hexdigest())
            clusters = rng.choice(centre_count, size=max(1, size // 150 + 1))
            assignment = rng.choice(clusters, size=size)
            noise = rng.normal(size=(size, DIMENSIONS)).astype(np.float32) / math.sqrt(DIMENSIONS)
            vectors = centres[assignment] + 0.75 * noise
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            lengths = rng.integers(8, 40, size=size)
            # every word of the team drawn at once (Zipf-weighted), topic words by cluster
            common_words = rng.choice(len(vocab), size=int(lengths.sum()), p=word_weights)
            topic_picks = rng.integers(0, 12, size=int((lengths // 3).sum()) + size)
            memory_types = rng.integers(0, len(MEMORY_TYPES), size=size)
            ages = rng.integers(0, 365 * 86400, size=size)
            common_at = 0
            topic_at = 0
            for j in range(size):
                evidence = uuid.UUID(hashlib.md5(f"{team}:evidence:{j}".encode()).hexdigest())
                document = uuid.UUID(hashlib.md5(f"{evidence}:document".encode()).hexdigest())
                n = int(lengths[j])
                k = max(1, n // 3)
                words = [vocab[int(w)] for w in common_words[common_at : common_at + n]]
                words += [
                    vocab[int(w)] for w in topic_words[assignment[j]][topic_picks[topic_at : topic_at + k]]
                ]
                common_at += n
                topic_at += k
                words = [words[int(x)] for x in rng.permutation(len(words))]
                text = " ".join(words).capitalize() + "."
                memory_type = MEMORY_TYPES[int(memory_types[j])]
                created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(base_time - float(ages[j])))
                evidence_buffer.write(
                    "\t".join(
                        [
                            str(team),
                            str(evidence),
                            str(source),
                            str(revision),
                            str(profile),
                            _escape_copy(text),
                            "\\\\x" + hashlib.sha256(text.encode()).hexdigest(),
                            memory_type,
                            f"{float(rng.random()):.3f}",
                            created,
                            str(document),
                        ]
                    )
                    + "\n"
                )
                chunk_rows.append((team, document))
            chunk_vectors.append(vectors)
            written += size
            if evidence_buffer.tell() > 20_000_000 or t == len(sizes) - 1:
                _copy_evidence(conn, evidence_buffer.getvalue())
                evidence_buffer = io.StringIO()
                flush()
                print(f"  loaded {written:,} / {rows:,} evidence", file=sys.stderr)
        conn.execute("ANALYZE")
    return {"sizes": sizes}


def _copy_evidence(conn: psycopg.Connection[Any], payload: str) -> None:
    """Evidence and their search documents as the write path writes them (ready: vectors are loaded)."""
    with conn.transaction():
        conn.execute("""
            CREATE TEMP TABLE IF NOT EXISTS bench_evidence (
                team_id uuid, evidence_id uuid, source_id uuid, revision_id uuid, owner_profile_id uuid,
                text text, content_hash bytea, memory_type dm_private.memory_type, importance real,
                created_at timestamptz, document_id uuid) ON COMMIT DELETE ROWS""")
        with conn.cursor() as cur, cur.copy("COPY bench_evidence FROM STDIN") as copy:
            copy.write(payload)
        conn.execute("""
            INSERT INTO dm_private.evidence (team_id, evidence_id, source_id, revision_id, owner_profile_id,
                                             text,
                                             content_hash, memory_type, importance, created_at)
            SELECT team_id, evidence_id, source_id, revision_id, owner_profile_id, text, content_hash,
                   memory_type, importance, created_at
            FROM bench_evidence""")
        conn.execute("""
            INSERT INTO dm_private.search_documents (
                team_id, document_id, subject_kind, subject_id, document_version, source_version, body,
                search_vector, search_state, pending_since, is_recallable, owner_profile_id, memory_type,
                source_group, source_created_at, sequence_number, valid_from, valid_to, known_from, known_to,
                importance, confidence, policy_labels)
            SELECT b.team_id, b.document_id, 'evidence', e.evidence_id, 1, 1, e.text,
                   to_tsvector('english', e.text), 'ready', NULL, true, e.owner_profile_id, e.memory_type,
                   e.source_group, e.created_at, e.sequence_number, e.valid_from, e.valid_to, e.known_from,
                   e.known_to, e.importance, e.confidence, '{}'
            FROM bench_evidence AS b
            JOIN dm_private.evidence AS e ON e.team_id = b.team_id AND e.evidence_id = b.evidence_id""")


def bench_urls(base_url: str) -> tuple[str, str]:
    info = {k: str(v) for k, v in psycopg.conninfo.conninfo_to_dict(base_url).items() if v is not None}
    return (
        psycopg.conninfo.make_conninfo(**{**info, "dbname": "postgres"}),
        psycopg.conninfo.make_conninfo(**{**info, "dbname": BENCH_DATABASE}),
    )


def prepare_database(
    settings: Settings, rows: int, teams: int, seed: int, reuse: bool
) -> tuple[str, float, float]:
    admin, bench = bench_urls(db.database_url(settings))
    with psycopg.connect(admin, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (BENCH_DATABASE,)).fetchone()
        if exists is not None and reuse:
            with psycopg.connect(bench, autocommit=True) as bench_conn:
                row = bench_conn.execute(
                    "SELECT (SELECT count(*) FROM dm_private.evidence), "
                    "(SELECT count(*) FROM dm_private.teams)"
                ).fetchone()
            if row is not None and (int(row[0]), int(row[1])) == (rows, teams):
                migrate(bench, settings.migrations_dir, settings.sql_dir)
                # the active search-index profile may ask for more partial
                # indexes than the database was loaded with (v3: from 1,000
                # vectors instead of 10,000): build the missing ones
                started = time.perf_counter()
                built_now = refresh_partial_indexes(bench)
                return bench, 0.0, (time.perf_counter() - started) if built_now else 0.0
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(BENCH_DATABASE))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(BENCH_DATABASE)))
    migrate(bench, settings.migrations_dir, settings.sql_dir)
    started = time.perf_counter()
    load(bench, rows, teams, seed)
    load_seconds = time.perf_counter() - started
    started = time.perf_counter()
    with psycopg.connect(bench, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '1GB'")
        built = conn.execute("SELECT * FROM dm.refresh_vector_indexes()").fetchall()
        # BM25 term statistics (sql/34) arrive as deltas from the bulk load;
        # fold them as an operator would after a load, when the stage exists
        compact = conn.execute(
            "SELECT to_regprocedure('dm.compact_search_statistics(uuid)') IS NOT NULL"
        ).fetchone()
        if compact is not None and compact[0]:
            conn.execute("SELECT dm.compact_search_statistics(NULL)")
            conn.execute(
                "VACUUM ANALYZE dm_private.search_statistics_deltas, dm_private.search_term_statistics, "
                "dm_private.search_team_statistics"
            )
        conn.execute("ANALYZE dm_private.document_embeddings")
    print(f"  built {len(built)} partial HNSW indexes", file=sys.stderr)
    return bench, load_seconds, time.perf_counter() - started


def refresh_partial_indexes(url: str) -> int:
    """Builds the partial HNSW indexes the active search-index profile asks for and a reused
    database lacks (dm.refresh_vector_indexes never drops or rebuilds one); the number built."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '1GB'")
        built = conn.execute("SELECT * FROM dm.refresh_vector_indexes()").fetchall()
        if built:
            conn.execute("ANALYZE dm_private.document_embeddings")
    if built:
        print(f"  built {len(built)} missing partial HNSW indexes", file=sys.stderr)
    return len(built)


def _vector_text(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.5f}" for x in vector.tolist()) + "]"


def query_set(
    conn: psycopg.Connection[Any], per_bucket: int, seed: int
) -> dict[str, list[tuple[Any, str, str]]]:
    """Per bucket: (team, query text, query vector) made from a random evidence of a random team in it."""
    rng = np.random.default_rng(seed + 1)
    sizes = conn.execute(
        "SELECT team_id, count(*) FROM dm_private.search_documents WHERE subject_kind = 'evidence' "
        "GROUP BY team_id ORDER BY team_id"
    ).fetchall()
    out: dict[str, list[tuple[Any, str, str]]] = {}
    for name, low, high in BUCKETS:
        teams = [t for t, n in sizes if low <= int(n) <= high]
        if not teams:
            continue
        picked: list[tuple[Any, str, str]] = []
        for _ in range(per_bucket):
            team = teams[int(rng.integers(0, len(teams)))]
            row = conn.execute(
                "SELECT d.body, e.embedding::text FROM dm_private.search_documents AS d "
                "JOIN dm_private.document_embeddings AS e "
                "ON e.team_id = d.team_id AND e.document_id = d.document_id "
                "WHERE d.team_id = %s AND d.subject_kind = 'evidence' ORDER BY d.document_id "
                "OFFSET %s LIMIT 1",
                (team, int(rng.integers(0, max(1, next(int(n) for t, n in sizes if t == team))))),
            ).fetchone()
            if row is None:
                continue
            words = [w.strip(".").lower() for w in str(row[0]).split()]
            take = rng.choice(len(words), size=min(len(words), int(rng.integers(2, 6))), replace=False)
            query = " ".join(words[int(i)] for i in sorted(take))
            vector = np.array(json.loads(row[1]), dtype=np.float32)
            vector = vector + rng.normal(size=DIMENSIONS).astype(np.float32) * (0.5 / math.sqrt(DIMENSIONS))
            vector /= np.linalg.norm(vector)
            picked.append((team, query, _vector_text(vector)))
        out[name] = picked
    return out


def measure(url: str, per_bucket: int, seed: int, warmup: int = 5) -> dict[str, Any]:
    with psycopg.connect(url, autocommit=True) as conn:
        queries = query_set(conn, per_bucket, seed)
        sizes = {
            r[0]: int(r[1])
            for r in conn.execute(
                "SELECT team_id, count(*) FROM dm_private.search_documents GROUP BY team_id"
            ).fetchall()
        }
        conn.execute(MEASURE_FUNCTIONS)
        buckets: list[BucketFigures] = []
        everything: list[float] = []
        first_everything: list[float] = []
        for name, items in queries.items():
            teams = [t for t, _, _ in items]
            texts = [q for _, q, _ in items]
            vectors = [v for _, _, v in items]
            with conn.transaction():
                conn.execute("SELECT set_config('role', 'densemem_app', true)")
                conn.execute(
                    "SELECT count(*) FROM pg_temp.bench_recall(%s, %s, %s, %s)",
                    (teams[:warmup], texts[:warmup], vectors[:warmup], warmup),
                )
                # first pass: most calls are their team's first on this
                # connection (the team's walk function parsed and planned,
                # its indexes' relation cache entries built, this backend's
                # page tables filled for the team's pages): a service pays
                # that once per pooled connection and team
                first_rows = conn.execute(
                    "SELECT elapsed_ms FROM pg_temp.bench_recall(%s, %s, %s, 0)",
                    (teams, texts, vectors),
                ).fetchall()
                # the same calls again: the steady state of a long-lived connection
                cpu_before = backend_cpu_ms(conn)
                rows = conn.execute(
                    "SELECT elapsed_ms, result_count FROM pg_temp.bench_recall(%s, %s, %s, 0)",
                    (teams, texts, vectors),
                ).fetchall()
                cpu_after = backend_cpu_ms(conn)
                oracle = conn.execute(
                    "SELECT matched, expected, access_path FROM pg_temp.bench_oracle(%s, %s, 50)",
                    (teams, vectors),
                ).fetchall()
            elapsed = [float(r[0]) for r in rows]
            everything += elapsed
            first = [float(r[0]) for r in first_rows]
            first_everything += first
            paths: dict[str, int] = {}
            for r in oracle:
                paths[str(r[2])] = paths.get(str(r[2]), 0) + 1
            expected = sum(int(r[1]) for r in oracle)
            buckets.append(
                BucketFigures(
                    bucket=name,
                    teams=len({t for t in teams}),
                    queries=len(elapsed),
                    p50_ms=statistics.median(elapsed),
                    p95_ms=percentile(elapsed, 0.95),
                    p99_ms=percentile(elapsed, 0.99),
                    first_pass_p50_ms=statistics.median(first),
                    first_pass_p95_ms=percentile(first, 0.95),
                    mean_results=statistics.fmean(int(r[1]) for r in rows),
                    recall_at_50=(sum(int(r[0]) for r in oracle) / expected) if expected else 1.0,
                    oracle_queries=len(oracle),
                    access_paths=paths,
                    cpu_ms_per_call=(
                        round((cpu_after - cpu_before) / len(elapsed), 3)
                        if cpu_before is not None and cpu_after is not None and elapsed
                        else None
                    ),
                )
            )
        # client round trips (prepared), one bucket mix
        client: list[float] = []
        mix = [item for items in queries.values() for item in items]
        for team, text, vector in mix:
            with conn.transaction():
                conn.execute(
                    "SELECT set_config('role', 'densemem_app', true), "
                    "set_config('densemem.team_id', %s, true)",
                    (str(team),),
                )
                started = time.perf_counter()
                conn.execute(
                    "SELECT dm.recall_memory(%s, %s, %s::vector, '{}'::jsonb)",
                    (text, team, vector),
                    prepare=True,
                ).fetchone()
                client.append((time.perf_counter() - started) * 1000)
        # stage times from explain_recall (operator)
        stages: dict[str, list[float]] = {}
        for team, text, vector in mix[:: max(1, len(mix) // 100)]:
            with conn.transaction():
                conn.execute(
                    "SELECT set_config('role', 'densemem_operator', true), "
                    "set_config('densemem.team_id', %s, true)",
                    (str(team),),
                )
                explained = conn.execute(
                    "SELECT dm.explain_recall(%s, %s, %s::vector, '{}'::jsonb)", (text, team, vector)
                ).fetchone()
            assert explained is not None
            for stage, value in explained[0]["timings_ms"].items():
                stages.setdefault(stage, []).append(float(value))
        # each stage warm and alone, as recall_run calls it (per bucket): the
        # explain means above include explain's own work (every branch's
        # hits, the scored rows and MMR rows as JSON) and are read cold
        stage_p50: dict[str, dict[str, float]] = {}
        for name, items in queries.items():
            with conn.transaction():
                conn.execute("SELECT set_config('role', 'densemem_app', true)")
                stage_rows = conn.execute(
                    "SELECT stage, elapsed_ms FROM pg_temp.bench_stage_times(%s, %s, %s, %s)",
                    (
                        [t for t, _, _ in items],
                        [q for _, q, _ in items],
                        [v for _, _, v in items],
                        min(warmup, max(0, len(items) - 1)),
                    ),
                ).fetchall()
            by_stage: dict[str, list[float]] = {}
            for stage, value in stage_rows:
                by_stage.setdefault(str(stage), []).append(float(value))
            stage_p50[name] = {k: round(statistics.median(v), 3) for k, v in by_stage.items()}
        # ranking 100 candidates: queries in the largest teams (fused lists of 100)
        big = sorted(sizes, key=lambda t: -sizes[t])[:5]
        ranking_items = [item for item in mix if item[0] in big] or mix
        ranking_items = (ranking_items * (200 // max(1, len(ranking_items)) + 1))[:200]
        with conn.transaction():
            conn.execute("SELECT set_config('role', 'densemem_app', true)")
            conn.execute(
                "SELECT pg_temp.bench_ranking_prepare(%s, %s, %s)",
                (
                    [t for t, _, _ in ranking_items],
                    [q for _, q, _ in ranking_items],
                    [v for _, _, v in ranking_items],
                ),
            )
            cpu_before = backend_cpu_ms(conn)
            ranking_rows = conn.execute(
                "SELECT elapsed_ms, candidate_count FROM pg_temp.bench_ranking(%s)", (warmup,)
            ).fetchall()
            cpu_after = backend_cpu_ms(conn)
        ranking = [float(r[0]) for r in ranking_rows if int(r[1]) >= 100] or [
            float(r[0]) for r in ranking_rows
        ]
        ranking_cpu = (
            (cpu_after - cpu_before) / len(ranking_items)
            if cpu_before is not None and cpu_after is not None
            else None
        )
        return {
            "buckets": buckets,
            "all": everything,
            "first_pass": first_everything,
            "client": client,
            "stages": {k: statistics.fmean(v) for k, v in stages.items()},
            "stage_p50": stage_p50,
            "ranking": ranking,
            "ranking_cpu": ranking_cpu,
            "largest_team": max(sizes.values()),
        }


def _bench_recall(args: argparse.Namespace, settings: Settings) -> int:
    load_before = [round(x, 2) for x in os.getloadavg()]
    try:
        url, load_seconds, index_seconds = prepare_database(
            settings, args.rows, args.teams, args.seed, args.reuse
        )
        measured = measure(url, args.queries, args.seed)
        memory = shared_memory(url)
    except psycopg.Error as error:
        print(f"densemem bench recall: {error}\n{error.diag.context or ''}", file=sys.stderr)
        return 1
    figures = RecallBenchFigures(
        rows=args.rows,
        teams=args.teams,
        largest_team=measured["largest_team"],
        load_seconds=round(load_seconds, 1),
        index_seconds=round(index_seconds, 1),
        buckets=measured["buckets"],
        overall_p50_ms=statistics.median(measured["all"]),
        overall_p95_ms=percentile(measured["all"], 0.95),
        overall_p99_ms=percentile(measured["all"], 0.99),
        first_pass_overall_p50_ms=statistics.median(measured["first_pass"]),
        first_pass_overall_p95_ms=percentile(measured["first_pass"], 0.95),
        client_p50_ms=statistics.median(measured["client"]),
        client_p95_ms=percentile(measured["client"], 0.95),
        stage_mean_ms={k: round(v, 3) for k, v in measured["stages"].items()},
        stage_p50_ms=measured["stage_p50"],
        ranking_100_p50_ms=statistics.median(measured["ranking"]),
        ranking_100_p95_ms=percentile(measured["ranking"], 0.95),
        ranking_calls=len(measured["ranking"]),
        ranking_100_cpu_ms=(
            round(measured["ranking_cpu"], 3) if measured["ranking_cpu"] is not None else None
        ),
        load_average_before=load_before,
        load_average_after=[round(x, 2) for x in os.getloadavg()],
        shared_buffers=memory.shared_buffers,
        huge_pages=memory.huge_pages_status,
        date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    )
    print(json.dumps(asdict(figures), indent=2, default=str))
    for b in figures.buckets:
        print(
            f"{b.bucket:>7}: p50 {b.p50_ms:.2f} ms  p95 {b.p95_ms:.2f} ms  p99 {b.p99_ms:.2f} ms  "
            f"recall@50 {b.recall_at_50:.4f}  backend CPU/call {b.cpu_ms_per_call} ms  paths {b.access_paths}"
            f"  (first pass p50 {b.first_pass_p50_ms:.2f} ms, p95 {b.first_pass_p95_ms:.2f} ms)"
        )
    for name, stages in figures.stage_p50_ms.items():
        print(
            f"{name:>7}: stage p50 (ms) "
            + ", ".join(f"{k} {v:.3f}" for k, v in stages.items())
            + f"; sum {sum(stages.values()):.3f}"
        )
    print(
        f"overall p50 {figures.overall_p50_ms:.2f} ms, p95 {figures.overall_p95_ms:.2f} ms "
        f"(first pass p50 {figures.first_pass_overall_p50_ms:.2f} ms, "
        f"p95 {figures.first_pass_overall_p95_ms:.2f} ms); "
        f"ranking 100 candidates p95 {figures.ranking_100_p95_ms:.3f} ms "
        f"(backend CPU/call {figures.ranking_100_cpu_ms} ms); "
        f"load average {figures.load_average_before} -> {figures.load_average_after}; "
        f"shared buffers {figures.shared_buffers}, huge pages {figures.huge_pages}"
    )
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sub = bench_commands(commands)
    parser = sub.add_parser(
        "recall",
        help="dm.recall_memory latency, stage times, ranking cost and ANN recall",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--teams", type=int, default=1_000)
    parser.add_argument("--queries", type=int, default=100, help="queries per team-size bucket")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--reuse", action="store_true", help="reuse the bench database when it holds the same size"
    )
    parser.set_defaults(handler=_bench_recall)
