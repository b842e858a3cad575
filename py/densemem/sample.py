"""The sample memory: two teams, about fifty evidence rows, a small graph each.

Both teams know someone called "Mark" and both use "PostgreSQL": the same
names are different entities in each team, which the demo and the isolation
tests rely on. Loading is idempotent: a team that already holds the sample
is left as it is.
"""

from __future__ import annotations

import argparse
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from densemem.config import Settings
from densemem.store.session import Principal, acting_as

SAMPLE_MARKER_SOURCE = "sample:marker"


@dataclass(frozen=True)
class SampleRelationship:
    subject: str
    predicate: str
    object: str
    author: str
    evidence_keys: tuple[str, ...]
    decision: str | None = "validated_claim"  # None leaves it a candidate
    polarity: str = "+"


@dataclass(frozen=True)
class SampleTeam:
    name: str
    profiles: tuple[str, ...]
    evidence: tuple[dict[str, Any], ...]
    entities: tuple[dict[str, Any], ...]
    relationships: tuple[SampleRelationship, ...]
    pii_profiles: tuple[str, ...] = field(default_factory=tuple)


def _turn(key: str, author: str, text: str, created_at: str, source: str, **extra: Any) -> dict[str, Any]:
    item: dict[str, Any] = {
        "key": key,
        "author": author,
        "text": text,
        "created_at": created_at,
        "valid_from": created_at,
        "source": {"external_id": source, "kind": extra.pop("kind", "conversation")},
        "memory_type": extra.pop("memory_type", "conversation"),
    }
    revision = extra.pop("revision", None)
    if revision is not None:
        item["source"]["revision"] = revision
    item.update(extra)
    return item


ACME = SampleTeam(
    name="acme",
    profiles=("mark", "priya", "lena", "reviewer"),
    evidence=(
        _turn(
            "e01",
            "mark",
            "Mark works on Dense-Mem, the memory service for our agents.",
            "2026-10-01T09:00:00Z",
            "slack:platform/2026-10-01",
            memory_type="organizational",
            importance=0.8,
        ),
        _turn(
            "e02",
            "priya",
            "Priya joined the Dense-Mem team in October to work on ranking.",
            "2026-10-02T10:15:00Z",
            "slack:platform/2026-10-02",
            memory_type="organizational",
        ),
        _turn(
            "e03",
            "mark",
            "Dense-Mem stores evidence and the entity graph in PostgreSQL 18 with pgvector.",
            "2026-10-03T11:00:00Z",
            "doc:architecture",
            kind="document",
            memory_type="semantic",
            importance=0.9,
        ),
        _turn(
            "e04",
            "mark",
            "We use Redis only as a cache in front of the recall endpoint.",
            "2026-10-03T11:05:00Z",
            "doc:architecture",
            kind="document",
            memory_type="semantic",
        ),
        _turn(
            "e05",
            "lena",
            "Redis was removed from Dense-Mem on 20 November; recall is fast enough without it.",
            "2026-11-20T16:00:00Z",
            "ticket:ABC-141",
            kind="ticket",
            memory_type="workflow",
            importance=0.7,
        ),
        _turn(
            "e06",
            "priya",
            "ABC-123: recall returns stale vectors after an edit; fix is to check document versions.",
            "2026-10-20T08:30:00Z",
            "ticket:ABC-123",
            kind="ticket",
            memory_type="workflow",
            importance=0.8,
        ),
        _turn(
            "e07",
            "mark",
            "Release v1.2.3 of Dense-Mem shipped the version check for ABC-123.",
            "2026-10-28T17:45:00Z",
            "slack:releases/2026-10-28",
            memory_type="episodic",
        ),
        _turn(
            "e08",
            "lena",
            "The HNSW index for large teams lives in migrations/0021_vector_indexes.sql.",
            "2026-10-29T09:10:00Z",
            "slack:platform/2026-10-29",
        ),
        _turn(
            "e09",
            "mark",
            "Mark maintains the team wiki page on on-call rotations.",
            "2026-10-05T12:00:00Z",
            "wiki:oncall",
            kind="document",
            memory_type="organizational",
        ),
        _turn(
            "e10",
            "priya",
            "On-call this week is Lena; escalate paging issues to her first.",
            "2026-11-23T08:00:00Z",
            "slack:oncall/2026-11-23",
            memory_type="workflow",
        ),
        _turn(
            "e11a",
            "lena",
            "Draft SLO: the recall p95 target is 50 ms end to end.",
            "2026-09-20T14:00:00Z",
            "doc:slo",
            kind="document",
            memory_type="semantic",
            revision="draft",
        ),
        _turn(
            "e11",
            "lena",
            "The recall p95 target is 10 ms in the database for one million rows.",
            "2026-10-10T14:00:00Z",
            "doc:slo",
            kind="document",
            memory_type="semantic",
            importance=0.9,
            revision="final",
        ),
        _turn(
            "e12",
            "mark",
            "Team offsite is planned for Lisbon in March 2027.",
            "2026-11-15T10:00:00Z",
            "slack:general/2026-11-15",
            memory_type="episodic",
        ),
        _turn(
            "e13",
            "priya",
            "I prefer reciprocal rank fusion with k=60 over weighted score blending.",
            "2026-10-12T13:30:00Z",
            "slack:ranking/2026-10-12",
        ),
        _turn(
            "e14",
            "priya",
            "MMR with lambda 0.7 removed near-duplicate answers in the LoCoMo dev run.",
            "2026-11-02T15:00:00Z",
            "slack:ranking/2026-11-02",
            memory_type="episodic",
        ),
        _turn(
            "e15",
            "lena",
            "Mark's home address is 12 Harbour Lane; send the offsite parcel there.",
            "2026-11-16T09:00:00Z",
            "slack:dm/lena-mark",
            labels={"pii": True},
        ),
        _turn(
            "e16",
            "mark",
            "The deploy pipeline runs sqlfluff and pgTAP before every migration.",
            "2026-10-08T10:00:00Z",
            "doc:ci",
            kind="document",
            memory_type="workflow",
        ),
        _turn(
            "e17",
            "lena",
            "Yesterday the staging database ran out of disk during the reindex.",
            "2026-11-26T18:20:00Z",
            "slack:incidents/2026-11-26",
            memory_type="episodic",
            importance=0.8,
        ),
        _turn(
            "e18",
            "priya",
            "Config lives in /etc/densemem/densemem.toml on every host.",
            "2026-10-18T11:11:00Z",
            "doc:ops",
            kind="document",
            memory_type="semantic",
        ),
        _turn(
            "e19",
            "mark",
            "Customer Initech asked for per-team retention of conversation memory.",
            "2026-11-10T09:45:00Z",
            "ticket:ABC-150",
            kind="ticket",
            memory_type="workflow",
        ),
        _turn(
            "e20",
            "lena",
            "Embedding model is all-MiniLM-L6-v2 with 384 dimensions, served locally.",
            "2026-10-04T10:00:00Z",
            "doc:architecture",
            kind="document",
            memory_type="semantic",
        ),
        _turn(
            "e21",
            "priya",
            "Garbage collection of erased evidence must keep only the content hash.",
            "2026-10-22T16:00:00Z",
            "doc:privacy",
            kind="document",
            memory_type="semantic",
            importance=0.9,
        ),
        _turn(
            "e22",
            "mark",
            "Lunch and learn on PostgreSQL row-level security next Thursday.",
            "2026-11-24T12:00:00Z",
            "slack:general/2026-11-24",
            memory_type="episodic",
        ),
        _turn(
            "e23",
            "lena",
            "The old runbook said to restart Redis when recall slows down.",
            "2026-09-15T09:00:00Z",
            "doc:runbook",
            kind="document",
            memory_type="workflow",
        ),
        _turn(
            "e24",
            "lena",
            "Runbook: when recall slows down, check search freshness and the worker backlog.",
            "2026-11-21T09:00:00Z",
            "doc:runbook-v2",
            kind="document",
            memory_type="workflow",
        ),
        _turn(
            "e25",
            "mark",
            "Mark moved from Dense-Mem to the billing team? No, he still leads Dense-Mem.",
            "2026-11-25T11:00:00Z",
            "slack:platform/2026-11-25",
        ),
        _turn(
            "e26",
            "priya",
            "The LoCoMo dev run reached 0.8 recall at 10 with hybrid search and recency decay.",
            "2026-11-05T10:00:00Z",
            "slack:ranking/2026-11-05",
            memory_type="episodic",
        ),
        _turn(
            "e27",
            "lena",
            "Backups of the memory database run nightly at 01:00 UTC with pg_basebackup.",
            "2026-10-06T09:00:00Z",
            "doc:ops",
            kind="document",
            memory_type="semantic",
        ),
        _turn(
            "e28",
            "mark",
            "Decision: API keys are stored hashed with SHA-256 and shown only once.",
            "2026-10-09T15:00:00Z",
            "doc:security",
            kind="document",
            memory_type="semantic",
            importance=0.9,
        ),
        _turn(
            "e29",
            "priya",
            "Last week I tuned the RRF constant; k=60 still wins on the dev questions.",
            "2026-11-24T09:30:00Z",
            "slack:ranking/2026-11-24",
        ),
        _turn(
            "e30",
            "lena",
            "Commit 3f9a2c7e fixed the cross-team filter in the vector branch.",
            "2026-11-19T13:00:00Z",
            "slack:platform/2026-11-19",
            memory_type="episodic",
        ),
        _turn(
            "e31",
            "mark",
            "Mark's phone number is +1 555 0100; call him for production outages only.",
            "2026-10-30T09:00:00Z",
            "slack:dm/lena-mark",
            labels={"pii": True},
        ),
        _turn(
            "e32",
            "priya",
            "Initech's retention request is scheduled for the January release.",
            "2026-11-27T10:00:00Z",
            "ticket:ABC-150",
            kind="ticket",
            memory_type="workflow",
        ),
    ),
    entities=(
        {"name": "Mark", "kind": "person", "aliases": ["Mark O."]},
        {"name": "Priya", "kind": "person"},
        {"name": "Lena", "kind": "person"},
        {"name": "Dense-Mem", "kind": "project", "aliases": ["densemem", "dense mem"]},
        {"name": "PostgreSQL", "kind": "technology", "aliases": ["Postgres"]},
        {"name": "Redis", "kind": "technology"},
        {"name": "pgvector", "kind": "technology"},
        {"name": "Wiki", "kind": "document"},
        {"name": "Initech", "kind": "customer"},
    ),
    relationships=(
        SampleRelationship("Mark", "works_on", "Dense-Mem", "mark", ("e01",)),
        SampleRelationship("Priya", "works_on", "Dense-Mem", "priya", ("e02",)),
        SampleRelationship("Dense-Mem", "uses", "PostgreSQL", "mark", ("e03",), decision="fact"),
        SampleRelationship("Dense-Mem", "uses", "pgvector", "mark", ("e03",)),
        SampleRelationship("Dense-Mem", "uses", "Redis", "mark", ("e04",)),
        SampleRelationship("Dense-Mem", "uses", "Redis", "lena", ("e05",), polarity="-"),
        SampleRelationship("Mark", "maintains", "Wiki", "mark", ("e09",)),
        SampleRelationship("Initech", "requested", "Dense-Mem", "mark", ("e19",), decision=None),
    ),
)

GLOBEX = SampleTeam(
    name="globex",
    profiles=("mark", "hank"),
    evidence=(
        _turn(
            "g01",
            "mark",
            "Mark works on Project Falcon, the fraud scoring service.",
            "2026-10-01T09:00:00Z",
            "chat:falcon/2026-10-01",
            memory_type="organizational",
        ),
        _turn(
            "g02",
            "hank",
            "Project Falcon runs on PostgreSQL 16 and Kafka.",
            "2026-10-02T09:00:00Z",
            "doc:falcon-arch",
            kind="document",
            memory_type="semantic",
        ),
        _turn(
            "g03",
            "mark",
            "Falcon's model retrains every Sunday at 02:00 UTC.",
            "2026-10-03T09:00:00Z",
            "doc:falcon-ops",
            kind="document",
            memory_type="workflow",
        ),
        _turn(
            "g04",
            "hank",
            "FAL-77: scoring latency spikes when Kafka lags behind.",
            "2026-11-12T09:00:00Z",
            "ticket:FAL-77",
            kind="ticket",
            memory_type="workflow",
        ),
        _turn(
            "g05",
            "hank",
            "Hank is on call for Falcon until December.",
            "2026-11-20T09:00:00Z",
            "chat:oncall/2026-11-20",
            memory_type="workflow",
        ),
        _turn(
            "g06",
            "mark",
            "Globex secret rotation happens on the first Monday of each month.",
            "2026-10-06T09:00:00Z",
            "doc:security",
            kind="document",
            memory_type="semantic",
        ),
        _turn(
            "g07",
            "hank",
            "Redis is not used anywhere at Globex.",
            "2026-10-07T09:00:00Z",
            "chat:falcon/2026-10-07",
            memory_type="semantic",
        ),
        _turn(
            "g08",
            "mark",
            "The Falcon dashboard lives at grafana/falcon-overview.",
            "2026-10-09T09:00:00Z",
            "chat:falcon/2026-10-09",
        ),
        _turn(
            "g09",
            "hank",
            "Falcon v3.0.0-rc.1 adds graph features from the account network.",
            "2026-11-18T09:00:00Z",
            "chat:releases/2026-11-18",
            memory_type="episodic",
        ),
        _turn(
            "g10",
            "mark",
            "Mark prefers Python type hints everywhere in Falcon code.",
            "2026-10-11T09:00:00Z",
            "chat:falcon/2026-10-11",
        ),
        _turn(
            "g11",
            "hank",
            "Quarterly fraud review with the risk team is on 4 December 2026.",
            "2026-11-21T09:00:00Z",
            "chat:risk/2026-11-21",
            memory_type="episodic",
        ),
        _turn(
            "g12",
            "mark",
            "Falcon stores features in PostgreSQL partitioned by month.",
            "2026-10-14T09:00:00Z",
            "doc:falcon-arch",
            kind="document",
            memory_type="semantic",
        ),
        _turn(
            "g13",
            "hank",
            "Falcon alerts page Hank first, then Mark.",
            "2026-11-22T09:00:00Z",
            "chat:oncall/2026-11-22",
            memory_type="workflow",
        ),
        _turn(
            "g14",
            "mark",
            "Mark at Globex is Mark Chen, the Falcon tech lead.",
            "2026-10-01T10:00:00Z",
            "chat:falcon/2026-10-01",
            memory_type="organizational",
        ),
    ),
    entities=(
        {"name": "Mark", "kind": "person"},
        {"name": "Hank", "kind": "person"},
        {"name": "Project Falcon", "kind": "project", "aliases": ["Falcon"]},
        {"name": "PostgreSQL", "kind": "technology", "aliases": ["Postgres"]},
        {"name": "Kafka", "kind": "technology"},
    ),
    relationships=(
        SampleRelationship("Mark", "works_on", "Project Falcon", "mark", ("g01",)),
        SampleRelationship("Project Falcon", "uses", "PostgreSQL", "hank", ("g02",), decision="fact"),
        SampleRelationship("Project Falcon", "uses", "Kafka", "hank", ("g02",)),
    ),
)

SAMPLE_TEAMS: tuple[SampleTeam, ...] = (ACME, GLOBEX)


@dataclass
class LoadedTeam:
    name: str
    team_id: uuid.UUID
    profile_ids: dict[str, uuid.UUID]
    evidence_ids: dict[str, uuid.UUID]
    entity_ids: dict[str, uuid.UUID]
    relationship_ids: list[uuid.UUID]
    already_loaded: bool


def _scalar(conn: psycopg.Connection[Any], query: str, params: dict[str, Any]) -> Any:
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return row[0]


def load_team(conn: psycopg.Connection[Any], team: SampleTeam) -> LoadedTeam:
    """Load one sample team through the public write functions, as its own profiles."""
    team_id = _scalar(conn, "SELECT dm.ensure_team(%(name)s)", {"name": team.name})
    profile_ids = {
        name: _scalar(conn, "SELECT dm.ensure_profile(%(team)s, %(name)s)", {"team": team_id, "name": name})
        for name in team.profiles
    }
    conn.commit()
    loaded = LoadedTeam(team.name, team_id, profile_ids, {}, {}, [], False)
    first_author = Principal(team_id, profile_ids[team.profiles[0]])
    with acting_as(conn, first_author) as cur:
        cur.execute(
            "SELECT count(*) AS n FROM dm_private.sources "
            "WHERE team_id = %(team)s AND external_id = %(marker)s",
            {"team": team_id, "marker": SAMPLE_MARKER_SOURCE},
        )
        row = cur.fetchone()
        if row is not None and row["n"] > 0:
            loaded.already_loaded = True
            return loaded

    for item in team.evidence:
        payload = {k: v for k, v in item.items() if k not in {"key", "author"}}
        with acting_as(conn, Principal(team_id, profile_ids[item["author"]])) as cur:
            cur.execute(
                "SELECT dm.ingest_evidence(%(team)s, %(items)s) AS ids",
                {"team": team_id, "items": Jsonb([payload])},
            )
            row = cur.fetchone()
            assert row is not None
            loaded.evidence_ids[item["key"]] = row["ids"][0]

    with acting_as(conn, first_author) as cur:
        cur.execute(
            "SELECT dm.upsert_entities(%(team)s, %(items)s) AS ids",
            {"team": team_id, "items": Jsonb(list(team.entities))},
        )
        row = cur.fetchone()
        assert row is not None
        loaded.entity_ids = {e["name"]: eid for e, eid in zip(team.entities, row["ids"], strict=True)}

    reviewer = profile_ids.get("reviewer", profile_ids[team.profiles[-1]])
    for rel in team.relationships:
        with acting_as(conn, Principal(team_id, profile_ids[rel.author])) as cur:
            cur.execute(
                "SELECT dm.assert_relationship(%(team)s, %(rel)s) AS id",
                {
                    "team": team_id,
                    "rel": Jsonb(
                        {
                            "subject_entity_id": str(loaded.entity_ids[rel.subject]),
                            "predicate": rel.predicate,
                            "object_entity_id": str(loaded.entity_ids[rel.object]),
                            "polarity": rel.polarity,
                            "evidence_ids": [str(loaded.evidence_ids[k]) for k in rel.evidence_keys],
                        }
                    ),
                },
            )
            row = cur.fetchone()
            assert row is not None
            relationship_id = row["id"]
        loaded.relationship_ids.append(relationship_id)
        if rel.decision is not None:
            with acting_as(conn, Principal(team_id, reviewer)) as cur:
                cur.execute(
                    "SELECT dm.record_verification(%(team)s, %(rel)s, %(decision)s, %(why)s)",
                    {
                        "team": team_id,
                        "rel": relationship_id,
                        "decision": rel.decision,
                        "why": "sample data: checked against the cited evidence",
                    },
                )

    with acting_as(conn, first_author) as cur:
        cur.execute(
            "SELECT dm.ingest_evidence(%(team)s, %(items)s)",
            {
                "team": team_id,
                "items": Jsonb(
                    [
                        {
                            "text": f"Sample memory for team {team.name} loaded by densemem demo.",
                            "source": {"external_id": SAMPLE_MARKER_SOURCE, "kind": "system"},
                            "memory_type": "semantic",
                            "importance": 0.0,
                        }
                    ]
                ),
            },
        )
    return loaded


def load_sample(conn: psycopg.Connection[Any]) -> list[LoadedTeam]:
    return [load_team(conn, team) for team in SAMPLE_TEAMS]


def describe(loaded: list[LoadedTeam]) -> str:
    lines = []
    for team in loaded:
        if team.already_loaded:
            lines.append(f"team {team.name}: sample already loaded ({team.team_id})")
        else:
            lines.append(
                f"team {team.name} ({team.team_id}): {len(team.profile_ids)} profiles, "
                f"{len(team.evidence_ids)} evidence, {len(team.entity_ids)} entities, "
                f"{len(team.relationship_ids)} relationships"
            )
    return "\n".join(lines)


def _sample_command(args: argparse.Namespace, settings: Settings) -> int:
    from densemem import db
    from densemem.migrate import migrate

    url = db.database_url(settings)
    migrate(url, settings.migrations_dir, settings.sql_dir)
    with psycopg.connect(url) as conn:
        loaded = load_sample(conn)
    if args.json:
        print(
            json.dumps(
                [
                    {"team": t.name, "team_id": str(t.team_id), "already_loaded": t.already_loaded}
                    for t in loaded
                ]
            )
        )
    else:
        print(describe(loaded))
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "sample",
        help="load the sample memory (two teams)",
        description="Migrate, then load the sample memory; idempotent.",
    )
    parser.add_argument("--json", action="store_true", help="print what was loaded as JSON")
    parser.set_defaults(handler=_sample_command)
