"""`densemem recall`, `densemem trace` and `densemem ingest`: the memory from the command line.

Each looks the team (and, for ingest, the profile) up as the administrator
connection, then works as that team through densemem.store.session.acting_as:
row-level security and the functions' team checks apply exactly as for the
HTTP service.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from pydantic import ValidationError

from densemem import db
from densemem.config import Settings
from densemem.keys_command import team_id_by_name
from densemem.service import models
from densemem.service.embedding import load_query_embedder, vector_literal
from densemem.store.session import Principal, acting_as

INGEST_BATCH = 200


def recall(
    conn: psycopg.Connection[Any],
    team_id: uuid.UUID,
    query: str,
    request: dict[str, Any],
    embedding: str | None,
) -> str:
    """dm.recall_memory as the team; the answer's jsonb text."""
    with acting_as(conn, Principal(team_id=team_id)) as cur:
        cur.execute(
            "SELECT (dm.recall_memory(%(query)s, %(team)s, %(embedding)s::public.vector, %(request)s))::text"
            " AS a",
            {"query": query, "team": team_id, "embedding": embedding, "request": Jsonb(request)},
        )
        row = cur.fetchone()
    return str(row["a"]) if row else "null"


def trace(conn: psycopg.Connection[Any], team_id: uuid.UUID, relationship_id: uuid.UUID) -> str | None:
    """dm.trace_memory as the team; None when it answered NULL."""
    with acting_as(conn, Principal(team_id=team_id)) as cur:
        cur.execute(
            "SELECT (dm.trace_memory(%(id)s, %(team)s))::text AS a", {"id": relationship_id, "team": team_id}
        )
        row = cur.fetchone()
    return None if row is None or row["a"] is None else str(row["a"])


def ingest_batch(
    conn: psycopg.Connection[Any], team_id: uuid.UUID, profile_id: uuid.UUID, items: list[dict[str, Any]]
) -> list[uuid.UUID]:
    """dm.ingest_evidence as the profile: one transaction per batch."""
    with acting_as(conn, Principal(team_id=team_id, profile_id=profile_id)) as cur:
        cur.execute(
            "SELECT dm.ingest_evidence(%(team)s, %(items)s) AS ids", {"team": team_id, "items": Jsonb(items)}
        )
        row = cur.fetchone()
    return list(row["ids"]) if row else []


def compact_statistics(conn: psycopg.Connection[Any], team_id: uuid.UUID) -> None:
    """dm.compact_search_statistics as the team: folds the BM25 deltas the batches appended."""
    with acting_as(conn, Principal(team_id=team_id)) as cur:
        cur.execute("SELECT dm.compact_search_statistics(%(team)s)", {"team": team_id})


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Evidence items, one JSON object per line, validated by the same model as POST /v1/evidence."""
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                item = models.EvidenceItem.model_validate_json(line)
            except ValidationError as error:
                problem = error.errors(include_url=False)[0]
                where = ".".join(str(part) for part in problem["loc"]) or "(line)"
                raise ValueError(f"{path}:{number}: {where}: {problem['msg']}") from None
            yield number, item.model_dump(mode="json", exclude_none=True)


def _team(conn: psycopg.Connection[Any], name: str) -> uuid.UUID:
    team_id = team_id_by_name(conn, name)
    if team_id is None:
        raise LookupError(
            f"no team named {name!r} (create one with `densemem keys create --team {name} ...`)"
        )
    return team_id


def _recall(args: argparse.Namespace, settings: Settings) -> int:
    request: dict[str, Any] = {"limit": args.limit}
    try:
        body = models.RecallRequest.model_validate_json(json.dumps({"query": args.query, **request}))
    except ValidationError as error:
        print(f"densemem recall: {error.errors(include_url=False)[0]['msg']}", file=sys.stderr)
        return 2
    embedder = load_query_embedder(settings)
    try:
        vector = embedder.embed_query(body.query)
    except Exception as error:
        print(
            f"densemem recall: embedding provider unavailable ({error}); recalling without a vector",
            file=sys.stderr,
        )
        vector = None
    with psycopg.connect(db.database_url(settings)) as conn:
        try:
            answer = recall(
                conn,
                _team(conn, args.team),
                body.query,
                body.model_dump(mode="json", exclude_none=True, exclude={"query"}),
                vector_literal(vector),
            )
        except (LookupError, psycopg.Error) as error:
            print(f"densemem recall: {error}", file=sys.stderr)
            return 1
    print(json.dumps(json.loads(answer), indent=2, ensure_ascii=False))
    return 0


def _trace(args: argparse.Namespace, settings: Settings) -> int:
    try:
        relationship_id = uuid.UUID(args.relationship_id)
    except ValueError:
        print("densemem trace: the relationship ID must be a UUID", file=sys.stderr)
        return 2
    with psycopg.connect(db.database_url(settings)) as conn:
        try:
            answer = trace(conn, _team(conn, args.team), relationship_id)
        except (LookupError, psycopg.Error) as error:
            print(f"densemem trace: {error}", file=sys.stderr)
            return 1
    if answer is None:
        print("densemem trace: no such relationship in this team", file=sys.stderr)
        return 1
    print(json.dumps(json.loads(answer), indent=2, ensure_ascii=False))
    return 0


def _ingest(args: argparse.Namespace, settings: Settings) -> int:
    from tqdm import tqdm

    path = Path(args.file)
    if not path.is_file():
        print(f"densemem ingest: no such file {path}", file=sys.stderr)
        return 2
    total_lines = sum(1 for line in path.open(encoding="utf-8") if line.strip())
    stored = 0
    with psycopg.connect(db.database_url(settings)) as conn:
        try:
            with conn.transaction():
                team_row = conn.execute("SELECT dm.ensure_team(%s)", (args.team,)).fetchone()
                assert team_row is not None
                profile_row = conn.execute(
                    "SELECT dm.ensure_profile(%s, %s)", (team_row[0], args.profile)
                ).fetchone()
                assert profile_row is not None
            team_id, profile_id = team_row[0], profile_row[0]
            batch: list[dict[str, Any]] = []
            with tqdm(total=total_lines, unit="item", desc="ingest", disable=not sys.stderr.isatty()) as bar:
                for _, item in read_jsonl(path):
                    batch.append(item)
                    if len(batch) >= INGEST_BATCH:
                        stored += len(ingest_batch(conn, team_id, profile_id, batch))
                        bar.update(len(batch))
                        batch = []
                if batch:
                    stored += len(ingest_batch(conn, team_id, profile_id, batch))
                    bar.update(len(batch))
            compact_statistics(conn, team_id)
        except (ValueError, psycopg.Error) as error:
            print(f"densemem ingest: {error} ({stored} items stored before the error)", file=sys.stderr)
            return 1
    print(
        f"stored {stored} evidence items for team {args.team}; run `densemem embed` (or `densemem serve`) "
        "to embed them",
        file=sys.stderr,
    )
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    recall_parser = commands.add_parser(
        "recall", help="recall memory for a query", description="Recall as a team and print the JSON answer."
    )
    recall_parser.add_argument("query", help="the question")
    recall_parser.add_argument("--team", required=True, help="team name")
    recall_parser.add_argument("--limit", type=int, default=10, help="results (1-50, default 10)")
    recall_parser.set_defaults(handler=_recall)

    trace_parser = commands.add_parser(
        "trace",
        help="trace a relationship",
        description="Print a relationship's evidence, verifications, lifecycle and conflicts, as a team.",
    )
    trace_parser.add_argument("relationship_id", metavar="ID", help="relationship ID (from a discovery path)")
    trace_parser.add_argument("--team", required=True, help="team name")
    trace_parser.set_defaults(handler=_trace)

    ingest_parser = commands.add_parser(
        "ingest",
        help="store evidence from a JSONL file",
        description="Store evidence from FILE.jsonl (one POST /v1/evidence item per line) as a profile of a "
        "team, creating both if needed.",
    )
    ingest_parser.add_argument("file", metavar="FILE.jsonl")
    ingest_parser.add_argument("--team", required=True, help="team name")
    ingest_parser.add_argument("--profile", required=True, help="profile name (the author)")
    ingest_parser.set_defaults(handler=_ingest)
