"""Discovery inside dm.recall_memory: graph context, hypotheses and communities never become evidence.

Data goes through the public write path. The same recall runs under three
ranking profiles that differ only in their discovery settings: the default,
one with discovery switched off (no seeds, no paths) and one with hypotheses
and communities switched on. The direct results must be identical in all
three; only the separate fields may differ.
"""

from __future__ import annotations

import copy
import json
import uuid
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from densemem.store import trace, write
from densemem.store.session import Principal, acting_as


def _scalar(conn: psycopg.Connection[Any], query: str, params: tuple[Any, ...]) -> Any:
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return row[0]


@pytest.fixture
def team(admin_conn: psycopg.Connection[Any]) -> dict[str, Any]:
    if _scalar(admin_conn, "SELECT to_regprocedure('dm.recall_memory(text,uuid,vector,jsonb)') IS NULL", ()):
        pytest.skip("dm.recall_memory is not installed")
    team_id = _scalar(admin_conn, "SELECT dm.ensure_team('recall discovery team')", ())
    alice = _scalar(admin_conn, "SELECT dm.ensure_profile(%s, 'alice')", (team_id,))
    bob = _scalar(admin_conn, "SELECT dm.ensure_profile(%s, 'bob')", (team_id,))
    texts = [
        "Mark works on Dense-Mem, the memory engine.",
        "Dense-Mem stores its memory in PostgreSQL.",
        "Dense-Mem uses Redis for a short cache.",
        "Mark maintains the team wiki on Fridays.",
        "The quarterly planning meeting moved to Tuesday.",
    ]
    with acting_as(admin_conn, Principal(team_id, alice)) as cur:
        evidence = write.ingest_evidence(
            cur,
            team_id=team_id,
            items=[
                {"text": t, "source": {"external_id": f"note:{i}", "kind": "note"}}
                for i, t in enumerate(texts)
            ],
        )
        mark, dense, pg, redis, wiki = write.upsert_entities(
            cur,
            team_id=team_id,
            items=[{"name": n} for n in ("Mark", "Dense-Mem", "PostgreSQL", "Redis", "Wiki")],
        )
        edges = [
            (mark, "works_on", dense, 0),
            (dense, "uses", pg, 1),
            (dense, "uses", redis, 2),
            (mark, "maintains", wiki, 3),
        ]
        rels = [
            write.assert_relationship(
                cur,
                team_id=team_id,
                relationship={
                    "subject_entity_id": s,
                    "predicate": p,
                    "object_entity_id": o,
                    "evidence_ids": [evidence[e]],
                },
            )
            for s, p, o, e in edges
        ]
        cur.execute(
            "SELECT dm.add_hypothesis(%s, %s)",
            (team_id, Jsonb({"statement": "Mark may move Dense-Mem to a new memory store"})),
        )
    with acting_as(admin_conn, Principal(team_id, bob)) as cur:
        for rel in rels:
            write.record_verification(
                cur, team_id=team_id, relationship_id=rel, decision="fact", rationale="ok"
            )
        trace.refresh_communities(cur, team_id=team_id)
    default = _scalar(admin_conn, "SELECT settings FROM dm_private.ranking_profiles WHERE is_default", ())
    off = copy.deepcopy(default)
    off["discovery"] = {**off.get("discovery", {}), "seed_count": 0, "max_paths": 0}
    extras = copy.deepcopy(default)
    extras["hypotheses"] = {"enabled": True, "limit": 3}
    extras["communities"] = {"enabled": True, "limit": 3}
    for name, settings in (("test no discovery", off), ("test discovery extras", extras)):
        admin_conn.execute(
            "INSERT INTO dm_private.ranking_profiles (name, version, settings) VALUES (%s, 1, %s)",
            (name, Jsonb(settings)),
        )
    return {"team": team_id, "alice": alice, "evidence": evidence, "rels": rels}


def recall(
    conn: psycopg.Connection[Any], team: dict[str, Any], query: str, request: dict[str, Any]
) -> dict[str, Any]:
    with acting_as(conn, Principal(team["team"], team["alice"])) as cur:
        cur.execute(
            "SELECT dm.recall_memory(%s, %s, NULL, %s) AS answer", (query, team["team"], Jsonb(request))
        )
        row = cur.fetchone()
    assert row is not None
    answer: dict[str, Any] = row["answer"]
    return answer


def test_graph_context_never_becomes_evidence(
    admin_conn: psycopg.Connection[Any], team: dict[str, Any]
) -> None:
    query = "What does Mark work on at Dense-Mem?"
    plain = recall(admin_conn, team, query, {})
    off = recall(admin_conn, team, query, {"ranking_profile": "test no discovery"})
    extras = recall(
        admin_conn, team, query, {"ranking_profile": "test discovery extras", "include_hypotheses": True}
    )
    assert plain["results"], "the query finds evidence"
    assert plain["discovery_paths"], "recall carries discovery paths"
    assert off["discovery_paths"] == []
    assert plain["results"] == off["results"] == extras["results"], (
        "discovery, hypotheses and communities never add, remove or reorder direct results"
    )
    evidence_ids = {str(e) for e in team["evidence"]}
    assert {r["evidence_id"] for r in plain["results"]} <= evidence_ids, "only evidence is a result"
    assert not {str(r) for r in team["rels"]} & {r["evidence_id"] for r in plain["results"]}
    paths_text = json.dumps(plain["discovery_paths"])
    for result in plain["results"]:
        assert result["context"] not in paths_text, "paths never carry evidence text"
    assert extras.get("related_hypotheses"), "hypotheses in their own field"
    hypothesis_ids = {h["hypothesis_id"] for h in extras["related_hypotheses"]}
    assert not hypothesis_ids & {r["evidence_id"] for r in extras["results"]}


def test_known_relationships_never_reappear_in_recall(
    admin_conn: psycopg.Connection[Any], team: dict[str, Any]
) -> None:
    query = "What does Mark work on at Dense-Mem?"
    first = recall(admin_conn, team, query, {})
    shown = {e["relationship_id"] for p in first["discovery_paths"] for e in p["relationships"]}
    assert shown
    second = recall(admin_conn, team, query, {"known_relationship_ids": sorted(shown)})
    again = json.dumps(second["discovery_paths"])
    assert not any(rel in again for rel in shown)
    assert uuid.UUID(next(iter(shown)))  # IDs are UUIDs, traceable
