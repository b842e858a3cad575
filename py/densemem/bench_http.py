"""`densemem bench http`: HTTP recall latency and throughput, with the local query embedding.

Builds (or, with --reuse, keeps) a database `densemem_bench_http` on the
configured server holding one team with every LoCoMo dialogue turn
(../shared/data/locomo, read at run time) as evidence, embedded by the
embedding worker with the local model (all-MiniLM-L6-v2). Then it starts
`densemem serve` in a SEPARATE process on 127.0.0.1 (so the load generator
does not share its interpreter) with the query-embedding cache turned off
(DENSEMEM_QUERY_CACHE_ENTRIES=0: every request embeds its query with the
local model), and sends POST /v1/recall with the LoCoMo questions:

- one client, sequential, `--requests` calls after `--warmup`: p50 / p95 / p99;
- 8 and 32 concurrent clients (asyncio + httpx, keep-alive), each phase a
  bounded loop of `--duration` seconds: throughput and latency percentiles.

Every answer must be 200. The load generator, the server, the model and
PostgreSQL share this machine's cores: the figures are end to end on one box.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
from psycopg import sql

from densemem import db
from densemem.bench_discovery import bench_commands, percentile
from densemem.config import Settings, project_root
from densemem.keys_command import create_key
from densemem.migrate import migrate
from densemem.store.session import Principal, acting_as

BENCH_DATABASE = "densemem_bench_http"
TEAM = "bench-http"
LOCOMO = Path(
    os.environ.get(
        "DENSEMEM_LOCOMO", str(project_root().parent / "shared" / "data" / "locomo" / "locomo_dev.json")
    )
)


@dataclass
class Phase:
    clients: int
    requests: int
    errors: int
    seconds: float
    throughput_rps: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    mean_ms: float
    # CPU time of the server process (uvicorn, Starlette, psycopg, the query embedding; not
    # PostgreSQL) per answered request: a figure that depends little on the machine's load.
    server_cpu_ms_per_request: float | None = None
    # Mean per request of each server-side phase (densemem_recall_phase_seconds and friends, read
    # from /metrics before and after the phase): where one request's time goes.
    server_phases_ms: dict[str, float] | None = None


SCRAPED = (
    ("densemem_recall_phase_seconds", "phase"),
    ("densemem_query_embedding_model_seconds", "clock"),
    ("densemem_http_request_duration_seconds", "route"),
)


def scrape(base: str) -> dict[str, float]:
    """The sums and counts of the timing histograms of /metrics, keyed `name|label|sum` / `|count`,
    and the query count of the model calls."""
    text = httpx.get(f"{base}/metrics", timeout=30).text
    values: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("densemem_query_embedding_model_queries_total"):
            values["model_queries"] = float(line.rsplit(" ", 1)[1])
            continue
        for name, label in SCRAPED:
            for suffix in ("_sum", "_count"):
                prefix = f"{name}{suffix}{{"
                if line.startswith(prefix) and f'{label}="' in line:
                    value = line.split(f'{label}="', 1)[1].split('"', 1)[0]
                    values[f"{name}|{value}|{suffix[1:]}"] = float(line.rsplit(" ", 1)[1])
    return values


def phase_means(before: dict[str, float], after: dict[str, float], requests: int) -> dict[str, float]:
    """Per-request means (ms) of the server's recall phases between two scrapes."""

    def delta(key: str) -> float:
        return after.get(key, 0.0) - before.get(key, 0.0)

    out: dict[str, float] = {}
    for phase in ("parse", "authenticate", "embed", "pool", "round_trip", "handoff", "respond"):
        count = delta(f"densemem_recall_phase_seconds|{phase}|count")
        if count:
            out[phase] = round(delta(f"densemem_recall_phase_seconds|{phase}|sum") * 1000 / count, 3)
    total = delta("densemem_http_request_duration_seconds|/v1/recall|sum")
    total_count = delta("densemem_http_request_duration_seconds|/v1/recall|count")
    if total_count:
        out["app_total"] = round(total * 1000 / total_count, 3)
        out["middleware_and_send"] = round(
            out["app_total"] - sum(v for k, v in out.items() if k != "app_total"), 3
        )
    queries = delta("model_queries")
    calls = delta("densemem_query_embedding_model_seconds|wall|count")
    if queries and calls:
        out["model_wall_per_call"] = round(
            delta("densemem_query_embedding_model_seconds|wall|sum") * 1000 / calls, 3
        )
        out["model_cpu_per_query"] = round(
            delta("densemem_query_embedding_model_seconds|cpu|sum") * 1000 / queries, 3
        )
        out["queries_per_model_call"] = round(queries / calls, 2)
    return out


def _urls(base_url: str) -> tuple[str, str]:
    info = {k: str(v) for k, v in psycopg.conninfo.conninfo_to_dict(base_url).items() if v is not None}
    return (
        psycopg.conninfo.make_conninfo(**{**info, "dbname": "postgres"}),
        psycopg.conninfo.make_conninfo(**{**info, "dbname": BENCH_DATABASE}),
    )


def _session_time(text: str) -> datetime | None:
    try:
        return datetime.strptime(text, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError:
        return None


def locomo_turns_and_questions() -> tuple[list[dict[str, Any]], list[str]]:
    """Every dialogue turn as an evidence item, and the distinct questions.

    Session times are shifted so that each conversation's last session was yesterday (relative
    spacing kept): with the dataset's 2022-2023 dates, conversation half-lives of 2 days and today's
    clock, recall's recency term exp(-age/half_life) underflows (SQLSTATE 22003) in
    sql/50_recall_rerank.sql for the oldest turns: a recall-core bug this benchmark must not hide
    behind errors, nor measure.
    """
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    items: list[dict[str, Any]] = []
    questions: list[str] = []
    yesterday = datetime.now(UTC) - timedelta(days=1)
    for sample in data:
        conversation = sample["conversation"]
        sessions = [
            key
            for key, turns in conversation.items()
            if key.startswith("session_") and isinstance(turns, list)
        ]
        times = {key: _session_time(str(conversation.get(f"{key}_date_time", ""))) for key in sessions}
        known = [t for t in times.values() if t is not None]
        shift = yesterday - max(known) if known else None
        for key in sessions:
            when = times[key]
            for turn in conversation[key]:
                item: dict[str, Any] = {
                    "text": f"{turn['speaker']}: {turn['text']}",
                    "source": {"external_id": f"{sample['sample_id']}-{key}", "kind": "conversation"},
                    "memory_type": "conversation",
                }
                if when is not None and shift is not None:
                    item["created_at"] = (when + shift).isoformat()
                items.append(item)
        questions.extend(str(qa["question"]) for qa in sample["qa"])
    return items, list(dict.fromkeys(questions))


def prepare(base_url: str, reuse: bool, progress: Any = print) -> tuple[str, str]:
    """The bench database (migrated, loaded, embedded) and an API key of its team."""
    admin, url = _urls(base_url)
    items, _ = locomo_turns_and_questions()
    with psycopg.connect(admin, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (BENCH_DATABASE,)).fetchone()
        if exists and not reuse:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(BENCH_DATABASE)))
            exists = None
        if not exists:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(BENCH_DATABASE)))
    root = project_root()
    migrate(url, root / "migrations", root / "sql")
    with psycopg.connect(url) as conn:
        issued = create_key(conn, TEAM, "loader", [])
        count = conn.execute(
            "SELECT count(*) FROM dm_private.evidence WHERE team_id = %s", (issued.team_id,)
        ).fetchone()
        if count is None or count[0] != len(items):
            progress(f"loading {len(items)} LoCoMo turns")
            for start in range(0, len(items), 500):
                with acting_as(conn, Principal(issued.team_id, issued.profile_id)) as cur:
                    cur.execute(
                        "SELECT dm.ingest_evidence(%s, %s::jsonb)",
                        (issued.team_id, json.dumps(items[start : start + 500])),
                    )
        # The service folds a team's BM25 statistic deltas after every write
        # (routes.compact_statistics_after); this loader writes through SQL, so
        # it folds them itself, or every recall would read ~6,000 pending
        # deltas that a served team never has. Also on --reuse: a database
        # loaded before this fold existed is brought to the same state.
        with acting_as(conn, Principal(issued.team_id, issued.profile_id)) as cur:
            cur.execute("SELECT dm.compact_search_statistics(%s)", (issued.team_id,))
    from densemem.embeddings.local import LocalProvider
    from densemem.embeddings.worker import EmbeddingWorker, WorkerOptions

    started = time.perf_counter()
    worker = EmbeddingWorker(url, LocalProvider(), WorkerOptions(batch_size=64))
    try:
        stats = worker.run_once()
    finally:
        worker.close()
    if stats.claimed:
        progress(f"embedded {stats.claimed} documents in {time.perf_counter() - started:.1f} s")
    # the team's own partial HNSW index when the active search-index profile
    # asks for one (v3: from 1,000 vectors; the LoCoMo team has 2,760), also
    # on --reuse: a database loaded under an older profile gets it here
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '256MB'")
        built = conn.execute("SELECT index_name FROM dm.refresh_vector_indexes()").fetchall()
        if built:
            conn.execute("ANALYZE dm_private.document_embeddings")
            progress(f"built {len(built)} partial HNSW index(es)")
    return url, issued.api_key


def breakdown(url: str, key: str, questions: list[str], count: int = 50) -> dict[str, float | str]:
    """Medians, in this process, of the two costs inside one HTTP recall: embedding the query with
    the local model (DENSEMEM_EMBEDDING_THREADS, default one thread, as `densemem serve`; the onnx
    backend when installed) and dm.recall_memory over a socket. Also the CPU per query when 8
    queries share one model call, as the service's micro-batching does under concurrent load."""
    from densemem.config import embedding_threads
    from densemem.embeddings.local import LocalProvider
    from densemem.serve_command import limit_torch_threads
    from densemem.service.embedding import vector_literal

    limit_torch_threads()
    provider = LocalProvider(num_threads=embedding_threads())
    provider.embed(["warm up"])
    team_id = uuid.UUID(key.split("_")[1])
    embed_ms: list[float] = []
    sql_ms: list[float] = []
    sample = questions[-count:]  # not the questions of the HTTP phases' start
    with psycopg.connect(url, autocommit=True) as conn:
        for question in sample:
            began = time.perf_counter()
            vector = provider.embed([question])[0]
            embedded = time.perf_counter()
            with conn.pipeline():
                conn.execute(
                    "SELECT pg_catalog.set_config('role', 'densemem_app', true), "
                    "pg_catalog.set_config('densemem.team_id', %s, true)",
                    (str(team_id),),
                )
                conn.execute(
                    "SELECT dm.recall_memory(%s, %s, %s::public.vector, '{\"limit\": 10}')::text",
                    (question, team_id, vector_literal(vector)),
                )
            done = time.perf_counter()
            embed_ms.append((embedded - began) * 1000)
            sql_ms.append((done - embedded) * 1000)
    began_cpu = time.thread_time()
    for start in range(0, len(sample) - 7, 8):
        provider.embed(sample[start : start + 8])
    batched_cpu_ms = (time.thread_time() - began_cpu) * 1000 / (len(sample) // 8 * 8)
    return {
        "embedding_backend": provider.backend,
        "query_embedding_batch8_cpu_ms_per_query": round(batched_cpu_ms, 2),
        "query_embedding_p50_ms": round(percentile(embed_ms, 0.5), 2),
        "query_embedding_p95_ms": round(percentile(embed_ms, 0.95), 2),
        "recall_sql_p50_ms": round(percentile(sql_ms, 0.5), 2),
        "recall_sql_p95_ms": round(percentile(sql_ms, 0.95), 2),
    }


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a process and its threads (Linux /proc), None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(url: str, port: int, phase_log: Path | None = None) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "DENSEMEM_PHASE_LOG": str(phase_log) if phase_log is not None else "",
        "DATABASE_URL": url,
        "DENSEMEM_EMBEDDING_PROVIDER": "local",
        "DENSEMEM_QUERY_CACHE_ENTRIES": "0",
        "DENSEMEM_POOL_MAX_SIZE": os.environ.get("DENSEMEM_POOL_MAX_SIZE", "16"),
    }
    command = [
        sys.executable,
        "-m",
        "densemem.cli",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--no-worker",
    ]
    # The server's output goes to a file, so a failed phase can be diagnosed afterwards.
    log_path = Path(tempfile.gettempdir()) / f"densemem-bench-http-server-{port}.log"
    print(f"server log: {log_path}", file=sys.stderr)
    log_file = open(log_path, "wb")  # noqa: SIM115 - lives as long as the server process
    server = subprocess.Popen(command, env=env, stdout=log_file, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError("densemem serve exited during start-up")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=30).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    server.terminate()
    raise TimeoutError("densemem serve did not become ready")


async def _phase(
    base: str,
    key: str,
    questions: list[str],
    start: int,
    clients: int,
    *,
    requests: int | None,
    duration: float | None,
) -> tuple[Phase, int]:
    latencies: list[float] = []
    errors = 0
    cursor = start
    stop_at = time.perf_counter() + duration if duration is not None else None
    headers = {"Authorization": f"Bearer {key}"}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base, headers=headers, limits=limits, timeout=60) as client:

        async def one_client() -> None:
            nonlocal cursor, errors
            while True:
                if requests is not None and len(latencies) + errors >= requests:
                    return
                if stop_at is not None and time.perf_counter() >= stop_at:
                    return
                question = questions[cursor % len(questions)]
                cursor += 1
                began = time.perf_counter()
                try:
                    response = await client.post("/v1/recall", json={"query": question, "limit": 10})
                except httpx.TransportError as error:
                    # A connection the server closed mid-request is an error of this phase
                    # (reported in its row), not the end of the benchmark.
                    errors += 1
                    print(f"  {clients} clients: {question!r}: {type(error).__name__}", file=sys.stderr)
                    continue
                elapsed = (time.perf_counter() - began) * 1000
                if response.status_code == 200:
                    latencies.append(elapsed)
                else:
                    errors += 1
                    # Say what failed: an error is a finding, not only a count.
                    print(
                        f"  {clients} clients: {question!r}: HTTP {response.status_code} "
                        f"after {elapsed:.0f} ms: {response.text[:300]}",
                        file=sys.stderr,
                    )

        began = time.perf_counter()
        await asyncio.gather(*(one_client() for _ in range(clients)))
        seconds = time.perf_counter() - began
    if not latencies:
        raise RuntimeError("no request succeeded")
    return Phase(
        clients,
        len(latencies),
        errors,
        round(seconds, 2),
        round(len(latencies) / seconds, 1),
        round(percentile(latencies, 0.50), 2),
        round(percentile(latencies, 0.95), 2),
        round(percentile(latencies, 0.99), 2),
        round(statistics.fmean(latencies), 2),
    ), cursor


TAIL_FIELDS = (
    "total",
    "parse",
    "pool",
    "embed",
    "embed_cpu",
    "round_trip",
    "handoff",
    "respond",
    "gc_ms",
    "gc_collections",
    "gc_full",
)


def read_phase_log(path: Path, since: float, until: float) -> list[dict[str, Any]]:
    """The server's per-recall records (densemem.service.phase_log) that began in [since, until]."""
    if not path.exists():
        return []
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in records if since <= float(r.get("at", 0.0)) <= until]


def tail_summary(records: list[dict[str, Any]], share: float = 0.05) -> dict[str, Any]:
    """What the slowest `share` of requests (by server-side total) are made of, next to the rest:
    each phase's mean in both groups, the collector's pauses, and the tail's questions."""
    if not records:
        return {}
    ordered = sorted(records, key=lambda r: float(r["total"]))
    count = max(1, round(len(ordered) * share))
    tail, rest = ordered[-count:], ordered[:-count]

    def means(group: list[dict[str, Any]]) -> dict[str, float]:
        out: dict[str, float] = {}
        for name in TAIL_FIELDS:
            values = [float(r[name]) for r in group if name in r]
            if values:
                out[name] = round(statistics.fmean(values), 3)
        return out

    return {
        "requests": len(ordered),
        "tail_requests": count,
        "tail_mean": means(tail),
        "rest_mean": means(rest),
        "overlapped_share": round(sum(1 for r in ordered if r.get("overlapped")) / len(ordered), 3),
        "tail": [{k: r[k] for k in ("query", *TAIL_FIELDS) if k in r} for r in reversed(tail)],
    }


def run(
    url: str,
    key: str,
    *,
    requests: int,
    warmup: int,
    duration: float,
    clients: list[int],
    progress: Any = print,
    tail: dict[str, Any] | None = None,
) -> list[Phase]:
    """The phases; when `tail` is given, the one-client phase's tail_summary goes into it."""
    _, questions = locomo_turns_and_questions()
    port = _free_port()
    phase_log = Path(tempfile.gettempdir()) / f"densemem-bench-http-phases-{port}.jsonl"
    phase_log.unlink(missing_ok=True)
    server = start_server(url, port, phase_log)
    base = f"http://127.0.0.1:{port}"
    phases: list[Phase] = []

    def with_cpu(phase: Phase, before: float | None, scraped: dict[str, float]) -> Phase:
        after = process_cpu_seconds(server.pid)
        if before is not None and after is not None and phase.requests:
            phase.server_cpu_ms_per_request = round((after - before) * 1000 / phase.requests, 2)
        phase.server_phases_ms = phase_means(scraped, scrape(base), phase.requests)
        return phase

    try:
        cursor = 0
        _, cursor = asyncio.run(_phase(base, key, questions, cursor, 1, requests=warmup, duration=None))
        scraped = scrape(base)
        before = process_cpu_seconds(server.pid)
        since = time.time()
        phase, cursor = asyncio.run(_phase(base, key, questions, cursor, 1, requests=requests, duration=None))
        if tail is not None:
            tail.update(tail_summary(read_phase_log(phase_log, since, time.time())))
            tail["phase_log"] = str(phase_log)
        phases.append(with_cpu(phase, before, scraped))
        progress(f"1 client: {phase}")
        for count in clients:
            scraped = scrape(base)
            before = process_cpu_seconds(server.pid)
            phase, cursor = asyncio.run(
                _phase(base, key, questions, cursor, count, requests=None, duration=duration)
            )
            phases.append(with_cpu(phase, before, scraped))
            progress(f"{count} clients: {phase}")
    finally:
        server.terminate()
        server.wait(timeout=30)
    return phases


def _bench_http(args: argparse.Namespace, settings: Settings) -> int:
    if not LOCOMO.exists():
        print(f"densemem bench http: {LOCOMO} not found (set DENSEMEM_LOCOMO)", file=sys.stderr)
        return 2
    base_url = db.database_url(settings)
    url, key = prepare(base_url, args.reuse, progress=lambda m: print(m, file=sys.stderr))
    _, questions = locomo_turns_and_questions()
    parts = breakdown(url, key, questions)
    print(f"in-process breakdown: {parts}", file=sys.stderr)
    tail: dict[str, Any] = {}
    phases = run(
        url,
        key,
        tail=tail,
        requests=args.requests,
        warmup=args.warmup,
        duration=args.duration,
        clients=args.clients,
        progress=lambda m: print(m, file=sys.stderr),
    )
    print("| clients | requests | errors | seconds | req/s | p50 ms | p95 ms | p99 ms | server CPU ms/req |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for p in phases:
        print(
            f"| {p.clients} | {p.requests} | {p.errors} | {p.seconds} | {p.throughput_rps} | {p.p50_ms} | "
            f"{p.p95_ms} | {p.p99_ms} | {p.server_cpu_ms_per_request} |"
        )
    print("server-side phases, mean ms per request (from /metrics):")
    for p in phases:
        print(f"  {p.clients} client(s): {p.server_phases_ms}")
    target = phases[0].p95_ms <= 30.0
    print(f"one-client p95 {phases[0].p95_ms} ms: {'meets' if target else 'misses'} the 30 ms target")
    print(
        "breakdown (medians/p95, in-process, same machine): "
        + ", ".join(f"{k} {v}" for k, v in parts.items())
    )
    if tail:
        print(
            f"one-client tail (slowest {tail['tail_requests']} of {tail['requests']} by server-side total, "
            f"per-request log {tail['phase_log']}):"
        )
        print(f"  slowest 5%, mean ms: {tail['tail_mean']}")
        print(f"  the rest,   mean ms: {tail['rest_mean']}")
        for record in tail["tail"]:
            print(f"  {record}")
    if args.json:
        report = {"phases": [asdict(p) for p in phases], "breakdown": parts, "one_client_tail": tail}
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sub = bench_commands(commands)
    parser = sub.add_parser(
        "http",
        help="HTTP recall latency and throughput (local query embedding)",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    parser.add_argument(
        "--requests", type=int, default=300, help="one-client measured requests (default 300)"
    )
    parser.add_argument("--warmup", type=int, default=30, help="one-client warm-up requests (default 30)")
    parser.add_argument(
        "--duration", type=float, default=20.0, help="seconds per concurrent phase (default 20)"
    )
    parser.add_argument(
        "--clients", type=int, nargs="+", default=[8, 32], help="concurrent phases (default 8 32)"
    )
    parser.add_argument("--reuse", action="store_true", help="keep the bench database if it is loaded")
    parser.add_argument("--json", help="also write the phases to this JSON file")
    parser.set_defaults(handler=_bench_http)
