"""dm_private.recall_context_lift (sql/52): a candidate is lifted by its strongest neighbouring turn.

Called directly with hand-made scored rows, as the pipeline would after the
composite rerank. Neighbours are the rows written just before and after in the
same source group; only candidates lift each other; off at weight 0.
"""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb
from test_recall_support import ingest, make_team

from densemem.store.session import Principal, acting_as


def _turns(conn: psycopg.Connection[Any], name: str) -> tuple[uuid.UUID, dict[str, uuid.UUID]]:
    """Session A: a1 a2 a3 a4 a5 (in write order); session B: b1 b2, written after a3 (one write each)."""
    team, profile = make_team(conn, name)
    ids: dict[str, uuid.UUID] = {}
    for key in ["a1", "a2", "a3", "b1", "b2", "a4", "a5"]:
        group = "session_a" if key.startswith("a") else "session_b"
        [ids[key]] = ingest(
            conn,
            team,
            profile,
            [
                {
                    "text": f"turn {key} of the conversation",
                    "source": {"external_id": key, "kind": "conversation_turn", "source_group": group},
                    "memory_type": "conversation",
                }
            ],
        )
    return team, ids


def _lift(
    conn: psycopg.Connection[Any],
    team: uuid.UUID,
    candidates: list[tuple[uuid.UUID, float, float]],
    settings: dict[str, Any],
    *,
    as_team: uuid.UUID | None = None,
) -> list[tuple[uuid.UUID, float, int]]:
    """(evidence_id, relevance, score) rows in score order -> (evidence_id, new score, score_rank)."""
    rows = [
        (str(evidence_id), relevance, score, rank)
        for rank, (evidence_id, relevance, score) in enumerate(candidates, start=1)
    ]
    with acting_as(conn, Principal(as_team or team, None)) as cur:
        cur.execute(
            """
            WITH input AS (
                SELECT pg_catalog.array_agg(
                           ROW(d.document_id, d.subject_id, r.relevance, 0, 0.5, 0.5, 0, 1, 0, 0, 0, 0,
                               r.score, 10, 'k' || r.ord, NULL, NULL, NULL, r.ord, r.ord
                           )::dm_private.recall_scored
                           ORDER BY r.ord) AS scored
                FROM jsonb_to_recordset(%s) AS r (evidence_id uuid, relevance float8, score float8, ord int)
                JOIN dm_private.search_documents AS d
                  ON d.team_id = %s AND d.subject_kind = 'evidence' AND d.subject_id = r.evidence_id
            )
            SELECT l.evidence_id, l.score, l.score_rank
            FROM input, dm_private.recall_context_lift(%s, input.scored, %s) AS l
            """,
            (
                Jsonb([{"evidence_id": r[0], "relevance": r[1], "score": r[2], "ord": r[3]} for r in rows]),
                team,
                team,
                Jsonb(settings),
            ),
        )
        return [
            (uuid.UUID(str(row["evidence_id"])), float(row["score"]), int(row["score_rank"])) for row in cur
        ]


def test_weight_zero_returns_the_input_unchanged(admin_conn: psycopg.Connection[Any]) -> None:
    team, ids = _turns(admin_conn, "context-off")
    candidates = [(ids["a2"], 1.0, 0.9), (ids["a4"], 0.5, 0.6), (ids["a3"], 0.0, 0.3)]
    for settings in ({}, {"context": {"weight": 0}}):
        out = _lift(admin_conn, team, candidates, settings)
        assert [(row[0], row[1]) for row in out] == [(c[0], c[2]) for c in candidates]


def test_a_weak_turn_next_to_a_strong_one_moves_up(admin_conn: psycopg.Connection[Any]) -> None:
    team, ids = _turns(admin_conn, "context-on")
    # a3 is weak but sits between a2 (strong) and a4 (its session neighbour, written after b1 b2);
    # b1 was written right after a3 but is another session, so it lifts nothing; a5 is two turns
    # from a3 and outside radius 1.
    candidates = [
        (ids["a2"], 1.0, 0.90),
        (ids["b1"], 0.9, 0.80),
        (ids["a5"], 0.8, 0.70),
        (ids["a3"], 0.1, 0.30),
        (ids["b2"], 0.1, 0.20),
    ]
    out = _lift(admin_conn, team, candidates, {"context": {"weight": 0.5}})
    scores = {row[0]: row[1] for row in out}
    assert scores[ids["a3"]] == pytest.approx(0.30 + 0.5 * 1.0)  # best neighbour a2 (a4 is no candidate)
    assert scores[ids["a2"]] == pytest.approx(0.90 + 0.5 * 0.1)  # its neighbour a3
    assert scores[ids["b2"]] == pytest.approx(0.20 + 0.5 * 0.9)  # b1, across the a4/a5 rows of session A
    assert scores[ids["b1"]] == pytest.approx(0.80 + 0.5 * 0.1)  # b2, not a3 (another session)
    assert scores[ids["a5"]] == pytest.approx(0.70)  # a4 is its neighbour but no candidate
    assert [row[0] for row in out] == [ids["a2"], ids["b1"], ids["a3"], ids["a5"], ids["b2"]]
    assert [row[2] for row in out] == [1, 2, 3, 4, 5]

    # radius counts sequence numbers: a5 is four writes after a3 (b1, b2 and a4 lie between)
    wider = {
        row[0]: row[1]
        for row in _lift(admin_conn, team, candidates, {"context": {"weight": 0.5, "radius": 4}})
    }
    assert wider[ids["a5"]] == pytest.approx(0.70 + 0.5 * 0.1)
    three = {
        row[0]: row[1]
        for row in _lift(admin_conn, team, candidates, {"context": {"weight": 0.5, "radius": 3}})
    }
    assert three[ids["a5"]] == pytest.approx(0.70)


def test_evidence_without_a_source_group_is_untouched(admin_conn: psycopg.Connection[Any]) -> None:
    """Documents (no source group, e.g. a corpus of abstracts) keep their scores and order."""
    team, profile = make_team(admin_conn, "context-nogroup")
    ids = ingest(
        admin_conn, team, profile, [{"text": f"abstract {i}", "memory_type": "semantic"} for i in range(4)]
    )
    candidates = [(ids[0], 0.2, 0.9), (ids[1], 1.0, 0.8), (ids[2], 0.9, 0.5), (ids[3], 0.0, 0.4)]
    out = _lift(admin_conn, team, candidates, {"context": {"weight": 1.0, "radius": 5}})
    assert [row[0] for row in out] == [c[0] for c in candidates]
    assert [row[1] for row in out] == pytest.approx([c[2] for c in candidates])


def test_bad_weight_and_another_team_are_refused(admin_conn: psycopg.Connection[Any]) -> None:
    team, ids = _turns(admin_conn, "context-errors")
    other, _ = make_team(admin_conn, "context-other")
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        _lift(admin_conn, team, [(ids["a1"], 1.0, 1.0)], {"context": {"weight": 2}})
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        _lift(admin_conn, team, [(ids["a1"], 1.0, 1.0)], {"context": {"weight": 0.5}}, as_team=other)


def test_recall_memory_applies_the_stage_only_when_the_profile_enables_it(
    admin_conn: psycopg.Connection[Any],
) -> None:
    """Through dm.recall_memory: the reply after the best-matching question climbs over louder strangers."""
    from test_recall_support import recall, result_ids

    for name, weight in (("context_probe", 0.5), ("context_off", 0)):
        admin_conn.execute(
            "INSERT INTO dm_private.ranking_profiles (name, version, is_default, settings, description) "
            # without the full-text branch's exchange context (default v9), which finds the reply
            # on its own: this test is about the lift alone
            "SELECT %s, 1, false, jsonb_set(settings #- '{fulltext,context_radius}', '{context}',"
            " jsonb_build_object('weight', %s::float8)),"
            " 'test' FROM dm_private.ranking_profiles WHERE is_default",
            (name, weight),
        )
    team, profile = make_team(admin_conn, "context-recall")
    turns = [
        ("s1", "Bob: how was the hiking trip to the glacier?"),
        ("s1", "Alice: wonderful, we saw a bear on the trip"),
        ("s2", "Carol: trip after trip after trip, the dentist trip again"),
        ("s3", "Dan: a trip report, trip notes and trip photos"),
    ]
    ids = [
        ingest(
            admin_conn,
            team,
            profile,
            [
                {
                    "text": text,
                    "source": {"external_id": f"t{i}", "kind": "conversation_turn", "source_group": group},
                    "memory_type": "semantic",
                }
            ],
        )[0]
        for i, (group, text) in enumerate(turns)
    ]
    request = {"limit": 4, "now": "2026-01-01T00:00:00Z"}
    plain = result_ids(
        recall(admin_conn, team, "hiking trip glacier", request={**request, "ranking_profile": "context_off"})
    )
    lifted = result_ids(
        recall(
            admin_conn, team, "hiking trip glacier", request={**request, "ranking_profile": "context_probe"}
        )
    )
    assert plain[0] == lifted[0] == ids[0]
    assert plain.index(ids[1]) > 1  # the reply loses to the louder strangers on its own
    assert lifted[1] == ids[1]  # its neighbour, the best match, lifts it
    assert sorted(plain) == sorted(lifted)  # the stage adds and drops nothing


def _rerank_rows(
    conn: psycopg.Connection[Any], team: uuid.UUID, query: str, settings: dict[str, Any], mode: str
) -> list[tuple[Any, ...]]:
    """Every column of the rerank of all the team's evidence (hand-made fused relevance by write order).

    mode 'pipeline': recall_rerank(..., with_context => true), what recall_memory runs;
    'stages': recall_context_lift(recall_rerank(...)), the two stages called one after the other;
    'rerank': recall_rerank(...) alone.
    """
    args = "%(team)s, %(query)s, input.fused, %(req)s, %(settings)s"
    rerank = f"dm_private.recall_rerank({args})"
    call = {
        "pipeline": f"dm_private.recall_rerank({args}, '{{}}', true)",
        "stages": f"dm_private.recall_context_lift(%(team)s, ARRAY(SELECT r FROM {rerank} AS r), "
        "%(settings)s)",
        "rerank": rerank,
    }[mode]
    with acting_as(conn, Principal(team, None)) as cur:
        cur.execute(
            "WITH input AS ("
            " SELECT pg_catalog.array_agg(ROW(d.document_id, d.subject_id, 1.0 / d.n, (d.n %% 7) / 6.0,"
            "        d.n, NULL, NULL, d.n, NULL)::dm_private.recall_fused ORDER BY d.n) AS fused"
            " FROM (SELECT x.document_id, x.subject_id,"
            "              row_number() OVER (ORDER BY x.sequence_number)::integer AS n"
            "       FROM dm_private.search_documents AS x"
            "       WHERE x.team_id = %(team)s AND x.subject_kind = 'evidence') AS d)"
            f" SELECT s.* FROM input, {call} AS s",
            {
                "team": team,
                "query": query,
                "req": Jsonb({"now": "2026-01-01T00:00:00Z"}),
                "settings": Jsonb(settings),
            },
        )
        return [tuple(row.values()) for row in cur]


def test_rerank_with_context_equals_the_two_stages(admin_conn: psycopg.Connection[Any]) -> None:
    """recall_memory lifts inside the rerank statement: the rows of sql/52 after sql/50, bit for bit."""
    team, profile = make_team(admin_conn, "context-fused")
    for i in range(24):
        item: dict[str, Any] = {
            "text": f"turn {i} about the trip {'glacier' if i % 3 else 'dentist'}",
            "memory_type": "conversation" if i % 2 else "semantic",
        }
        if i % 5 != 4:  # some evidence has no source group
            item["source"] = {
                "external_id": f"t{i}",
                "kind": "conversation_turn",
                "source_group": f"s{i // 4}",
            }
        ingest(admin_conn, team, profile, [item])
    row = admin_conn.execute("SELECT settings FROM dm_private.ranking_profiles WHERE is_default").fetchone()
    assert row is not None
    base: dict[str, Any] = row[0]
    query = "trip glacier"
    unlifted = _rerank_rows(admin_conn, team, query, base, "rerank")
    assert len(unlifted) == 24
    for context in ({"weight": 0.3, "radius": 2}, {"weight": 1.0, "radius": 5}, {"weight": 0.5}):
        settings = {**base, "context": context}
        pipeline = _rerank_rows(admin_conn, team, query, settings, "pipeline")
        assert pipeline == _rerank_rows(admin_conn, team, query, settings, "stages")
        assert pipeline != unlifted  # the data does exercise the lift
    # recall_run skipped sql/52 at a weight of 0 or below: no lift, no error
    for context in ({"weight": 0}, {"weight": -1}, {}):
        assert _rerank_rows(admin_conn, team, query, {**base, "context": context}, "pipeline") == unlifted
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        _rerank_rows(admin_conn, team, query, {**base, "context": {"weight": 1.5}}, "pipeline")
