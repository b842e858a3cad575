"""`densemem bench recall` on a small bench corpus: the per-stage profile (pg_temp.bench_stage_times)
times every stage recall_run runs in every bucket, called as recall_run calls it, so the profile
breaks (this test fails) when a stage's function or arguments change under it; and every bucket's
calls are timed twice on one connection (a first pass, then the steady state).
"""

from __future__ import annotations

from densemem.bench_recall import load, measure

STAGES = {"request", "parse", "fulltext", "vector", "fusion", "rerank", "hydrate", "discovery", "telemetry"}


def test_every_stage_is_timed_in_every_bucket(db_url: str) -> None:
    load(db_url, 3_000, 5, 11)
    measured = measure(db_url, 3, 11, warmup=1)
    buckets = {b.bucket for b in measured["buckets"]}
    assert buckets == {"101-1k", "1k-10k"}
    assert set(measured["stage_p50"]) == buckets
    # both passes time every call of every bucket
    assert len(measured["first_pass"]) == len(measured["all"]) == sum(b.queries for b in measured["buckets"])
    assert all(b.first_pass_p50_ms > 0 and b.p50_ms > 0 for b in measured["buckets"])
    for stages in measured["stage_p50"].values():
        assert set(stages) == STAGES
        assert all(value >= 0 for value in stages.values())
        assert stages["fulltext"] > 0 and stages["vector"] > 0 and stages["rerank"] > 0
