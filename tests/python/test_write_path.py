"""The write path through densemem.store.write, as the service role.

- Search documents never hold stale text: after every step of a long
  scenario, every evidence, entity and relationship has exactly one document
  that agrees with the authoritative row (body, tsvector, source version,
  eligibility mirror); and another session sees a row and its document
  together or not at all.
- Concurrent ingests into one new source create one source and one revision.
- A 1000-item batch is accepted; 1001 is DM413.
"""

from __future__ import annotations

import datetime as dt
import threading
import uuid
from typing import Any

import psycopg
import pytest

from densemem.store import write
from densemem.store.session import Principal, acting_as

STALE_EVIDENCE_DOCUMENTS = """
SELECT e.evidence_id
FROM dm_private.evidence AS e
JOIN dm_private.source_revisions AS r USING (team_id, source_id, revision_id)
LEFT JOIN dm_private.search_documents AS d
    ON d.team_id = e.team_id AND d.subject_kind = 'evidence' AND d.subject_id = e.evidence_id
WHERE d.document_id IS NULL
   OR d.body <> COALESCE(e.text, '')
   OR d.search_vector <> to_tsvector('english', COALESCE(e.text, ''))
   OR d.source_version <> r.revision_number
   OR d.is_recallable <> (e.state = 'active' AND r.is_current)
   OR d.owner_profile_id <> e.owner_profile_id
   OR d.memory_type <> e.memory_type
   OR d.source_group IS DISTINCT FROM e.source_group
   OR d.source_created_at IS DISTINCT FROM e.created_at
   OR d.sequence_number <> e.sequence_number
   OR d.valid_from IS DISTINCT FROM e.valid_from
   OR d.valid_to IS DISTINCT FROM e.valid_to
   OR d.known_from IS DISTINCT FROM e.known_from
   OR d.known_to IS DISTINCT FROM e.known_to
   OR d.importance <> e.importance
   OR d.confidence <> e.confidence
   OR d.policy_labels <> COALESCE(
        (SELECT array_agg(l.key ORDER BY l.key) FROM jsonb_each(e.labels) AS l WHERE l.value = 'true'::jsonb),
        '{}')
"""

MISSING_GRAPH_DOCUMENTS = """
SELECT 'entity', en.entity_id FROM dm_private.entities AS en
WHERE NOT EXISTS (SELECT 1 FROM dm_private.search_documents AS d
                  WHERE d.team_id = en.team_id AND d.subject_kind = 'entity' AND d.subject_id = en.entity_id
                    AND d.body LIKE en.canonical_name || '%'
                    AND d.search_vector = to_tsvector('english', d.body))
   OR EXISTS (SELECT 1 FROM dm_private.entity_names AS n
              JOIN dm_private.search_documents AS d
                ON d.team_id = n.team_id AND d.subject_kind = 'entity' AND d.subject_id = n.entity_id
              WHERE n.team_id = en.team_id AND n.entity_id = en.entity_id AND strpos(d.body, n.name) = 0)
UNION ALL
SELECT 'relationship', r.relationship_id FROM dm_private.relationships AS r
WHERE NOT EXISTS (SELECT 1 FROM dm_private.search_documents AS d
                  WHERE d.team_id = r.team_id AND d.subject_kind = 'relationship'
                    AND d.subject_id = r.relationship_id
                    AND strpos(d.body, r.predicate) > 0
                    AND d.search_vector = to_tsvector('english', d.body))
   OR EXISTS (SELECT 1 FROM dm_private.relationship_evidence AS re
              JOIN dm_private.evidence AS e USING (team_id, evidence_id)
              JOIN dm_private.search_documents AS d
                ON d.team_id = r.team_id AND d.subject_kind = 'relationship'
               AND d.subject_id = r.relationship_id
              WHERE re.team_id = r.team_id AND re.relationship_id = r.relationship_id
                AND strpos(d.body, e.text) > 0)
"""


def _principal(admin: psycopg.Connection[Any], team: str = "write-path") -> Principal:
    row = admin.execute("SELECT dm.ensure_team(%s)", (team,)).fetchone()
    assert row is not None
    profile = admin.execute("SELECT dm.ensure_profile(%s, 'writer')", (row[0],)).fetchone()
    assert profile is not None
    return Principal(row[0], profile[0])


def _assert_documents_agree(admin: psycopg.Connection[Any], step: str) -> None:
    assert admin.execute(STALE_EVIDENCE_DOCUMENTS).fetchall() == [], f"stale evidence documents after {step}"
    assert admin.execute(MISSING_GRAPH_DOCUMENTS).fetchall() == [], (
        f"missing or stale graph documents after {step}"
    )


def test_search_documents_agree_with_their_rows_after_every_step(
    admin_conn: psycopg.Connection[Any], db_url: str
) -> None:
    me = _principal(admin_conn)
    team = me.team_id
    when = dt.datetime(2025, 5, 1, 12, 0, tzinfo=dt.UTC)
    with psycopg.connect(db_url) as conn:

        def step(name: str, action: Any) -> Any:
            with acting_as(conn, me) as cur:
                result = action(cur)
            _assert_documents_agree(admin_conn, name)
            return result

        ids = step(
            "ingest",
            lambda cur: write.ingest_evidence(
                cur,
                team_id=team,
                items=[
                    {
                        "text": "Grace Hopper found a moth in the relay.",
                        "source": {"external_id": "log:1947", "kind": "logbook", "source_group": "navy"},
                        "labels": {"pii": True, "secret": False},
                        "importance": 0.75,
                        "created_at": when,
                        "valid_from": when,
                        "valid_to": when + dt.timedelta(days=1),
                    },
                    {
                        "text": "The moth was taped into the log.",
                        "source": {"external_id": "log:1947", "kind": "logbook"},
                    },
                    {"text": "COBOL came later.", "source": {"external_id": "notes", "kind": "doc"}},
                ],
            ),
        )
        step(
            "new revision",
            lambda cur: write.ingest_evidence(
                cur,
                team_id=team,
                items=[
                    {
                        "text": "A cleaner transcript.",
                        "source": {"external_id": "log:1947", "kind": "logbook", "revision": "b"},
                    }
                ],
            ),
        )
        step(
            "back to an old revision label",
            lambda cur: write.ingest_evidence(
                cur,
                team_id=team,
                items=[
                    {
                        "text": "Old-edition footnote.",
                        "source": {"external_id": "log:1947", "kind": "logbook", "revision": "1"},
                    }
                ],
            ),
        )
        entities = step(
            "entities",
            lambda cur: write.upsert_entities(
                cur,
                team_id=team,
                items=[{"name": "Grace Hopper", "aliases": ["Amazing Grace"]}, {"name": "COBOL"}],
            ),
        )
        step(
            "alias added",
            lambda cur: write.upsert_entities(
                cur, team_id=team, items=[{"name": "grace  hopper", "aliases": ["Grandma COBOL"]}]
            ),
        )
        rel = step(
            "relationship",
            lambda cur: write.assert_relationship(
                cur,
                team_id=team,
                relationship={
                    "subject_entity_id": entities[0],
                    "predicate": "influenced",
                    "object_entity_id": entities[1],
                    "evidence_ids": [ids[2]],
                },
            ),
        )
        step(
            "verify",
            lambda cur: write.record_verification(cur, team_id=team, relationship_id=rel, decision="fact"),
        )
        step(
            "quarantine",
            lambda cur: write.move_evidence(cur, team_id=team, evidence_id=ids[2], move="quarantine"),
        )
        step(
            "release", lambda cur: write.move_evidence(cur, team_id=team, evidence_id=ids[2], move="release")
        )
        step(
            "retract", lambda cur: write.move_evidence(cur, team_id=team, evidence_id=ids[1], move="retract")
        )
        step("erase", lambda cur: write.erase_evidence(cur, team_id=team, evidence_id=ids[0]))
    recallable = admin_conn.execute(
        "SELECT d.body FROM dm_private.search_documents AS d "
        "WHERE d.subject_kind = 'evidence' AND d.is_recallable "
        "ORDER BY d.sequence_number"
    ).fetchall()
    assert recallable == [("COBOL came later.",), ("A cleaner transcript.",)]


def test_another_session_sees_a_row_and_its_document_together(
    admin_conn: psycopg.Connection[Any], db_url: str
) -> None:
    me = _principal(admin_conn)
    with psycopg.connect(db_url) as writer:
        with acting_as(writer, me) as cur:
            write.ingest_evidence(
                cur,
                team_id=me.team_id,
                items=[{"text": "Seen together.", "source": {"external_id": "s", "kind": "k"}}],
            )
            # Not committed yet: the other session sees neither the row nor its document.
            outside = admin_conn.execute(
                "SELECT (SELECT count(*) FROM dm_private.evidence), "
                "(SELECT count(*) FROM dm_private.search_documents)"
            ).fetchone()
            assert outside == (0, 0)
            write.upsert_entities(cur, team_id=me.team_id, items=[{"name": "Together"}])
        after = admin_conn.execute(
            "SELECT (SELECT count(*) FROM dm_private.evidence), "
            "(SELECT count(*) FROM dm_private.search_documents WHERE subject_kind = 'evidence'), "
            "(SELECT count(*) FROM dm_private.search_documents WHERE subject_kind = 'entity')"
        ).fetchone()
        assert after == (1, 1, 1)
        # A failed write leaves neither.
        with pytest.raises(psycopg.Error) as failed, acting_as(writer, me) as cur:
            write.ingest_evidence(
                cur,
                team_id=me.team_id,
                items=[
                    {"text": "First is fine.", "source": {"external_id": "s", "kind": "k"}},
                    {"text": "Second is not.", "source": {"external_id": "s", "kind": "k"}, "importance": 7},
                ],
            )
        assert failed.value.sqlstate == "22023"
    assert admin_conn.execute(
        "SELECT count(*) FROM dm_private.search_documents WHERE body = 'First is fine.'"
    ).fetchone() == (0,)


def test_concurrent_ingests_into_one_new_source(admin_conn: psycopg.Connection[Any], db_url: str) -> None:
    me = _principal(admin_conn)
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def ingest(n: int) -> None:
        try:
            with psycopg.connect(db_url) as conn:
                barrier.wait(timeout=30)
                with acting_as(conn, me) as cur:
                    write.ingest_evidence(
                        cur,
                        team_id=me.team_id,
                        items=[
                            {
                                "text": f"Writer {n} was here.",
                                "source": {"external_id": "race", "kind": "chat"},
                            }
                        ],
                    )
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=ingest, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    counts = admin_conn.execute(
        "SELECT (SELECT count(*) FROM dm_private.sources), "
        "(SELECT count(*) FROM dm_private.source_revisions), "
        "(SELECT count(*) FROM dm_private.evidence), "
        "(SELECT count(*) FROM dm_private.search_documents WHERE is_recallable)"
    ).fetchone()
    assert counts == (1, 1, 4, 4)


def test_batch_limits(admin_conn: psycopg.Connection[Any], db_url: str) -> None:
    me = _principal(admin_conn)
    items: list[write.EvidenceItem] = [
        {"text": f"Batch item number {n}.", "source": {"external_id": f"batch:{n % 7}", "kind": "doc"}}
        for n in range(1001)
    ]
    with psycopg.connect(db_url) as conn:
        with pytest.raises(psycopg.Error) as too_many, acting_as(conn, me) as cur:
            write.ingest_evidence(cur, team_id=me.team_id, items=items)
        assert too_many.value.sqlstate == "DM413"
        with acting_as(conn, me) as cur:
            ids = write.ingest_evidence(cur, team_id=me.team_id, items=items[:1000])
    assert len(ids) == len(set(ids)) == 1000
    assert all(isinstance(i, uuid.UUID) for i in ids)
    assert admin_conn.execute(
        "SELECT count(*) FROM dm_private.search_documents WHERE subject_kind = 'evidence' AND is_recallable"
    ).fetchone() == (1000,)


def test_naive_timestamps_are_refused_before_sending(
    admin_conn: psycopg.Connection[Any], db_url: str
) -> None:
    me = _principal(admin_conn)
    with psycopg.connect(db_url) as conn, pytest.raises(ValueError), acting_as(conn, me) as cur:
        write.ingest_evidence(
            cur,
            team_id=me.team_id,
            items=[
                {
                    "text": "x",
                    "source": {"external_id": "s", "kind": "k"},
                    "created_at": dt.datetime(2025, 1, 1),
                }
            ],
        )
