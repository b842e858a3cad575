"""The production setup: the service connects as an unprivileged login role.

docker/bootstrap_service_role.py (the compose migrate job) creates it; the
service then works through densemem_app / densemem_operator only, so every
request is under row-level security. Tests elsewhere connect as the
superuser; this one proves the documented role is enough, and no more.
"""

from __future__ import annotations

import os
import runpy
from collections.abc import Iterator

import httpx
import psycopg
import pytest
from service_support import (
    FakeHashingEmbedder,
    bearer,
    fresh_database,
    function_exists,
    issue,
    require_functions,
    service,
)

from densemem.config import project_root

BOOTSTRAP = project_root() / "docker" / "bootstrap_service_role.py"


@pytest.fixture(scope="module")
def service_login(admin_url: str, template_url: str) -> Iterator[tuple[str, str]]:
    with fresh_database(admin_url) as url:
        role = "densemem_service_test"
        previous = dict(os.environ)
        os.environ.update(
            {"DATABASE_URL": url, "DENSEMEM_SERVICE_ROLE": role, "DENSEMEM_SERVICE_PASSWORD": "x" * 24}
        )
        try:
            with pytest.raises(SystemExit) as exit_info:
                runpy.run_path(str(BOOTSTRAP), run_name="__main__")
            assert exit_info.value.code == 0
            # idempotent: a second run alters the role
            with pytest.raises(SystemExit):
                runpy.run_path(str(BOOTSTRAP), run_name="__main__")
        finally:
            os.environ.clear()
            os.environ.update(previous)
        info = psycopg.conninfo.conninfo_to_dict(url)
        info["user"] = role
        info["password"] = "x" * 24
        yield url, psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in info.items() if v is not None})


def test_login_role_has_no_direct_access(service_login: tuple[str, str]) -> None:
    _, login_url = service_login
    with psycopg.connect(login_url) as conn:
        row = conn.execute(
            "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        assert row == (False, False)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT count(*) FROM dm_private.evidence")


def test_service_works_as_the_login_role(service_login: tuple[str, str]) -> None:
    admin_url, login_url = service_login
    require_functions(admin_url, "dm.ingest_evidence(uuid,jsonb)", "dm.recall_memory(text,uuid,vector,jsonb)")
    key = issue(admin_url, "login-team", "agent").api_key
    operator = issue(admin_url, "login-team", "ops", ["operator"]).api_key
    with service(login_url, FakeHashingEmbedder()) as base_url:
        client = httpx.Client(base_url=base_url, headers=bearer(key), timeout=60)
        created = client.post(
            "/v1/evidence",
            json={
                "items": [
                    {"text": "Mark works on Dense-Mem.", "source": {"external_id": "c1", "kind": "chat"}}
                ]
            },
        )
        assert created.status_code == 201, created.text
        recalled = client.post("/v1/recall", json={"query": "who works on Dense-Mem?"})
        assert recalled.status_code == 200, recalled.text
        assert created.json()["evidence_ids"][0] in recalled.text
        if function_exists(admin_url, "dm.explain_recall(text,uuid,vector,jsonb)"):
            explained = httpx.post(
                base_url + "/v1/recall/explain",
                json={"query": "Dense-Mem"},
                headers=bearer(operator),
                timeout=60,
            )
            assert explained.status_code == 200, explained.text
        assert httpx.get(base_url + "/readyz", timeout=30).status_code == 200
        metrics = httpx.get(base_url + "/metrics", timeout=30)
        assert metrics.status_code == 200 and "densemem_database_up 0" not in metrics.text
        assert (
            httpx.post(
                base_url + "/v1/recall", json={"query": "x"}, headers=bearer(key[:-2] + "zz"), timeout=30
            ).status_code
            == 401
        )
