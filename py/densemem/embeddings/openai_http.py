"""The OpenAI-compatible HTTP provider: POST {base}/v1/embeddings.

Speaks the embeddings protocol that OpenAI, Ollama, vLLM and Hugging Face
TEI all serve: `{"model", "input": [texts]}` in, `{"data": [{"index",
"embedding"}]}` out. Requests are bounded (texts per request and bytes per
request; a single over-long text is cut at a UTF-8 boundary, as the models
truncate anyway); 429, 408, 5xx answers, timeouts and connection failures
are retried with exponential backoff and jitter, honouring Retry-After; when
the retries are spent the provider is reported unavailable, which costs the
documents no attempt. Other 4xx answers are the request's fault and are
reported as such. Vectors are L2-normalised on arrival (not every server
does it).
"""

from __future__ import annotations

import email.utils
import json
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import numpy as np

from densemem.embeddings.base import (
    ContractSpec,
    EmbeddingError,
    EmbeddingRequestError,
    FloatMatrix,
    ProviderUnavailableError,
    check_shape,
    l2_normalize,
)

OPENAI_PROVIDER = "openai"
RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504}) | frozenset(range(520, 530))


@dataclass(frozen=True)
class HttpProviderOptions:
    base_url: str
    model: str
    dimensions: int
    api_key: str | None = None
    timeout_seconds: float = 30.0
    max_retries: int = 4
    backoff_seconds: float = 0.5
    max_backoff_seconds: float = 30.0
    max_retry_after_seconds: float = 60.0
    max_batch_size: int = 128
    max_request_bytes: int = 1_000_000
    max_input_bytes: int = 32_000
    send_dimensions: bool = False

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError("the embedding base URL must start with http:// or https://")
        if not self.model:
            raise ValueError("the HTTP embedding provider needs a model name (DENSEMEM_EMBEDDING_MODEL)")
        if not 1 <= self.dimensions <= 4000:
            raise ValueError("dimensions must be between 1 and 4000")
        if (
            self.max_batch_size < 1
            or self.max_input_bytes < 1
            or self.max_request_bytes < self.max_input_bytes
        ):
            raise ValueError("request limits must be positive and a request must hold at least one input")


def endpoint(base_url: str) -> str:
    """{base}/v1/embeddings, accepting a base that already ends in /v1 (as OpenAI documents it)."""
    base = base_url.rstrip("/")
    return f"{base}/embeddings" if base.endswith("/v1") else f"{base}/v1/embeddings"


def truncate_utf8(text: str, max_bytes: int) -> str:
    encoded = text.encode("utf-8")
    if len(encoded) <= max_bytes:
        return text
    return encoded[:max_bytes].decode("utf-8", errors="ignore")


def retry_after_seconds(value: str | None, *, now: float | None = None) -> float | None:
    """Retry-After as seconds: a number, or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class OpenAICompatibleProvider:
    """Embeddings over HTTP from any OpenAI-compatible server. Thread-safe (one pooled httpx client)."""

    def __init__(
        self,
        options: HttpProviderOptions,
        *,
        client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.options = options
        self._url = endpoint(options.base_url)
        headers = {"Content-Type": "application/json", "User-Agent": "densemem"}
        if options.api_key:
            headers["Authorization"] = f"Bearer {options.api_key}"
        timeout = httpx.Timeout(options.timeout_seconds, connect=min(options.timeout_seconds, 10.0))
        self._client = client or httpx.Client(timeout=timeout, headers=headers)
        self._sleep = sleep

    @property
    def contract(self) -> ContractSpec:
        return ContractSpec(OPENAI_PROVIDER, self.options.model, self.options.dimensions, "l2")

    @property
    def max_batch_size(self) -> int:
        return self.options.max_batch_size

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        if not texts:
            return np.zeros((0, self.options.dimensions), dtype=np.float32)
        inputs = [truncate_utf8(t, self.options.max_input_bytes) if t else " " for t in texts]
        parts = [self._post(chunk) for chunk in self._requests(inputs)]
        return l2_normalize(check_shape(np.concatenate(parts), len(texts), self.options.dimensions))

    def _requests(self, inputs: list[str]) -> Iterator[list[str]]:
        """Split inputs into requests within the count and byte limits, keeping order."""
        chunk: list[str] = []
        size = 0
        for text in inputs:
            cost = len(json.dumps(text, ensure_ascii=False).encode("utf-8")) + 1
            if chunk and (
                len(chunk) >= self.options.max_batch_size or size + cost > self.options.max_request_bytes
            ):
                yield chunk
                chunk, size = [], 0
            chunk.append(text)
            size += cost
        if chunk:
            yield chunk

    def _post(self, inputs: list[str]) -> FloatMatrix:
        body: dict[str, Any] = {"model": self.options.model, "input": inputs}
        if self.options.send_dimensions:
            body["dimensions"] = self.options.dimensions
        last_problem = "no attempt made"
        for attempt in range(self.options.max_retries + 1):
            hint: float | None = None
            try:
                response = self._client.post(self._url, json=body)
            except httpx.TimeoutException as error:
                last_problem = f"timed out after {self.options.timeout_seconds:g}s ({type(error).__name__})"
            except httpx.TransportError as error:
                last_problem = f"connection failed: {type(error).__name__}: {error}"
            else:
                if response.status_code == 200:
                    return self._parse(response, len(inputs))
                snippet = response.text[:300]
                if response.status_code not in RETRYABLE_STATUS:
                    raise EmbeddingRequestError(
                        f"embedding request refused: HTTP {response.status_code}: {snippet}"
                    )
                last_problem = f"HTTP {response.status_code}: {snippet}"
                hint = retry_after_seconds(response.headers.get("Retry-After"))
                if hint is not None and hint > self.options.max_retry_after_seconds:
                    raise ProviderUnavailableError(
                        f"embedding provider asks to wait {hint:.0f}s: {last_problem}", retry_after=hint
                    )
            if attempt == self.options.max_retries:
                break
            self._sleep(hint if hint is not None else self._backoff(attempt))
        raise ProviderUnavailableError(
            f"embedding provider unavailable after {self.options.max_retries + 1} tries: {last_problem}"
        )

    def _backoff(self, attempt: int) -> float:
        delay = min(self.options.max_backoff_seconds, self.options.backoff_seconds * (2**attempt))
        return float(delay * (0.5 + random.random() / 2))  # full jitter would allow 0; keep half

    def _parse(self, response: httpx.Response, count: int) -> FloatMatrix:
        try:
            payload = response.json()
            data = payload["data"]
            rows = sorted(data, key=lambda item: int(item.get("index", 0)))
            if [int(item.get("index", i)) for i, item in enumerate(rows)] != list(range(len(rows))):
                raise ValueError("indexes are not 0..n-1")
            matrix = np.asarray([item["embedding"] for item in rows], dtype=np.float32)
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise EmbeddingError(f"malformed embeddings response: {error}") from error
        if matrix.ndim != 2:
            raise EmbeddingError("malformed embeddings response: vectors of different lengths")
        return check_shape(matrix, count, self.options.dimensions)

    def close(self) -> None:
        self._client.close()
