"""`densemem bench recall-under-ingest` on a small bench corpus: it measures with a writer running
and leaves the database as it found it (the ingested rows, their statistics deltas and the GIN
pending lists gone), which is what lets it run on a shared bench database (docs/RECALL.md, session 16).
"""

from __future__ import annotations

import psycopg

from densemem.bench_ingest import measure_under_ingest
from densemem.bench_recall import load

COUNTS = """
SELECT (SELECT count(*) FROM dm_private.evidence), (SELECT count(*) FROM dm_private.search_documents),
       (SELECT count(*) FROM dm_private.sources), (SELECT count(*) FROM dm_private.source_revisions),
       (SELECT count(*) FROM dm_private.search_statistics_deltas),
       (SELECT sum(document_count) FROM dm_private.search_term_statistics),
       (SELECT sum(total_length) FROM dm_private.search_team_statistics)
"""


def test_measures_under_ingest_and_leaves_the_database_as_it_was(db_url: str) -> None:
    load(db_url, 3_000, 5, 11)
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("SELECT dm.compact_search_statistics(NULL)")
        before = conn.execute(COUNTS).fetchone()
    figures = measure_under_ingest(db_url, rate=200.0, batch=5, seconds=2.0, per_bucket=3, seed=11)
    assert {b.bucket for b in figures.buckets} == {"101-1k", "1k-10k"}
    assert all(b.calls >= 3 for b in figures.buckets)
    assert figures.ingest.evidence > 0
    assert figures.cleaned_evidence == figures.ingest.evidence
    # the options it measured are the migrated ones (0093)
    assert len(figures.gin_options) >= 7
    assert set(figures.gin_options.values()) == {"fastupdate=off"}
    with psycopg.connect(db_url, autocommit=True) as conn:
        assert conn.execute(COUNTS).fetchone() == before
        assert conn.execute(
            "SELECT count(*) FROM dm_private.sources WHERE external_id LIKE 'bench-ingest:%'"
        ).fetchone() == (0,)
