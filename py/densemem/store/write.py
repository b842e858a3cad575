"""The write path: one typed function per SQL write function in schema dm.

Each function runs one SQL call on a cursor opened by
`densemem.store.session.acting_as`, so the database checks the team, the
acting profile and row-level security; nothing is filtered or validated here
beyond turning Python values into the JSON the SQL function reads. Errors
arrive as psycopg exceptions carrying the SQLSTATE (22023, DM404, DM409, ...).

    with acting_as(conn, Principal(team_id, profile_id)) as cur:
        ids = ingest_evidence(cur, team_id=team_id, items=[{"text": "...", "source": {...}}])
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Literal, NotRequired, TypedDict

import psycopg
from psycopg.types.json import Jsonb

Cursor = psycopg.Cursor[dict[str, Any]]
MemoryType = Literal["conversation", "workflow", "episodic", "semantic", "organizational"]
Decision = Literal["validated_claim", "fact", "rejected"]
RelationshipMove = Literal["supersede", "retract", "quarantine", "dispute", "hold_for_review", "release"]
EvidenceMove = Literal["quarantine", "hold_for_supersession", "supersede", "retract", "release"]
Judgment = Literal["used", "not_used", "relevant", "irrelevant"]
Timestamp = dt.datetime | str


class SourceRef(TypedDict):
    external_id: str
    kind: str
    title: NotRequired[str]
    uri: NotRequired[str]
    revision: NotRequired[str]
    source_group: NotRequired[str]


class EvidenceItem(TypedDict):
    text: str
    source: SourceRef
    memory_type: NotRequired[MemoryType]
    importance: NotRequired[float]
    confidence: NotRequired[float]
    labels: NotRequired[Mapping[str, Any]]
    created_at: NotRequired[Timestamp]
    valid_from: NotRequired[Timestamp]
    valid_to: NotRequired[Timestamp]


class EntityItem(TypedDict):
    name: str
    aliases: NotRequired[Sequence[str]]
    kind: NotRequired[str]


class EvidenceLink(TypedDict):
    evidence_id: uuid.UUID | str
    span_start: NotRequired[int]
    span_end: NotRequired[int]


class RelationshipAssertion(TypedDict):
    subject_entity_id: uuid.UUID | str
    predicate: str
    object_entity_id: NotRequired[uuid.UUID | str]
    object_value: NotRequired[str]
    polarity: NotRequired[Literal["+", "-"]]
    evidence_ids: NotRequired[Sequence[uuid.UUID | str | EvidenceLink]]
    valid_from: NotRequired[Timestamp]
    valid_to: NotRequired[Timestamp]
    semantic_group: NotRequired[str]


class Hypothesis(TypedDict):
    statement: str
    source_external_id: NotRequired[str]


class Feedback(TypedDict):
    query: str
    evidence_id: uuid.UUID | str
    judgment: Judgment
    rank: NotRequired[int]
    recall_id: NotRequired[uuid.UUID | str]
    ranking_profile_version: NotRequired[str]


def _json_default(value: object) -> str:
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            raise ValueError("timestamps must be timezone-aware")
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"cannot send {type(value).__name__} as JSON")


def _jsonb(value: object) -> Jsonb:
    return Jsonb(value, dumps=lambda obj: json.dumps(obj, default=_json_default))


def _one(cur: Cursor, query: str, params: Mapping[str, Any]) -> Any:
    cur.execute(query, params)
    row = cur.fetchone()
    if row is None:  # a scalar SELECT always returns a row
        raise RuntimeError("the write function returned no row")
    return row["result"]


def ingest_evidence(cur: Cursor, *, team_id: uuid.UUID, items: Sequence[EvidenceItem]) -> list[uuid.UUID]:
    """dm.ingest_evidence: store up to 1000 evidence items; their ids in input order."""
    result: list[uuid.UUID] = _one(
        cur,
        "SELECT dm.ingest_evidence(%(team_id)s, %(items)s) AS result",
        {"team_id": team_id, "items": _jsonb(list(items))},
    )
    return result


def upsert_entities(cur: Cursor, *, team_id: uuid.UUID, items: Sequence[EntityItem]) -> list[uuid.UUID]:
    """dm.upsert_entities: create or extend entities with aliases; their ids in input order."""
    result: list[uuid.UUID] = _one(
        cur,
        "SELECT dm.upsert_entities(%(team_id)s, %(items)s) AS result",
        {"team_id": team_id, "items": _jsonb(list(items))},
    )
    return result


def assert_relationship(cur: Cursor, *, team_id: uuid.UUID, relationship: RelationshipAssertion) -> uuid.UUID:
    """dm.assert_relationship: a new candidate / pending_evidence relationship; its id."""
    result: uuid.UUID = _one(
        cur,
        "SELECT dm.assert_relationship(%(team_id)s, %(relationship)s) AS result",
        {"team_id": team_id, "relationship": _jsonb(dict(relationship))},
    )
    return result


def record_verification(
    cur: Cursor,
    *,
    team_id: uuid.UUID,
    relationship_id: uuid.UUID,
    decision: Decision,
    rationale: str | None = None,
) -> uuid.UUID:
    """dm.record_verification: a verifier decision; the verification event id."""
    result: uuid.UUID = _one(
        cur,
        "SELECT dm.record_verification(%(team_id)s, %(relationship_id)s, %(decision)s, %(rationale)s) "
        "AS result",
        {
            "team_id": team_id,
            "relationship_id": relationship_id,
            "decision": decision,
            "rationale": rationale,
        },
    )
    return result


def move_relationship(
    cur: Cursor,
    *,
    team_id: uuid.UUID,
    relationship_id: uuid.UUID,
    move: RelationshipMove,
    reason: str | None = None,
    replacement_relationship_id: uuid.UUID | None = None,
) -> None:
    """dm.move_relationship: one lifecycle move (supersede needs a replacement)."""
    cur.execute(
        "SELECT dm.move_relationship(%(team_id)s, %(relationship_id)s, %(move)s, %(reason)s, "
        "%(replacement)s::uuid)",
        {
            "team_id": team_id,
            "relationship_id": relationship_id,
            "move": move,
            "reason": reason,
            "replacement": replacement_relationship_id,
        },
    )


def move_evidence(
    cur: Cursor, *, team_id: uuid.UUID, evidence_id: uuid.UUID, move: EvidenceMove, reason: str | None = None
) -> None:
    """dm.move_evidence: one evidence lifecycle move."""
    cur.execute(
        "SELECT dm.move_evidence(%(team_id)s, %(evidence_id)s, %(move)s, %(reason)s)",
        {"team_id": team_id, "evidence_id": evidence_id, "move": move, "reason": reason},
    )


def erase_evidence(
    cur: Cursor, *, team_id: uuid.UUID, evidence_id: uuid.UUID, reason: str | None = None
) -> None:
    """dm.erase_evidence: GDPR erasure, leaving a tombstone."""
    cur.execute(
        "SELECT dm.erase_evidence(%(team_id)s, %(evidence_id)s, %(reason)s)",
        {"team_id": team_id, "evidence_id": evidence_id, "reason": reason},
    )


def add_hypothesis(cur: Cursor, *, team_id: uuid.UUID, hypothesis: Hypothesis) -> uuid.UUID:
    """dm.add_hypothesis: a proposed hypothesis; its id."""
    result: uuid.UUID = _one(
        cur,
        "SELECT dm.add_hypothesis(%(team_id)s, %(hypothesis)s) AS result",
        {"team_id": team_id, "hypothesis": _jsonb(dict(hypothesis))},
    )
    return result


def record_feedback(cur: Cursor, *, team_id: uuid.UUID, feedback: Feedback) -> uuid.UUID:
    """dm.record_feedback: a judgment on one recall result (moves the usage counters); its id."""
    result: uuid.UUID = _one(
        cur,
        "SELECT dm.record_feedback(%(team_id)s, %(feedback)s) AS result",
        {"team_id": team_id, "feedback": _jsonb(dict(feedback))},
    )
    return result


def take_usage_snapshot(cur: Cursor, *, team_id: uuid.UUID) -> int:
    """dm.take_usage_snapshot: freeze the usage counters; the snapshot id."""
    result: int = _one(cur, "SELECT dm.take_usage_snapshot(%(team_id)s) AS result", {"team_id": team_id})
    return result
