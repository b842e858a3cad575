"""Running the app under uvicorn: in the foreground (`densemem serve`) or in a thread (tests, bench, demo)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from starlette.applications import Starlette


def _server(app: Starlette, host: str, port: int, log_level: str) -> uvicorn.Server:
    config = uvicorn.Config(
        app, host=host, port=port, log_level=log_level, access_log=False, lifespan="on", server_header=False
    )
    return uvicorn.Server(config)


def serve_forever(app: Starlette, host: str, port: int, *, log_level: str = "info") -> None:
    _server(app, host, port, log_level).run()


@contextmanager
def running_server(
    app: Starlette, host: str = "127.0.0.1", port: int = 0, *, log_level: str = "warning"
) -> Iterator[str]:
    """Serve `app` from a background thread; yields the base URL. Port 0 picks a free port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound_port = sock.getsockname()[1]
    server = _server(app, host, bound_port, log_level)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, daemon=True, name="densemem-uvicorn"
    )
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the HTTP server failed to start")
        if time.monotonic() > deadline:
            raise TimeoutError("the HTTP server did not start within 60 s")
        time.sleep(0.02)
    try:
        yield f"http://{host}:{bound_port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
