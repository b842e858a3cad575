"""Run evaluation questions through dm.recall_memory and score what comes back.

The runner is dataset-agnostic: a dataset module (locomo, scifact) creates its
teams and evidence, then hands the runner a list of `EvalQuery` (question
text, team, gold source external IDs with gains, slice labels, clock). For each
branch (a ranking profile chosen by the request field ``ranking_profile``) the
runner asks every question, records the rank of each gold item, the latency
of the call, discovery exposure and cross-team leakage, and computes the
per-question metrics. Nothing here filters, fuses or ranks: the order is the
order ``dm.recall_memory`` returned.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from densemem.config import project_root
from densemem.eval import metrics
from densemem.store.session import Principal, acting_as

Log = Callable[[str], None]


def quiet(message: str) -> None:
    """A Log that says nothing."""


def to_stderr(message: str) -> None:
    """A Log for the command line: progress goes to stderr, tables to stdout."""
    print(message, file=sys.stderr, flush=True)


class Embedding(Protocol):
    """How the harness gets vectors: documents through the embedding worker, queries through the provider."""

    def describe(self) -> dict[str, Any]:
        """Provider, model, dimensions: recorded in the report so runs compare like with like."""
        ...

    def embed_documents(self, conn: psycopg.Connection[Any], team_ids: Sequence[uuid.UUID], log: Log) -> None:
        """Make every pending search document of these teams ready (a vector of the active contract)."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> list[str]:
        """One pgvector literal per query text, from the same model as the documents."""
        ...


# dm.recall_memory returns at most this many results per call (DEVELOPERS.md:
# limit 1-50); deeper rankings are read page by page with known_evidence_ids.
PAGE_LIMIT = 50
# known_evidence_ids holds at most 200 IDs, so at most five pages.
MAX_DEPTH = PAGE_LIMIT + 200


@dataclass(frozen=True)
class Branch:
    """One row of the side-by-side table: a label and the ranking profile it requests (None: default)."""

    name: str
    profile: str | None


DEFAULT_BRANCHES: tuple[Branch, ...] = (
    Branch("fulltext", "fulltext_only"),
    Branch("vector", "vector_only"),
    Branch("hybrid", None),
)


def parse_branches(spec: str) -> list[Branch]:
    """Parse ``fulltext=fulltext_only,vector=vector_only,hybrid=default``.

    A bare name or ``=default`` requests the default profile (no ``ranking_profile`` field).
    """
    branches: list[Branch] = []
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        name, _, profile = part.partition("=")
        name = name.strip()
        profile = profile.strip()
        if not name:
            raise ValueError(f"empty branch name in {spec!r}")
        branches.append(Branch(name, None if profile in {"", "default"} else profile))
    if not branches:
        raise ValueError("no branch given")
    if len({branch.name for branch in branches}) != len(branches):
        raise ValueError(f"repeated branch name in {spec!r}")
    return branches


@dataclass(frozen=True)
class EvalQuery:
    """One question: its team, its gold items (source external_id -> gain) and its labels."""

    qid: str
    team_id: uuid.UUID
    profile_id: uuid.UUID
    text: str
    gold: Mapping[str, float]
    group: str
    slices: tuple[str, ...] = ()
    now: datetime | None = None


@dataclass
class BranchResult:
    branch: Branch
    questions: list[dict[str, Any]] = field(default_factory=list)
    profile_versions: list[str] = field(default_factory=list)


def vector_literal(vector: Sequence[float] | np.ndarray) -> str:
    """pgvector's text form, e.g. ``[0.1,0.2]``."""
    return "[" + ",".join(f"{float(value):.7g}" for value in vector) + "]"


def function_exists(conn: psycopg.Connection[Any], qualified_name: str) -> bool:
    """Whether a function of this schema-qualified name is defined (any signature)."""
    schema, _, name = qualified_name.partition(".")
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_proc AS p JOIN pg_catalog.pg_namespace AS n "
        "ON n.oid = p.pronamespace WHERE n.nspname = %s AND p.proname = %s)",
        (schema, name),
    ).fetchone()
    return bool(row and row[0])


def require_functions(conn: psycopg.Connection[Any], names: Iterable[str]) -> None:
    missing = [name for name in names if not function_exists(conn, name)]
    if missing:
        raise RuntimeError(
            "the database lacks " + ", ".join(missing) + ": run `densemem migrate` with the current sql/"
        )


# ---------------------------------------------------------------- administration and ingestion


def ensure_team(conn: psycopg.Connection[Any], name: str) -> uuid.UUID:
    """Administrator call (the connection is a superuser's): the team of this name."""
    row = conn.execute("SELECT dm.ensure_team(%s)", (name,)).fetchone()
    assert row is not None
    return uuid.UUID(str(row[0]))


def ensure_profile(conn: psycopg.Connection[Any], team_id: uuid.UUID, name: str) -> uuid.UUID:
    """Administrator call: the active profile of this name in the team."""
    row = conn.execute("SELECT dm.ensure_profile(%s, %s)", (team_id, name)).fetchone()
    assert row is not None
    return uuid.UUID(str(row[0]))


def evidence_count(conn: psycopg.Connection[Any], team_id: uuid.UUID) -> int:
    """Administrator read: how many evidence rows the team holds (decides whether to reuse a loaded team)."""
    row = conn.execute("SELECT count(*) FROM dm_private.evidence WHERE team_id = %s", (team_id,)).fetchone()
    return int(row[0]) if row else 0


def ingest(
    conn: psycopg.Connection[Any],
    team_id: uuid.UUID,
    profile_id: uuid.UUID,
    items: Sequence[Mapping[str, Any]],
    *,
    batch_size: int = 500,
) -> list[uuid.UUID]:
    """dm.ingest_evidence as the given profile, in batches; returns the evidence IDs in input order."""
    ids: list[uuid.UUID] = []
    for start in range(0, len(items), batch_size):
        batch = list(items[start : start + batch_size])
        with acting_as(conn, Principal(team_id=team_id, profile_id=profile_id)) as cur:
            cur.execute("SELECT dm.ingest_evidence(%s, %s) AS ids", (team_id, Jsonb(batch)))
            row = cur.fetchone()
        assert row is not None
        ids.extend(uuid.UUID(str(value)) for value in row["ids"])
    if len(ids) != len(items):
        raise RuntimeError(f"dm.ingest_evidence returned {len(ids)} IDs for {len(items)} items")
    return ids


def upsert_entities(
    conn: psycopg.Connection[Any],
    team_id: uuid.UUID,
    profile_id: uuid.UUID,
    items: Sequence[Mapping[str, Any]],
) -> list[uuid.UUID]:
    """dm.upsert_entities as the given profile."""
    with acting_as(conn, Principal(team_id=team_id, profile_id=profile_id)) as cur:
        cur.execute("SELECT dm.upsert_entities(%s, %s) AS ids", (team_id, Jsonb(list(items))))
        row = cur.fetchone()
    assert row is not None
    return [uuid.UUID(str(value)) for value in row["ids"]]


def pending_documents(conn: psycopg.Connection[Any], team_ids: Sequence[uuid.UUID]) -> int:
    """Administrator read: evidence documents of these teams still without a current vector."""
    row = conn.execute(
        "SELECT count(*) FROM dm_private.search_documents "
        "WHERE team_id = ANY(%s) AND subject_kind = 'evidence' AND search_state <> 'ready'",
        (list(team_ids),),
    ).fetchone()
    return int(row[0]) if row else 0


def external_ids(
    conn: psycopg.Connection[Any], team_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, tuple[uuid.UUID, str]]:
    """Administrator read: evidence_id -> (team_id, source external_id) for these teams."""
    rows = conn.execute(
        "SELECT e.evidence_id, e.team_id, s.external_id FROM dm_private.evidence AS e "
        "JOIN dm_private.sources AS s ON s.team_id = e.team_id AND s.source_id = e.source_id "
        "WHERE e.team_id = ANY(%s)",
        (list(team_ids),),
    ).fetchall()
    return {uuid.UUID(str(row[0])): (uuid.UUID(str(row[1])), str(row[2])) for row in rows}


def owning_teams(
    conn: psycopg.Connection[Any], evidence_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, uuid.UUID]:
    """Administrator read: the team of any evidence ID, whatever team it is in (the leakage oracle)."""
    if not evidence_ids:
        return {}
    rows = conn.execute(
        "SELECT evidence_id, team_id FROM dm_private.evidence WHERE evidence_id = ANY(%s)",
        (list(evidence_ids),),
    ).fetchall()
    return {uuid.UUID(str(row[0])): uuid.UUID(str(row[1])) for row in rows}


# ---------------------------------------------------------------- recall


def recall(
    conn: psycopg.Connection[Any],
    query: EvalQuery,
    embedding: str | None,
    request: Mapping[str, Any],
) -> tuple[dict[str, Any], float]:
    """One dm.recall_memory call as the question's team; returns the answer and its latency in ms."""
    principal = Principal(team_id=query.team_id, profile_id=query.profile_id)
    started = time.perf_counter()
    with acting_as(conn, principal) as cur:
        cur.execute(
            "SELECT dm.recall_memory(%s, %s, %s::public.vector, %s) AS answer",
            (query.text, query.team_id, embedding, Jsonb(dict(request))),
        )
        row = cur.fetchone()
    elapsed_ms = (time.perf_counter() - started) * 1000.0
    assert row is not None
    answer = row["answer"]
    if isinstance(answer, str):
        answer = json.loads(answer)
    if not isinstance(answer, dict):
        raise RuntimeError(f"dm.recall_memory returned {type(answer).__name__}, not an object")
    return answer, elapsed_ms


def parse_query(conn: psycopg.Connection[Any], query: EvalQuery) -> dict[str, Any] | None:
    """dm.parse_query for the slice labels (temporal, exact-anchor); None when it is not installed."""
    with acting_as(conn, Principal(team_id=query.team_id, profile_id=query.profile_id)) as cur:
        if query.now is None:
            cur.execute("SELECT dm.parse_query(%s, %s) AS parsed", (query.text, query.team_id))
        else:
            cur.execute("SELECT dm.parse_query(%s, %s, %s) AS parsed", (query.text, query.team_id, query.now))
        row = cur.fetchone()
    if row is None or row["parsed"] is None:
        return None
    parsed = row["parsed"]
    return parsed if isinstance(parsed, dict) else json.loads(parsed)


def _non_empty(value: Any) -> bool:
    return value not in (None, "", [], {}, False)


def parser_slices(parsed: Mapping[str, Any] | None) -> tuple[str, ...]:
    """Slices dm.parse_query assigns: temporal (a time window, a temporal intent or a when-question)
    and exact-anchor (hard anchors such as identifiers, versions, paths)."""
    if not parsed:
        return ()
    found: list[str] = []
    time_part = parsed.get("time")
    if isinstance(time_part, Mapping) and any(
        _non_empty(time_part.get(key)) for key in ("window", "intent", "temporal_question")
    ):
        found.append("temporal")
    if _non_empty(parsed.get("anchors")):
        found.append("exact-anchor")
    return tuple(found)


def latest_profile_version(conn: psycopg.Connection[Any], team_id: uuid.UUID) -> str | None:
    """Administrator read: the ranking profile version of the team's latest recall telemetry row."""
    try:
        row = conn.execute(
            "SELECT ranking_profile_version FROM dm_private.recall_telemetry WHERE team_id = %s "
            "ORDER BY created_at DESC LIMIT 1",
            (team_id,),
        ).fetchone()
    except psycopg.Error:
        return None
    return str(row[0]) if row else None


def ranking_profile_rows(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    """Administrator read: every ranking profile row (name, version, default flag, settings)."""
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(
            "SELECT name, version, is_default, settings, description FROM dm_private.ranking_profiles "
            "ORDER BY name, version"
        )
        return list(cur.fetchall())


def run_branch(
    conn: psycopg.Connection[Any],
    branch: Branch,
    queries: Sequence[EvalQuery],
    embeddings: Mapping[str, str | None],
    *,
    depth: int,
    ks: Sequence[int],
    extra_request: Mapping[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> BranchResult:
    """Ask every question under this branch's profile and score the returned order."""
    if not 1 <= depth <= MAX_DEPTH:
        raise ValueError(f"depth must be 1..{MAX_DEPTH}, not {depth}")
    teams = sorted({query.team_id for query in queries})
    id_map = external_ids(conn, teams)
    result = BranchResult(branch=branch)
    for index, query in enumerate(queries):
        result.questions.append(
            ask(
                conn,
                branch,
                query,
                embeddings.get(query.qid),
                id_map,
                depth=depth,
                ks=ks,
                extra_request=extra_request,
            )
        )
        if progress is not None:
            progress(index + 1, len(queries))
    for team_id in teams:
        version = latest_profile_version(conn, team_id)
        if version is not None and version not in result.profile_versions:
            result.profile_versions.append(version)
    return result


def ask(
    conn: psycopg.Connection[Any],
    branch: Branch,
    query: EvalQuery,
    embedding: str | None,
    id_map: Mapping[uuid.UUID, tuple[uuid.UUID, str]],
    *,
    depth: int,
    ks: Sequence[int],
    extra_request: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One question: page through recall_memory to `depth`, then rank, leak and exposure bookkeeping."""
    returned: list[uuid.UUID] = []
    latencies: list[float] = []
    path_evidence: set[uuid.UUID] = set()
    path_count = 0
    hypothesis_count = 0
    first_page: int | None = None
    while len(returned) < depth:
        request: dict[str, Any] = dict(extra_request or {})
        request["limit"] = min(PAGE_LIMIT, depth - len(returned))
        if query.now is not None:
            request["now"] = query.now.isoformat()
        if branch.profile is not None:
            request["ranking_profile"] = branch.profile
        if returned:
            request["known_evidence_ids"] = [str(evidence_id) for evidence_id in returned]
        answer, elapsed = recall(conn, query, embedding, request)
        latencies.append(elapsed)
        page = [uuid.UUID(str(item["evidence_id"])) for item in answer.get("results", [])]
        if first_page is None:
            first_page = len(page)
        fresh = [evidence_id for evidence_id in page if evidence_id not in returned]
        for path in answer.get("discovery_paths", []) or []:
            path_count += 1
            path_evidence.update(uuid.UUID(str(value)) for value in path.get("evidence_ids", []) or [])
        hypothesis_count += len(answer.get("related_hypotheses", []) or [])
        returned.extend(fresh)
        # A short page does not prove the ranking is exhausted (a profile may cap an answer below
        # the limit); only a page with nothing new does. The first page's size is recorded.
        if not fresh:
            break
    # Leakage: every returned ID must be evidence of the asking team.
    foreign = [
        evidence_id for evidence_id in returned if id_map.get(evidence_id, (None, ""))[0] != query.team_id
    ]
    owners = owning_teams(conn, foreign)
    leaked = sum(1 for evidence_id in foreign if owners.get(evidence_id) != query.team_id)
    # A foreign row is labelled so that it can never count as one of this team's gold items.
    retrieved = [
        id_map[evidence_id][1]
        if id_map.get(evidence_id, (None, ""))[0] == query.team_id
        else f"foreign:{evidence_id}"
        for evidence_id in returned
    ]
    duplicates = len(retrieved) - len(set(retrieved))
    position: dict[str, int] = {}
    for rank, external_id in enumerate(retrieved, start=1):
        position.setdefault(external_id, rank)
    gold = list(query.gold)
    ranks = [position.get(external_id) for external_id in gold]
    record_metrics = metrics.question_metrics(ranks, [query.gold[external_id] for external_id in gold], ks)
    path_external = {id_map[evidence_id][1] for evidence_id in path_evidence if evidence_id in id_map}
    in_results = set(retrieved)
    exposed = [
        external_id for external_id in gold if external_id in path_external and external_id not in in_results
    ]
    hypothesis_slice = ("hypothesis",) if hypothesis_count else ()
    return {
        "qid": query.qid,
        "group": query.group,
        "slices": sorted(set(query.slices) | set(hypothesis_slice)),
        "gold": gold,
        "ranks": ranks,
        "retrieved": retrieved,
        "latency_ms": latencies,
        "first_page": first_page,
        "leaked": leaked,
        "duplicates": duplicates,
        "discovery_paths": path_count,
        "discovery_exposed": exposed,
        "related_hypotheses": hypothesis_count,
        "metrics": record_metrics,
    }


def summarise(result: BranchResult) -> dict[str, Any]:
    """Means overall, per group and per slice; latency percentiles; leakage; discovery exposure."""
    questions = result.questions
    by_group: dict[str, list[dict[str, float]]] = {}
    by_slice: dict[str, list[dict[str, float]]] = {}
    for question in questions:
        by_group.setdefault(question["group"], []).append(question["metrics"])
        for slice_name in question["slices"]:
            by_slice.setdefault(slice_name, []).append(question["metrics"])
    first_call = [question["latency_ms"][0] for question in questions if question["latency_ms"]]
    gold_total = sum(len(question["gold"]) for question in questions)
    return {
        "questions": len(questions),
        "overall": metrics.mean_metrics([question["metrics"] for question in questions]),
        "by_group": {
            name: {"questions": len(values), **metrics.mean_metrics(values)}
            for name, values in sorted(by_group.items())
        },
        "by_slice": {
            name: {"questions": len(values), **metrics.mean_metrics(values)}
            for name, values in sorted(by_slice.items())
        },
        "latency_ms": metrics.percentiles(first_call),
        "calls_per_question": float(np.mean([len(question["latency_ms"]) for question in questions]))
        if questions
        else 0.0,
        "first_page_mean": float(np.mean([question.get("first_page") or 0 for question in questions]))
        if questions
        else 0.0,
        "leakage": sum(question["leaked"] for question in questions),
        "duplicates": sum(question["duplicates"] for question in questions),
        "discovery": {
            "questions_with_paths": sum(1 for question in questions if question["discovery_paths"]),
            "gold_exposed_only_by_paths": sum(len(question["discovery_exposed"]) for question in questions),
            "gold_total": gold_total,
        },
        "profile_versions": result.profile_versions,
    }


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def git_revision() -> str | None:
    """The commit the sql/ and migrations/ came from (-dirty when the tree has changes), or None.

    A source snapshot without .git (DENSEMEM_ROOT pointing at a `git archive` of a commit) names its
    commit in a `.revision` file.
    """
    marker = project_root() / ".revision"
    if marker.is_file():
        return marker.read_text(encoding="utf-8").strip() or None
    try:
        described = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=12"],
            cwd=project_root(),
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return described.stdout.strip() or None


def run_dataset(
    conn: psycopg.Connection[Any],
    *,
    dataset: str,
    teams: Sequence[uuid.UUID],
    queries: Sequence[EvalQuery],
    branches: Sequence[Branch],
    embedding: Embedding,
    depth: int,
    ks: Sequence[int],
    extra_request: Mapping[str, Any] | None = None,
    log: Log = quiet,
) -> dict[str, Any]:
    """Embed, then ask every question under every branch; the report without dataset details."""
    require_functions(conn, ["dm.recall_memory", "dm.ingest_evidence"])
    embedding.embed_documents(conn, teams, log)
    pending = pending_documents(conn, teams)
    if pending:
        log(f"warning: {pending} evidence documents have no current vector; the vector branch will miss them")
    use_parser = function_exists(conn, "dm.parse_query")
    if use_parser:
        queries = [
            EvalQuery(
                **{
                    **query.__dict__,
                    "slices": tuple(sorted(set(query.slices) | set(parser_slices(parse_query(conn, query))))),
                }
            )
            for query in queries
        ]
    log(f"embedding {len(queries)} queries")
    vectors = embedding.embed_queries([query.text for query in queries])
    by_qid: dict[str, str | None] = {
        query.qid: vector for query, vector in zip(queries, vectors, strict=True)
    }
    report: dict[str, Any] = {
        "dataset": dataset,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "revision": git_revision(),
        "ks": list(ks),
        "depth": depth,
        "embedding": embedding.describe(),
        "documents_without_vector": pending,
        "parser_slices": use_parser,
        "request": dict(extra_request or {}),
        "ranking_profiles": [
            {key: row[key] for key in ("name", "version", "is_default", "settings")}
            for row in ranking_profile_rows(conn)
        ],
        "question_count": len(queries),
        "branches": {},
    }
    for branch in branches:
        log(f"branch {branch.name} (ranking_profile {branch.profile or 'default'}): {len(queries)} questions")

        def progress(done: int, total: int, name: str = branch.name) -> None:
            if done % 200 == 0 or done == total:
                log(f"  {name}: {done}/{total}")

        result = run_branch(
            conn, branch, queries, by_qid, depth=depth, ks=ks, extra_request=extra_request, progress=progress
        )
        report["branches"][branch.name] = {
            "profile": branch.profile,
            "summary": summarise(result),
            "questions": result.questions,
        }
    return report


def format_table(report: Mapping[str, Any], columns: Sequence[str]) -> str:
    """Branch by group rows (overall first), one column per metric, plus n, p50/p95 ms and leakage."""
    header = ["branch", "group", "n", *columns]
    rows: list[list[str]] = []
    for name, branch in report["branches"].items():
        summary = branch["summary"]
        groups = [("overall", {"questions": summary["questions"], **summary["overall"]})]
        groups += list(summary["by_group"].items()) if len(summary["by_group"]) > 1 else []
        for group, values in groups:
            rows.append(
                [name, group, str(values["questions"])]
                + [f"{values[column]:.3f}" if column in values else "-" for column in columns]
            )
    widths = [
        max(len(header[i]), *(len(row[i]) for row in rows)) if rows else len(header[i])
        for i in range(len(header))
    ]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(header, widths, strict=True))]
    lines.append("  ".join("-" * width for width in widths))
    lines += ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in rows]
    lines.append("")
    for name, branch in report["branches"].items():
        summary = branch["summary"]
        latency = summary["latency_ms"]
        lines.append(
            f"{name}: latency p50 {latency['p50']:.1f} ms, p95 {latency['p95']:.1f} ms, "
            f"p99 {latency['p99']:.1f} ms; first page {summary.get('first_page_mean', 0):.1f} results, "
            f"{summary.get('calls_per_question', 0):.1f} calls per question; "
            f"cross-team leakage {summary['leakage']}; "
            f"profile versions {', '.join(summary['profile_versions']) or '?'}"
        )
    return "\n".join(lines)
