"""dm.recall_memory: eligibility, branches, fusion, rerank, response shape, errors, degradation, isolation."""

from __future__ import annotations

import json
import uuid
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb
from test_recall_support import (
    embed,
    explain,
    ingest,
    make_team,
    recall,
    result_ids,
    result_texts,
    unit,
)

from densemem.store.session import Principal, acting_as

Conn = psycopg.Connection[Any]


# ---------------------------------------------------------------- eligibility


def test_default_results_are_current_evidence_without_any_relationship(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    ids = ingest(
        admin_conn,
        team,
        profile,
        [
            {"text": "Mark works on Dense-Mem, a memory engine built on PostgreSQL."},
            {"text": "The cafeteria serves soup on Fridays."},
        ],
    )
    relationships = admin_conn.execute("SELECT count(*) FROM dm_private.relationships").fetchone()
    assert relationships is not None and relationships[0] == 0
    answer = recall(admin_conn, team, "Who works on Dense-Mem?")
    assert result_ids(answer)[0] == ids[0]
    assert result_texts(answer)[0].startswith("Mark works on Dense-Mem")


@pytest.mark.parametrize("move", ["quarantine", "hold_for_supersession", "supersede", "retract"])
def test_evidence_out_of_the_active_state_never_enters(admin_conn: Conn, move: str) -> None:
    team, profile = make_team(admin_conn, "alpha")
    kept, moved = ingest(
        admin_conn,
        team,
        profile,
        [
            {"text": "The deploy key rotates every ninety days."},
            {"text": "The deploy key rotates every thirty days."},
        ],
    )
    assert set(result_ids(recall(admin_conn, team, "deploy key rotates"))) == {kept, moved}
    with acting_as(admin_conn, Principal(team, profile)) as cur:
        cur.execute("SELECT dm.move_evidence(%s, %s, %s)", (team, moved, move))
    answer = recall(admin_conn, team, "deploy key rotates")
    assert result_ids(answer) == [kept]
    explained = explain(admin_conn, team, "deploy key rotates")
    assert str(moved) not in json.dumps(explained["branches"])


def test_erased_evidence_never_enters(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    kept, erased = ingest(
        admin_conn,
        team,
        profile,
        [
            {"text": "Invoices are archived after seven years."},
            {"text": "Invoices are archived after ten years."},
        ],
    )
    with acting_as(admin_conn, Principal(team, profile)) as cur:
        cur.execute("SELECT dm.erase_evidence(%s, %s)", (team, erased))
    assert result_ids(recall(admin_conn, team, "invoices archived years")) == [kept]


def test_non_current_source_revision_never_enters(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    (old,) = ingest(
        admin_conn,
        team,
        profile,
        [
            {
                "text": "The on-call rota lists Alice for the weekend.",
                "source": {"external_id": "rota", "kind": "doc", "revision": "v1"},
            }
        ],
    )
    (new,) = ingest(
        admin_conn,
        team,
        profile,
        [
            {
                "text": "The on-call rota lists Bob for the weekend.",
                "source": {"external_id": "rota", "kind": "doc", "revision": "v2"},
            }
        ],
    )
    assert result_ids(recall(admin_conn, team, "on-call rota weekend")) == [new]
    assert old not in result_ids(recall(admin_conn, team, "Alice on-call rota"))


def test_disabled_owner_profile_leaves_recall(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    other = admin_conn.execute("SELECT dm.ensure_profile(%s, 'second author')", (team,)).fetchone()
    assert other is not None
    (mine,) = ingest(admin_conn, team, profile, [{"text": "Backups run nightly at two."}])
    (theirs,) = ingest(admin_conn, team, other[0], [{"text": "Backups run nightly at three."}])
    admin_conn.execute("SELECT dm.set_profile_state(%s, %s, 'disabled')", (team, other[0]))
    assert result_ids(recall(admin_conn, team, "backups nightly")) == [mine]
    assert theirs not in result_ids(recall(admin_conn, team, "backups nightly three"))


def test_hydration_rechecks_the_authoritative_row(admin_conn: Conn) -> None:
    """A stale eligibility mirror (document says recallable) cannot leak a row the evidence refuses."""
    team, profile = make_team(admin_conn, "alpha")
    kept, stale = ingest(
        admin_conn,
        team,
        profile,
        [
            {"text": "The office wifi password changes monthly."},
            {"text": "The office wifi password changed in March."},
        ],
    )
    # Bypass the write path: the evidence is quarantined, the mirror is not told.
    admin_conn.execute(
        "UPDATE dm_private.evidence SET state = 'quarantined' WHERE evidence_id = %s", (stale,)
    )
    mirror = admin_conn.execute(
        "SELECT is_recallable FROM dm_private.search_documents WHERE subject_id = %s", (stale,)
    ).fetchone()
    assert mirror is not None and mirror[0] is True
    assert result_ids(recall(admin_conn, team, "office wifi password")) == [kept]
    explained = explain(admin_conn, team, "office wifi password")
    assert str(stale) in explained["dropped_by_hydration"]


def test_policy_filter_hides_pii_without_the_scope(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    public, private = ingest(
        admin_conn,
        team,
        profile,
        [
            {"text": "Carol's desk is on the third floor."},
            {"text": "Carol's home address is 12 Elm Street, third floor.", "labels": {"pii": True}},
        ],
    )
    assert result_ids(recall(admin_conn, team, "Carol third floor")) == [public]
    assert set(result_ids(recall(admin_conn, team, "Carol third floor", scopes=["pii"]))) == {public, private}


def test_request_filters_and_time_window(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    a, b, c = ingest(
        admin_conn,
        team,
        profile,
        [
            {
                "text": "Sprint review notes: search latency improved.",
                "memory_type": "episodic",
                "created_at": "2026-03-01T10:00:00Z",
                "source": {"external_id": "a", "kind": "doc", "source_group": "eng"},
            },
            {
                "text": "Sprint review notes: search latency regressed.",
                "memory_type": "conversation",
                "created_at": "2026-05-01T10:00:00Z",
                "source": {"external_id": "b", "kind": "doc", "source_group": "ops"},
            },
            {
                "text": "Sprint review notes: search latency unknown date.",
                "memory_type": "episodic",
                "source": {"external_id": "c", "kind": "doc", "source_group": "eng"},
            },
        ],
    )
    q = "sprint review search latency"
    assert set(result_ids(recall(admin_conn, team, q))) == {a, b, c}
    assert set(result_ids(recall(admin_conn, team, q, request={"filters": {"source_group": "eng"}}))) == {
        a,
        c,
    }
    assert set(
        result_ids(recall(admin_conn, team, q, request={"filters": {"memory_type": ["conversation"]}}))
    ) == {b}
    window = {"time_window": {"from": "2026-02-01T00:00:00Z", "to": "2026-04-01T00:00:00Z"}}
    # no created_at never matches a window (fail closed)
    assert result_ids(recall(admin_conn, team, q, request=window)) == [a]
    assert result_ids(
        recall(admin_conn, team, q, request={"filters": {"created_after": "2026-04-01T00:00:00Z"}})
    ) == [b]


def test_known_evidence_ids_never_reappear(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    ids = ingest(
        admin_conn, team, profile, [{"text": f"Release note {i}: the parser got faster."} for i in range(5)]
    )
    answer = recall(
        admin_conn, team, "release parser faster", request={"known_evidence_ids": [str(x) for x in ids[:3]]}
    )
    assert set(result_ids(answer)) == set(ids[3:])


# ---------------------------------------------------------------- branches and fusion


def test_each_evidence_at_most_once_per_branch_before_fusion(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    ids = ingest(
        admin_conn,
        team,
        profile,
        [
            {"text": "Kafka consumers lag when the broker disk fills up."},
            {"text": "Kafka brokers need disk alerts."},
            {"text": "The consumer group rebalanced."},
        ],
    )
    for i, evidence in enumerate(ids):
        embed(admin_conn, team, evidence, unit((1, 1.0), (2 + i, 0.3)))
    # the query matches evidence 0 by all terms and by any term: both full-text passes see it
    explained = explain(
        admin_conn,
        team,
        "kafka consumers lag broker disk",
        embedding=unit((1, 1.0)),
        request={"phrases": ["broker disk"], "anchors": ["kafka"]},
    )
    for branch, hits in explained["branches"].items():
        evidence_ids = [h["evidence_id"] for h in hits]
        assert len(evidence_ids) == len(set(evidence_ids)), branch
        ranks = [h["branch_rank"] for h in hits]
        assert ranks == sorted(ranks) and (not ranks or ranks[0] == 1), branch
    assert {b for b, hits in explained["branches"].items() if hits} == {"fulltext", "vector", "exact"}
    fused = [f["evidence_id"] for f in explained["fused"]]
    assert len(fused) == len(set(fused))


def test_rrf_fusion_rewards_agreement_between_branches(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    both, text_only, vector_only = ingest(
        admin_conn,
        team,
        profile,
        [
            {"text": "Grafana dashboards show the queue depth."},
            {"text": "Grafana dashboards show the queue depth and more queue depth details."},
            {"text": "A picture of backlog size over time."},
        ],
    )
    embed(admin_conn, team, both, unit((5, 1.0)))
    embed(admin_conn, team, text_only, unit((9, 1.0)))
    embed(admin_conn, team, vector_only, unit((5, 1.0), (6, 0.2)))
    explained = explain(admin_conn, team, "grafana queue depth", embedding=unit((5, 1.0)))
    fused = {f["evidence_id"]: f for f in explained["fused"]}
    assert explained["fused"][0]["evidence_id"] == str(both)
    assert fused[str(both)]["fulltext_rank"] is not None and fused[str(both)]["vector_rank"] == 1
    assert (
        0
        <= fused[str(vector_only)]["relevance"]
        < fused[str(text_only)]["relevance"]
        < fused[str(both)]["relevance"]
        == 1
    )


def test_tier_cannot_bypass_relevance(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    relevant, weak, unrelated = ingest(
        admin_conn,
        team,
        profile,
        [
            {"text": "The billing service retries failed card payments three times, billing says."},
            {"text": "Billing has a wiki page."},
            {"text": "The cafeteria menu changes weekly."},
        ],
    )
    with acting_as(admin_conn, Principal(team, profile)) as cur:
        cur.execute(
            "SELECT dm.upsert_entities(%s, %s) AS ids",
            (team, Jsonb([{"name": "Billing"}, {"name": "Wiki"}, {"name": "Cafeteria"}])),
        )
        row = cur.fetchone()
        assert row is not None
        billing, wiki, cafeteria = (str(x) for x in row["ids"])
        for evidence, obj in ((weak, wiki), (unrelated, cafeteria)):
            cur.execute(
                "SELECT dm.assert_relationship(%s, %s) AS id",
                (
                    team,
                    Jsonb(
                        {
                            "subject_entity_id": billing,
                            "predicate": "documents",
                            "object_entity_id": obj,
                            "evidence_ids": [str(evidence)],
                        }
                    ),
                ),
            )
            rel = cur.fetchone()
            assert rel is not None
            cur.execute(
                "SELECT dm.record_verification(%s, %s, 'fact', 'verified by the secret auditor note')",
                (team, rel["id"]),
            )
    answer = recall(admin_conn, team, "billing retries failed card payments")
    ids = result_ids(answer)
    assert ids[0] == relevant
    assert unrelated not in ids  # a fact does not make an unrelated text relevant
    explained = explain(admin_conn, team, "billing retries failed card payments")
    scored = {s["evidence_id"]: s for s in explained["scored"]}
    assert scored[str(weak)]["support"] == 1.0
    assert scored[str(relevant)]["score"] > scored[str(weak)]["score"]
    assert "secret auditor" not in json.dumps(answer)


def test_candidate_and_held_relationships_give_no_support(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    (evidence,) = ingest(admin_conn, team, profile, [{"text": "Payments settle within two days."}])
    with acting_as(admin_conn, Principal(team, profile)) as cur:
        cur.execute(
            "SELECT dm.upsert_entities(%s, %s) AS ids",
            (team, Jsonb([{"name": "Payments"}, {"name": "Bank"}])),
        )
        row = cur.fetchone()
        assert row is not None
        cur.execute(
            "SELECT dm.assert_relationship(%s, %s) AS id",
            (
                team,
                Jsonb(
                    {
                        "subject_entity_id": str(row["ids"][0]),
                        "predicate": "settles_with",
                        "object_entity_id": str(row["ids"][1]),
                        "evidence_ids": [str(evidence)],
                    }
                ),
            ),
        )
    explained = explain(admin_conn, team, "payments settle")
    assert explained["scored"][0]["support"] == 0.0  # a candidate relationship is not support


def test_stale_vector_never_wins(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    (old,) = ingest(
        admin_conn,
        team,
        profile,
        [
            {
                "text": "The launch is scheduled for June.",
                "source": {"external_id": "plan", "kind": "doc", "revision": "v1"},
            }
        ],
    )
    embed(admin_conn, team, old, unit((7, 1.0)))
    # an edit: a new revision of the source, not embedded yet
    (new,) = ingest(
        admin_conn,
        team,
        profile,
        [
            {
                "text": "The launch moved to September.",
                "source": {"external_id": "plan", "kind": "doc", "revision": "v2"},
            }
        ],
    )
    explained = explain(admin_conn, team, "when is the launch", embedding=unit((7, 1.0)))
    assert explained["branches"]["vector"] == []
    assert result_ids(recall(admin_conn, team, "launch", embedding=unit((7, 1.0)))) == [new]
    # a body change of the same document bumps document_version: the old vector is unusable
    (other,) = ingest(admin_conn, team, profile, [{"text": "Quarterly targets are ambitious."}])
    embed(admin_conn, team, other, unit((8, 1.0)))
    assert [
        h["evidence_id"]
        for h in explain(admin_conn, team, "xyzzy", embedding=unit((8, 1.0)))["branches"]["vector"]
    ] == [str(other)]
    admin_conn.execute(
        "UPDATE dm_private.search_documents SET document_version = document_version + 1, "
        "body = 'Quarterly targets are modest.' WHERE subject_id = %s",
        (other,),
    )
    assert explain(admin_conn, team, "xyzzy", embedding=unit((8, 1.0)))["branches"]["vector"] == []


ORACLE_SQL = """
WITH s AS (SELECT dm_private.recall_settings(%(t)s, NULL) || '{"candidates": {"vector": 50}}' AS s),
     r AS (SELECT dm_private.recall_request('', '{}', s.s) AS r FROM s)
SELECT ARRAY(SELECT h.evidence_id
             FROM s, r, dm_private.recall_vector_candidates(%(t)s, %(q)s::vector, r.r, s.s) AS h) AS approx,
       ARRAY(SELECT h.evidence_id
             FROM s, r, dm_private.recall_vector_candidates(%(t)s, %(q)s::vector, r.r, s.s, 'exact') AS h)
           AS exact
"""


def test_vector_branch_matches_the_exact_oracle_with_a_partial_hnsw_index(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    texts = [{"text": f"Observation number {i} about topic {i % 7}."} for i in range(300)]
    ids = ingest(admin_conn, team, profile, texts)
    import random

    rng = random.Random(3)
    for evidence in ids:
        embed(admin_conn, team, evidence, unit(*[(rng.randrange(40), rng.random()) for _ in range(6)]))
    small, _ = make_team(admin_conn, "small")
    built = admin_conn.execute("SELECT team_id, index_name FROM dm.refresh_vector_indexes(200)").fetchall()
    assert [uuid.UUID(str(r[0])) for r in built] == [team]
    admin_conn.execute("ANALYZE dm_private.document_embeddings")
    with acting_as(admin_conn, Principal(team)) as cur:
        cur.execute("SELECT access_path FROM dm_private.recall_vector_access_path(%s)", (team,))
        assert cur.fetchone() == {"access_path": "hnsw_partial"}
        total = found = 0
        for _ in range(10):
            query = unit(*[(rng.randrange(40), rng.random()) for _ in range(6)])
            cur.execute(ORACLE_SQL, {"t": team, "q": json.dumps(query)})
            row = cur.fetchone()
            assert row is not None and len(row["exact"]) == 50
            total += len(row["exact"])
            found += len(set(row["approx"]) & set(row["exact"]))
    assert found / total >= 0.98
    with acting_as(admin_conn, Principal(small)) as cur:
        cur.execute("SELECT access_path FROM dm_private.recall_vector_access_path(%s)", (small,))
        assert cur.fetchone() == {"access_path": "exact"}


# ---------------------------------------------------------------- rerank signals


def test_hard_anchors_must_be_satisfied_by_one_candidate(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    both, first, second = ingest(
        admin_conn,
        team,
        profile,
        [
            {"text": "Incident INC-1234 was caused by release v2.3.1 of the gateway."},
            {"text": "Incident INC-1234 was caused by a bad gateway config."},
            {"text": "Release v2.3.1 of the gateway shipped on Monday."},
        ],
    )
    anchors = {"anchors": ["INC-1234", "v2.3.1"]}
    assert result_ids(recall(admin_conn, team, "gateway incident release", request=anchors)) == [both]
    with acting_as(admin_conn, Principal(team, profile)) as cur:
        cur.execute("SELECT dm.move_evidence(%s, %s, 'retract')", (team, both))
    # separate results never combine partial matches
    assert recall(admin_conn, team, "gateway incident release", request=anchors)["results"] == []
    assert set(result_ids(recall(admin_conn, team, "gateway incident release"))) == {first, second}


def test_phrase_signal_prefers_the_exact_phrase(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    _scattered, exact = ingest(
        admin_conn,
        team,
        profile,
        [
            {"text": "The red team found the blue service and a team lead fixed the red flag."},
            {"text": "The blue team won."},
        ],
    )
    answer = recall(admin_conn, team, "blue team red", request={"phrases": ["blue team"]})
    assert result_ids(answer)[0] == exact


def test_recency_uses_the_injected_clock_and_half_lives(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    older, newer, semantic_old = ingest(
        admin_conn,
        team,
        profile,
        [
            {
                "text": "Standup: the build is green.",
                "memory_type": "conversation",
                "created_at": "2026-01-01T00:00:00Z",
            },
            {
                "text": "Standup: the build is green again.",
                "memory_type": "conversation",
                "created_at": "2026-01-09T00:00:00Z",
            },
            {
                "text": "Policy: the build must be green.",
                "memory_type": "semantic",
                "created_at": "2020-01-01T00:00:00Z",
            },
        ],
    )
    explained = explain(admin_conn, team, "standup build green", request={"now": "2026-01-10T00:00:00Z"})
    recency = {s["evidence_id"]: s["recency"] for s in explained["scored"]}
    assert recency[str(newer)] == pytest.approx(__import__("math").exp(-1 / 2), rel=1e-6)
    assert recency[str(older)] == pytest.approx(__import__("math").exp(-9 / 2), rel=1e-6)
    assert recency[str(semantic_old)] == 1.0  # semantic memory does not decay
    later = explain(admin_conn, team, "standup build green", request={"now": "2026-02-10T00:00:00Z"})
    assert {s["evidence_id"]: s["recency"] for s in later["scored"]}[str(newer)] < recency[str(newer)]


def test_missing_created_at_falls_back_to_sequence_distance(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    first, second = ingest(
        admin_conn,
        team,
        profile,
        [
            {"text": "Chat: lunch at noon.", "memory_type": "conversation"},
            {"text": "Chat: lunch at one.", "memory_type": "conversation"},
        ],
    )
    explained = explain(admin_conn, team, "chat lunch")
    recency = {s["evidence_id"]: s["recency"] for s in explained["scored"]}
    assert recency[str(second)] == 1.0
    assert recency[str(first)] == pytest.approx(__import__("math").exp(-1 / 2), rel=1e-6)


def test_temporal_intent_latest_and_earliest(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    ids = ingest(
        admin_conn,
        team,
        profile,
        [
            {
                "text": f"The team moved office to building {name}.",
                "created_at": f"2025-0{i + 1}-01T00:00:00Z",
            }
            for i, name in enumerate(["Alder", "Birch", "Cedar"])
        ],
    )
    latest = recall(admin_conn, team, "team moved office building", request={"temporal_intent": "latest"})
    earliest = recall(admin_conn, team, "team moved office building", request={"temporal_intent": "earliest"})
    assert result_ids(latest)[0] == ids[2]
    assert result_ids(earliest)[0] == ids[0]


def test_usage_snapshot_replay_reproduces_the_old_order(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    ingest(admin_conn, team, profile, [{"text": f"Runbook step {i}: restart the worker."} for i in range(4)])
    query = "runbook restart worker"
    with acting_as(admin_conn, Principal(team, profile)) as cur:
        cur.execute("SELECT dm.take_usage_snapshot(%s) AS s", (team,))
        row = cur.fetchone()
        assert row is not None
        before = int(row["s"])
    old_order = result_ids(recall(admin_conn, team, query, request={"usage_snapshot_id": before}))
    loser, winner = old_order[0], old_order[-1]
    with acting_as(admin_conn, Principal(team, profile)) as cur:
        for _ in range(6):
            cur.execute(
                "SELECT dm.record_feedback(%s, %s)",
                (team, Jsonb({"query": query, "evidence_id": str(winner), "judgment": "used"})),
            )
            cur.execute(
                "SELECT dm.record_feedback(%s, %s)",
                (team, Jsonb({"query": query, "evidence_id": str(loser), "judgment": "not_used"})),
            )
        cur.execute("SELECT dm.take_usage_snapshot(%s) AS s", (team,))
        row = cur.fetchone()
        assert row is not None
        after = int(row["s"])
    new_order = result_ids(recall(admin_conn, team, query))  # latest snapshot by default
    assert new_order != old_order
    assert new_order.index(winner) < old_order.index(winner)
    assert result_ids(recall(admin_conn, team, query, request={"usage_snapshot_id": before})) == old_order
    assert result_ids(recall(admin_conn, team, query, request={"usage_snapshot_id": after})) == new_order


def test_mmr_collapses_duplicates(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    ids = ingest(
        admin_conn,
        team,
        profile,
        [
            {"text": "Rotate the TLS certificate before it expires."},
            {"text": "Rotate the TLS certificate before it expires."},
            {"text": "TLS certificate expiry alerts go to the ops channel."},
        ],
    )
    answer = recall(admin_conn, team, "rotate TLS certificate expires")
    texts = result_texts(answer)
    assert texts.count("Rotate the TLS certificate before it expires.") == 1
    assert ids[2] in result_ids(answer)


def test_limit_and_context_budget(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    ingest(admin_conn, team, profile, [{"text": f"Metric {i}: " + "latency " * (10 + i)} for i in range(12)])
    assert len(recall(admin_conn, team, "latency metric")["results"]) == 10
    assert len(recall(admin_conn, team, "latency metric", request={"limit": 3})["results"]) == 3
    budgeted = recall(admin_conn, team, "latency metric", request={"max_context_bytes": 300})
    sizes = [len(t.encode()) for t in result_texts(budgeted)]
    assert 0 < len(sizes) < 10 and sum(sizes) <= 300


# ---------------------------------------------------------------- response shape


def test_public_answer_is_contexts_and_handles_only(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    (evidence,) = ingest(
        admin_conn,
        team,
        profile,
        [
            {
                "text": "Dana maintains the search cluster.",
                "source": {"external_id": "wiki:search", "kind": "wiki"},
            }
        ],
    )
    embed(admin_conn, team, evidence, unit((3, 1.0)))
    answer = recall(admin_conn, team, "who maintains the search cluster", embedding=unit((3, 1.0)))
    assert set(answer) == {"results", "discovery_paths", "guidance"}
    assert set(answer["results"][0]) == {"evidence_id", "context", "source_id", "source_external_id"}
    assert answer["results"][0]["source_external_id"] == "wiki:search"
    text = json.dumps(answer)
    for leaked in ("score", "tier", "rationale", "embedding", "relevance", "ranking_profile", "degraded"):
        assert leaked not in text
    assert "known_evidence_ids" in answer["guidance"]


def test_same_request_same_bytes(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    ids = ingest(
        admin_conn, team, profile, [{"text": f"Design note {i}: caching layer for reads."} for i in range(8)]
    )
    for i, evidence in enumerate(ids):
        embed(admin_conn, team, evidence, unit((i % 3, 1.0), (10 + i, 0.4)))
    request = {"now": "2026-06-01T00:00:00Z"}
    first = json.dumps(recall(admin_conn, team, "caching layer", embedding=unit((1, 1.0)), request=request))
    second = json.dumps(recall(admin_conn, team, "caching layer", embedding=unit((1, 1.0)), request=request))
    assert first == second


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("request_body", "sqlstate"),
    [
        ({"limit": 0}, "22023"),
        ({"limit": 1000}, "22023"),
        ({"limit": "ten"}, "22023"),
        ({"known_evidence_ids": [str(uuid.uuid4()) for _ in range(201)]}, "22023"),
        ({"known_evidence_ids": ["not-a-uuid"]}, "22P02"),
        ({"filters": {"colour": "red"}}, "22023"),
        ({"filters": {"memory_type": "gossip"}}, "22023"),
        ({"temporal_intent": "soonest"}, "22023"),
        ({"now": "yesterday-ish"}, "22007"),
        ({"surprise": 1}, "22023"),
        ({"ranking_profile": "no-such-profile"}, "22023"),
    ],
)
def test_bad_requests_get_named_errors(admin_conn: Conn, request_body: dict[str, Any], sqlstate: str) -> None:
    team, profile = make_team(admin_conn, "alpha")
    ingest(admin_conn, team, profile, [{"text": "Anything at all."}])
    with pytest.raises(psycopg.Error) as raised:
        recall(admin_conn, team, "anything", request=request_body)
    assert raised.value.sqlstate == sqlstate


def test_two_hundred_known_ids_are_accepted(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    ingest(admin_conn, team, profile, [{"text": "Anything at all."}])
    answer = recall(
        admin_conn, team, "anything", request={"known_evidence_ids": [str(uuid.uuid4()) for _ in range(200)]}
    )
    assert len(answer["results"]) == 1


def test_a_one_megabyte_query_is_too_large(admin_conn: Conn) -> None:
    team, _ = make_team(admin_conn, "alpha")
    with pytest.raises(psycopg.Error) as raised:
        recall(admin_conn, team, "x" * 1_000_000)
    assert raised.value.sqlstate == "DM413"


def test_no_team_or_another_team_is_rejected(admin_conn: Conn) -> None:
    team, _ = make_team(admin_conn, "alpha")
    other, _ = make_team(admin_conn, "beta")
    with pytest.raises(psycopg.Error) as raised, admin_conn.transaction():
        admin_conn.execute("SET LOCAL ROLE densemem_app")
        admin_conn.execute("SELECT dm.recall_memory('x', %s)", (team,))
    assert raised.value.sqlstate == "28000"
    with pytest.raises(psycopg.Error) as raised, acting_as(admin_conn, Principal(team)) as cur:
        cur.execute("SELECT dm.recall_memory('x', %s)", (other,))
    assert raised.value.sqlstate == "42501"
    for call in (
        "dm_private.recall_fulltext_candidates(%s, 'x', '{}', '{}')",
        "dm_private.recall_vector_access_path(%s)",
        "dm_private.recall_eligible_documents(%s, '{}')",
    ):
        with pytest.raises(psycopg.Error) as raised, acting_as(admin_conn, Principal(team)) as cur:
            cur.execute(f"SELECT * FROM {call}", (other,))
        assert raised.value.sqlstate == "42501"


# ---------------------------------------------------------------- degradation contract


def test_missing_optional_embedding_degrades_and_is_recorded(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    (evidence,) = ingest(admin_conn, team, profile, [{"text": "Nightly ETL loads the warehouse."}])
    answer = recall(admin_conn, team, "nightly ETL warehouse")
    assert result_ids(answer) == [evidence]
    row = admin_conn.execute(
        "SELECT degraded_branches, ranking_profile_version, search_index_profile_version, "
        "query_embedding_contract_version FROM dm_private.recall_telemetry "
        "WHERE team_id = %s ORDER BY created_at DESC LIMIT 1",
        (team,),
    ).fetchone()
    assert row == (["vector"], "default:v9", "v3", None)


def test_wrong_dimension_embedding_degrades_an_optional_branch(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    (evidence,) = ingest(admin_conn, team, profile, [{"text": "Nightly ETL loads the warehouse."}])
    explained = explain(admin_conn, team, "nightly ETL", embedding=[1.0, 0.0, 0.0])
    assert explained["telemetry"]["degraded_branches"] == ["vector"]
    assert explained["answer"]["results"][0]["evidence_id"] == str(evidence)


def test_required_vector_branch_without_embedding_is_a_dependency_error(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    ingest(admin_conn, team, profile, [{"text": "Nightly ETL loads the warehouse."}])
    admin_conn.execute(
        "INSERT INTO dm_private.ranking_profiles (name, version, settings) "
        'SELECT \'vector-required\', 1, settings || \'{"required_branches": ["fulltext", "vector"], '
        "\"optional_branches\": []}' FROM dm_private.ranking_profiles WHERE name = 'default' AND version = 2"
    )
    with pytest.raises(psycopg.Error) as raised:
        recall(admin_conn, team, "nightly ETL", request={"ranking_profile": "vector-required"})
    assert raised.value.sqlstate == "DM503"
    with pytest.raises(psycopg.Error) as raised:
        recall(
            admin_conn,
            team,
            "nightly ETL",
            embedding=[0.5, 0.5],
            request={"ranking_profile": "vector-required"},
        )
    assert raised.value.sqlstate == "DM503"
    ok = recall(
        admin_conn,
        team,
        "nightly ETL",
        embedding=unit((1, 1.0)),
        request={"ranking_profile": "vector-required"},
    )
    assert len(ok["results"]) == 1


def test_one_telemetry_row_per_recall(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    ingest(admin_conn, team, profile, [{"text": "One row per recall."}])
    for _ in range(3):
        recall(admin_conn, team, "row recall")
    row = admin_conn.execute(
        "SELECT count(*), min(pending_document_count) FROM dm_private.recall_telemetry WHERE team_id = %s",
        (team,),
    ).fetchone()
    assert row == (3, 1)


# ---------------------------------------------------------------- isolation


def test_no_row_of_team_b_reaches_team_a_through_any_branch(admin_conn: Conn) -> None:
    team_a, profile_a = make_team(admin_conn, "alpha")
    team_b, profile_b = make_team(admin_conn, "beta")
    texts = [{"text": f"Mark works on Dense-Mem item {i} INC-77."} for i in range(5)]
    ids_a = ingest(admin_conn, team_a, profile_a, texts)
    ids_b = ingest(admin_conn, team_b, profile_b, texts)
    for i, (a, b) in enumerate(zip(ids_a, ids_b, strict=True)):
        embed(admin_conn, team_a, a, unit((i, 1.0)))
        embed(admin_conn, team_b, b, unit((i, 1.0)))
    # team B also has its own partial HNSW index; A scans exactly
    admin_conn.execute("SELECT dm.refresh_vector_indexes(5)")
    for team, mine, theirs in ((team_a, ids_a, ids_b), (team_b, ids_b, ids_a)):
        explained = explain(
            admin_conn,
            team,
            "Mark Dense-Mem",
            embedding=unit((0, 1.0)),
            request={"anchors": ["INC-77"], "phrases": ["Dense-Mem item"]},
        )
        blob = json.dumps(explained)
        assert all(str(x) not in blob for x in theirs)
        assert set(result_ids(explained["answer"])) <= set(mine)
        assert len(explained["answer"]["results"]) == 5


def test_explain_is_for_operators_and_matches_recall_order(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    ids = ingest(
        admin_conn,
        team,
        profile,
        [
            {"text": f"Ticket {i}: the search page times out under load {'badly ' * (i % 3)}."}
            for i in range(12)
        ],
    )
    for i, evidence in enumerate(ids):
        embed(admin_conn, team, evidence, unit((i % 4, 1.0), (20 + i, 0.5)))
    request = {"limit": 8, "now": "2026-06-01T00:00:00Z"}
    answer = recall(admin_conn, team, "search page times out", embedding=unit((2, 1.0)), request=request)
    explained = explain(admin_conn, team, "search page times out", embedding=unit((2, 1.0)), request=request)
    assert explained["answer"] == answer
    assert [r["evidence_id"] for r in explained["results"]] == [r["evidence_id"] for r in answer["results"]]
    first = explained["results"][0]["score_breakdown"]
    assert set(first) >= {"relevance", "recency", "importance", "frequency", "proximity", "confidence"}
    assert first["relevance"]["weight"] == 0.55
    with pytest.raises(psycopg.Error) as raised, acting_as(admin_conn, Principal(team)) as cur:
        cur.execute("SELECT dm.explain_recall('x', %s)", (team,))
    assert raised.value.sqlstate == "42501"


def test_analysts_recall_through_their_own_policy(admin_conn: Conn) -> None:
    """An analyst reads under the analyst policy (hydration) and still leaves a telemetry row.

    The grant check itself (require_team) belongs to the security context; a superuser test session
    counts as a member of densemem_app, so only the analyst's read path is exercised here."""
    team, profile = make_team(admin_conn, "alpha")
    (evidence,) = ingest(admin_conn, team, profile, [{"text": "Quarterly planning happens in March."}])
    admin_conn.execute("SELECT dm.grant_team_to_role(%s, session_user)", (team,))
    analyst = Principal(team, None, (), role="densemem_analyst")
    with acting_as(admin_conn, analyst) as cur:
        cur.execute("SELECT dm.recall_memory('quarterly planning', %s) AS answer", (team,))
        row = cur.fetchone()
    assert row is not None and [r["evidence_id"] for r in row["answer"]["results"]] == [str(evidence)]
    count = admin_conn.execute(
        "SELECT count(*) FROM dm_private.recall_telemetry WHERE team_id = %s", (team,)
    ).fetchone()
    assert count == (1,)


@pytest.mark.parametrize("query", ["", "the and of", "C++ & (foo | !bar) <-> 'x", '"unclosed quote'])
def test_odd_queries_never_fail(admin_conn: Conn, query: str) -> None:
    team, profile = make_team(admin_conn, "alpha")
    (evidence,) = ingest(admin_conn, team, profile, [{"text": "Foo bar baz and C++ notes."}])
    embed(admin_conn, team, evidence, unit((4, 1.0)))
    answer = recall(admin_conn, team, query, embedding=unit((4, 1.0)), request={"anchors": ["c++"]})
    assert result_ids(answer) == [evidence]
