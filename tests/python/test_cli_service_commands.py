"""`densemem keys`, `ingest`, `recall`, `trace`, `mcp` as a user runs them (subprocesses); --help."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest
from service_support import require_functions

DENSEMEM = [sys.executable, "-m", "densemem.cli"]


def run(db_url: str, *args: str, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "DATABASE_URL": db_url,
        "DENSEMEM_EMBEDDING_PROVIDER": "hashing-test",
        **(extra_env or {}),
    }
    return subprocess.run(
        [*DENSEMEM, *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def authenticate(db_url: str, key: str) -> Any:
    with psycopg.connect(db_url) as conn:
        return conn.execute("SELECT team_id, scopes FROM dm.authenticate_api_key(%s)", (key,)).fetchone()


def test_keys_create_prints_the_key_alone_and_revoke_kills_it(db_url: str) -> None:
    created = run(db_url, "keys", "create", "--team", "acme", "--profile", "mark", "--scopes", "pii,operator")
    assert created.returncode == 0, created.stderr
    lines = created.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("dm_")
    key = lines[0]
    row = authenticate(db_url, key)
    assert row is not None and sorted(row[1]) == ["operator", "pii"]
    # the same team and profile are reused; a second key is different
    again = run(db_url, "keys", "create", "--team", "acme", "--profile", "mark")
    assert again.returncode == 0 and again.stdout.strip() != key
    assert authenticate(db_url, again.stdout.strip())[0] == row[0]
    with psycopg.connect(db_url) as conn:
        stored = conn.execute(
            "SELECT count(*) FROM dm_private.api_keys WHERE key_hash = sha256(%s::bytea)", (key.encode(),)
        ).fetchone()
        plain = conn.execute(
            "SELECT count(*) FROM dm_private.api_keys WHERE key_hash::text LIKE %s", (f"%{key[-20:]}%",)
        ).fetchone()
    assert stored == (1,) and plain == (0,)
    revoked = run(db_url, "keys", "revoke", key)
    assert revoked.returncode == 0, revoked.stderr
    assert authenticate(db_url, key) is None
    assert run(db_url, "keys", "revoke", key).returncode == 1  # nothing live matched


def test_ingest_recall_trace_as_the_team(db_url: str, tmp_path: Path) -> None:
    require_functions(
        db_url,
        "dm.ingest_evidence(uuid,jsonb)",
        "dm.recall_memory(text,uuid,vector,jsonb)",
        "dm.trace_memory(uuid,uuid)",
    )
    lines = [
        {"text": "Mark works on Dense-Mem.", "source": {"external_id": "chat-1", "kind": "chat"}},
        {"text": "Dense-Mem stores memory in PostgreSQL.", "source": {"external_id": "doc-1", "kind": "doc"}},
    ]
    path = tmp_path / "memory.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    ingested = run(db_url, "ingest", str(path), "--team", "acme", "--profile", "mark")
    assert ingested.returncode == 0, ingested.stderr
    assert "stored 2 evidence items" in ingested.stderr
    # another team with the same words sees nothing of acme's
    other = tmp_path / "other.jsonl"
    other.write_text(
        json.dumps({"text": "Mark works on Dense-Mem too.", "source": {"external_id": "x", "kind": "chat"}})
        + "\n"
    )
    assert run(db_url, "ingest", str(other), "--team", "globex", "--profile", "zoe").returncode == 0
    # the ingest folded the BM25 statistic deltas it appended
    with psycopg.connect(db_url, autocommit=True) as conn:
        pending = conn.execute("SELECT count(*) FROM dm_private.search_statistics_deltas").fetchone()
    assert pending == (0,)
    recalled = run(db_url, "recall", "who works on Dense-Mem?", "--team", "acme", "--limit", "5")
    assert recalled.returncode == 0, recalled.stderr
    answer = json.loads(recalled.stdout)
    contexts = [r["context"] for r in answer["results"]]
    assert "Mark works on Dense-Mem." in contexts and "Mark works on Dense-Mem too." not in contexts
    missing = run(db_url, "trace", str(uuid.uuid4()), "--team", "acme")
    assert missing.returncode == 1 and "Traceback" not in missing.stderr
    unknown_team = run(db_url, "recall", "anything", "--team", "nobody")
    assert unknown_team.returncode == 1 and "no team named" in unknown_team.stderr


def test_ingest_reports_the_bad_line(db_url: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(
        json.dumps({"text": "ok", "source": {"external_id": "a", "kind": "chat"}})
        + "\n"
        + json.dumps({"source": {"external_id": "b", "kind": "chat"}})
        + "\n"
    )
    result = run(db_url, "ingest", str(path), "--team", "acme", "--profile", "mark")
    assert result.returncode == 1
    assert "bad.jsonl:2: text: Field required" in result.stderr


def test_mcp_needs_a_key(db_url: str) -> None:
    result = run(db_url, "mcp", extra_env={"DENSEMEM_API_KEY": ""})
    assert result.returncode == 2 and "DENSEMEM_API_KEY" in result.stderr


@pytest.mark.parametrize(
    "command",
    [["serve"], ["keys"], ["keys", "create"], ["keys", "revoke"], ["recall"], ["trace"], ["ingest"], ["mcp"]],
)
def test_help_on_every_command(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from densemem.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main([*command, "--help"])
    assert exit_info.value.code == 0
    assert "usage: densemem" in capsys.readouterr().out
