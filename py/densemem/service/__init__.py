"""The HTTP service: Starlette app, API keys, one transaction and one round trip per request."""

from densemem.service.app import create_app
from densemem.service.server import running_server

__all__ = ["create_app", "running_server"]
