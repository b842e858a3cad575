"""GDPR erasure (dm.erase_evidence) end to end, as the service role under RLS.

The decisive check scans, as superuser, every text, varchar, tsvector, jsonb
and array column of every table in dm_private and dm_migrations (found
through information_schema, so a new table or column is scanned too) for the
erased text and for its distinctive words; the same scan must find them
before the erasure, so the scan itself can fail.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

import psycopg
import pytest
from psycopg import sql

from densemem.store import write
from densemem.store.session import Principal, acting_as

SCANNED_TYPES = ("text", "character varying", "character", "tsvector", "jsonb", "json", "ARRAY", "name")


def _team(admin: psycopg.Connection[Any], name: str) -> Principal:
    team_id = admin.execute("SELECT dm.ensure_team(%s)", (name,)).fetchone()[0]  # type: ignore[index]
    profile_id = admin.execute("SELECT dm.ensure_profile(%s, 'author')", (team_id,)).fetchone()[0]  # type: ignore[index]
    return Principal(team_id, profile_id)


def scan_for(admin: psycopg.Connection[Any], needles: list[str]) -> list[tuple[str, str, str, str]]:
    """Every (table, column, type, needle) where a column value contains a needle (case-insensitive)."""
    columns = admin.execute(
        "SELECT c.table_schema, c.table_name, c.column_name, c.data_type "
        "FROM information_schema.columns AS c "
        "JOIN information_schema.tables AS t USING (table_schema, table_name) "
        "WHERE c.table_schema IN ('dm_private', 'dm_migrations') AND t.table_type = 'BASE TABLE' "
        "AND c.data_type = ANY(%s) ORDER BY 1, 2, 3",
        (list(SCANNED_TYPES),),
    ).fetchall()
    assert len(columns) > 20, "the scan found too few columns to be meaningful"
    hits = []
    for schema, table, column, data_type in columns:
        for needle in needles:
            query = sql.SQL("SELECT count(*) FROM {}.{} WHERE strpos(lower({}::text), lower(%s)) > 0").format(
                sql.Identifier(schema), sql.Identifier(table), sql.Identifier(column)
            )
            count = admin.execute(query, (needle,)).fetchone()[0]  # type: ignore[index]
            if count:
                hits.append((f"{schema}.{table}", column, data_type, needle))
    return hits


@pytest.fixture
def erasure_world(admin_conn: psycopg.Connection[Any], db_url: str) -> dict[str, Any]:
    marker = uuid.uuid4().hex[:10]
    # Distinctive made-up words: their english-stemmed lexemes equal the words
    # themselves, so the tsvector scan looks for exactly these.
    secret_words = [f"zorblaxian{marker}", f"quimbertoft{marker}"]
    secret = f"Patient {secret_words[0]} was treated for {secret_words[1]} at the clinic."
    lexemes = admin_conn.execute(
        "SELECT array_agg(lexeme ORDER BY lexeme) FROM unnest(to_tsvector('english', %s))",
        (" ".join(secret_words),),
    ).fetchone()[0]  # type: ignore[index]
    author = _team(admin_conn, "erasure-team")
    with psycopg.connect(db_url) as conn, acting_as(conn, author) as cur:
        secret_id, other_id = write.ingest_evidence(
            cur,
            team_id=author.team_id,
            items=[
                {
                    "text": secret,
                    "source": {
                        "external_id": "chat:clinic",
                        "kind": "conversation",
                        "title": "clinic chat",
                    },
                    "labels": {"pii": True},
                    "memory_type": "conversation",
                },
                {
                    "text": "The clinic opens at nine.",
                    "source": {"external_id": "doc:hours", "kind": "document"},
                },
            ],
        )
        patient, clinic = write.upsert_entities(
            cur,
            team_id=author.team_id,
            items=[{"name": "The patient"}, {"name": "The clinic", "kind": "place"}],
        )
        only_secret = write.assert_relationship(
            cur,
            team_id=author.team_id,
            relationship={
                "subject_entity_id": patient,
                "predicate": "treated_at",
                "object_entity_id": clinic,
                "evidence_ids": [
                    {"evidence_id": secret_id, "span_start": 8, "span_end": 8 + len(secret_words[0])}
                ],
            },
        )
        also_other = write.assert_relationship(
            cur,
            team_id=author.team_id,
            relationship={
                "subject_entity_id": clinic,
                "predicate": "opens_at",
                "object_value": "nine",
                "evidence_ids": [secret_id, other_id],
            },
        )
        for rel in (only_secret, also_other):
            write.record_verification(
                cur, team_id=author.team_id, relationship_id=rel, decision="validated_claim"
            )
        write.record_feedback(
            cur,
            team_id=author.team_id,
            feedback={
                "query": "when was the patient treated",
                "evidence_id": secret_id,
                "judgment": "used",
            },
        )
        write.take_usage_snapshot(cur, team_id=author.team_id)
    # the embedding worker has embedded every document (simulated with a constant vector)
    admin_conn.execute(
        "INSERT INTO dm_private.document_embeddings "
        "(team_id, document_id, contract_id, document_version, source_version, embedding) "
        "SELECT d.team_id, d.document_id, c.contract_id, d.document_version, d.source_version, "
        "array_fill(0.05::real, ARRAY[c.dimensions])::vector::halfvec "
        "FROM dm_private.search_documents AS d, dm_private.embedding_contracts AS c WHERE c.is_active"
    )
    admin_conn.execute("UPDATE dm_private.search_documents SET search_state = 'ready', pending_since = NULL")
    return {
        "author": author,
        "secret": secret,
        "needles": [secret, *secret_words, *lexemes],
        "secret_id": secret_id,
        "other_id": other_id,
        "only_secret": only_secret,
        "also_other": also_other,
    }


def _erase(db_url: str, world: dict[str, Any], reason: str = "data subject request 42") -> None:
    author: Principal = world["author"]
    with psycopg.connect(db_url) as conn, acting_as(conn, author) as cur:
        write.erase_evidence(cur, team_id=author.team_id, evidence_id=world["secret_id"], reason=reason)


def test_the_scan_finds_the_text_before_erasure(
    admin_conn: psycopg.Connection[Any], erasure_world: dict[str, Any]
) -> None:
    hits = {(table, column) for table, column, _, _ in scan_for(admin_conn, erasure_world["needles"])}
    assert ("dm_private.evidence", "text") in hits
    assert ("dm_private.search_documents", "body") in hits
    assert ("dm_private.search_documents", "search_vector") in hits


def test_erasure_leaves_the_text_in_no_column_of_any_table(
    admin_conn: psycopg.Connection[Any], db_url: str, erasure_world: dict[str, Any]
) -> None:
    _erase(db_url, erasure_world)
    assert scan_for(admin_conn, erasure_world["needles"]) == []


def test_erasure_keeps_a_tombstone_and_ids_only(
    admin_conn: psycopg.Connection[Any], db_url: str, erasure_world: dict[str, Any]
) -> None:
    world = erasure_world
    _erase(db_url, world)
    digest = hashlib.sha256(world["secret"].encode()).digest()
    evidence = admin_conn.execute(
        "SELECT text, state::text, content_hash FROM dm_private.evidence WHERE evidence_id = %s",
        (world["secret_id"],),
    ).fetchone()
    assert evidence == (None, "erased", digest)
    tombstone = admin_conn.execute(
        "SELECT content_hash, erased_by_profile_id, reason, erased_at IS NOT NULL "
        "FROM dm_private.erasure_tombstones WHERE evidence_id = %s",
        (world["secret_id"],),
    ).fetchone()
    assert tombstone == (digest, world["author"].profile_id, "data subject request 42", True)
    links = admin_conn.execute(
        "SELECT relationship_id, span_start, span_end FROM dm_private.relationship_evidence "
        "WHERE evidence_id = %s ORDER BY relationship_id",
        (world["secret_id"],),
    ).fetchall()
    assert sorted(links) == sorted([(world["only_secret"], None, None), (world["also_other"], None, None)])
    transition = admin_conn.execute(
        "SELECT from_status, to_status, actor_profile_id, reason FROM dm_private.lifecycle_transitions "
        "WHERE subject_kind = 'evidence' AND subject_id = %s",
        (world["secret_id"],),
    ).fetchall()
    assert transition == [("active", "erased", world["author"].profile_id, "data subject request 42")]


def test_erasure_empties_the_search_document_and_deletes_its_vectors(
    admin_conn: psycopg.Connection[Any], db_url: str, erasure_world: dict[str, Any]
) -> None:
    world = erasure_world
    before = admin_conn.execute(
        "SELECT document_id, document_version FROM dm_private.search_documents WHERE subject_id = %s",
        (world["secret_id"],),
    ).fetchone()
    assert before is not None
    _erase(db_url, world)
    doc = admin_conn.execute(
        "SELECT body, search_vector::text, document_version, is_recallable, search_state::text "
        "FROM dm_private.search_documents WHERE document_id = %s",
        (before[0],),
    ).fetchone()
    assert doc == ("", "", before[1] + 1, False, "pending")
    vectors = admin_conn.execute(
        "SELECT count(*) FROM dm_private.document_embeddings WHERE document_id = %s", (before[0],)
    ).fetchone()
    assert vectors == (0,)
    others = admin_conn.execute(
        "SELECT count(*) FROM dm_private.document_embeddings AS v "
        "JOIN dm_private.search_documents AS d USING (team_id, document_id) WHERE d.subject_id = %s",
        (world["other_id"],),
    ).fetchone()
    assert others == (1,), "only the erased evidence loses its vectors"


def test_a_relationship_supported_only_by_erased_evidence_loses_eligibility(
    admin_conn: psycopg.Connection[Any], db_url: str, erasure_world: dict[str, Any]
) -> None:
    world = erasure_world
    _erase(db_url, world)
    statuses = dict(
        admin_conn.execute(
            "SELECT relationship_id, status::text FROM dm_private.relationships "
            "WHERE relationship_id = ANY(%s)",
            ([world["only_secret"], world["also_other"]],),
        ).fetchall()
    )
    assert statuses == {world["only_secret"]: "pending_evidence", world["also_other"]: "active"}
    last = admin_conn.execute(
        "SELECT from_status, to_status, from_tier, to_tier, reason FROM dm_private.lifecycle_transitions "
        "WHERE subject_id = %s ORDER BY created_at DESC LIMIT 1",
        (world["only_secret"],),
    ).fetchone()
    assert last is not None
    assert last[:4] == ("active", "pending_evidence", "validated_claim", "validated_claim")
    assert last[4].startswith("support_erased")
    # It cannot be accepted again without unerased evidence.
    author: Principal = world["author"]
    with (
        psycopg.connect(db_url) as conn,
        pytest.raises(psycopg.Error) as raised,
        acting_as(conn, author) as cur,
    ):
        write.record_verification(
            cur, team_id=author.team_id, relationship_id=world["only_secret"], decision="fact"
        )
    assert raised.value.sqlstate == "DM409"


def test_erased_evidence_cannot_be_erased_again_nor_cited(
    admin_conn: psycopg.Connection[Any], db_url: str, erasure_world: dict[str, Any]
) -> None:
    world = erasure_world
    _erase(db_url, world)
    author: Principal = world["author"]
    with psycopg.connect(db_url) as conn:
        with pytest.raises(psycopg.Error) as again, acting_as(conn, author) as cur:
            write.erase_evidence(cur, team_id=author.team_id, evidence_id=world["secret_id"])
        assert again.value.sqlstate == "DM409"
        with pytest.raises(psycopg.Error) as cited, acting_as(conn, author) as cur:
            entity = write.upsert_entities(cur, team_id=author.team_id, items=[{"name": "The patient"}])[0]
            write.assert_relationship(
                cur,
                team_id=author.team_id,
                relationship={
                    "subject_entity_id": entity,
                    "predicate": "mentioned_in",
                    "object_value": "chat",
                    "evidence_ids": [world["secret_id"]],
                },
            )
        assert cited.value.sqlstate == "22023"
