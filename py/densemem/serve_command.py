"""`densemem serve`: the HTTP API under uvicorn, in the foreground."""

from __future__ import annotations

import argparse
import importlib
import inspect
import logging
import sys
import threading
from typing import Any

from densemem import db
from densemem.config import Settings

log = logging.getLogger("densemem.serve")


def start_worker_thread(settings: Settings, url: str) -> threading.Thread | None:
    """Run the embedding worker in-process when densemem.embeddings provides run_worker."""
    try:
        module: Any = importlib.import_module("densemem.embeddings.worker")
    except ImportError:
        try:
            module = importlib.import_module("densemem.embeddings")
        except ImportError:
            return None
    run_worker = getattr(module, "run_worker", None)
    if run_worker is None:
        return None
    parameters = inspect.signature(run_worker).parameters
    kwargs: dict[str, Any] = {}
    if "settings" in parameters:
        kwargs["settings"] = settings
    if "database_url" in parameters:
        kwargs["database_url"] = url
    elif "url" in parameters:
        kwargs["url"] = url
    thread = threading.Thread(target=run_worker, kwargs=kwargs, daemon=True, name="densemem-embed-worker")
    thread.start()
    return thread


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    from densemem.service.app import create_app
    from densemem.service.server import serve_forever

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    url = db.database_url(settings)
    if args.worker:
        if start_worker_thread(settings, url) is None:
            print("densemem serve: no embedding worker available (densemem.embeddings.run_worker)", file=sys.stderr)
        else:
            log.info("embedding worker running in-process")
    print(f"Dense-Mem API on http://{args.host}:{args.port} (OpenAPI at /openapi.json)", file=sys.stderr)
    serve_forever(create_app(settings, database_url=url), args.host, args.port)
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = commands.add_parser(
        "serve",
        help="run the HTTP API",
        description="Run the HTTP API (Starlette under uvicorn) in the foreground.",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    serve.add_argument(
        "--worker", action=argparse.BooleanOptionalAction, default=True,
        help="also run the embedding worker in this process (default on)",
    )
    serve.set_defaults(handler=_serve)
