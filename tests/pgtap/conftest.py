"""pgTAP files may load shared SQL fixtures from tests/pgtap/fixtures/.

The session's pgTAP connection gets the setting `densemem_test.pgtap_dir`
(this directory), so a test file can run a fixture inside its own
transaction (rolled back with it):

    DO $$ BEGIN EXECUTE pg_catalog.pg_read_file(
        pg_catalog.current_setting('densemem_test.pgtap_dir') || '/fixtures/NAME.sql'); END $$;

The files are read by the server (the pgTAP connection is a superuser on
a server of this machine); `fixtures/*.sql` are not test files themselves.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

FIXTURE_DIR = Path(__file__).resolve().parent


@pytest.fixture(scope="session", autouse=True)
def pgtap_fixture_dir(pgtap_connection: psycopg.Connection[Any]) -> None:
    """Tell the pgTAP session where the shared SQL fixtures are."""
    pgtap_connection.execute(
        "SELECT pg_catalog.set_config('densemem_test.pgtap_dir', %s, false)", (str(FIXTURE_DIR),)
    )
