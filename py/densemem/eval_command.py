"""`densemem eval`: LoCoMo and SciFact quality with branch rows, and baseline-versus-candidate comparisons.

    densemem eval locomo PATH [--k 5,10,25,50] [--json OUT] [--plots DIR]
    densemem eval scifact DIR --qrels FILE [--json OUT] [--plots DIR]
    densemem eval compare BASE.json CANDIDATE.json [--json OUT]
    densemem eval plot REPORT.json --out DIR

The dataset commands run against the configured database (DATABASE_URL, or
the embedded server) as an administrator: they migrate it, create one team
per conversation (LoCoMo) or one for the corpus (SciFact), ingest through
dm.ingest_evidence, embed with the local model through the embedding
worker's functions, and ask every question through dm.recall_memory once per
branch. Data is read from the given paths at run time. Exit status 1 when any
answer held another team's evidence.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
import psycopg.types.json

from densemem import db
from densemem.config import Settings, project_root
from densemem.migrate import migrate

if TYPE_CHECKING:
    from densemem.eval.embedding import WorkerEmbedding


# Ranking metrics score the order to depth k; the default context budget
# (16,000 bytes) would stop a SciFact answer after about a dozen abstracts.
EVAL_CONTEXT_BYTES = 1_000_000


def _ks(text: str) -> list[int]:
    try:
        values = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"--k takes comma-separated integers, not {text!r}") from error
    if not values or values[0] < 1 or values[-1] > 250:
        raise argparse.ArgumentTypeError("every k must be between 1 and 250")
    return values


def _write_json(report: dict[str, Any], out: Path | None) -> None:
    if out is None:
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)


def _connect(
    settings: Settings, cache_dir: Path | None = None
) -> tuple[psycopg.Connection[Any], WorkerEmbedding]:
    """An administrator connection to the migrated database, and the embedding path for it."""
    from densemem.embeddings import provider_from_settings
    from densemem.eval.embedding import WorkerEmbedding

    url = db.database_url(settings)
    migrate(url, settings.migrations_dir, settings.sql_dir)
    provider = provider_from_settings(settings)
    if cache_dir is not None:
        from densemem.eval.embedding_cache import CachedProvider, provider_revision, refuse_inside

        refuse_inside(cache_dir, project_root())
        provider = CachedProvider(provider, cache_dir, revision=provider_revision(provider.contract))
        print(f"embedding cache: {provider.namespace}", file=sys.stderr)
    return psycopg.connect(url, autocommit=True), WorkerEmbedding(url, provider)


def _cache_dir(args: argparse.Namespace) -> Path | None:
    """--embedding-cache DIR, the default cache folder, or None with --no-embedding-cache."""
    if args.no_embedding_cache:
        return None
    if args.embedding_cache is not None:
        return Path(args.embedding_cache)
    from densemem.eval.embedding_cache import default_cache_dir

    return default_cache_dir()


def _cache_summary(embedding: WorkerEmbedding) -> None:
    stats = getattr(embedding.provider, "stats", None)
    if stats is not None:
        print(stats.summary(), file=sys.stderr)


def _extra_request(args: argparse.Namespace) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if args.max_context_bytes is not None:
        extra["max_context_bytes"] = args.max_context_bytes
    return extra


def _finish(report: dict[str, Any], args: argparse.Namespace, columns: list[str]) -> int:
    from densemem.eval import plots, runner

    print(runner.format_table(report, columns))
    _write_json(report, args.json)
    if args.plots is not None:
        for path in plots.write_figures(report, args.plots):
            print(f"wrote {path}", file=sys.stderr)
    leaked = sum(branch["summary"]["leakage"] for branch in report["branches"].values())
    if leaked:
        print(f"FAIL: {leaked} returned evidence rows belonged to another team", file=sys.stderr)
        return 1
    return 0


def _locomo(args: argparse.Namespace, settings: Settings) -> int:
    from densemem.eval import locomo, runner

    conn, embedding = _connect(settings, _cache_dir(args))
    with conn:
        report = locomo.run(
            conn,
            args.path,
            ks=args.k,
            branches=runner.parse_branches(args.branches),
            embedding=embedding,
            extra_request=_extra_request(args),
            log=runner.to_stderr,
        )
    _cache_summary(embedding)
    normalisation = report["normalisation"]
    print(
        f"evidence labels: {normalisation['raw_labels']} raw, {normalisation['kept']} kept, "
        f"{normalisation['normalised']} normalised, {normalisation['split_labels']} split, "
        f"{normalisation['dropped_malformed']} dropped malformed, {normalisation['dropped_unknown']} dropped "
        f"unknown; {len(normalisation['unscorable_questions'])} questions without evidence not scored"
    )
    return _finish(report, args, [f"recall@{k}" for k in args.k] + ["mrr", "ndcg@10"])


def _scifact(args: argparse.Namespace, settings: Settings) -> int:
    from densemem.eval import runner, scifact

    qrels = args.qrels if args.qrels is not None else args.path / "qrels" / "train.tsv"
    conn, embedding = _connect(settings, _cache_dir(args))
    with conn:
        report = scifact.run(
            conn,
            args.path,
            qrels,
            ks=args.k,
            branches=runner.parse_branches(args.branches),
            embedding=embedding,
            extra_request=_extra_request(args),
            log=runner.to_stderr,
        )
    _cache_summary(embedding)
    return _finish(report, args, ["ndcg@10", f"recall@{max(args.k)}", "mrr"])


def _compare(args: argparse.Namespace, settings: Settings) -> int:
    from densemem.eval import compare

    base = compare.load_report(args.base)
    candidate = compare.load_report(args.candidate)
    pairs = None
    if args.base_branch or args.candidate_branch:
        pairs = [(args.base_branch or args.candidate_branch, args.candidate_branch or args.base_branch)]
    try:
        comparison = compare.compare_reports(
            base, candidate, pairs=pairs, samples=args.samples, seed=args.seed, confidence=args.confidence
        )
    except compare.IncomparableReports as error:
        print(f"densemem eval compare: {error}", file=sys.stderr)
        return 2
    print(compare.format_comparison(comparison))
    _write_json(comparison, args.json)
    leaked = compare.total_leakage(comparison)
    if leaked:
        print(f"FAIL: cross-team leakage {leaked} (must be 0)", file=sys.stderr)
        return 1
    return 0


def _plot(args: argparse.Namespace, settings: Settings) -> int:
    from densemem.eval import compare, plots

    for path in plots.write_figures(compare.load_report(args.report), args.out, stem=args.stem):
        print(f"wrote {path}")
    return 0


def _set_path(settings: dict[str, Any], dotted: str, value: Any) -> None:
    node = settings
    keys = dotted.split(".")
    for key in keys[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = {}
            node[key] = child
        node = child
    node[keys[-1]] = value


def _profile(args: argparse.Namespace, settings: Settings) -> int:
    """Adds an evaluation candidate ranking profile row (never the default) to the eval database."""
    url = db.database_url(settings)
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT settings, version FROM dm_private.ranking_profiles "
            "WHERE name = %s ORDER BY version DESC LIMIT 1",
            (args.base,),
        ).fetchone()
        if row is None:
            print(f"densemem eval profile: no ranking profile {args.base!r}", file=sys.stderr)
            return 2
        base_settings, base_version = row
        merged: dict[str, Any] = json.loads(json.dumps(base_settings))
        for assignment in args.set or []:
            path, _, raw = assignment.partition("=")
            if not path or not raw:
                print(f"densemem eval profile: --set takes path=json, not {assignment!r}", file=sys.stderr)
                return 2
            _set_path(merged, path.strip(), json.loads(raw))
        version_row = conn.execute(
            "SELECT COALESCE(max(version), 0) + 1 FROM dm_private.ranking_profiles WHERE name = %s",
            (args.name,),
        ).fetchone()
        version = int(version_row[0]) if version_row else 1
        description = f"evaluation candidate from {args.base} v{base_version}: " + (
            "; ".join(args.set or []) or "copy"
        )
        conn.execute(
            "INSERT INTO dm_private.ranking_profiles (name, version, is_default, settings, description) "
            "VALUES (%s, %s, false, %s, %s)",
            (args.name, version, psycopg.types.json.Jsonb(merged), description),
        )
    print(f"{args.name} v{version}: {description}")
    return 0


def _cache_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--embedding-cache",
        type=Path,
        help="folder of the content-addressed embedding cache (key: embedding contract + text hash; default "
        "$DENSEMEM_EVAL_EMBEDDING_CACHE or ~/.cache/densemem/eval-embeddings; never inside the repository)",
    )
    parser.add_argument(
        "--no-embedding-cache",
        action="store_true",
        help="embed every text with the model, read and write no cache",
    )


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "eval",
        help="quality evaluation (LoCoMo, SciFact) and comparisons",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    evals = parser.add_subparsers(dest="eval_command", required=True)
    branches_help = (
        "comma-separated name=ranking_profile pairs, one row each "
        "(default fulltext=fulltext_only,vector=vector_only,hybrid=default)"
    )
    default_branches = "fulltext=fulltext_only,vector=vector_only,hybrid=default"

    locomo_parser = evals.add_parser("locomo", help="LoCoMo turn-level evidence recall")
    locomo_parser.add_argument(
        "path", type=Path, help="a LoCoMo JSON file, e.g. ../shared/data/locomo/locomo_dev.json"
    )
    locomo_parser.add_argument("--k", type=_ks, default=[5, 10, 25, 50], help="cut-offs (default 5,10,25,50)")
    locomo_parser.add_argument("--json", type=Path, help="write the report (per-question ranks) here")
    locomo_parser.add_argument("--plots", type=Path, help="write PNG recall@k curves into this folder")
    locomo_parser.add_argument("--branches", default=default_branches, help=branches_help)
    locomo_parser.add_argument(
        "--max-context-bytes",
        type=int,
        default=EVAL_CONTEXT_BYTES,
        help="request.max_context_bytes of every recall (default 1000000, the largest accepted, so that "
        "the byte budget never cuts the ranking short of the depth scored)",
    )
    _cache_options(locomo_parser)
    locomo_parser.set_defaults(handler=_locomo)

    scifact_parser = evals.add_parser("scifact", help="BEIR SciFact nDCG@10, Recall@100, MRR")
    scifact_parser.add_argument("path", type=Path, help="a BEIR folder (corpus.jsonl, queries.jsonl)")
    scifact_parser.add_argument("--qrels", type=Path, help="judgments TSV (default PATH/qrels/train.tsv)")
    scifact_parser.add_argument("--k", type=_ks, default=[10, 100], help="recall cut-offs (default 10,100)")
    scifact_parser.add_argument("--json", type=Path, help="write the report (per-query ranks) here")
    scifact_parser.add_argument("--plots", type=Path, help="write PNG figures into this folder")
    scifact_parser.add_argument("--branches", default=default_branches, help=branches_help)
    scifact_parser.add_argument(
        "--max-context-bytes",
        type=int,
        default=EVAL_CONTEXT_BYTES,
        help="request.max_context_bytes of every recall (default 1000000, the largest accepted, so that "
        "the byte budget never cuts the ranking short of the depth scored)",
    )
    _cache_options(scifact_parser)
    scifact_parser.set_defaults(handler=_scifact)

    compare_parser = evals.add_parser("compare", help="paired bootstrap deltas between two reports")
    compare_parser.add_argument("base", type=Path)
    compare_parser.add_argument("candidate", type=Path)
    compare_parser.add_argument("--base-branch", help="compare this branch of BASE ...")
    compare_parser.add_argument("--candidate-branch", help="... with this branch of CANDIDATE")
    compare_parser.add_argument(
        "--samples", type=int, default=10_000, help="bootstrap resamples (default 10000)"
    )
    compare_parser.add_argument(
        "--seed", type=int, default=20260713, help="bootstrap seed (default 20260713)"
    )
    compare_parser.add_argument(
        "--confidence", type=float, default=0.95, help="interval level (default 0.95)"
    )
    compare_parser.add_argument("--json", type=Path, help="write the comparison here")
    compare_parser.set_defaults(handler=_compare)

    profile_parser = evals.add_parser(
        "profile",
        help="add a candidate ranking profile row to the evaluation database",
        description="Copies a ranking profile's latest settings, applies --set path=json changes and inserts "
        "the result as a new (never default) version of NAME, for --branches NAME=NAME. Administrator; "
        "use an evaluation database. Tune on dev data only.",
    )
    profile_parser.add_argument("name", help="the candidate profile's name")
    profile_parser.add_argument("--base", default="default", help="profile to copy (default: default)")
    profile_parser.add_argument(
        "--set", action="append", help="a change, e.g. weights.recency=0.05 or fusion.rrf_k=10 (repeatable)"
    )
    profile_parser.set_defaults(handler=_profile)

    plot_parser = evals.add_parser("plot", help="PNG figures of a saved report")
    plot_parser.add_argument("report", type=Path)
    plot_parser.add_argument("--out", type=Path, default=Path("docs/img"), help="folder (default docs/img)")
    plot_parser.add_argument("--stem", help="file name stem (default: the dataset name)")
    plot_parser.set_defaults(handler=_plot)
