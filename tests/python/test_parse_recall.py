"""The parse used by recall (issue 4, item 2): anchors, time windows and entity seeds.

dm.recall_memory parses the query once with dm.parse_query; request fields
override the parse. These tests ingest evidence through the write path and
recall through the real SQL function.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest

from conftest import create_database_from_template, drop_database
from densemem.store import write
from densemem.store.recall import explain_recall, recall_memory
from densemem.store.session import Principal, acting_as

CLOCK = dt.datetime(2024, 3, 15, 12, 0, tzinfo=dt.UTC)  # a Friday: last week is 4-10 March


@dataclass
class World:
    url: str
    a: Principal
    b: Principal


def make_team(admin: psycopg.Connection[Any], name: str) -> Principal:
    team, profile = uuid.uuid4(), uuid.uuid4()
    admin.execute("INSERT INTO dm_private.teams (team_id, name) VALUES (%s, %s)", (team, name))
    admin.execute(
        "INSERT INTO dm_private.profiles (team_id, profile_id, name) VALUES (%s, %s, 'writer')",
        (team, profile),
    )
    return Principal(team_id=team, profile_id=profile)


@pytest.fixture
def world(admin_url: str, template_url: str) -> Iterator[World]:
    url = create_database_from_template(admin_url)
    try:
        with psycopg.connect(url, autocommit=True) as admin:
            yield World(url, make_team(admin, "alpha"), make_team(admin, "beta"))
    finally:
        drop_database(admin_url, url)


def ingest(conn: psycopg.Connection[Any], who: Principal, items: list[write.EvidenceItem]) -> list[uuid.UUID]:
    with acting_as(conn, who) as cur:
        return write.ingest_evidence(cur, team_id=who.team_id, items=items)


def texts_of(answer: dict[str, Any], by_id: dict[uuid.UUID, str]) -> list[str]:
    return [by_id[uuid.UUID(r["evidence_id"])] for r in answer["results"]]


def test_anchored_query_returns_only_evidence_containing_the_anchor(world: World) -> None:
    texts = [
        "Deploy of ABC-123 to srv-db-01 finished; the deploy took an hour.",
        "ABC-124 deploy rolled back after the deploy failed.",
        "Deploy notes: every deploy of the billing service goes through srv-db-01.",
        "OPS-77 deploy is a different ticket.",
        "The deploy of ticket ABC-123 was reviewed by Dana.",
    ]
    now = {"now": CLOCK.isoformat()}
    with psycopg.connect(world.url) as conn:
        items: list[write.EvidenceItem] = [
            {"text": t, "source": {"external_id": f"doc-{i}", "kind": "note"}} for i, t in enumerate(texts)
        ]
        by_id = dict(zip(ingest(conn, world.a, items), texts, strict=True))
        answer = recall_memory(conn, world.a, query="how did the deploy of ABC-123 go?", request=now)
        assert sorted(texts_of(answer, by_id)) == sorted([texts[0], texts[4]])
        # Two anchors: one candidate must hold both (srv-db-01 and ABC-123).
        both = recall_memory(conn, world.a, query="deploy ABC-123 on srv-db-01", request=now)
        assert texts_of(both, by_id) == [texts[0]]
        # A request field overrides the parse: no anchors asked, all deploy notes may come back.
        loose = recall_memory(
            conn, world.a, query="how did the deploy of ABC-123 go?", request={**now, "anchors": []}
        )
        assert len(texts_of(loose, by_id)) > 2


def test_anchor_matching_respects_identifier_boundaries(world: World) -> None:
    texts = ["ABC-1234 deploy is a different ticket.", "The deploy of ticket ABC-123 was reviewed by Dana."]
    with psycopg.connect(world.url) as conn:
        items: list[write.EvidenceItem] = [
            {"text": t, "source": {"external_id": f"doc-{i}", "kind": "note"}} for i, t in enumerate(texts)
        ]
        by_id = dict(zip(ingest(conn, world.a, items), texts, strict=True))
        answer = recall_memory(conn, world.a, query="deploy of ABC-123", request={"now": CLOCK.isoformat()})
        assert texts_of(answer, by_id) == [texts[1]]


def test_last_week_under_a_fixed_clock_returns_last_weeks_evidence_first(world: World) -> None:
    dated = [
        ("2024-02-20T10:00:00Z", "Team lunch at the harbour: we talked about the garden."),
        ("2024-03-06T10:00:00Z", "Team lunch at the harbour on Wednesday, the garden came up again."),
        ("2024-03-13T10:00:00Z", "Team lunch at the harbour this week, garden plans agreed."),
        ("2024-01-05T10:00:00Z", "Team lunch at the harbour in January, first garden idea."),
    ]
    with psycopg.connect(world.url) as conn:
        ids = ingest(
            conn,
            world.a,
            [
                {"text": text, "created_at": when, "memory_type": "episodic",
                 "source": {"external_id": f"lunch-{i}", "kind": "chat"}}
                for i, (when, text) in enumerate(dated)
            ],
        )  # fmt: skip
        by_id = dict(zip(ids, [t for _, t in dated], strict=True))
        answer = recall_memory(
            conn,
            world.a,
            query="What did we say at the team lunch last week?",
            request={"now": CLOCK.isoformat()},
        )
        got = texts_of(answer, by_id)
        assert got, answer
        assert got[0] == dated[1][1]
        # Without the time expression the other lunches are eligible again.
        plain = recall_memory(
            conn, world.a, query="What did we say at the team lunch?", request={"now": CLOCK.isoformat()}
        )
        assert len(texts_of(plain, by_id)) == 4


def test_an_entity_name_of_team_b_is_never_a_seed_for_team_a(world: World) -> None:
    with psycopg.connect(world.url) as conn:
        # Team B: an entity and a verified relationship about it.
        (b_ev,) = ingest(conn, world.b, [{"text": "Zephyr Quill maintains the parser.",
                                          "source": {"external_id": "b-1", "kind": "note"}}])  # fmt: skip
        with acting_as(conn, world.b) as cur:
            b_zephyr, b_parser = write.upsert_entities(
                cur, team_id=world.b.team_id, items=[{"name": "Zephyr Quill"}, {"name": "Parser"}]
            )
            b_rel = write.assert_relationship(
                cur,
                team_id=world.b.team_id,
                relationship={"subject_entity_id": b_zephyr, "predicate": "maintains",
                              "object_entity_id": b_parser, "evidence_ids": [b_ev]},
            )  # fmt: skip
            write.record_verification(cur, team_id=world.b.team_id, relationship_id=b_rel, decision="fact")
        # Team A: evidence that mentions the same name, no entity of that name.
        ingest(conn, world.a, [{"text": "Zephyr Quill reviewed the parser yesterday.",
                                "source": {"external_id": "a-1", "kind": "note"}}])  # fmt: skip
        with acting_as(conn, Principal(team_id=world.a.team_id)) as cur:
            cur.execute(
                "SELECT dm.parse_query('Who maintains Zephyr Quill''s parser?', %s) AS p", (world.a.team_id,)
            )
            row = cur.fetchone()
            assert row is not None and row["p"]["entities"] == []
        answer = recall_memory(
            conn, world.a, query="Who maintains Zephyr Quill's parser?", request={"now": CLOCK.isoformat()}
        )
        assert answer["results"], answer
        operator = Principal(team_id=world.a.team_id, scopes=("operator",), role="densemem_operator")
        explained = explain_recall(conn, operator, query="Who maintains Zephyr Quill's parser?",
                                   request={"now": CLOCK.isoformat()})  # fmt: skip
        text = json.dumps([answer, explained])
        for foreign in (b_zephyr, b_parser, b_rel, b_ev):
            assert str(foreign) not in text
