"""Settings read from the environment, in one place."""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

EMBEDDING_THREADS = "DENSEMEM_EMBEDDING_THREADS"
# The name `densemem serve` read before the two settings were merged; still honoured, with a warning.
DEPRECATED_EMBEDDING_THREADS = "DENSEMEM_TORCH_THREADS"
DEFAULT_EMBEDDING_THREADS = 1


def project_root() -> Path:
    """The repository root: where migrations/ and sql/ live."""
    override = os.environ.get("DENSEMEM_ROOT")
    if override:
        return Path(override).resolve()
    return Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Settings:
    database_url: str | None
    data_dir: Path
    database_name: str
    migrations_dir: Path
    sql_dir: Path
    embedding_provider: str
    embedding_base_url: str | None
    embedding_model: str | None
    embedding_api_key: str | None
    embedding_dimensions: int
    statement_timeout_ms: int

    @property
    def uses_embedded_server(self) -> bool:
        return self.database_url is None


def load_settings() -> Settings:
    root = project_root()
    return Settings(
        database_url=os.environ.get("DATABASE_URL") or None,
        data_dir=Path(
            os.environ.get("DENSEMEM_DATA_DIR", str(Path.cwd() / ".densemem" / "pgdata"))
        ).resolve(),
        database_name=os.environ.get("DENSEMEM_DATABASE", "densemem"),
        migrations_dir=root / "migrations",
        sql_dir=root / "sql",
        embedding_provider=os.environ.get("DENSEMEM_EMBEDDING_PROVIDER", "local"),
        embedding_base_url=os.environ.get("DENSEMEM_EMBEDDING_BASE_URL") or None,
        embedding_model=os.environ.get("DENSEMEM_EMBEDDING_MODEL") or None,
        embedding_api_key=os.environ.get("DENSEMEM_EMBEDDING_API_KEY") or None,
        embedding_dimensions=int(os.environ.get("DENSEMEM_EMBEDDING_DIMENSIONS", "384")),
        statement_timeout_ms=int(os.environ.get("DENSEMEM_STATEMENT_TIMEOUT_MS", "5000")),
    )


def embedding_threads(environ: Mapping[str, str] | None = None) -> int:
    """Threads of the local embedding model (torch intra-op and onnxruntime), process-wide.

    DENSEMEM_EMBEDDING_THREADS, default 1: a query is one short sentence, and on a small
    machine the model shares its cores with PostgreSQL, so one thread per call beats two.
    DENSEMEM_TORCH_THREADS is a deprecated alias, read only when the documented name is unset.
    """
    env = os.environ if environ is None else environ
    name = EMBEDDING_THREADS
    raw = env.get(EMBEDDING_THREADS, "").strip()
    if not raw:
        raw = env.get(DEPRECATED_EMBEDDING_THREADS, "").strip()
        if raw:
            name = DEPRECATED_EMBEDDING_THREADS
            warnings.warn(
                f"{DEPRECATED_EMBEDDING_THREADS} is deprecated: set {EMBEDDING_THREADS}",
                DeprecationWarning,
                stacklevel=2,
            )
    if not raw:
        return DEFAULT_EMBEDDING_THREADS
    try:
        threads = int(raw)
    except ValueError as error:
        raise ValueError(f"{name} must be a whole number of threads, not {raw!r}") from error
    if threads < 1:
        raise ValueError(f"{name} must be at least 1, not {threads}")
    return threads
