"""Settings read from the environment, in one place."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


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
