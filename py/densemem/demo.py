"""`densemem demo`: the main job on the embedded default, end to end.

Starts the embedded server (or uses DATABASE_URL), migrates, loads the
two-team sample memory, embeds it with the local model, starts the HTTP API
on 127.0.0.1, creates an API key, and runs recalls over HTTP: one that shows a
discovery path, one temporal, one anchored. Then a trace, and a curl line to
paste. Running it again reuses what is there.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import httpx
import psycopg

from densemem import db
from densemem.config import Settings
from densemem.migrate import migrate
from densemem.sample import describe, load_sample

DEMO_QUERIES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("discovery", {"query": "Who works on Dense-Mem and what does it use?", "limit": 3}),
    ("temporal", {"query": "What happened to the staging database on 26 November 2026?", "limit": 3}),
    ("anchored", {"query": "What is the fix for ABC-123?", "limit": 3}),
)


def _section(title: str) -> None:
    print(f"\n== {title}", flush=True)


def _embed_everything(url: str, settings: Settings) -> str:
    from densemem.embeddings import provider_from_settings, worker_options_from_env
    from densemem.embeddings.worker import EmbeddingWorker

    provider = provider_from_settings(settings)
    worker = EmbeddingWorker(url, provider, worker_options_from_env())
    try:
        return worker.run_once().summary()
    finally:
        worker.close()
        provider.close()


def _print_json(payload: Any) -> None:
    print(json.dumps(payload, indent=2, ensure_ascii=False))


def _demo(args: argparse.Namespace, settings: Settings) -> int:
    from densemem.keys_command import create_key
    from densemem.service.app import create_app
    from densemem.service.server import running_server

    _section("database")
    url = db.database_url(settings)
    report = migrate(url, settings.migrations_dir, settings.sql_dir)
    print(f"{'embedded server' if settings.uses_embedded_server else 'DATABASE_URL'}: {url}")
    print(
        f"migrations applied now: {len(report.applied_migrations)}; function files: "
        f"{len(report.applied_function_files)}"
    )

    _section("sample memory")
    with psycopg.connect(url) as conn:
        print(describe(load_sample(conn)))

    _section("embeddings (local all-MiniLM-L6-v2)")
    print(_embed_everything(url, settings))

    with psycopg.connect(url) as conn:
        key = create_key(conn, "acme", "mark", []).api_key

    app = create_app(settings, database_url=url)
    with (
        running_server(app, "127.0.0.1", args.port) as base_url,
        httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as client,
    ):
        _section(f"HTTP API at {base_url}")
        first_relationship: str | None = None
        for label, body in DEMO_QUERIES:
            _section(f"recall ({label}): {body['query']}")
            response = client.post("/v1/recall", json=body)
            payload = response.json()
            _print_json(payload)
            if response.status_code != 200:
                print(f"recall failed with HTTP {response.status_code}", file=sys.stderr)
                return 1
            for path in payload.get("discovery_paths", []):
                for edge in path.get("relationships", []):
                    first_relationship = first_relationship or edge["relationship_id"]

        if first_relationship is not None:
            _section(f"trace of relationship {first_relationship}")
            trace = client.get(f"/v1/relationships/{first_relationship}/trace")
            _print_json(trace.json())
            if trace.status_code != 200:
                return 1
        else:
            print("no discovery path came back, so there is no relationship to trace", file=sys.stderr)
            return 1

        _section("try it yourself (while `make serve` runs on port 8080)")
        print(
            "curl -s http://127.0.0.1:8080/v1/recall "
            f"-H 'Authorization: Bearer {key}' -H 'Content-Type: application/json' "
            '-d \'{"query": "who works on Dense-Mem?"}\''
        )
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "demo",
        help="run the whole demo on the embedded server",
        description="Migrate, load the sample, embed it, serve HTTP on 127.0.0.1, run recalls and a trace.",
    )
    parser.add_argument("--port", type=int, default=0, help="HTTP port for the demo (default: a free one)")
    parser.set_defaults(handler=_demo)
