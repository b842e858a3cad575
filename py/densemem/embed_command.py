"""`densemem embed`: run the embedding worker, see freshness, retry, switch contract, benchmark.

densemem embed                 embed what is pending now, then exit
densemem embed --follow        keep going, woken by NOTIFY (Ctrl-C stops)
densemem embed status          search freshness over all teams and the active contract
densemem embed retry-failed    failed documents (all teams, or --team) become pending again
densemem embed activate        make the configured provider's contract active (administrator):
                               every document becomes pending and is re-embedded
densemem embed bench           local-model throughput and ingest-to-searchable latency
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import uuid
from typing import Any

import psycopg
from psycopg.rows import dict_row

from densemem import db
from densemem.config import Settings
from densemem.embeddings import provider_from_settings, worker_options_from_env
from densemem.embeddings.worker import ContractMismatchError, EmbeddingWorker
from densemem.store import embeddings as store


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "embed",
        help="run the embedding worker (and its status, retry, activate, bench)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "action", nargs="?", default="run", choices=["run", "status", "retry-failed", "activate", "bench"]
    )
    parser.add_argument("--follow", action="store_true", help="run: keep going until interrupted")
    parser.add_argument("--batch-size", type=int, help="run: documents per claim (default 64)")
    parser.add_argument(
        "--max-attempts", type=int, help="run: attempts before a document is failed (default 5)"
    )
    parser.add_argument("--no-progress", action="store_true", help="run: no progress bar")
    parser.add_argument("--team", type=uuid.UUID, help="retry-failed: only this team")
    parser.add_argument(
        "--contract-version", type=int, default=1, help="activate: contract version (default 1)"
    )
    parser.add_argument("--documents", type=int, default=2000, help="bench: documents for the throughput run")
    parser.add_argument("--latency-runs", type=int, default=20, help="bench: single-document ingests to time")
    parser.set_defaults(handler=_embed_command)


def _embed_command(args: argparse.Namespace, settings: Settings) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    action: str = args.action
    try:
        if action == "bench":
            from densemem.embeddings.bench import run_bench

            return run_bench(settings, documents=args.documents, latency_runs=args.latency_runs)
        url = db.database_url(settings)
        if action == "status":
            return _status(url)
        if action == "retry-failed":
            with psycopg.connect(url, autocommit=True) as conn, store.as_worker(conn) as cur:
                print(f"{store.retry_failed_embeddings(cur, team_id=args.team)} documents pending again")
            return 0
        provider = provider_from_settings(settings)
        if action == "activate":
            with psycopg.connect(url, autocommit=True) as conn, conn.cursor(row_factory=dict_row) as cur:
                contract_id = store.activate_contract(
                    cur, spec=provider.contract, version=args.contract_version
                )
            print(f"contract {contract_id} ({provider.contract.describe()}) is active")
            return 0
        return _run(url, provider, args)
    except (ContractMismatchError, ValueError) as error:
        print(f"densemem embed: {error}", file=sys.stderr)
        return 2
    except psycopg.Error as error:
        print(f"densemem embed: {error}", file=sys.stderr)
        return 1


def _run(url: str, provider: Any, args: argparse.Namespace) -> int:
    options = worker_options_from_env()
    changes: dict[str, Any] = {}
    if args.batch_size:
        changes["batch_size"] = args.batch_size
    if args.max_attempts:
        changes["max_attempts"] = args.max_attempts
    if args.no_progress:
        changes["progress"] = False
    if changes:
        from dataclasses import replace

        options = replace(options, **changes)
    worker = EmbeddingWorker(url, provider, options)
    try:
        if not args.follow:
            stats = worker.run_once()
            print(stats.summary())
            return 3 if stats.provider_unavailable else 0
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        stats = worker.follow(stop)
        print(stats.summary())
        return 0
    finally:
        worker.close()
        provider.close()


def _status(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn, store.as_worker(conn) as cur:
        contract = store.active_contract(cur)
        fresh = store.search_freshness_overall(cur)
    if contract is None:
        print("no active embedding contract")
    else:
        print(
            f"active contract {contract.contract_id}: {contract.spec.describe()} version {contract.version}"
        )
    age = "-" if fresh.oldest_pending_age_seconds is None else f"{fresh.oldest_pending_age_seconds:.1f}s"
    print(
        f"pending {fresh.pending_document_count}, failed {fresh.failed_document_count}, oldest pending {age}"
    )
    return 0
