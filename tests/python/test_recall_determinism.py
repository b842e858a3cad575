"""Determinism (seed 002 §11): the same corpus, profile, clock and usage snapshot give the same bytes,
whatever order the corpus was written in."""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg.types.json import Jsonb
from test_recall_support import embed, make_team, recall, unit

from densemem.store.session import Principal, acting_as

Conn = psycopg.Connection[Any]

WORDS = [
    "deploy",
    "cache",
    "index",
    "latency",
    "queue",
    "backup",
    "schema",
    "token",
    "replica",
    "shard",
    "alert",
    "budget",
]
TYPES = ["conversation", "workflow", "episodic", "semantic", "organizational"]

item_strategy = st.fixed_dictionaries(
    {
        "words": st.lists(st.sampled_from(WORDS), min_size=2, max_size=7),
        "memory_type": st.sampled_from(TYPES),
        "day": st.integers(min_value=0, max_value=40),
        "importance": st.integers(min_value=0, max_value=10),
        "axis": st.integers(min_value=0, max_value=5),
    }
)


def write_corpus(
    conn: Conn, team: uuid.UUID, profile: uuid.UUID, items: list[dict[str, Any]], order: list[int]
) -> None:
    """Writes the corpus as fixtures with content-derived ids, in the given order, one evidence at a time
    (the write path's own document sync keeps the search-document contract)."""
    for i in order:
        item = items[i]
        text = f"Item {i}: " + " ".join(item["words"]) + "."
        key = hashlib.md5(f"item-{i}-{text}".encode()).hexdigest()
        evidence, source, revision = (
            uuid.UUID(hashlib.md5(f"{key}:{x}".encode()).hexdigest()) for x in "esr"
        )
        conn.execute(
            "INSERT INTO dm_private.sources (team_id, source_id, external_id, kind) "
            "VALUES (%s, %s, %s, 'note')",
            (team, source, f"note-{i}"),
        )
        conn.execute(
            "INSERT INTO dm_private.source_revisions (team_id, source_id, revision_id, revision_label, "
            "revision_number, is_current) VALUES (%s, %s, %s, 'v1', 1, true)",
            (team, source, revision),
        )
        conn.execute(
            "INSERT INTO dm_private.evidence (team_id, evidence_id, source_id, revision_id, "
            "owner_profile_id, "
            "text, content_hash, memory_type, importance, created_at) VALUES (%s, %s, %s, %s, %s, %s, "
            "sha256(convert_to(%s, 'UTF8')), %s, %s, timestamptz '2026-01-01' + make_interval(days => %s))",
            (
                team,
                evidence,
                source,
                revision,
                profile,
                text,
                text,
                item["memory_type"],
                item["importance"] / 10,
                item["day"],
            ),
        )
        conn.execute("SELECT dm_private.sync_evidence_documents(%s, ARRAY[%s]::uuid[])", (team, evidence))
        embed(conn, team, evidence, unit((item["axis"], 1.0), (10 + i % 7, 0.3)))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    items=st.lists(item_strategy, min_size=2, max_size=12),
    data=st.data(),
    query_words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    query_axis=st.integers(min_value=0, max_value=5),
    limit=st.integers(min_value=1, max_value=12),
)
def test_same_corpus_same_bytes_whatever_the_insertion_order(
    admin_conn: Conn,
    items: list[dict[str, Any]],
    data: st.DataObject,
    query_words: list[str],
    query_axis: int,
    limit: int,
) -> None:
    order = data.draw(st.permutations(list(range(len(items)))))
    run = uuid.uuid4().hex[:8]
    team_a, profile_a = make_team(admin_conn, f"det-a-{run}")
    team_b, profile_b = make_team(admin_conn, f"det-b-{run}")
    write_corpus(admin_conn, team_a, profile_a, items, list(range(len(items))))
    write_corpus(admin_conn, team_b, profile_b, items, list(order))
    request = {"now": "2026-02-15T00:00:00Z", "limit": limit}
    query = " ".join(query_words)
    vector = unit((query_axis, 1.0))
    first, second = (recall_bytes(admin_conn, team, query, vector, request) for team in (team_a, team_b))
    assert first == second  # ids are content-derived, so the same corpus gives the same bytes
    assert json.loads(first)["results"], "the vector branch always finds something"
    assert recall(admin_conn, team_a, query, embedding=vector, request=request) == json.loads(first)


def recall_bytes(
    conn: Conn, team: uuid.UUID, query: str, vector: list[float], request: dict[str, Any]
) -> str:
    with acting_as(conn, Principal(team)) as cur:
        cur.execute(
            "SELECT dm.recall_memory(%s, %s, %s::vector, %s)::text AS answer",
            (query, team, json.dumps(vector), Jsonb(request)),
        )
        row = cur.fetchone()
    assert row is not None
    return str(row["answer"])
