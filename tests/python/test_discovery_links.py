"""evidence_entity_links (migration 0038) stays equal to what it is derived from.

The table is what proximity and discovery's evidence seeds read instead of
relationship_evidence joined to relationships. After every kind of write
(assert, verification, supersede, retract, erasure, a span-only update, a
direct bulk insert in replica mode, a delete) it must hold exactly the
accepted links whose relationship is active and validated_claim or fact, with
that relationship's endpoints, owner and recorded end: the oracle below
recomputes that from the authoritative tables. The service role sees only its
own team's links. evidence_link_endpoints (migration 0073, proximity's
per-evidence read) must stay the summary of those links after the same
writes, and after direct writes to the links themselves. The service role
may update a link's copied columns in place (0081, session 13: one endpoint
recount per relationship update) but only inside its team, and never its key.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

import psycopg
import pytest

from densemem.store import write
from densemem.store.session import Principal, acting_as

ORACLE = """
SELECT re.team_id, re.evidence_id, re.relationship_id, r.subject_entity_id, r.object_entity_id,
       r.owner_profile_id, r.known_to
FROM dm_private.relationship_evidence AS re
JOIN dm_private.relationships AS r ON r.team_id = re.team_id AND r.relationship_id = re.relationship_id
WHERE re.accepted AND r.status = 'active' AND r.tier IN ('validated_claim', 'fact')
ORDER BY 1, 2, 3
"""
TABLE = """
SELECT team_id, evidence_id, relationship_id, subject_entity_id, object_entity_id, owner_profile_id, known_to
FROM dm_private.evidence_entity_links ORDER BY 1, 2, 3
"""


def _team(
    conn: psycopg.Connection[Any], name: str, profiles: list[str]
) -> tuple[uuid.UUID, dict[str, uuid.UUID]]:
    row = conn.execute("SELECT dm.ensure_team(%s)", (name,)).fetchone()
    assert row is not None
    team_id: uuid.UUID = row[0]
    ids: dict[str, uuid.UUID] = {}
    for profile in profiles:
        got = conn.execute("SELECT dm.ensure_profile(%s, %s)", (team_id, profile)).fetchone()
        assert got is not None
        ids[profile] = got[0]
    return team_id, ids


ENDPOINTS = """
SELECT team_id, evidence_id, entity_ids, link_count, owner_ids, earliest_known_to
FROM dm_private.evidence_link_endpoints ORDER BY 1, 2
"""


def _check_endpoints(conn: psycopg.Connection[Any]) -> None:
    """evidence_link_endpoints (0073) is the per-evidence summary of evidence_entity_links: sorted
    distinct endpoints, link count, sorted distinct owners, earliest recorded end; an evidence row
    whose links are all gone keeps an empty row."""
    expected: dict[tuple[Any, Any], tuple[list[Any], int, list[Any], Any]] = {}
    grouped: dict[tuple[Any, Any], list[tuple[Any, ...]]] = {}
    for row in conn.execute(TABLE).fetchall():
        grouped.setdefault((row[0], row[1]), []).append(row)
    for key, links in grouped.items():
        ends = [link[6] for link in links if link[6] is not None]
        expected[key] = (
            sorted({link[3] for link in links} | {link[4] for link in links if link[4] is not None}),
            len(links),
            sorted({link[5] for link in links}),
            min(ends) if ends else None,
        )
    stored = {(r[0], r[1]): (list(r[2]), r[3], list(r[4]), r[5]) for r in conn.execute(ENDPOINTS).fetchall()}
    assert {k: v for k, v in stored.items() if v[1] > 0} == expected
    assert all(v == ([], 0, [], None) for v in stored.values() if v[1] == 0)


def _check(conn: psycopg.Connection[Any], expected_count: int) -> None:
    oracle = conn.execute(ORACLE).fetchall()
    assert conn.execute(TABLE).fetchall() == oracle
    assert len(oracle) == expected_count
    _check_endpoints(conn)


def test_links_follow_every_write(admin_conn: psycopg.Connection[Any]) -> None:
    team, who = _team(admin_conn, "links team", ["alice", "carol"])
    other, other_who = _team(admin_conn, "links other team", ["eve"])

    def as_(profile: uuid.UUID, team_id: uuid.UUID = team) -> Any:
        return acting_as(admin_conn, Principal(team_id, profile))

    with as_(who["alice"]) as cur:
        e1, e2, e3 = write.ingest_evidence(
            cur,
            team_id=team,
            items=[
                {"text": "Mark works on Dense-Mem.", "source": {"external_id": "a", "kind": "chat"}},
                {"text": "Mark uses Redis.", "source": {"external_id": "b", "kind": "chat"}},
                {"text": "Mark lives in Berlin.", "source": {"external_id": "c", "kind": "chat"}},
            ],
        )
        mark, dense, redis = write.upsert_entities(
            cur, team_id=team, items=[{"name": "Mark"}, {"name": "Dense-Mem"}, {"name": "Redis"}]
        )
        r1 = write.assert_relationship(
            cur,
            team_id=team,
            relationship={
                "subject_entity_id": mark,
                "predicate": "works_on",
                "object_entity_id": dense,
                "evidence_ids": [e1, e2],
            },
        )
        r2 = write.assert_relationship(
            cur,
            team_id=team,
            relationship={
                "subject_entity_id": mark,
                "predicate": "uses",
                "object_entity_id": redis,
                "evidence_ids": [{"evidence_id": e2, "span_start": 5, "span_end": 9}],
            },
        )
        r3 = write.assert_relationship(
            cur,
            team_id=team,
            relationship={
                "subject_entity_id": mark,
                "predicate": "lives_in",
                "object_value": "Berlin",
                "evidence_ids": [e3],
            },
        )
    # Candidates (pending_evidence) are not eligible: no link yet.
    _check(admin_conn, 0)

    with as_(who["carol"]) as cur:
        write.record_verification(cur, team_id=team, relationship_id=r1, decision="validated_claim")
        write.record_verification(cur, team_id=team, relationship_id=r2, decision="fact")
        write.record_verification(cur, team_id=team, relationship_id=r3, decision="validated_claim")
    _check(admin_conn, 4)  # r1 by e1 and e2, r2 by e2, r3 (literal object) by e3
    literal = admin_conn.execute(
        "SELECT object_entity_id FROM dm_private.evidence_entity_links WHERE relationship_id = %s", (r3,)
    ).fetchone()
    assert literal == (None,)

    # The other team's links exist, and the service role of this team never sees them.
    with as_(other_who["eve"], other) as cur:
        (eo,) = write.ingest_evidence(
            cur,
            team_id=other,
            items=[{"text": "Eve uses Redis.", "source": {"external_id": "x", "kind": "chat"}}],
        )
        o_eve, o_redis = write.upsert_entities(cur, team_id=other, items=[{"name": "Eve"}, {"name": "Redis"}])
        ro = write.assert_relationship(
            cur,
            team_id=other,
            relationship={
                "subject_entity_id": o_eve,
                "predicate": "uses",
                "object_entity_id": o_redis,
                "evidence_ids": [eo],
            },
        )
        write.record_verification(cur, team_id=other, relationship_id=ro, decision="fact")
    _check(admin_conn, 5)
    with as_(who["alice"]) as cur:
        seen = cur.execute("SELECT DISTINCT team_id FROM dm_private.evidence_entity_links").fetchall()
        assert [row["team_id"] for row in seen] == [team]
        hidden = cur.execute(
            "SELECT count(*) AS n FROM dm_private.evidence_entity_links WHERE relationship_id = %s", (ro,)
        ).fetchone()
        assert hidden is not None and hidden["n"] == 0
        seen_endpoints = cur.execute(
            "SELECT DISTINCT team_id FROM dm_private.evidence_link_endpoints"
        ).fetchall()
        assert [row["team_id"] for row in seen_endpoints] == [team]

    # Lifecycle: retract r2 (its link leaves), supersede r1 by a new relationship.
    with as_(who["alice"]) as cur:
        write.move_relationship(cur, team_id=team, relationship_id=r2, move="retract", reason="wrong")
    _check(admin_conn, 4)
    with as_(who["alice"]) as cur:
        r4 = write.assert_relationship(
            cur,
            team_id=team,
            relationship={
                "subject_entity_id": mark,
                "predicate": "works_on",
                "object_entity_id": redis,
                "evidence_ids": [e2],
            },
        )
    with as_(who["carol"]) as cur:
        write.record_verification(cur, team_id=team, relationship_id=r4, decision="fact")
    with as_(who["alice"]) as cur:
        write.move_relationship(
            cur,
            team_id=team,
            relationship_id=r1,
            move="supersede",
            reason="fix",
            replacement_relationship_id=r4,
        )
    _check(admin_conn, 3)  # r3 by e3, r4 by e2, eve's

    # Erasure: spans go (no change to links); r3 loses its only support and
    # leaves discovery (pending_evidence), so its link goes too.
    with as_(who["alice"]) as cur:
        write.erase_evidence(cur, team_id=team, evidence_id=e3, reason="gdpr")
    _check(admin_conn, 2)

    # A changed recorded end is copied.
    admin_conn.execute(
        "UPDATE dm_private.relationships SET known_to = known_from + interval '1 day' "
        "WHERE relationship_id = %s",
        (r4,),
    )
    _check(admin_conn, 2)
    # An unaccepted link leaves, an accepted one comes back.
    admin_conn.execute(
        "UPDATE dm_private.relationship_evidence SET accepted = false WHERE relationship_id = %s", (r4,)
    )
    _check(admin_conn, 1)
    admin_conn.execute(
        "UPDATE dm_private.relationship_evidence SET accepted = true WHERE relationship_id = %s", (r4,)
    )
    _check(admin_conn, 2)

    # A bulk loader in replica mode (user triggers off) still keeps the links.
    admin_conn.execute("SET session_replication_role = replica")
    try:
        admin_conn.execute(
            "INSERT INTO dm_private.relationship_evidence (team_id, relationship_id, evidence_id) "
            "VALUES (%s, %s, %s)",
            (team, r4, e1),
        )
        _check(admin_conn, 3)
        admin_conn.execute(
            "DELETE FROM dm_private.relationship_evidence WHERE relationship_id = %s AND evidence_id = %s",
            (r4, e1),
        )
        _check(admin_conn, 2)
    finally:
        admin_conn.execute("SET session_replication_role = origin")

    # Direct writes to the links themselves (an owner's repair, a truncate)
    # reach the per-evidence endpoints too.
    admin_conn.execute(
        "UPDATE dm_private.evidence_entity_links SET known_to = now() - interval '1 hour' "
        "WHERE relationship_id = %s",
        (r4,),
    )
    _check_endpoints(admin_conn)
    stored = admin_conn.execute(
        "SELECT earliest_known_to IS NOT NULL FROM dm_private.evidence_link_endpoints WHERE evidence_id = %s",
        (e2,),
    ).fetchone()
    assert stored == (True,)
    admin_conn.execute("DELETE FROM dm_private.evidence_entity_links WHERE relationship_id = %s", (r4,))
    _check_endpoints(admin_conn)
    admin_conn.execute("TRUNCATE dm_private.evidence_entity_links")
    assert admin_conn.execute("SELECT count(*) FROM dm_private.evidence_link_endpoints").fetchone() == (0,)


def test_endpoints_of_one_evidence_written_at_once(db_url: str, admin_conn: psycopg.Connection[Any]) -> None:
    """Two transactions link the same evidence at the same time, first while it has no row yet,
    then while it has one: the second writer waits for the first and then counts both links. A
    count taken from its own snapshot (or in the statement that waited) would miss the first
    writer's link."""
    team, who = _team(admin_conn, "endpoints race team", ["alice", "carol"])
    names = ["Ann", "Bob", "Cid", "Dan", "Eve"]
    with acting_as(admin_conn, Principal(team, who["alice"])) as cur:
        shared, support = write.ingest_evidence(
            cur,
            team_id=team,
            items=[
                {"text": "Ann met Bob, Cid, Dan and Eve.", "source": {"external_id": "s", "kind": "chat"}},
                {"text": "Ann knows them all.", "source": {"external_id": "t", "kind": "chat"}},
            ],
        )
        entities = write.upsert_entities(cur, team_id=team, items=[{"name": n} for n in names])
        rels = [
            write.assert_relationship(
                cur,
                team_id=team,
                relationship={
                    "subject_entity_id": entities[0],
                    "predicate": "knows",
                    "object_entity_id": other,
                    "evidence_ids": [support],
                },
            )
            for other in entities[1:]
        ]
    with acting_as(admin_conn, Principal(team, who["carol"])) as cur:
        for rel in rels:
            write.record_verification(cur, team_id=team, relationship_id=rel, decision="fact")

    link = (
        "INSERT INTO dm_private.relationship_evidence (team_id, relationship_id, evidence_id) "
        "VALUES (%s, %s, %s)"
    )
    for first_rel, second_rel, expected in ((rels[0], rels[1], 2), (rels[2], rels[3], 4)):
        with psycopg.connect(db_url) as first, psycopg.connect(db_url) as second:
            first.execute(link, (team, first_rel, shared))
            done = threading.Event()

            def link_second(
                rel: Any = second_rel, conn: psycopg.Connection[Any] = second, done: threading.Event = done
            ) -> None:
                conn.execute(link, (team, rel, shared))
                conn.commit()
                done.set()

            writer = threading.Thread(target=link_second)
            writer.start()
            assert not done.wait(1.0), "the second writer waits for the first one"
            first.commit()
            writer.join(30)
            assert done.is_set()
        row = admin_conn.execute(
            "SELECT entity_ids, link_count FROM dm_private.evidence_link_endpoints WHERE evidence_id = %s",
            (shared,),
        ).fetchone()
        assert row is not None and row[1] == expected
    assert row is not None and sorted(row[0]) == sorted(entities)
    _check_endpoints(admin_conn)


def _verified_link(
    conn: psycopg.Connection[Any], team: uuid.UUID, who: dict[str, uuid.UUID], text: str
) -> uuid.UUID:
    """A team's fact supported by one evidence row: one link. Returns the relationship id."""
    with acting_as(conn, Principal(team, who["alice"])) as cur:
        (evidence,) = write.ingest_evidence(
            cur, team_id=team, items=[{"text": text, "source": {"external_id": text, "kind": "chat"}}]
        )
        subject, obj = write.upsert_entities(cur, team_id=team, items=[{"name": "Ann"}, {"name": "Bob"}])
        rel = write.assert_relationship(
            cur,
            team_id=team,
            relationship={
                "subject_entity_id": subject,
                "predicate": "knows",
                "object_entity_id": obj,
                "evidence_ids": [evidence],
            },
        )
    with acting_as(conn, Principal(team, who["carol"])) as cur:
        write.record_verification(cur, team_id=team, relationship_id=rel, decision="fact")
    return rel


def test_service_updates_links_only_in_its_team(admin_conn: psycopg.Connection[Any]) -> None:
    """0081 grants the service role UPDATE on the four columns a link copies from its relationship.
    Row security keeps the update inside the acting team (another team's links match no row), and
    the key columns are not granted, so no link moves to another team."""
    team_a, who_a = _team(admin_conn, "links update team a", ["alice", "carol"])
    team_b, who_b = _team(admin_conn, "links update team b", ["alice", "carol"])
    rel_a = _verified_link(admin_conn, team_a, who_a, "Ann knows Bob.")
    rel_b = _verified_link(admin_conn, team_b, who_b, "Ann knows Bob too.")
    _check(admin_conn, 2)
    before = admin_conn.execute(TABLE).fetchall()

    with acting_as(admin_conn, Principal(team_a, who_a["alice"])) as cur:
        cur.execute(
            "UPDATE dm_private.evidence_entity_links SET known_to = '2030-01-01' "
            "WHERE team_id = %s AND relationship_id = %s",
            (team_b, rel_b),
        )
        assert cur.rowcount == 0
        cur.execute("UPDATE dm_private.evidence_entity_links SET known_to = '2030-01-01'")
        assert cur.rowcount == 1  # its own link only
    after = admin_conn.execute(TABLE).fetchall()
    assert [row for row in after if row[0] == team_b] == [row for row in before if row[0] == team_b]
    assert [row[6] for row in after if row[0] == team_a] == [
        admin_conn.execute("SELECT '2030-01-01'::timestamptz").fetchone()[0]
    ]
    _check_endpoints(admin_conn)

    for column in ("team_id", "evidence_id", "relationship_id"):
        with (
            pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied"),
            acting_as(admin_conn, Principal(team_a, who_a["alice"])) as cur,
        ):
            cur.execute(
                f"UPDATE dm_private.evidence_entity_links SET {column} = %s WHERE relationship_id = %s",
                (team_b if column == "team_id" else uuid.uuid4(), rel_a),
            )
    assert admin_conn.execute(TABLE).fetchall() == after
