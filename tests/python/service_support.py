"""Shared helpers of the service, MCP and CLI tests: a migrated database, a real uvicorn on
127.0.0.1 (random free port), API keys, and a fake query embedder."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest

from conftest import create_database_from_template, drop_database
from densemem.config import load_settings
from densemem.embeddings.hashing import HashingTestProvider
from densemem.keys_command import IssuedKey, create_key
from densemem.service.app import create_app
from densemem.service.routes import ServiceConfig
from densemem.service.server import running_server

DIMENSIONS = 384


class FakeHashingEmbedder:
    """A FAKE query embedder for tests: densemem.embeddings.hashing.HashingTestProvider
    (feature hashing, not a model) behind the QueryEmbedder interface.

    `fail = True` simulates a provider outage; `calls` counts embeddings.
    """

    def __init__(self, dimensions: int = DIMENSIONS) -> None:
        self.provider = HashingTestProvider(dimensions)
        self.fail = False
        self.calls = 0

    def embed_query(self, text: str) -> Sequence[float] | None:
        self.calls += 1
        if self.fail:
            raise ConnectionError("fake provider is down")
        return [float(x) for x in self.provider.embed([text])[0]]


def function_exists(url: str, signature: str) -> bool:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT pg_catalog.to_regprocedure(%s) IS NOT NULL", (signature,)).fetchone()
    return bool(row and row[0])


def require_functions(url: str, *signatures: str) -> None:
    missing = [s for s in signatures if not function_exists(url, s)]
    if missing:
        pytest.skip(f"not landed yet: {', '.join(missing)}")


@contextmanager
def fresh_database(admin_url: str) -> Iterator[str]:
    url = create_database_from_template(admin_url)
    try:
        yield url
    finally:
        drop_database(admin_url, url)


def issue(url: str, team: str, profile: str = "agent", scopes: Sequence[str] = ()) -> IssuedKey:
    with psycopg.connect(url) as conn:
        return create_key(conn, team, profile, list(scopes))


@contextmanager
def service(
    url: str,
    embedder: Any | None = None,
    *,
    config: ServiceConfig | None = None,
    configure_connection: Any | None = None,
) -> Iterator[str]:
    app = create_app(
        load_settings(),
        database_url=url,
        embedder=embedder if embedder is not None else FakeHashingEmbedder(),
        config=config,
        configure_connection=configure_connection,
    )
    with running_server(app) as base_url:
        yield base_url


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def assert_error_body(body: Any) -> None:
    assert isinstance(body, dict)
    assert set(body) == {"code", "message", "details", "hint"}, body
    assert isinstance(body["code"], str) and isinstance(body["message"], str)
    assert "Traceback" not in str(body)
