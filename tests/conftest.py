"""Test harness: one throwaway embedded PostgreSQL per test session.

The schema is built once into a template database by the real migration
runner; each test that needs a clean slate gets a copy (CREATE DATABASE ...
TEMPLATE), which takes milliseconds. Set DENSEMEM_TEST_ADMIN_URL to run the
suite against another server (a superuser URL).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from densemem import embedded
from densemem.config import project_root
from densemem.migrate import migrate

ROOT = project_root()
TEMPLATE_DB = "densemem_test_template"


@pytest.fixture(scope="session")
def admin_url() -> Iterator[str]:
    """A superuser URL of the test server's `postgres` database."""
    external = os.environ.get("DENSEMEM_TEST_ADMIN_URL")
    if external:
        yield external
        return
    base = Path(tempfile.mkdtemp(prefix="densemem-test-"))
    data_dir = base / "pgdata"
    url = embedded.start(data_dir, "postgres")
    try:
        yield url
    finally:
        embedded.stop(data_dir)
        shutil.rmtree(base, ignore_errors=True)


def database_url(admin: str, name: str) -> str:
    conninfo = psycopg.conninfo.conninfo_to_dict(admin)
    conninfo["dbname"] = name
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in conninfo.items() if v is not None})


@pytest.fixture(scope="session")
def template_url(admin_url: str) -> str:
    """A database migrated by the real runner, with pgTAP, used as a template."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(TEMPLATE_DB)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(TEMPLATE_DB)))
    url = database_url(admin_url, TEMPLATE_DB)
    migrate(url, ROOT / "migrations", ROOT / "sql")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pgtap")
    return url


def create_database_from_template(admin: str) -> str:
    name = f"dm_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(TEMPLATE_DB)
            )
        )
    return database_url(admin, name)


def drop_database(admin: str, url: str) -> None:
    name = psycopg.conninfo.conninfo_to_dict(url)["dbname"]
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(str(name))))


@pytest.fixture
def db_url(admin_url: str, template_url: str) -> Iterator[str]:
    """A fresh, migrated database for one test (superuser URL)."""
    url = create_database_from_template(admin_url)
    try:
        yield url
    finally:
        drop_database(admin_url, url)


@pytest.fixture
def admin_conn(db_url: str) -> Iterator[psycopg.Connection[Any]]:
    """A superuser connection (autocommit) to the test's fresh database."""
    with psycopg.connect(db_url, autocommit=True) as conn:
        yield conn


@pytest.fixture(scope="session")
def pgtap_connection(admin_url: str, template_url: str) -> Iterator[psycopg.Connection[Any]]:
    """pytest-pgtap runs every tests/pgtap/test_*.sql file on one migrated database.

    Each file wraps itself in BEGIN ... ROLLBACK, so files do not see each other's rows.
    A file may load a shared fixture from tests/pgtap/fixtures/ with
    pg_read_file(current_setting('densemem_test.pgtap_dir') || '/fixtures/NAME.sql').
    """
    url = create_database_from_template(admin_url)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "SELECT set_config('densemem_test.pgtap_dir', %s, false)", (str(Path(__file__).parent / "pgtap"),)
        )
        yield conn
    drop_database(admin_url, url)
