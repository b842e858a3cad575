"""`densemem bench parse`: dm.parse_query latency on the LoCoMo questions.

The questions are read from the LoCoMo file at run time (never copied into
the project). Inside one transaction that is rolled back at the end, the
command creates a throw-away team whose entities are the LoCoMo speakers and
the capitalized words of the conversations (so the entity lookup has real
names to match), switches to `densemem_app` with that team authenticated, and
times every `dm.parse_query` call *in the database*: a PL/pgSQL loop reads
`clock_timestamp()` before and after each call, so the figures exclude the
network and the client. A first pass warms the caches and is not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import uuid
from pathlib import Path
from typing import Any

import psycopg

from densemem import db
from densemem.config import Settings

DEFAULT_LOCOMO = Path("/work/shared/data/locomo/locomo_dev.json")

# A temporary function: it lives in this session's pg_temp and disappears
# with the rolled-back transaction.
_TIMER_SQL = """
CREATE FUNCTION pg_temp.time_parse_query(questions text[], team uuid, clock timestamptz, passes integer)
RETURNS double precision[]
LANGUAGE plpgsql
AS $$
DECLARE
    timings double precision[] := '{}';
    started timestamptz;
    parsed jsonb;
    q text;
    pass integer;
BEGIN
    FOR pass IN 1..passes LOOP
        FOREACH q IN ARRAY questions LOOP
            started := clock_timestamp();
            parsed := dm.parse_query(q, team, clock);
            IF pass > 1 THEN
                timings := timings
                    || (extract(epoch FROM clock_timestamp() - started) * 1000.0)::double precision;
            END IF;
        END LOOP;
    END LOOP;
    RETURN timings;
END
$$
"""


def load_locomo(path: Path) -> tuple[list[str], list[str]]:
    """The questions, and entity names (speakers, capitalized words of the dialogue)."""
    conversations: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    questions: list[str] = []
    names: set[str] = set()
    for sample in conversations:
        questions.extend(str(qa["question"]) for qa in sample["qa"])
        conversation: dict[str, Any] = sample["conversation"]
        names.update(str(conversation[key]) for key in ("speaker_a", "speaker_b") if key in conversation)
        for key, turns in conversation.items():
            if not key.startswith("session_") or not isinstance(turns, list):
                continue
            for turn in turns:
                # Capitalized words not at the start of a sentence: proper nouns, mostly.
                for match in re.finditer(
                    r"(?<=[a-z,] )([A-Z][a-z]{2,}(?: [A-Z][a-z]{2,})?)", str(turn.get("text", ""))
                ):
                    names.add(match.group(1))
    return questions, sorted(names)


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(fraction * len(ordered) + 0.5)))
    return ordered[rank - 1]


def backend_cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a local server process (Linux /proc), or None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(url: str, questions: list[str], names: list[str], passes: int) -> tuple[list[float], float | None]:
    """Per-call timings in milliseconds (the warm-up pass excluded), and the
    backend's mean CPU milliseconds per call over all passes when the server
    runs on this machine (wall-clock timings include time the backend waited
    for a CPU; CPU time does not)."""
    team = uuid.uuid4()
    profile = uuid.uuid4()
    with psycopg.connect(url) as conn:
        try:
            conn.execute(
                "INSERT INTO dm_private.teams (team_id, name) VALUES (%s, %s)",
                (team, f"bench-parse-{team.hex[:8]}"),
            )
            conn.execute(
                "INSERT INTO dm_private.profiles (team_id, profile_id, name) VALUES (%s, %s, 'bench')",
                (team, profile),
            )
            conn.execute(_TIMER_SQL)
            conn.execute(
                "SELECT set_config('role', 'densemem_app', true), set_config('densemem.team_id', %s, true), "
                "set_config('densemem.profile_id', %s, true)",
                (str(team), str(profile)),
            )
            for start in range(0, len(names), 1000):
                conn.execute(
                    "SELECT dm.upsert_entities(%s, %s::jsonb)",
                    (team, json.dumps([{"name": name} for name in names[start : start + 1000]])),
                )
            # As the loader: flush the GIN pending list (autovacuum's job on a
            # live server) and refresh statistics, then act as the service again.
            conn.execute("SELECT set_config('role', 'none', true)")
            conn.execute("SELECT gin_clean_pending_list('dm_private.entity_names_trgm_idx'::regclass)")
            conn.execute("ANALYZE dm_private.entity_names, dm_private.entities")
            conn.execute("SELECT set_config('role', 'densemem_app', true)")
            pid_row = conn.execute("SELECT pg_backend_pid()").fetchone()
            pid = int(pid_row[0]) if pid_row else 0
            cpu_before = backend_cpu_seconds(pid)
            row = conn.execute(
                "SELECT pg_temp.time_parse_query(%s, %s, '2023-08-01T12:00:00Z', %s)",
                (questions, team, passes + 1),
            ).fetchone()
            cpu_after = backend_cpu_seconds(pid)
        finally:
            conn.rollback()
    assert row is not None
    timings: list[float] = list(row[0])
    cpu_ms = None
    if cpu_before is not None and cpu_after is not None:
        cpu_ms = (cpu_after - cpu_before) * 1000.0 / (len(questions) * (passes + 1))
    return timings, cpu_ms


def _summary(values: list[float]) -> str:
    return (
        f"p50 {percentile(values, 0.50):.3f} ms  p95 {percentile(values, 0.95):.3f} ms  "
        f"p99 {percentile(values, 0.99):.3f} ms  max {max(values):.3f} ms"
    )


def _bench_parse(args: argparse.Namespace, settings: Settings) -> int:
    path: Path = args.locomo
    if not path.exists():
        print(f"densemem bench parse: {path} not found", file=sys.stderr)
        return 1
    questions, names = load_locomo(path)
    url = db.database_url(settings)
    timings, cpu_ms = run(url, questions, names, args.passes)
    print(
        f"dm.parse_query on {len(questions)} LoCoMo questions x {args.passes} passes "
        f"({len(names)} entities in the team), timed in-database (PL/pgSQL loop, clock_timestamp):"
    )
    print(f"  every call: {len(timings)} calls, mean {statistics.fmean(timings):.3f} ms")
    print(f"    {_summary(timings)}")
    if args.passes > 1:
        # The fastest pass of each question: what the parse costs when the
        # backend is not preempted (on a loaded machine the scheduler adds
        # multi-millisecond stalls to random calls).
        best = [min(timings[i :: len(questions)]) for i in range(len(questions))]
        print(f"  fastest of {args.passes} passes per question:")
        print(f"    {_summary(best)}")
    if cpu_ms is not None:
        print(f"  backend CPU time per call (all passes, /proc): mean {cpu_ms:.3f} ms")
    print(
        f"  load average when done: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs"
    )
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds `densemem bench parse` (and the `bench` group if no other module did)."""
    bench = commands.choices.get("bench")
    if bench is None:
        bench = commands.add_parser("bench", help="benchmarks", description="Benchmarks.")
    groups = [a for a in bench._actions if isinstance(a, argparse._SubParsersAction)]
    sub: argparse._SubParsersAction[argparse.ArgumentParser] = (
        groups[0] if groups else bench.add_subparsers(dest="bench_target", required=True)
    )
    parser = sub.add_parser(
        "parse",
        help="dm.parse_query latency on the LoCoMo questions",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--locomo", type=Path, default=DEFAULT_LOCOMO, help="LoCoMo JSON file (read at run time)"
    )
    parser.add_argument(
        "--passes", type=int, default=3, help="timed passes over the questions (after one warm-up)"
    )
    parser.set_defaults(handler=_bench_parse)
