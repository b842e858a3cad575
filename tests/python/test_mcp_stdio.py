"""`densemem mcp` as an MCP host starts it: a subprocess speaking JSON-RPC over stdio."""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from service_support import issue, require_functions


def test_densemem_mcp_over_stdio(db_url: str) -> None:
    require_functions(db_url, "dm.ingest_evidence(uuid,jsonb)")
    key = issue(db_url, "stdio-team").api_key
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "densemem.cli", "mcp"],
        env={
            "DATABASE_URL": db_url,
            "DENSEMEM_API_KEY": key,
            "DENSEMEM_EMBEDDING_PROVIDER": "hashing-test",  # test-only provider, no model download
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        },
    )

    async def main() -> tuple[list[str], Any]:
        async with Client(parameters, read_timeout_seconds=120) as client:
            tools = sorted(tool.name for tool in (await client.list_tools()).tools)
            stored = await client.call_tool(
                "remember", {"text": "Mark works on Dense-Mem.", "source_kind": "chat"}
            )
            return tools, stored

    tools, stored = anyio.run(main)
    assert tools == ["recall_memory", "record_feedback", "remember", "trace_memory"]
    assert not stored.is_error, stored.content
    evidence_ids = (stored.structured_content or {}).get("evidence_ids")
    assert isinstance(evidence_ids, list) and len(evidence_ids) == 1
