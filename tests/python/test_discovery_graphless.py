"""Discovery in a graph-less team (evidence only, no entity) answers as the full path does.

dm_private.discovery_for_recall_embedded skips its prelude and seeds
statement after one probe when the team has no entity at all. These tests
take the same calls twice: while the team is graph-less (the shortcut) and
after an entity that no call names has been added (the full path: seeds,
hints, walk, which find nothing), and require equal answers and equal errors,
with hypotheses and communities asked for (the hypotheses field must be
non-empty, so dropping it would fail), known and expansion IDs, time
parameters, odd parsed input, and request / profile errors.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import psycopg
import pytest

from densemem.store import write
from densemem.store.session import Principal, acting_as

CALL = """
SELECT dm_private.discovery_for_recall(
    %(team)s, %(query)s, %(parsed)s::jsonb, %(returned)s::uuid[], %(request)s::jsonb,
    %(settings)s::jsonb)::text AS answer
"""

CALL_EMBEDDED = """
SELECT dm_private.discovery_for_recall_embedded(
    %(team)s, %(query)s, %(parsed)s::jsonb, %(returned)s::uuid[], %(request)s::jsonb, %(settings)s::jsonb,
    %(embedding)s::public.vector)::text AS answer
"""

BUDGETS = {
    "seed_count": 5,
    "fan_out": 20,
    "max_edges": 200,
    "max_depth": 2,
    "max_paths": 5,
    "max_path_bytes": 4000,
    "time_budget_ms": 10000,
}


def _cases(evidence: list[uuid.UUID]) -> list[dict[str, Any]]:
    """Varied discovery calls; each is run in both states of the team."""
    some = [str(e) for e in evidence]
    stranger = str(uuid.UUID(int=7))
    base = {"discovery": BUDGETS}
    cases: list[dict[str, Any]] = []
    queries = [
        "What does Caroline paint?",
        "Caroline landscapes painting",
        "",
        "a\\b 'quoted' C:\\path",
        "Melanie pottery workshop in July",
    ]
    requests: list[dict[str, Any]] = [
        {},
        {"include_hypotheses": True},
        {"known_evidence_ids": some[:1], "known_relationship_ids": [stranger]},
        {"expand_from_entity_ids": [stranger]},
        {"valid_at": "2024-01-01T00:00:00Z", "known_at": "2030-01-01T00:00:00Z"},
    ]
    settings: list[Any] = [
        base,
        {**base, "hypotheses": {"enabled": True, "limit": 2}},
        {**base, "communities": {"enabled": True, "limit": 3}},
        {"discovery": {**BUDGETS, "seed_count": 0}},
        {"discovery": {**BUDGETS, "max_paths": 0}},
        {},
        None,
    ]
    parsed: list[Any] = [
        {},
        {"entities": [{"entity_id": stranger, "name": "Caroline"}], "predicates": ["paints"]},
        {"terms": ["caroline", {"term": "landscape"}]},
        None,
    ]
    for i, query in enumerate(queries):
        for j, request in enumerate(requests):
            cases.append(
                {
                    "query": query,
                    "request": request,
                    "settings": settings[(i + j) % len(settings)],
                    "parsed": parsed[(i * 3 + j) % len(parsed)],
                    "returned": some if (i + j) % 2 == 0 else [],
                }
            )
    # Errors the full path raises: too many or malformed IDs, a malformed
    # timestamp, and a budget outside the integer range (the prelude's cast).
    errors: list[dict[str, Any]] = [
        {"request": {"known_evidence_ids": [str(uuid.UUID(int=n)) for n in range(201)]}},
        {"request": {"known_relationship_ids": ["not-a-uuid"]}},
        {"request": {"expand_from_entity_ids": "x"}},
        {"request": {"valid_at": "garbage"}},
        {"settings": {"discovery": {**BUDGETS, "fan_out": 1e12}}},
        {"settings": {"discovery": {**BUDGETS, "time_budget_ms": -2147483648.5}}},
    ]
    for error in errors:
        cases.append(
            {
                "query": "What does Caroline paint?",
                "request": error.get("request", {}),
                "settings": error.get("settings", base),
                "parsed": {},
                "returned": some,
            }
        )
    return cases


def _run(conn: psycopg.Connection[Any], principal: Principal, cases: list[dict[str, Any]]) -> list[Any]:
    """Each case's answer, or its SQLSTATE and message; the embedded variant too."""
    out: list[Any] = []
    for case in cases:
        for embedded in (False, True):
            params = {
                "team": principal.team_id,
                "query": case["query"],
                "parsed": None if case["parsed"] is None else json.dumps(case["parsed"]),
                "returned": case["returned"],
                "request": json.dumps(case["request"]),
                "settings": None if case["settings"] is None else json.dumps(case["settings"]),
                "embedding": "[" + ",".join(["0.1"] * 384) + "]",
            }
            try:
                with acting_as(conn, principal) as cur:
                    row = cur.execute(CALL_EMBEDDED if embedded else CALL, params).fetchone()
                    assert row is not None
                    out.append(("ok", row["answer"]))
            except psycopg.Error as error:
                out.append(("error", error.sqlstate, str(error).split("\n")[0]))
    return out


def test_graphless_team_answers_as_the_full_path(admin_conn: psycopg.Connection[Any]) -> None:
    team = admin_conn.execute("SELECT dm.ensure_team('graph-less team')").fetchone()
    assert team is not None
    profile = admin_conn.execute("SELECT dm.ensure_profile(%s, 'carol')", (team[0],)).fetchone()
    assert profile is not None
    principal = Principal(team[0], profile[0])
    with acting_as(admin_conn, principal) as cur:
        evidence = write.ingest_evidence(
            cur,
            team_id=principal.team_id,
            items=[
                {"text": "Caroline paints landscapes.", "source": {"external_id": "chat-1", "kind": "chat"}},
                {
                    "text": "Melanie went to a pottery workshop in July.",
                    "source": {"external_id": "chat-2", "kind": "chat"},
                },
            ],
        )
        write.add_hypothesis(
            cur,
            team_id=principal.team_id,
            hypothesis={
                "statement": "Caroline paints landscapes every weekend",
                "source_external_id": "chat-1",
            },
        )
    graphless = admin_conn.execute(
        "SELECT count(*) FROM dm_private.entities WHERE team_id = %s", (principal.team_id,)
    ).fetchone()
    assert graphless == (0,)

    cases = _cases(evidence)
    shortcut = _run(admin_conn, principal, cases)

    # The answers are what a graph-less team must get: no path, no
    # degradation; hypotheses (when asked) found by the statement's words.
    answers = [json.loads(r[1]) for r in shortcut if r[0] == "ok"]
    assert answers and all(a["discovery_paths"] == [] and a["degraded"] == [] for a in answers)
    assert any(a.get("related_hypotheses") for a in answers), "a hypothesis must be offered when asked"
    assert any("communities" in a for a in answers)
    assert {r[1] for r in shortcut if r[0] == "error"} == {"22023", "22P02", "22007", "22003"}

    # An entity no call names: the team is no longer graph-less, the full
    # path runs (prelude, seeds, walk) and must answer exactly the same.
    with acting_as(admin_conn, principal) as cur:
        write.upsert_entities(cur, team_id=principal.team_id, items=[{"name": "Zyxwv Quorble"}])
    full = _run(admin_conn, principal, cases)
    assert len(full) == len(shortcut)
    for case_answer, full_answer in zip(shortcut, full, strict=True):
        assert case_answer == full_answer


@pytest.mark.parametrize("budget", [2147483647.5, -2147483648.5, 1e12])
def test_graphless_budget_out_of_range_fails_as_before(
    admin_conn: psycopg.Connection[Any], budget: float
) -> None:
    team = admin_conn.execute("SELECT dm.ensure_team('graph-less budgets')").fetchone()
    assert team is not None
    principal = Principal(team[0])
    settings = json.dumps({"discovery": {**BUDGETS, "max_edges": budget}})
    with pytest.raises(psycopg.errors.NumericValueOutOfRange), acting_as(admin_conn, principal) as cur:
        cur.execute(
            CALL,
            {
                "team": team[0],
                "query": "q",
                "parsed": "{}",
                "returned": [],
                "request": "{}",
                "settings": settings,
            },
        )
    # The largest numbers inside the range take the shortcut and answer.
    inside = json.dumps({"discovery": {**BUDGETS, "max_edges": 2147483647.4, "fan_out": -2147483648.4}})
    with acting_as(admin_conn, principal) as cur:
        row = cur.execute(
            CALL,
            {
                "team": team[0],
                "query": "q",
                "parsed": "{}",
                "returned": [],
                "request": "{}",
                "settings": inside,
            },
        ).fetchone()
        assert row is not None
        assert json.loads(row["answer"]) == {"discovery_paths": [], "degraded": []}
