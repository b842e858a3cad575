"""SciFact (BEIR format): nDCG@10, Recall@100 and MRR on one team.

A BEIR folder holds ``corpus.jsonl`` (``_id``, ``title``, ``text``),
``queries.jsonl`` (``_id``, ``text``) and TSV judgments (``query-id``,
``corpus-id``, ``score``) under ``qrels/``. Every document becomes one
evidence row (memory type semantic: no recency decay) whose source
external_id is the document ``_id``; every judged query with at least one
positive judgment is asked through ``dm.recall_memory``. The ranking is read
to depth 100 in pages of 50 (``known_evidence_ids`` excludes the pages already
seen), as a client paging through recall would.
"""

from __future__ import annotations

import csv
import hashlib
import json
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from densemem.eval import runner

DEFAULT_KS: tuple[int, ...] = (10, 100)
PROFILE_NAME = "scifact-corpus"


@dataclass(frozen=True)
class Document:
    doc_id: str
    title: str
    text: str

    @property
    def body(self) -> str:
        """The evidence text: title, then abstract (BEIR's own title + text convention)."""
        return f"{self.title}\n{self.text}".strip() if self.title else self.text.strip()


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def load_corpus(folder: Path) -> list[Document]:
    documents = [
        Document(str(row["_id"]), str(row.get("title") or ""), str(row.get("text") or ""))
        for row in _jsonl(folder / "corpus.jsonl")
    ]
    ids = [document.doc_id for document in documents]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{folder / 'corpus.jsonl'}: repeated _id")
    return documents


def load_queries(folder: Path) -> dict[str, str]:
    return {str(row["_id"]): str(row["text"]) for row in _jsonl(folder / "queries.jsonl")}


def load_qrels(path: Path) -> dict[str, dict[str, float]]:
    """query-id -> {corpus-id: score}, positive scores only (a header line is skipped)."""
    judgments: dict[str, dict[str, float]] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.reader(handle, delimiter="\t"):
            if not row or row[0] == "query-id":
                continue
            if len(row) < 3:
                raise ValueError(f"{path}: expected query-id, corpus-id, score; got {row!r}")
            score = float(row[2])
            if score > 0:
                judgments.setdefault(row[0], {})[row[1]] = score
    return judgments


def corpus_fingerprint(documents: Sequence[Document]) -> str:
    digest = hashlib.sha256()
    for document in documents:
        digest.update(json.dumps([document.doc_id, document.body]).encode())
    return digest.hexdigest()[:10]


def evidence_items(documents: Sequence[Document]) -> list[dict[str, Any]]:
    return [
        {
            "text": document.body,
            "source": {
                "external_id": document.doc_id,
                "kind": "document",
                "title": document.title[:500] or None,
            },
            "memory_type": "semantic",
        }
        for document in documents
    ]


def load_into_database(
    conn: psycopg.Connection[Any], documents: Sequence[Document], *, log: runner.Log = runner.quiet
) -> tuple[uuid.UUID, uuid.UUID, bool]:
    """The corpus team (created and ingested once per corpus fingerprint); (team, reader profile, reused)."""
    name = f"eval-scifact-{corpus_fingerprint(documents)}"
    team_id = runner.ensure_team(conn, name)
    writer = runner.ensure_profile(conn, team_id, PROFILE_NAME)
    reader = runner.ensure_profile(conn, team_id, "evaluator")
    present = runner.evidence_count(conn, team_id)
    if present == len(documents):
        log(f"reusing team {name} ({present} documents)")
        return team_id, reader, True
    if present != 0:
        raise RuntimeError(f"team {name} holds {present} of {len(documents)} documents: use another database")
    with conn.transaction():
        runner.ingest(conn, team_id, writer, evidence_items(documents))
    log(f"loaded {len(documents)} documents into {name}")
    return team_id, reader, False


def eval_queries(
    team_id: uuid.UUID,
    reader: uuid.UUID,
    queries: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, float]],
    corpus_ids: set[str],
) -> tuple[list[runner.EvalQuery], dict[str, Any]]:
    """Judged queries whose relevant documents are in the corpus; plus what was left out and why."""
    selected: list[runner.EvalQuery] = []
    missing_text: list[str] = []
    unknown_docs = 0
    for qid in sorted(qrels, key=lambda value: (len(value), value)):
        if qid not in queries:
            missing_text.append(qid)
            continue
        gold = {doc_id: score for doc_id, score in qrels[qid].items() if doc_id in corpus_ids}
        unknown_docs += len(qrels[qid]) - len(gold)
        if not gold:
            continue
        selected.append(
            runner.EvalQuery(
                qid=qid, team_id=team_id, profile_id=reader, text=queries[qid], gold=gold, group="all"
            )
        )
    return selected, {"queries_without_text": missing_text, "judgments_outside_corpus": unknown_docs}


def run(
    conn: psycopg.Connection[Any],
    folder: Path,
    qrels_path: Path,
    *,
    branches: Sequence[runner.Branch],
    embedding: runner.Embedding,
    ks: Sequence[int] = DEFAULT_KS,
    extra_request: Mapping[str, Any] | None = None,
    log: runner.Log = runner.quiet,
) -> dict[str, Any]:
    documents = load_corpus(folder)
    team_id, reader, _ = load_into_database(conn, documents, log=log)
    queries, left_out = eval_queries(
        team_id, reader, load_queries(folder), load_qrels(qrels_path), {d.doc_id for d in documents}
    )
    report = runner.run_dataset(
        conn,
        dataset="scifact",
        teams=[team_id],
        queries=queries,
        branches=branches,
        embedding=embedding,
        depth=max(ks),
        ks=ks,
        extra_request=extra_request,
        log=log,
    )
    report["source"] = {
        "path": str(folder),
        "qrels": str(qrels_path),
        "corpus_sha256": runner.file_sha256(folder / "corpus.jsonl"),
        "qrels_sha256": runner.file_sha256(qrels_path),
    }
    report["teams"] = {"scifact": str(team_id)}
    report["documents"] = len(documents)
    report["left_out"] = left_out
    return report
