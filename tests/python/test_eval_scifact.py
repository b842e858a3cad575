"""SciFact (BEIR) harness: loaders, and an end-to-end run on a tiny synthetic BEIR folder.

The folder is made here; the real SciFact data is never read by tests.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

from densemem.eval import runner, scifact

DOCUMENTS = [
    ("101", "Aspirin and platelets", "Aspirin irreversibly inhibits cyclooxygenase in platelets."),
    (
        "102",
        "Vitamin D and bone",
        "Vitamin D supplementation increases bone mineral density in older adults.",
    ),
    ("103", "Statins", "Statins lower LDL cholesterol and reduce cardiovascular events."),
    ("104", "Sleep", "Short sleep duration is associated with obesity in children."),
    ("105", "Coffee", "Coffee consumption is not associated with higher mortality."),
    ("106", "Exercise", "Aerobic exercise improves insulin sensitivity in type 2 diabetes."),
]
QUERIES = {
    "1": "Aspirin inhibits cyclooxygenase in platelets.",
    "2": "Vitamin D increases bone density.",
    "3": "Statins reduce cardiovascular events and lower cholesterol.",
    "4": "A query without judgments.",
    "5": "Exercise improves insulin sensitivity.",
}
QRELS = "".join(
    "\t".join(row) + "\n"
    for row in [
        ("query-id", "corpus-id", "score"),
        ("1", "101", "1"),
        ("2", "102", "1"),
        ("3", "103", "1"),
        ("3", "999", "1"),
        ("5", "106", "2"),
        ("5", "105", "0"),
        ("7", "101", "1"),
    ]
)


def write_folder(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "title": t, "text": x, "metadata": {}}) + "\n" for i, t, x in DOCUMENTS)
    )
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": i, "text": t, "metadata": {}}) + "\n" for i, t in QUERIES.items())
    )
    (folder / "qrels").mkdir(exist_ok=True)
    (folder / "qrels" / "train.tsv").write_text(QRELS)
    return folder


def test_loaders_read_beir_files(tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "beir")
    documents = scifact.load_corpus(folder)
    assert [document.doc_id for document in documents] == ["101", "102", "103", "104", "105", "106"]
    assert (
        documents[0].body
        == "Aspirin and platelets\nAspirin irreversibly inhibits cyclooxygenase in platelets."
    )
    qrels = scifact.load_qrels(folder / "qrels" / "train.tsv")
    # zero scores are not relevant; the header is skipped
    assert qrels == {
        "1": {"101": 1.0},
        "2": {"102": 1.0},
        "3": {"103": 1.0, "999": 1.0},
        "5": {"106": 2.0},
        "7": {"101": 1.0},
    }
    team, reader = uuid.uuid4(), uuid.uuid4()
    queries, left_out = scifact.eval_queries(
        team, reader, scifact.load_queries(folder), qrels, {d.doc_id for d in documents}
    )
    assert [query.qid for query in queries] == ["1", "2", "3", "5"]
    assert queries[2].gold == {"103": 1.0}
    assert left_out == {"queries_without_text": ["7"], "judgments_outside_corpus": 1}
    items = scifact.evidence_items(documents)
    assert items[0]["source"] == {"external_id": "101", "kind": "document", "title": "Aspirin and platelets"}
    assert items[0]["memory_type"] == "semantic"


def test_repeated_document_ids_are_refused(tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "beir")
    with (folder / "corpus.jsonl").open("a") as handle:
        handle.write(json.dumps({"_id": "101", "title": "again", "text": "again"}) + "\n")
    with pytest.raises(ValueError, match="repeated"):
        scifact.load_corpus(folder)


def test_scifact_end_to_end_on_a_synthetic_folder(
    tmp_path: Path, admin_conn: psycopg.Connection[Any], db_url: str
) -> None:
    needed = ["dm.ingest_evidence", "dm.recall_memory", "dm_private.claim_embedding_batch"]
    missing = [name for name in needed if not runner.function_exists(admin_conn, name)]
    if missing:
        pytest.skip(f"not in the schema yet: {', '.join(missing)}")
    from densemem.embeddings.local import LocalProvider
    from densemem.eval.embedding import WorkerEmbedding

    folder = write_folder(tmp_path / "beir")
    report = scifact.run(
        admin_conn,
        folder,
        folder / "qrels" / "train.tsv",
        ks=[1, 3],
        branches=runner.parse_branches("fulltext=fulltext_only,vector=vector_only,hybrid"),
        embedding=WorkerEmbedding(db_url, LocalProvider()),
    )
    assert report["documents"] == 6
    assert report["left_out"]["queries_without_text"] == ["7"]
    for name in ("fulltext", "vector", "hybrid"):
        summary = report["branches"][name]["summary"]
        assert summary["questions"] == 4
        assert summary["leakage"] == 0
        # every query paraphrases exactly one document: each branch ranks it first
        assert summary["overall"]["recall@1"] == 1.0, (name, report["branches"][name]["questions"])
        assert summary["overall"]["ndcg@10"] == 1.0
        assert summary["overall"]["mrr"] == 1.0
