"""`densemem serve`: the HTTP API under uvicorn, in the foreground."""

from __future__ import annotations

import argparse
import logging
import sys
import threading

from densemem import db
from densemem.config import Settings, embedding_threads

log = logging.getLogger("densemem.serve")


def start_worker_thread(settings: Settings, url: str, stop: threading.Event) -> threading.Thread:
    """Run the embedding worker (densemem.embeddings.worker.run_worker) in a daemon thread."""
    from densemem.embeddings import provider_from_settings, worker_options_from_env
    from densemem.embeddings.worker import run_worker

    provider = provider_from_settings(settings)
    thread = threading.Thread(
        target=run_worker,
        args=(url, provider, stop, worker_options_from_env()),
        daemon=True,
        name="densemem-embed-worker",
    )
    thread.start()
    return thread


def limit_torch_threads() -> None:
    """One intra-op thread per model call (DENSEMEM_EMBEDDING_THREADS, default 1; see
    densemem.config.embedding_threads).

    A query is one short sentence: splitting it over threads costs more in synchronisation than it
    saves, and under concurrent requests the threads of different calls fight for the same cores
    (measured here: 2 threads 580 ms, 1 thread 70 ms per query on a loaded 2-core machine).
    """
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(embedding_threads())


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    from densemem.service.app import create_app
    from densemem.service.server import serve_forever

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    limit_torch_threads()
    url = db.database_url(settings)
    stop = threading.Event()
    worker = start_worker_thread(settings, url, stop) if args.worker else None
    if worker is not None:
        log.info("embedding worker running in-process")
    print(f"Dense-Mem API on http://{args.host}:{args.port} (OpenAPI at /openapi.json)", file=sys.stderr)
    try:
        serve_forever(create_app(settings, database_url=url), args.host, args.port)
    finally:
        stop.set()
        if worker is not None:
            worker.join(timeout=10)
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
        "--worker",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also run the embedding worker in this process (default on)",
    )
    serve.set_defaults(handler=_serve)
