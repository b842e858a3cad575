"""Trace and discovery through the public write path and the typed Python calls.

Alice records that Mark works on Dense-Mem; Bob records that Mark works on the
Wiki (a disagreement the write path records, and a conflict because this team
declares works_on single-valued); Carol verifies both. Alice then
corrects herself with a replacement relationship. Trace must reconstruct the
accepted evidence and the lifecycle lineage from the authoritative tables,
discovery must offer the correction while Bob's knowledge stays intact and
traceable, and another team's ID must answer exactly like a missing one.
"""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest

from densemem.store import trace, write
from densemem.store.session import Principal, acting_as

SETTINGS = {
    "discovery": {
        "seed_count": 5,
        "fan_out": 20,
        "max_edges": 200,
        "max_depth": 2,
        "max_paths": 10,
        "max_path_bytes": 20000,
        "time_budget_ms": 60000,
    }
}


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


@pytest.fixture
def story(admin_conn: psycopg.Connection[Any]) -> dict[str, Any]:
    team, who = _team(admin_conn, "trace team", ["alice", "bob", "carol"])
    other, other_who = _team(admin_conn, "trace other team", ["eve"])
    ids: dict[str, Any] = {"team": team, "other": other, **who}
    # In this team a person works on one project at a time: works_on is
    # single-valued (by default it is multi-valued, see
    # test_multi_valued_predicate_is_no_conflict), so Bob's Wiki disagrees.
    admin_conn.execute(
        "INSERT INTO dm_private.predicate_cardinalities (team_id, predicate, cardinality) "
        "VALUES (%s, 'works_on', 'single')",
        (team,),
    )

    def as_(profile: uuid.UUID, team_id: uuid.UUID = team) -> Any:
        return acting_as(admin_conn, Principal(team_id, profile))

    with as_(who["alice"]) as cur:
        ids["e_alice"], ids["e_fix"] = write.ingest_evidence(
            cur,
            team_id=team,
            items=[
                {
                    "text": "Alice: Mark works on Dense-Mem.",
                    "source": {"external_id": "chat:alice", "kind": "chat"},
                },
                {
                    "text": "Alice: correction, Mark works on Redis.",
                    "source": {"external_id": "chat:fix", "kind": "chat"},
                },
            ],
        )
        mark, dense_mem, wiki, redis = write.upsert_entities(
            cur,
            team_id=team,
            items=[{"name": "Mark"}, {"name": "Dense-Mem"}, {"name": "Wiki"}, {"name": "Redis"}],
        )
        ids.update(mark=mark, dense_mem=dense_mem, wiki=wiki, redis=redis)
        ids["r_alice"] = write.assert_relationship(
            cur,
            team_id=team,
            relationship={
                "subject_entity_id": mark,
                "predicate": "works_on",
                "object_entity_id": dense_mem,
                "evidence_ids": [{"evidence_id": ids["e_alice"], "span_start": 7, "span_end": 30}],
            },
        )
    with as_(who["bob"]) as cur:
        (ids["e_bob"],) = write.ingest_evidence(
            cur,
            team_id=team,
            items=[
                {
                    "text": "Bob: Mark works on the Wiki.",
                    "source": {"external_id": "chat:bob", "kind": "chat"},
                }
            ],
        )
        ids["r_bob"] = write.assert_relationship(
            cur,
            team_id=team,
            relationship={
                "subject_entity_id": mark,
                "predicate": "works_on",
                "object_entity_id": wiki,
                "evidence_ids": [ids["e_bob"]],
            },
        )
    with as_(who["carol"]) as cur:
        for rel in (ids["r_alice"], ids["r_bob"]):
            write.record_verification(
                cur, team_id=team, relationship_id=rel, decision="validated_claim", rationale="checked"
            )
    with as_(who["alice"]) as cur:
        ids["r_fix"] = write.assert_relationship(
            cur,
            team_id=team,
            relationship={
                "subject_entity_id": mark,
                "predicate": "works_on",
                "object_entity_id": redis,
                "evidence_ids": [ids["e_fix"]],
            },
        )
    with as_(who["carol"]) as cur:
        write.record_verification(
            cur, team_id=team, relationship_id=ids["r_fix"], decision="fact", rationale="confirmed"
        )
    with as_(who["alice"]) as cur:
        write.move_relationship(
            cur,
            team_id=team,
            relationship_id=ids["r_alice"],
            move="supersede",
            reason="I was wrong",
            replacement_relationship_id=ids["r_fix"],
        )
    with as_(other_who["eve"], other) as cur:
        (e_other,) = write.ingest_evidence(
            cur,
            team_id=other,
            items=[{"text": "Eve: Mark works on Dense-Mem.", "source": {"external_id": "c", "kind": "chat"}}],
        )
        o_mark, o_dense = write.upsert_entities(
            cur, team_id=other, items=[{"name": "Mark"}, {"name": "Dense-Mem"}]
        )
        ids["r_other"] = write.assert_relationship(
            cur,
            team_id=other,
            relationship={
                "subject_entity_id": o_mark,
                "predicate": "works_on",
                "object_entity_id": o_dense,
                "evidence_ids": [e_other],
            },
        )
    return ids


def test_trace_reconstructs_evidence_and_lineage(
    admin_conn: psycopg.Connection[Any], story: dict[str, Any]
) -> None:
    with acting_as(admin_conn, Principal(story["team"], story["bob"])) as cur:
        old = trace.trace_memory(cur, team_id=story["team"], relationship_id=story["r_alice"])
        new = trace.trace_memory(cur, team_id=story["team"], relationship_id=story["r_fix"])
    assert old["relationship"]["status"] == "superseded"
    assert old["relationship"]["owner_profile"]["name"] == "alice"
    [evidence] = old["evidence"]
    assert evidence["evidence_id"] == str(story["e_alice"])
    assert evidence["span_text"] == "Mark works on Dense-Mem"
    assert [v["decision"] for v in old["verification_events"]] == ["validated_claim"]
    assert [t["to_status"] for t in old["transitions"]] == ["pending_evidence", "active", "superseded"]
    assert [r["relationship_id"] for r in old["lineage"]["superseded_by"]] == [str(story["r_fix"])]
    assert [r["relationship_id"] for r in new["lineage"]["supersedes"]] == [str(story["r_alice"])]
    conflicts = {c["other"]["relationship_id"]: c for c in old["conflicts"]}
    assert str(story["r_bob"]) in conflicts
    assert conflicts[str(story["r_fix"])]["preferred_relationship_id"] == str(story["r_fix"])


def test_correction_keeps_the_other_authors_knowledge(
    admin_conn: psycopg.Connection[Any], story: dict[str, Any]
) -> None:
    before = admin_conn.execute(
        "SELECT subject_entity_id, predicate, object_entity_id, polarity, owner_profile_id, tier, status "
        "FROM dm_private.relationships WHERE relationship_id = %s",
        (story["r_bob"],),
    ).fetchone()
    with acting_as(admin_conn, Principal(story["team"], story["alice"])) as cur:
        answer = trace.discovery_for_recall(
            cur, team_id=story["team"], query="What does Mark work on?", settings=SETTINGS
        )
        bob = trace.trace_memory(cur, team_id=story["team"], relationship_id=story["r_bob"])
    after = admin_conn.execute(
        "SELECT subject_entity_id, predicate, object_entity_id, polarity, owner_profile_id, tier, status "
        "FROM dm_private.relationships WHERE relationship_id = %s",
        (story["r_bob"],),
    ).fetchone()
    assert before == after
    edges = [edge["relationship_id"] for path in answer["discovery_paths"] for edge in path["relationships"]]
    assert str(story["r_fix"]) in edges and str(story["r_bob"]) in edges
    assert str(story["r_alice"]) not in edges, "a superseded relationship is never a discovery edge"
    assert bob["evidence"][0]["text"] == "Bob: Mark works on the Wiki."
    by_id = {
        edge["relationship_id"]: edge for path in answer["discovery_paths"] for edge in path["relationships"]
    }
    refs = {ref["relationship_id"]: ref for ref in by_id[str(story["r_fix"])].get("conflicts", [])}
    assert refs[str(story["r_alice"])]["superseded"] is True, "the correction points at what it corrected"
    assert by_id[str(story["r_fix"])]["owner_profile"]["name"] == "alice"
    assert "Mark works on" not in str(answer), "no evidence text in discovery"


def test_other_team_id_answers_like_a_missing_one(
    admin_conn: psycopg.Connection[Any], story: dict[str, Any]
) -> None:
    messages = []
    for relationship_id in (story["r_other"], uuid.uuid4()):
        with pytest.raises(psycopg.Error) as raised, acting_as(admin_conn, Principal(story["team"])) as cur:
            trace.trace_memory(cur, team_id=story["team"], relationship_id=relationship_id)
        assert raised.value.sqlstate == "DM404"
        messages.append((raised.value.diag.message_primary, raised.value.diag.message_hint))
    assert messages[0] == messages[1]
    with pytest.raises(psycopg.Error) as raised, acting_as(admin_conn, Principal(story["team"])) as cur:
        trace.trace_memory(cur, team_id=story["other"], relationship_id=story["r_other"])
    assert raised.value.sqlstate == "42501", "naming another team than the authenticated one is refused"


def test_erased_evidence_is_a_tombstone_in_trace(
    admin_conn: psycopg.Connection[Any], story: dict[str, Any]
) -> None:
    with acting_as(admin_conn, Principal(story["team"], story["bob"])) as cur:
        write.erase_evidence(cur, team_id=story["team"], evidence_id=story["e_bob"], reason="asked to forget")
    with acting_as(admin_conn, Principal(story["team"], story["alice"])) as cur:
        bob = trace.trace_memory(cur, team_id=story["team"], relationship_id=story["r_bob"])
    [evidence] = bob["evidence"]
    assert evidence["state"] == "erased"
    assert "text" not in evidence and "span_text" not in evidence
    assert evidence["tombstone"]["content_sha256"]
    assert "Wiki." not in str(bob["evidence"])


def test_proximity_and_communities_calls(admin_conn: psycopg.Connection[Any], story: dict[str, Any]) -> None:
    with acting_as(admin_conn, Principal(story["team"], story["alice"])) as cur:
        hops = trace.entity_proximity(
            cur,
            team_id=story["team"],
            seed_entity_ids=[story["mark"]],
            evidence_ids=[story["e_bob"], story["e_fix"], story["e_alice"]],
        )
        count = trace.refresh_communities(cur, team_id=story["team"])
    assert hops == {story["e_bob"]: 0, story["e_fix"]: 0}, "superseded support gives no proximity"
    assert count == 1


def test_multi_valued_predicate_is_no_conflict(
    admin_conn: psycopg.Connection[Any], story: dict[str, Any]
) -> None:
    """By default works_on is multi-valued: Mark may work on Dense-Mem and the Wiki.

    The recorded disagreement stays in dm_private.conflicts (history is not
    rewritten), but trace and discovery no longer call it a conflict; the
    correction Alice chose (a preferred side) still is one.
    """
    admin_conn.execute(
        "DELETE FROM dm_private.predicate_cardinalities WHERE team_id = %s AND predicate = 'works_on'",
        (story["team"],),
    )
    with acting_as(admin_conn, Principal(story["team"], story["alice"])) as cur:
        old = trace.trace_memory(cur, team_id=story["team"], relationship_id=story["r_alice"])
        bob = trace.trace_memory(cur, team_id=story["team"], relationship_id=story["r_bob"])
        answer = trace.discovery_for_recall(
            cur, team_id=story["team"], query="What does Mark work on?", settings=SETTINGS
        )
    others = {c["other"]["relationship_id"] for c in old["conflicts"]}
    assert str(story["r_bob"]) not in others
    assert str(story["r_fix"]) in others, "a correction with a preferred side stays a conflict"
    assert bob["conflicts"] == []
    by_id = {
        edge["relationship_id"]: edge for path in answer["discovery_paths"] for edge in path["relationships"]
    }
    assert str(story["r_bob"]) in by_id
    assert "conflicts" not in by_id[str(story["r_bob"])]
    recorded = admin_conn.execute(
        "SELECT count(*) FROM dm_private.conflicts WHERE team_id = %s", (story["team"],)
    ).fetchone()
    assert recorded is not None and recorded[0] >= 2, "the recorded disagreements are kept"
