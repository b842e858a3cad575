"""`densemem db start|status|url|stop` on a throwaway data directory, through
the installed command line (.venv/bin/densemem), as a user would run it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

DENSEMEM = Path(sys.executable).parent / "densemem"


def run(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(DENSEMEM), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=180, check=False
    )


@pytest.fixture
def workdir() -> Iterator[Path]:
    # Short path: the server's Unix socket lives in the data directory and
    # socket paths are limited to about 100 bytes.
    base = Path(tempfile.mkdtemp(prefix="dm-cli-"))
    try:
        yield base
    finally:
        data_dir = base / "pgdata"
        if (data_dir / "postmaster.pid").exists():
            env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
            env["DENSEMEM_DATA_DIR"] = str(data_dir)
            run(env, base, "db", "stop")
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def embedded_env(workdir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["DENSEMEM_DATA_DIR"] = str(workdir / "pgdata")
    env.pop("DENSEMEM_DATABASE", None)
    return env


def running_pid(status_output: str) -> int:
    match = re.search(r"running \(pid (\d+)\)", status_output)
    assert match is not None, status_output
    return int(match.group(1))


def test_start_status_url_stop(embedded_env: dict[str, str], workdir: Path) -> None:
    data_dir = workdir / "pgdata"
    status = run(embedded_env, workdir, "db", "status")
    assert (status.returncode, status.stdout.strip()) == (3, "not running")

    started = run(embedded_env, workdir, "db", "start")
    assert started.returncode == 0, started.stderr
    url = started.stdout.strip()
    assert str(data_dir) in url and "/densemem?" in url
    assert (data_dir / "PG_VERSION").read_text().strip() == "18"

    status = run(embedded_env, workdir, "db", "status")
    assert status.returncode == 0, status.stderr
    pid = running_pid(status.stdout)
    assert str(data_dir) in status.stdout
    # what the server got for its shared buffers, and, without huge pages,
    # the reservation that would give them (the server's own count)
    memory = re.search(
        r"^shared buffers (\S+), huge pages (on|off|unknown)(.*)$", status.stdout, re.MULTILINE
    )
    assert memory is not None, status.stdout
    with psycopg.connect(url) as conn:
        settings = conn.execute(
            "SELECT pg_catalog.current_setting('shared_buffers'), "
            "pg_catalog.current_setting('huge_pages_status'), "
            "pg_catalog.current_setting('shared_memory_size_in_huge_pages')::integer"
        ).fetchone()
    assert settings is not None
    assert memory.group(1, 2) == settings[:2]
    if settings[1] != "on" and settings[2] > 0:
        assert f"sysctl vm.nr_hugepages={settings[2]}," in memory.group(3)
    else:
        assert memory.group(3) == ""

    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT pg_catalog.current_database(), pg_catalog.current_setting('server_version_num')::int, "
            "(SELECT default_version FROM pg_catalog.pg_available_extensions WHERE name = 'vector')"
        ).fetchone()
    assert row is not None
    database, version, vector = row
    assert database == "densemem"
    assert version >= 170000
    assert vector is not None and tuple(int(x) for x in vector.split(".")[:2]) >= (0, 8)

    # Starting again is fine: same server, same URL.
    again = run(embedded_env, workdir, "db", "start")
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == url
    assert running_pid(run(embedded_env, workdir, "db", "status").stdout) == pid

    shown = run(embedded_env, workdir, "db", "url")
    assert (shown.returncode, shown.stdout.strip()) == (0, url)

    stopped = run(embedded_env, workdir, "db", "stop")
    assert (stopped.returncode, stopped.stdout.strip()) == (0, "stopped")
    # pg_prewarm's autoprewarm worker ran and saved the cached blocks at
    # shutdown, for the next start to read back.
    assert (data_dir / "autoprewarm.blocks").exists()
    status = run(embedded_env, workdir, "db", "status")
    assert (status.returncode, status.stdout.strip()) == (3, "not running")
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(url, connect_timeout=3).close()
    stopped_again = run(embedded_env, workdir, "db", "stop")
    assert (stopped_again.returncode, stopped_again.stdout.strip()) == (0, "not running")

    # And it starts again on the same data directory.
    restarted = run(embedded_env, workdir, "db", "start")
    assert (restarted.returncode, restarted.stdout.strip()) == (0, url)
    assert running_pid(run(embedded_env, workdir, "db", "status").stdout) != pid


def test_url_of_a_stopped_server_is_a_clear_error(embedded_env: dict[str, str], workdir: Path) -> None:
    shown = run(embedded_env, workdir, "db", "url")
    assert shown.returncode != 0
    assert "not running" in shown.stderr
    assert "Traceback" not in shown.stderr


@pytest.fixture
def external_database(admin_url: str) -> Iterator[str]:
    """An empty database on the test server, standing in for 'another server'."""
    name = f"dm_cli_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    params = psycopg.conninfo.conninfo_to_dict(admin_url)
    params["dbname"] = name
    yield psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in params.items() if v is not None})
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def test_database_url_means_the_embedded_server_is_not_started(
    embedded_env: dict[str, str], workdir: Path, external_database: str
) -> None:
    env = {**embedded_env, "DATABASE_URL": external_database}
    data_dir = workdir / "pgdata"

    status = run(env, workdir, "db", "status")
    assert status.returncode == 0
    assert "DATABASE_URL is set" in status.stdout + status.stderr
    assert "embedded server is not used" in status.stdout + status.stderr

    started = run(env, workdir, "db", "start")
    assert started.returncode != 0
    assert "DATABASE_URL is set" in started.stderr

    shown = run(env, workdir, "db", "url")
    assert (shown.returncode, shown.stdout.strip()) == (0, external_database)

    # Migrating goes to DATABASE_URL; running it twice changes nothing.
    first = run(env, workdir, "migrate")
    assert first.returncode == 0, first.stderr
    assert re.search(r"applied \d+ migrations, \d+ function files", first.stdout), first.stdout
    second = run(env, workdir, "migrate")
    assert (second.returncode, second.stdout.strip()) == (0, "up to date")
    with psycopg.connect(external_database) as conn:
        row = conn.execute("SELECT count(*) FROM dm_migrations.applied_migrations").fetchone()
    assert row is not None and row[0] >= 4

    assert not data_dir.exists(), "the embedded server was initialised although DATABASE_URL is set"
    assert not (workdir / ".densemem").exists()


def test_shared_buffers_are_a_quarter_of_memory_within_bounds() -> None:
    from densemem.embedded import SERVER_SETTINGS, shared_buffers_mb

    gib = 1024**3
    assert shared_buffers_mb(24 * gib) == 6144
    assert shared_buffers_mb(256 * 1024**2) == 128  # the floor
    assert shared_buffers_mb(512 * gib) == 8192  # the ceiling
    assert SERVER_SETTINGS["shared_buffers"] == f"'{shared_buffers_mb()}MB'"


def test_shared_memory_line_names_the_reservation_only_without_huge_pages() -> None:
    from densemem.embedded import SharedMemory, describe_shared_memory

    without = SharedMemory("6026MB", "off", 3117)
    assert describe_shared_memory(without) == (
        "shared buffers 6026MB, huge pages off (to use them, reserve 3117 huge pages before the server "
        "starts: sysctl vm.nr_hugepages=3117, as root)"
    )
    assert describe_shared_memory(SharedMemory("6026MB", "on", 3117)) == (
        "shared buffers 6026MB, huge pages on"
    )
    # a platform without huge pages (-1): nothing to reserve
    platform_without = SharedMemory("128MB", "off", -1)
    assert describe_shared_memory(platform_without) == "shared buffers 128MB, huge pages off"
