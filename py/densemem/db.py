"""Where the database is: DATABASE_URL, or the embedded server started on demand."""

from __future__ import annotations

from densemem import embedded
from densemem.config import Settings


class ServerNotRunning(RuntimeError):
    """The embedded server is needed but not running, and the command may not start it."""


def database_url(settings: Settings, *, start: bool = True) -> str:
    """The URL every command uses. Starts the embedded server when needed and allowed."""
    if settings.database_url is not None:
        return settings.database_url
    if start:
        return embedded.start(settings.data_dir, settings.database_name)
    current = embedded.url(settings.data_dir, settings.database_name)
    if current is None:
        raise ServerNotRunning("the embedded server is not running: run `densemem db start`")
    return current
