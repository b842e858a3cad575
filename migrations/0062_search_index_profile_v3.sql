-- 0062: search-index profile v3: partial_index_min_rows 10,000 -> 1,000.
--
-- v2 (0050) with a team's own partial HNSW index from 1,000 vectors of the
-- active contract instead of 10,000. Everything else (m 16, ef_construction
-- 64, ef_search 150, ef_search_filtered 200, relaxed iterative scans,
-- max_scan_tuples 20,000) is unchanged, so the 13 partial indexes already
-- built under v2 (teams of 10,000+) are the indexes v3 would build: none is
-- rebuilt. dm.refresh_vector_indexes() reads the active profile, so the next
-- refresh gives every team of 1,000-9,999 vectors its own index; until then
-- such a team keeps the exact path (nothing changes for it before the
-- refresh).
--
-- Why: 10,000 was never measured against the exact path's real cost, which
-- grows with the team (every vector is read, its distance computed and put
-- through a bounded sort), while a walk of the team's own graph hardly does.
-- Callgrind instructions per dm_private.recall_vector_candidates call, 1M /
-- 1,000-team bench, 40 queries per size class (a team's evidence vector plus
-- noise, as the bench makes them), force_path exact vs hnsw_partial:
--   teams of 1,004-1,484 vectors   6.84 M exact   4.83 M walk
--            1,501-2,473           8.81 M         4.86 M
--            2,520-3,929          12.24 M         4.96 M
--            4,048-6,679          17.84 M         4.98 M
--            7,031-9,542          27.11 M         5.10 M
-- Recall@50 of the walk against the exact oracle (120 queries per class):
-- 0.9995 / 0.9998 / 0.9995 / 0.9995 / 0.9993 (0.9998-0.9999 @100); on 1,500
-- unclustered random vectors, the worst case for a graph, 0.997 @50
-- (tests/python/test_recall_vector_hnsw_profile.py). The same rows at
-- ef_search 100 and 64 on the bench (0.9992-0.9998), but ef 100 fails the
-- 0.98 target on random vectors (0050): ef_search stays 150.
--
-- Cost: on the 1M bench 120 more partial indexes (133 in all), built in
-- 182 s; every statement that inserts into dm_private.document_embeddings
-- opens every index of the table and prepares every partial predicate, about
-- 9.6 k instructions per index per statement (a batch of the embedding
-- worker pays it once per batch), and a vector of a team with an index pays
-- its HNSW insert (about 1 M instructions for a 3,000-vector team).
-- docs/RECALL.md (vector branch, session 9) has the measurements.
--
-- Global configuration: written by the migrating superuser; rows are never
-- updated except the active flag, v1 and v2 stay as history.

UPDATE dm_private.search_index_profiles SET is_active = false WHERE is_active;
INSERT INTO dm_private.search_index_profiles (version, is_active, settings, description)
SELECT
    3,
    true,
    pg_catalog.jsonb_set(sip.settings, '{partial_index_min_rows}', '1000'::jsonb),
    'v2 with partial_index_min_rows 1000 (was 10000): exact scan below 1,000 usable vectors; a per-team partial HNSW '
    'index (m 16, ef_construction 64) from 1,000 after dm.refresh_vector_indexes(); hnsw.ef_search 150 for unfiltered '
    'requests, hnsw.ef_search_filtered 200 for filtered ones; relaxed iterative scans.'
FROM dm_private.search_index_profiles AS sip
WHERE sip.version = 2;
