"""API keys end to end through a real uvicorn: missing, malformed, unknown, revoked keys get 401."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import psycopg
import pytest
from service_support import assert_error_body, bearer, fresh_database, issue, service

from densemem.keys_command import revoke_key

RECALL = {"query": "who works on Dense-Mem?"}


@pytest.fixture(scope="module")
def module_db(admin_url: str, template_url: str) -> Iterator[str]:
    with fresh_database(admin_url) as url:
        yield url


@pytest.fixture(scope="module")
def base_url(module_db: str) -> Iterator[str]:
    with service(module_db) as url:
        yield url


def _post(base_url: str, headers: dict[str, str], path: str = "/v1/recall") -> httpx.Response:
    return httpx.post(base_url + path, json=RECALL, headers=headers, timeout=30)


def test_missing_key_is_401(base_url: str) -> None:
    response = _post(base_url, {})
    assert response.status_code == 401
    assert_error_body(response.json())
    assert response.json()["code"] == "28000"
    assert response.headers["www-authenticate"].startswith("Bearer")


@pytest.mark.parametrize(
    "header",
    [
        "Bearer not-a-key",
        "Basic dXNlcjpwYXNz",
        "Bearer",
        "Bearer dm_" + "0" * 32 + "_" + "0" * 32 + "_" + "x" * 40,  # well formed, unknown
    ],
)
def test_invalid_key_is_401(base_url: str, header: str) -> None:
    response = _post(base_url, {"Authorization": header})
    assert response.status_code == 401
    assert_error_body(response.json())


def test_tampered_secret_is_401(base_url: str, module_db: str) -> None:
    key = issue(module_db, "tamper-team").api_key
    tampered = key[:-4] + ("aaaa" if not key.endswith("aaaa") else "bbbb")
    assert _post(base_url, bearer(tampered)).status_code == 401
    # the genuine key authenticates (whatever recall itself answers, it is not 401)
    assert _post(base_url, bearer(key)).status_code != 401


def test_revoked_key_is_401_on_every_endpoint(base_url: str, module_db: str) -> None:
    key = issue(module_db, "revoke-team").api_key
    assert _post(base_url, bearer(key)).status_code != 401
    with psycopg.connect(module_db) as conn:
        assert revoke_key(conn, key)
    assert _post(base_url, bearer(key)).status_code == 401
    response = httpx.post(
        base_url + "/v1/entities", json={"items": [{"name": "Mark"}]}, headers=bearer(key), timeout=30
    )
    assert response.status_code == 401
    assert_error_body(response.json())
    trace = httpx.get(
        base_url + "/v1/relationships/00000000-0000-0000-0000-000000000001/trace",
        headers=bearer(key),
        timeout=30,
    )
    assert trace.status_code == 401


def test_disabled_profile_key_is_401(base_url: str, module_db: str) -> None:
    issued = issue(module_db, "disabled-team", "soon-disabled")
    with psycopg.connect(module_db) as conn:
        conn.execute("SELECT dm.set_profile_state(%s, %s, 'disabled')", (issued.team_id, issued.profile_id))
        conn.commit()
    assert _post(base_url, bearer(issued.api_key)).status_code == 401


def test_operator_endpoint_needs_operator_scope(base_url: str, module_db: str) -> None:
    plain = issue(module_db, "scope-team", "plain").api_key
    response = _post(base_url, bearer(plain), "/v1/recall/explain")
    assert response.status_code == 403
    assert_error_body(response.json())
    assert "operator" in response.json()["message"]


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/v1/evidence", {"items": "not a list"}),
        ("POST", "/v1/recall", {"limit": "x"}),
        ("GET", "/v1/relationships/not-a-uuid/trace", None),
        ("DELETE", "/v1/evidence/not-a-uuid", None),
    ],
)
def test_missing_key_is_401_before_validation(base_url: str, method: str, path: str, body: object) -> None:
    response = httpx.request(method, base_url + path, json=body, timeout=30)
    assert response.status_code == 401, response.text
    assert_error_body(response.json())
