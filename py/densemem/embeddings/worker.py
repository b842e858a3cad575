"""The embedding worker: pending search documents in, version-checked vectors out.

Each batch is three short transactions as densemem_worker: claim (a lease
taken with FOR UPDATE SKIP LOCKED), then, after embedding outside any
transaction, store (a vector lands only if its document still has the
version it was made from) or fail/release. No transaction stays open while
the model runs, so a slow provider never holds locks, and a worker killed
mid-batch loses nothing: the leases end and another worker claims the
documents.

`EmbeddingWorker.run_once()` drains what is claimable and returns
(`densemem embed`); `follow(stop_event)` keeps going, woken by NOTIFY
densemem_embed (sent by a trigger when a document becomes pending) or by the
end of the earliest lease or retry delay (`densemem embed --follow`, and the
service in-process through `run_worker` / `start_worker_thread`).
"""

from __future__ import annotations

import datetime as dt
import logging
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg

from densemem.embeddings.base import EmbeddingProvider, ProviderUnavailableError
from densemem.store import embeddings as store
from densemem.store.embeddings import ClaimedDocument, Contract

log = logging.getLogger("densemem.embed")


class ContractMismatchError(RuntimeError):
    """The provider makes vectors of another contract than the active one."""


@dataclass(frozen=True)
class WorkerOptions:
    batch_size: int = 64
    claim_seconds: float = 300.0
    max_attempts: int = 5
    retry_delay_seconds: float = 30.0  # after the first counted failure; doubles with each attempt
    max_retry_delay_seconds: float = 3600.0
    unavailable_delay_seconds: float = 30.0  # provider down: wait this long (or its Retry-After)
    poll_seconds: float = 30.0  # follow: look at the queue at least this often, even without NOTIFY
    progress: bool | None = None  # None: a bar when stderr is a terminal and the backlog is long
    progress_min_documents: int = 500


@dataclass
class WorkerStats:
    batches: int = 0
    claimed: int = 0
    stored: int = 0
    rejected_stale: int = 0
    failed_attempts: int = 0
    failed_documents: int = 0
    released_unavailable: int = 0
    provider_unavailable: bool = False
    last_error: str | None = None
    errors: list[str] = field(default_factory=list)

    def summary(self) -> str:
        text = (
            f"embedded {self.stored}, stale {self.rejected_stale}, failed attempts {self.failed_attempts} "
            f"({self.failed_documents} documents failed), released {self.released_unavailable}"
        )
        return text + (f"; provider unavailable: {self.last_error}" if self.provider_unavailable else "")


def check_contract(contract: Contract | None, provider: EmbeddingProvider) -> Contract:
    if contract is None:
        raise ContractMismatchError("no embedding contract is active: run `densemem embed activate`")
    if contract.spec != provider.contract:
        raise ContractMismatchError(
            f"the active embedding contract is {contract.spec.describe()} (version {contract.version}) but "
            f"this worker's provider makes {provider.contract.describe()}: configure DENSEMEM_EMBEDDING_* "
            "to match it, or activate the provider's contract with `densemem embed activate`"
        )
    return contract


class EmbeddingWorker:
    def __init__(
        self, conninfo: str, provider: EmbeddingProvider, options: WorkerOptions | None = None
    ) -> None:
        self.conninfo = conninfo
        self.provider = provider
        self.options = options or WorkerOptions()
        self.stats = WorkerStats()
        self._conn: psycopg.Connection[Any] | None = None

    # ---------------------------------------------------------------- connections

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(self.conninfo, autocommit=True, application_name="densemem-embed")
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # ---------------------------------------------------------------- one batch

    def contract(self) -> Contract:
        with store.as_worker(self._connection()) as cur:
            return check_contract(store.active_contract(cur), self.provider)

    def process_batch(self, contract: Contract) -> int:
        """Claims, embeds and stores one batch; returns how many documents it claimed (0: nothing to do)."""
        conn = self._connection()
        batch_size = max(1, min(self.options.batch_size, self.provider.max_batch_size, 1000))
        with store.as_worker(conn) as cur:
            claimed = store.claim_batch(
                cur,
                contract_id=contract.contract_id,
                batch_size=batch_size,
                claim_seconds=self.options.claim_seconds,
            )
        if not claimed:
            return 0
        self.stats.batches += 1
        self.stats.claimed += len(claimed)
        try:
            self._embed_and_store(conn, contract, claimed)
        except ProviderUnavailableError as error:
            delay = (
                error.retry_after if error.retry_after is not None else self.options.unavailable_delay_seconds
            )
            with store.as_worker(conn) as cur:
                released = store.release_claims(
                    cur, documents=claimed, error_message=str(error), retry_after_seconds=min(delay, 86400.0)
                )
            self.stats.released_unavailable += released
            self.stats.provider_unavailable = True
            self.stats.last_error = str(error)
            log.warning("embedding provider unavailable, %d documents stay pending: %s", released, error)
            raise
        return len(claimed)

    def _embed_and_store(
        self, conn: psycopg.Connection[Any], contract: Contract, claimed: list[ClaimedDocument]
    ) -> None:
        texts = [d.body for d in claimed if d.body != ""]
        try:
            vectors = self.provider.embed(texts) if texts else None
        except ProviderUnavailableError:
            raise
        except Exception as error:  # EmbeddingError, or a provider bug: counted, the error kept
            if len(texts) <= 1:
                self._fail(conn, claimed, error)
                return
            # One bad document must not fail its batch: try them one by one.
            log.info("batch of %d failed (%s); embedding its documents one at a time", len(claimed), error)
            for document in claimed:
                self._embed_and_store(conn, contract, [document])
            return
        embeddings: list[str | None] = []
        row = 0
        for document in claimed:
            if document.body == "":
                embeddings.append(None)
            else:
                assert vectors is not None
                embeddings.append(store.vector_literal(vectors[row]))
                row += 1
        with store.as_worker(conn) as cur:
            outcome = store.store_embeddings(
                cur, contract_id=contract.contract_id, documents=claimed, embeddings=embeddings
            )
        stored = sum(outcome.values())
        self.stats.stored += stored
        self.stats.rejected_stale += len(claimed) - stored

    def _fail(
        self, conn: psycopg.Connection[Any], documents: Sequence[ClaimedDocument], error: Exception
    ) -> None:
        message = f"{type(error).__name__}: {error}"
        attempts = max(d.embed_attempts for d in documents)
        delay = min(self.options.max_retry_delay_seconds, self.options.retry_delay_seconds * (2**attempts))
        with store.as_worker(conn) as cur:
            failed = store.fail_claims(
                cur,
                documents=documents,
                error_message=message,
                max_attempts=self.options.max_attempts,
                retry_after_seconds=delay,
            )
        self.stats.failed_attempts += len(failed)
        self.stats.failed_documents += sum(1 for f in failed if f.search_state == "failed")
        self.stats.last_error = message
        if len(self.stats.errors) < 20:
            self.stats.errors.append(message)
        log.warning("embedding failed for %d documents: %s", len(failed), message)

    # ---------------------------------------------------------------- loops

    def run_once(self, *, stop_event: threading.Event | None = None) -> WorkerStats:
        """Embeds everything claimable now, then returns. Stops early when the provider is unavailable."""
        contract = self.contract()
        bar = self._progress_bar()
        try:
            while stop_event is None or not stop_event.is_set():
                try:
                    count = self.process_batch(contract)
                except ProviderUnavailableError:
                    break
                if count == 0:
                    break
                if bar is not None:
                    bar.update(count)
        finally:
            if bar is not None:
                bar.close()
        return self.stats

    def _progress_bar(self) -> Any:
        wanted = self.options.progress
        if wanted is False:
            return None
        if wanted is None and not sys.stderr.isatty():
            return None
        with store.as_worker(self._connection()) as cur:
            backlog = store.queue_state(cur).claimable_document_count
        if backlog < self.options.progress_min_documents:
            return None
        from tqdm import tqdm

        return tqdm(total=backlog, unit="doc", desc="embedding", file=sys.stderr)

    def follow(self, stop_event: threading.Event) -> WorkerStats:
        """Runs until stop_event is set: drains, then sleeps until NOTIFY, a lease ends, or poll_seconds."""
        listener: psycopg.Connection[Any] | None = None
        while not stop_event.is_set():
            try:
                if listener is None or listener.closed:
                    listener = psycopg.connect(
                        self.conninfo, autocommit=True, application_name="densemem-embed-listen"
                    )
                    listener.execute(f"LISTEN {store.NOTIFY_CHANNEL}")
                wait = self._drain(stop_event)
            except ContractMismatchError as error:
                log.error("%s; waiting", error)
                self.stats.last_error = str(error)
                wait = self.options.poll_seconds
            except psycopg.OperationalError as error:
                log.error("database unavailable (%s); reconnecting", error)
                self.close()
                if listener is not None:
                    listener.close()
                listener = None
                stop_event.wait(min(5.0, self.options.poll_seconds))
                continue
            except Exception:  # keep a long-running (in-process) worker alive; the error is logged
                log.exception("embedding worker error; retrying")
                self.close()
                stop_event.wait(min(5.0, self.options.poll_seconds))
                continue
            if listener is not None:
                self._wait(listener, stop_event, wait)
        if listener is not None:
            listener.close()
        self.close()
        return self.stats

    def _drain(self, stop_event: threading.Event) -> float:
        """Processes batches while there is work; returns how long to sleep before looking again."""
        contract = self.contract()
        while not stop_event.is_set():
            try:
                if self.process_batch(contract) == 0:
                    break
            except ProviderUnavailableError as error:
                return (
                    error.retry_after
                    if error.retry_after is not None
                    else self.options.unavailable_delay_seconds
                )
        with store.as_worker(self._connection()) as cur:
            state = store.queue_state(cur)
        if state.claimable_document_count > 0:
            return 0.0
        if state.next_claimable_at is not None:
            until = (state.next_claimable_at - dt.datetime.now(dt.UTC)).total_seconds()
            return max(0.05, min(self.options.poll_seconds, until))
        return self.options.poll_seconds

    @staticmethod
    def _wait(listener: psycopg.Connection[Any], stop_event: threading.Event, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not stop_event.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            woke = False
            for _ in listener.notifies(timeout=min(0.5, remaining), stop_after=1):
                woke = True
            if woke:
                # Swallow notifications already queued; one drain serves them all.
                for _ in listener.notifies(timeout=0.0):
                    pass
                return


def run_worker(
    database_url: str,
    provider: EmbeddingProvider,
    stop_event: threading.Event,
    options: WorkerOptions | None = None,
) -> WorkerStats:
    """Runs a following worker until stop_event is set (blocking). For asyncio:
    `await asyncio.to_thread(run_worker, url, provider, stop_event)`, then `stop_event.set()` on shutdown."""
    worker = EmbeddingWorker(database_url, provider, options)
    try:
        return worker.follow(stop_event)
    finally:
        worker.close()


def start_worker_thread(
    database_url: str, provider: EmbeddingProvider, options: WorkerOptions | None = None
) -> tuple[threading.Thread, threading.Event]:
    """Starts a following worker on a daemon thread; set the event and join the thread to stop it."""
    stop_event = threading.Event()
    thread = threading.Thread(
        target=run_worker,
        args=(database_url, provider, stop_event, options),
        name="densemem-embed",
        daemon=True,
    )
    thread.start()
    return thread, stop_event
