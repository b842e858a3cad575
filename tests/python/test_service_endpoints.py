"""Every endpoint's happy path, and team isolation, end to end through a real uvicorn on 127.0.0.1.

Team A's key never sees team B's evidence, entities, relationships or traces,
even when it names B's IDs: every such request answers exactly what the same
request with a random, never-issued ID answers (404 / 422 indistinguishable
from missing), and no B identifier appears anywhere in A's answers.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import psycopg
import pytest
from service_support import (
    FakeHashingEmbedder,
    assert_error_body,
    bearer,
    fresh_database,
    function_exists,
    issue,
    require_functions,
    service,
)

UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass
class Team:
    key: str
    operator_key: str
    evidence_ids: list[str]
    entity_ids: list[str]
    relationship_id: str
    client: httpx.Client


@pytest.fixture(scope="module")
def module_db(admin_url: str, template_url: str) -> Iterator[str]:
    with fresh_database(admin_url) as url:
        yield url


@pytest.fixture(scope="module")
def embedder() -> FakeHashingEmbedder:
    return FakeHashingEmbedder()


@pytest.fixture(scope="module")
def base_url(module_db: str, embedder: FakeHashingEmbedder) -> Iterator[str]:
    with service(module_db, embedder) as url:
        yield url


def _client(base_url: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=base_url, headers=bearer(key), timeout=60)


def _populate(base_url: str, module_db: str, name: str) -> Team:
    issued = issue(module_db, name, "agent")
    operator = issue(module_db, name, "operator", ["operator"])
    client = _client(base_url, issued.api_key)
    evidence = client.post(
        "/v1/evidence",
        json={
            "items": [
                {
                    "text": "Mark works on Dense-Mem, the memory engine.",
                    "source": {"external_id": f"{name}-chat-1", "kind": "chat"},
                    "memory_type": "conversation",
                    "created_at": "2026-11-01T10:00:00Z",
                },
                {
                    "text": "Dense-Mem uses PostgreSQL and pgvector for recall.",
                    "source": {"external_id": f"{name}-doc-1", "kind": "document", "title": "Design"},
                    "importance": 0.9,
                },
            ]
        },
    )
    assert evidence.status_code == 201, evidence.text
    evidence_ids = evidence.json()["evidence_ids"]
    assert len(evidence_ids) == 2 and len(set(evidence_ids)) == 2
    entities = client.post(
        "/v1/entities",
        json={"items": [{"name": "Mark", "kind": "person"}, {"name": "Dense-Mem", "aliases": ["DM"]}]},
    )
    assert entities.status_code == 200, entities.text
    entity_ids = entities.json()["entity_ids"]
    relationship = client.post(
        "/v1/relationships",
        json={
            "subject_entity_id": entity_ids[0],
            "predicate": "works_on",
            "object_entity_id": entity_ids[1],
            "evidence_ids": [{"evidence_id": evidence_ids[0], "span_start": 0, "span_end": 23}],
        },
    )
    assert relationship.status_code == 201, relationship.text
    relationship_id = relationship.json()["relationship_id"]
    verification = client.post(
        f"/v1/relationships/{relationship_id}/verifications",
        json={"decision": "validated_claim", "rationale": "seen"},
    )
    assert verification.status_code == 201, verification.text
    uuid.UUID(verification.json()["verification_id"])
    return Team(issued.api_key, operator.api_key, evidence_ids, entity_ids, relationship_id, client)


@pytest.fixture(scope="module")
def teams(base_url: str, module_db: str) -> Iterator[tuple[Team, Team]]:
    require_functions(
        module_db,
        "dm.ingest_evidence(uuid,jsonb)",
        "dm.upsert_entities(uuid,jsonb)",
        "dm.assert_relationship(uuid,jsonb)",
        "dm.record_verification(uuid,uuid,text,text)",
    )
    a = _populate(base_url, module_db, "team-a")
    b = _populate(base_url, module_db, "team-b")
    yield a, b
    a.client.close()
    b.client.close()


def _same_answer(one: httpx.Response, other: httpx.Response, *ids: str) -> None:
    """Two answers are the same once the IDs each request named are blanked out."""
    assert one.status_code == other.status_code, (one.text, other.text)

    def blank(text: str) -> str:
        for value in ids:
            text = text.replace(value, "<id>")
        return text

    assert blank(one.text) == blank(other.text)


# ---------------------------------------------------------------- happy paths


def test_write_endpoints_happy_path(teams: tuple[Team, Team], module_db: str) -> None:
    a, _ = teams
    hypothesis = a.client.post(
        "/v1/hypotheses",
        json={"statement": "Mark may also maintain the wiki.", "source_external_id": "team-a-chat-1"},
    )
    assert hypothesis.status_code == 201, hypothesis.text
    uuid.UUID(hypothesis.json()["hypothesis_id"])
    feedback = a.client.post(
        "/v1/feedback",
        json={
            "query": "who works on Dense-Mem",
            "evidence_id": a.evidence_ids[0],
            "judgment": "used",
            "rank": 1,
        },
    )
    assert feedback.status_code == 201, feedback.text
    uuid.UUID(feedback.json()["feedback_id"])
    # lifecycle: quarantine then release a relationship; same for evidence
    for move in ("quarantine", "release"):
        response = a.client.post(
            f"/v1/relationships/{a.relationship_id}/lifecycle", json={"move": move, "reason": "t"}
        )
        assert response.status_code == 200, response.text
        assert response.json() == {"relationship_id": a.relationship_id, "move": move}
    for move in ("quarantine", "release"):
        response = a.client.post(f"/v1/evidence/{a.evidence_ids[1]}/lifecycle", json={"move": move})
        assert response.status_code == 200, response.text
    # an illegal move is a 409 with the error body
    illegal = a.client.post(f"/v1/evidence/{a.evidence_ids[1]}/lifecycle", json={"move": "release"})
    assert illegal.status_code == 409, illegal.text
    assert_error_body(illegal.json())
    assert illegal.json()["code"] == "DM409"


def test_erase_evidence_happy_path(teams: tuple[Team, Team]) -> None:
    a, _ = teams
    created = a.client.post(
        "/v1/evidence",
        json={
            "items": [
                {
                    "text": "My phone number is 555-0100.",
                    "source": {"external_id": "erase-me", "kind": "chat"},
                }
            ]
        },
    )
    assert created.status_code == 201, created.text
    evidence_id = created.json()["evidence_ids"][0]
    erased = a.client.delete(f"/v1/evidence/{evidence_id}", params={"reason": "user asked"})
    assert erased.status_code == 204, erased.text
    assert erased.content == b""
    again = a.client.delete(f"/v1/evidence/{evidence_id}")
    assert again.status_code in {404, 409}, again.text
    assert_error_body(again.json())


def test_validation_errors_are_clear_422(teams: tuple[Team, Team]) -> None:
    a, _ = teams
    response = a.client.post(
        "/v1/evidence", json={"items": [{"source": {"external_id": "x", "kind": "chat"}}]}
    )
    assert response.status_code == 422
    body = response.json()
    assert_error_body(body)
    assert body["details"] == [{"field": "items[0].text", "message": "Field required"}]
    assert "items[0].text" in body["message"]
    not_json = a.client.post("/v1/entities", content=b"{", headers={"content-type": "application/json"})
    assert not_json.status_code == 422
    assert not_json.json()["details"][0]["message"] == "the request body is not valid JSON"
    bad_uuid = a.client.get("/v1/relationships/not-a-uuid/trace")
    assert bad_uuid.status_code == 422
    assert_error_body(bad_uuid.json())
    too_many = a.client.post(
        "/v1/recall", json={"query": "x", "known_evidence_ids": [str(uuid.uuid4())] * 201}
    )
    assert too_many.status_code == 422
    assert too_many.json()["details"][0]["field"] == "known_evidence_ids"


def test_limits_body_and_query_string(teams: tuple[Team, Team]) -> None:
    a, _ = teams
    huge = a.client.post(
        "/v1/entities", content=b"x" * (4 * 1024 * 1024 + 1), headers={"content-type": "application/json"}
    )
    assert huge.status_code == 413
    assert_error_body(huge.json())
    long_query = a.client.delete(f"/v1/evidence/{uuid.uuid4()}", params={"reason": "r" * 5000})
    assert long_query.status_code == 413
    assert long_query.json()["code"] == "DM413"


def test_recall_happy_path(teams: tuple[Team, Team], module_db: str, embedder: FakeHashingEmbedder) -> None:
    require_functions(module_db, "dm.recall_memory(text,uuid,vector,jsonb)")
    a, _ = teams
    calls = embedder.calls
    response = a.client.post("/v1/recall", json={"query": "who works on Dense-Mem?", "limit": 5})
    assert response.status_code == 200, response.text
    body = response.json()
    assert {"results", "discovery_paths", "guidance"} <= set(body)
    assert embedder.calls == calls + 1  # embedded once
    returned = [r["evidence_id"] for r in body["results"]]
    assert a.evidence_ids[0] in returned
    for result in body["results"]:
        assert "score" not in result and "tier" not in result
    assert "score" not in response.text and "embedding" not in response.text


def test_recall_answer_is_the_sql_answer_byte_for_byte(
    teams: tuple[Team, Team], module_db: str, embedder: FakeHashingEmbedder
) -> None:
    require_functions(module_db, "dm.recall_memory(text,uuid,vector,jsonb)")
    import psycopg

    from densemem.service.embedding import vector_literal
    from densemem.store.session import Principal, acting_as

    a, _ = teams
    response = a.client.post("/v1/recall", json={"query": "PostgreSQL recall", "limit": 3})
    assert response.status_code == 200, response.text
    team_id = uuid.UUID(a.key.split("_")[1])
    with psycopg.connect(module_db) as conn, acting_as(conn, Principal(team_id=team_id)) as cur:
        cur.execute(
            "SELECT dm.recall_memory(%s, %s, %s::public.vector, %s::jsonb)::text AS answer",
            (
                "PostgreSQL recall",
                team_id,
                vector_literal(embedder.embed_query("PostgreSQL recall")),
                '{"limit": 3}',
            ),
        )
        row = cur.fetchone()
    assert row is not None
    # byte-identical: the service passes the database's jsonb text through unchanged
    assert response.text == row["answer"]


def test_trace_happy_path(teams: tuple[Team, Team], module_db: str) -> None:
    require_functions(module_db, "dm.trace_memory(uuid,uuid)")
    a, _ = teams
    response = a.client.get(f"/v1/relationships/{a.relationship_id}/trace")
    assert response.status_code == 200, response.text
    assert a.relationship_id in response.text
    assert a.evidence_ids[0] in response.text


def test_explain_needs_operator_and_answers_operators(teams: tuple[Team, Team], module_db: str) -> None:
    require_functions(module_db, "dm.explain_recall(text,uuid,vector,jsonb)")
    a, _ = teams
    denied = a.client.post("/v1/recall/explain", json={"query": "who works on Dense-Mem?"})
    assert denied.status_code == 403
    with _client(a.client.base_url.__str__().rstrip("/"), a.operator_key) as operator:
        response = operator.post("/v1/recall/explain", json={"query": "who works on Dense-Mem?"})
    assert response.status_code == 200, response.text
    assert isinstance(response.json(), dict)


def test_operations_endpoints(base_url: str, teams: tuple[Team, Team], module_db: str) -> None:
    assert httpx.get(base_url + "/healthz").json() == {"status": "ok"}
    ready = httpx.get(base_url + "/readyz", timeout=30)
    assert ready.status_code == 200, ready.text
    assert ready.json() == {"status": "ready", "database": "ok", "embedding": "ok"}
    metrics = httpx.get(base_url + "/metrics", timeout=30)
    assert metrics.status_code == 200
    assert metrics.headers["content-type"].startswith("text/plain")
    text = metrics.text
    assert "# TYPE densemem_http_request_duration_seconds histogram" in text
    assert re.search(
        r'densemem_http_request_duration_seconds_count\{method="POST",route="/v1/evidence"\} [1-9]', text
    )
    assert 'densemem_http_requests_total{method="POST",route="/v1/evidence",status="201"}' in text
    if function_exists(module_db, "dm.search_freshness_overall()"):
        assert "densemem_search_pending_documents" in text
    document = httpx.get(base_url + "/openapi.json").json()
    assert document["openapi"].startswith("3.1")
    assert (
        "/v1/recall" in document["paths"] and "/v1/relationships/{relationship_id}/trace" in document["paths"]
    )


def test_readyz_reports_a_failing_embedding_provider(base_url: str, embedder: FakeHashingEmbedder) -> None:
    embedder.fail = True
    try:
        ready = httpx.get(base_url + "/readyz", timeout=30)
    finally:
        embedder.fail = False
    assert ready.status_code == 503
    body = ready.json()
    assert_error_body(body)
    assert body["details"]["database"] == "ok" and body["details"]["embedding"].startswith("unavailable")


def test_unknown_route_and_method(base_url: str) -> None:
    missing = httpx.get(base_url + "/v1/nothing")
    assert missing.status_code == 404
    assert_error_body(missing.json())
    wrong = httpx.get(base_url + "/v1/recall")
    assert wrong.status_code == 405
    assert_error_body(wrong.json())


# ---------------------------------------------------------------- isolation


def test_team_a_cannot_reach_team_b_by_id(teams: tuple[Team, Team]) -> None:
    a, b = teams
    random_id = str(uuid.uuid4())
    probes: list[tuple[str, str, Any]] = [
        ("DELETE", "/v1/evidence/{id}", None),
        ("POST", "/v1/evidence/{id}/lifecycle", {"move": "quarantine"}),
        ("POST", "/v1/relationships/{id}/verifications", {"decision": "fact"}),
        ("POST", "/v1/relationships/{id}/lifecycle", {"move": "retract"}),
    ]
    for method, template, body in probes:
        for b_id in (b.evidence_ids[0], b.relationship_id):
            if ("evidence" in template) != (b_id in b.evidence_ids):
                continue
            theirs = a.client.request(method, template.format(id=b_id), json=body)
            missing = a.client.request(method, template.format(id=random_id), json=body)
            assert theirs.status_code in {404, 422}, (template, theirs.text)
            assert_error_body(theirs.json())
            _same_answer(theirs, missing, b_id, random_id)
    # graph writes naming B's entities or evidence answer as for IDs that do not exist
    theirs = a.client.post(
        "/v1/relationships",
        json={
            "subject_entity_id": b.entity_ids[0],
            "predicate": "knows",
            "object_value": "x",
            "evidence_ids": [a.evidence_ids[0]],
        },
    )
    missing = a.client.post(
        "/v1/relationships",
        json={
            "subject_entity_id": random_id,
            "predicate": "knows",
            "object_value": "x",
            "evidence_ids": [a.evidence_ids[0]],
        },
    )
    _same_answer(theirs, missing, b.entity_ids[0], random_id)
    theirs = a.client.post(
        "/v1/relationships",
        json={
            "subject_entity_id": a.entity_ids[0],
            "predicate": "knows",
            "object_value": "x",
            "evidence_ids": [b.evidence_ids[0]],
        },
    )
    missing = a.client.post(
        "/v1/relationships",
        json={
            "subject_entity_id": a.entity_ids[0],
            "predicate": "knows",
            "object_value": "x",
            "evidence_ids": [random_id],
        },
    )
    _same_answer(theirs, missing, b.evidence_ids[0], random_id)
    theirs = a.client.post(
        "/v1/feedback", json={"query": "q", "evidence_id": b.evidence_ids[0], "judgment": "used"}
    )
    missing = a.client.post("/v1/feedback", json={"query": "q", "evidence_id": random_id, "judgment": "used"})
    _same_answer(theirs, missing, b.evidence_ids[0], random_id)
    assert theirs.status_code == 422
    # B's rows are untouched by A's attempts
    assert (
        b.client.post(
            f"/v1/relationships/{b.relationship_id}/lifecycle", json={"move": "quarantine"}
        ).status_code
        == 200
    )
    assert (
        b.client.post(
            f"/v1/relationships/{b.relationship_id}/lifecycle", json={"move": "release"}
        ).status_code
        == 200
    )


def test_team_a_cannot_trace_team_b(teams: tuple[Team, Team], module_db: str) -> None:
    require_functions(module_db, "dm.trace_memory(uuid,uuid)")
    a, b = teams
    random_id = str(uuid.uuid4())
    theirs = a.client.get(f"/v1/relationships/{b.relationship_id}/trace")
    missing = a.client.get(f"/v1/relationships/{random_id}/trace")
    assert theirs.status_code == 404, theirs.text
    assert_error_body(theirs.json())
    _same_answer(theirs, missing, b.relationship_id, random_id)
    assert b.client.get(f"/v1/relationships/{b.relationship_id}/trace").status_code == 200


def test_team_a_recall_never_contains_team_b(teams: tuple[Team, Team], module_db: str) -> None:
    require_functions(module_db, "dm.recall_memory(text,uuid,vector,jsonb)")
    a, b = teams
    b_ids = set(b.evidence_ids) | set(b.entity_ids) | {b.relationship_id}
    a_ids = set(a.evidence_ids) | set(a.entity_ids) | {a.relationship_id}
    requests: list[dict[str, Any]] = [
        {"query": "who works on Dense-Mem?"},
        {"query": "PostgreSQL pgvector memory engine", "limit": 50},
        {"query": "Mark", "expand_from_entity_ids": b.entity_ids},
        {
            "query": "Dense-Mem",
            "known_evidence_ids": b.evidence_ids,
            "known_relationship_ids": [b.relationship_id],
        },
        {"query": "Mark works on Dense-Mem", "include_hypotheses": True},
    ]
    for request in requests:
        response = a.client.post("/v1/recall", json=request)
        assert response.status_code in {200, 422}, response.text
        found = set(UUID_RE.findall(response.text))
        assert not (found & b_ids), (request, found & b_ids)
        if response.status_code == 200:
            assert found <= a_ids | _all_ids_of(a, module_db), request
    # and B still finds its own evidence with the same query
    mine = b.client.post("/v1/recall", json={"query": "who works on Dense-Mem?"})
    assert mine.status_code == 200
    assert set(UUID_RE.findall(mine.text)) & set(b.evidence_ids)


def _all_ids_of(a: Team, module_db: str) -> set[str]:
    """IDs of team A rows created in other tests of this module (sources, hypotheses, later evidence)."""
    import psycopg

    team_id = uuid.UUID(a.key.split("_")[1])
    with psycopg.connect(module_db) as conn:
        rows = conn.execute(
            "SELECT evidence_id::text FROM dm_private.evidence WHERE team_id = %(t)s "
            "UNION ALL SELECT source_id::text FROM dm_private.sources WHERE team_id = %(t)s "
            "UNION ALL SELECT hypothesis_id::text FROM dm_private.hypotheses WHERE team_id = %(t)s "
            "UNION ALL SELECT entity_id::text FROM dm_private.entities WHERE team_id = %(t)s "
            "UNION ALL SELECT relationship_id::text FROM dm_private.relationships WHERE team_id = %(t)s "
            "UNION ALL SELECT profile_id::text FROM dm_private.profiles WHERE team_id = %(t)s "
            "UNION ALL SELECT team_id::text FROM dm_private.teams WHERE team_id = %(t)s",
            {"t": team_id},
        ).fetchall()
    return {r[0] for r in rows}


def test_evidence_writes_fold_the_teams_bm25_statistics(teams: tuple[Team, Team], module_db: str) -> None:
    """The service folds the team's statistic deltas after each evidence write (a background task
    in its own transaction), so reads never sum a growing pile; the folded counts stay exact."""
    a, _ = teams
    written = a.client.post(
        "/v1/evidence",
        json={
            "items": [
                {
                    "text": "Quokkas photobomb the zeppelin hangar.",
                    "source": {"external_id": "team-a-fold-1", "kind": "chat"},
                }
            ]
        },
    )
    assert written.status_code == 201, written.text
    evidence_id = written.json()["evidence_ids"][0]
    with psycopg.connect(module_db, autocommit=True) as conn:
        row = conn.execute(
            "SELECT team_id FROM dm_private.evidence WHERE evidence_id = %s", (evidence_id,)
        ).fetchone()
        assert row is not None
        team_id = row[0]
        pending = -1
        for _ in range(100):
            pending_row = conn.execute(
                "SELECT count(*) FROM dm_private.search_statistics_deltas WHERE team_id = %s", (team_id,)
            ).fetchone()
            assert pending_row is not None
            pending = int(pending_row[0])
            if pending == 0:
                break
            time.sleep(0.05)
        assert pending == 0, "the background compaction did not fold the team's deltas"
        folded = conn.execute(
            "SELECT document_count FROM dm_private.search_term_statistics"
            " WHERE team_id = %s AND lexeme = 'quokka'",
            (team_id,),
        ).fetchone()
        recount = conn.execute(
            "SELECT count(*) FROM dm_private.search_documents AS d"
            " WHERE d.team_id = %s AND d.subject_kind = 'evidence' AND d.is_recallable"
            " AND d.search_vector @@ 'quokka'::tsquery",
            (team_id,),
        ).fetchone()
        assert folded is not None and recount is not None
        assert folded[0] == recount[0] == 1
