"""The MCP tools through an in-process MCP client session (mcp SDK's Client on the server object)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp import Client
from service_support import FakeHashingEmbedder, fresh_database, issue, require_functions

from densemem.mcp_server import build_server


@pytest.fixture(scope="module")
def module_db(admin_url: str, template_url: str) -> Iterator[str]:
    with fresh_database(admin_url) as url:
        yield url


def _payload(result: Any) -> Any:
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


def _text(result: Any) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


def run_session(url: str, api_key: str, steps: Any) -> Any:
    server = build_server(api_key, database_url=url, embedder=FakeHashingEmbedder())

    async def main() -> Any:
        async with Client(server) as client:
            return await steps(client)

    return anyio.run(main)


def test_lists_the_four_tools(module_db: str) -> None:
    key = issue(module_db, "mcp-list").api_key

    async def steps(client: Client) -> list[str]:
        tools = await client.list_tools()
        return sorted(tool.name for tool in tools.tools)

    assert run_session(module_db, key, steps) == [
        "recall_memory",
        "record_feedback",
        "remember",
        "trace_memory",
    ]


def test_remember_recall_feedback_trace(module_db: str) -> None:
    require_functions(module_db, "dm.ingest_evidence(uuid,jsonb)", "dm.record_feedback(uuid,jsonb)")
    key = issue(module_db, "mcp-team").api_key
    recall_exists = True
    try:
        require_functions(module_db, "dm.recall_memory(text,uuid,vector,jsonb)")
    except pytest.skip.Exception:
        recall_exists = False

    async def steps(client: Client) -> dict[str, Any]:
        out: dict[str, Any] = {}
        remembered = await client.call_tool(
            "remember",
            {
                "text": "Mark works on Dense-Mem.",
                "source_external_id": "chat-7",
                "memory_type": "conversation",
            },
        )
        assert not remembered.is_error, _text(remembered)
        out["evidence_ids"] = _payload(remembered)["evidence_ids"]
        feedback = await client.call_tool(
            "record_feedback",
            {
                "query": "who works on Dense-Mem",
                "evidence_id": out["evidence_ids"][0],
                "judgment": "used",
                "rank": 1,
            },
        )
        assert not feedback.is_error, _text(feedback)
        out["feedback_id"] = _payload(feedback)["feedback_id"]
        if recall_exists:
            recalled = await client.call_tool(
                "recall_memory", {"query": "who works on Dense-Mem?", "limit": 5}
            )
            out["recall"] = (
                recalled.is_error,
                _payload(recalled) if not recalled.is_error else _text(recalled),
            )
        missing = await client.call_tool("trace_memory", {"relationship_id": str(uuid.uuid4())})
        out["trace_missing"] = (missing.is_error, _text(missing))
        bad = await client.call_tool(
            "record_feedback", {"query": "q", "evidence_id": "nope", "judgment": "used"}
        )
        out["bad_feedback"] = (bad.is_error, _text(bad))
        return out

    out = run_session(module_db, key, steps)
    assert len(out["evidence_ids"]) == 1
    uuid.UUID(out["feedback_id"])
    if recall_exists:
        is_error, answer = out["recall"]
        assert not is_error, answer
        assert out["evidence_ids"][0] in [r["evidence_id"] for r in answer["results"]]
    is_error, text = out["trace_missing"]
    assert is_error and "404" in text and "Traceback" not in text
    is_error, text = out["bad_feedback"]
    assert is_error and "422" in text and "evidence_id" in text


def test_trace_tool_answers_a_relationship(module_db: str) -> None:
    require_functions(module_db, "dm.trace_memory(uuid,uuid)", "dm.assert_relationship(uuid,jsonb)")
    import psycopg

    from densemem.store.session import Principal, acting_as

    issued = issue(module_db, "mcp-trace", "agent")
    with (
        psycopg.connect(module_db) as conn,
        acting_as(conn, Principal(team_id=issued.team_id, profile_id=issued.profile_id)) as cur,
    ):
        cur.execute(
            "SELECT dm.ingest_evidence(%s, %s::jsonb) AS ids",
            (
                issued.team_id,
                json.dumps(
                    [
                        {
                            "text": "Mark works on Dense-Mem.",
                            "source": {"external_id": "c1", "kind": "chat"},
                        }
                    ]
                ),
            ),
        )
        row = cur.fetchone()
        assert row is not None
        evidence_id = row["ids"][0]
        cur.execute(
            "SELECT dm.upsert_entities(%s, %s::jsonb) AS ids",
            (issued.team_id, json.dumps([{"name": "Mark"}, {"name": "Dense-Mem"}])),
        )
        row = cur.fetchone()
        assert row is not None
        mark, dense_mem = row["ids"]
        cur.execute(
            "SELECT dm.assert_relationship(%s, %s::jsonb) AS id",
            (
                issued.team_id,
                json.dumps(
                    {
                        "subject_entity_id": str(mark),
                        "predicate": "works_on",
                        "object_entity_id": str(dense_mem),
                        "evidence_ids": [str(evidence_id)],
                    }
                ),
            ),
        )
        row = cur.fetchone()
        assert row is not None
        relationship_id = str(row["id"])
    other = issue(module_db, "mcp-trace-other", "agent").api_key

    async def steps(client: Client) -> Any:
        return await client.call_tool("trace_memory", {"relationship_id": relationship_id})

    mine = run_session(module_db, issued.api_key, steps)
    assert not mine.is_error, _text(mine)
    assert relationship_id in json.dumps(_payload(mine))
    theirs = run_session(module_db, other, steps)
    assert theirs.is_error and "404" in _text(theirs)
    assert str(evidence_id) not in _text(theirs)


def test_invalid_key_is_refused(module_db: str) -> None:
    forged = "dm_" + "1" * 32 + "_" + "2" * 32 + "_" + "x" * 40

    async def steps(client: Client) -> Any:
        return await client.call_tool("recall_memory", {"query": "anything"})

    result = run_session(module_db, forged, steps)
    assert result.is_error and "401" in _text(result)
