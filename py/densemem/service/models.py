"""Request bodies of the HTTP API, as typed models.

The same models validate requests (clear 422 errors naming the field) and
generate the JSON Schemas of /openapi.json, so the document cannot drift from
what the server accepts. Limits here are the outer bounds of the HTTP layer;
the SQL functions enforce the contract itself (and answer with SQLSTATEs).
"""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

ShortText = Annotated[str, Field(min_length=1, max_length=1000)]
Name = Annotated[str, Field(min_length=1, max_length=500)]
Reason = Annotated[str, Field(min_length=1, max_length=2000)]
MAX_IDS = 200
MAX_BATCH = 500
MAX_QUERY_CHARS = 4000


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Source(Strict):
    """Where the evidence came from; `external_id` is your stable handle for it."""

    external_id: ShortText
    kind: Annotated[str, Field(min_length=1, max_length=100)]
    title: ShortText | None = None
    uri: Annotated[str, Field(min_length=1, max_length=2000)] | None = None
    revision: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    source_group: Annotated[str, Field(min_length=1, max_length=200)] | None = None


class EvidenceItem(Strict):
    text: Annotated[str, Field(min_length=1, max_length=65536)]
    source: Source
    memory_type: Literal["conversation", "workflow", "episodic", "semantic", "organizational"] | None = None
    importance: Annotated[float, Field(ge=0, le=1)] | None = None
    confidence: Annotated[float, Field(ge=0, le=1)] | None = None
    labels: dict[str, bool | int | float | str | None] | None = Field(default=None, max_length=50)
    created_at: AwareDatetime | None = None
    valid_from: AwareDatetime | None = None
    valid_to: AwareDatetime | None = None


class IngestEvidenceRequest(Strict):
    """Evidence to store; the answer lists the new evidence IDs in input order."""

    items: Annotated[list[EvidenceItem], Field(min_length=1, max_length=MAX_BATCH)]


class EntityItem(Strict):
    name: Name
    aliases: Annotated[list[Name], Field(max_length=50)] | None = None
    kind: Annotated[str, Field(min_length=1, max_length=100)] | None = None


class UpsertEntitiesRequest(Strict):
    """Entities to create or find by name (and kind); IDs come back in input order."""

    items: Annotated[list[EntityItem], Field(min_length=1, max_length=MAX_BATCH)]


class EvidenceSpan(Strict):
    evidence_id: uuid.UUID
    span_start: Annotated[int, Field(ge=0, le=1_000_000)] | None = None
    span_end: Annotated[int, Field(ge=1, le=1_000_000)] | None = None


class AssertRelationshipRequest(Strict):
    """A relationship between two entities, or an entity and a literal value, with its evidence."""

    subject_entity_id: uuid.UUID
    predicate: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,99}$")]
    object_entity_id: uuid.UUID | None = None
    object_value: Annotated[str, Field(min_length=1, max_length=2000)] | None = None
    polarity: Literal["+", "-"] | None = None
    evidence_ids: Annotated[list[uuid.UUID | EvidenceSpan], Field(min_length=1, max_length=MAX_IDS)]
    valid_from: AwareDatetime | None = None
    valid_to: AwareDatetime | None = None
    semantic_group: Annotated[str, Field(min_length=1, max_length=200)] | None = None


class VerificationRequest(Strict):
    """A verifier's decision on a relationship."""

    decision: Literal["validated_claim", "fact", "rejected"]
    rationale: Annotated[str, Field(min_length=1, max_length=4000)] | None = None


class RelationshipMoveRequest(Strict):
    """A lifecycle move of a relationship."""

    move: Literal["supersede", "retract", "quarantine", "dispute", "hold_for_review", "release"]
    reason: Reason | None = None
    replacement_relationship_id: uuid.UUID | None = None


class EvidenceMoveRequest(Strict):
    """A lifecycle move of evidence (erasure is DELETE /v1/evidence/{evidence_id})."""

    move: Literal["quarantine", "hold_for_supersession", "supersede", "retract", "release"]
    reason: Reason | None = None


class HypothesisRequest(Strict):
    """An unverified idea; never evidence, never ranked with evidence."""

    statement: Annotated[str, Field(min_length=1, max_length=10000)]
    source_external_id: ShortText | None = None


class FeedbackRequest(Strict):
    """What you did with a recall result; it feeds usage counters, never weights."""

    query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)]
    evidence_id: uuid.UUID
    judgment: Literal["used", "not_used", "relevant", "irrelevant"]
    rank: Annotated[int, Field(ge=1, le=1000)] | None = None
    recall_id: uuid.UUID | None = None
    ranking_profile_version: Annotated[str, Field(min_length=1, max_length=200)] | None = None


class RecallFilters(Strict):
    source_group: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    memory_type: Literal["conversation", "workflow", "episodic", "semantic", "organizational"] | None = None
    created_after: AwareDatetime | None = None
    created_before: AwareDatetime | None = None


class RecallRequest(Strict):
    """One recall: the best evidence contexts under a byte budget, plus discovery paths."""

    query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)]
    limit: Annotated[int, Field(ge=1, le=50)] | None = None
    max_context_bytes: Annotated[int, Field(ge=1, le=1_000_000)] | None = None
    valid_at: AwareDatetime | None = None
    known_at: AwareDatetime | None = None
    filters: RecallFilters | None = None
    known_evidence_ids: Annotated[list[uuid.UUID], Field(max_length=MAX_IDS)] | None = None
    known_relationship_ids: Annotated[list[uuid.UUID], Field(max_length=MAX_IDS)] | None = None
    expand_from_entity_ids: Annotated[list[uuid.UUID], Field(max_length=50)] | None = None
    include_hypotheses: bool | None = None


class ExplainRequest(RecallRequest):
    """Operators: a recall with every result's score breakdown and the branch telemetry."""

    now: AwareDatetime | None = None
    usage_snapshot_id: Annotated[int, Field(ge=1)] | None = None
    ranking_profile: Annotated[str, Field(min_length=1, max_length=200)] | None = None
