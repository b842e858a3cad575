-- 0050: search-index profile v2: hnsw.ef_search 200 -> 150 for unfiltered
-- requests, hnsw.ef_search_filtered 200 for filtered ones.
--
-- v1 (0020) with the size of the candidate list of a partial HNSW walk
-- split in two. The vector branch searches with GREATEST(ef, candidates.vector)
-- where ef is ef_search_filtered when the request filters by source group,
-- memory type, creation time or a time window, else ef_search
-- (sql/40_recall_vector_branch.sql). So a filtered walk keeps 200 candidates
-- as before (same rows), an unfiltered one 150; the iterative relaxed scan still
-- pulls more when eligibility filters rows out (max_scan_tuples unchanged),
-- and the rows it returns are re-sorted exactly. The exact path (teams
-- without their own index) does not read this value and returns the same
-- rows as before.
--
-- Why: on the 1M / 1,000-team bench the walk was a third of the vector
-- branch of a team with its own index. Callgrind, 40 bench queries of the
-- 10k+ bucket, dm_private.recall_vector_candidates alone: 7.37 M
-- instructions per call (ef 200) -> 6.68 M (ef 150) -> 6.23 M (ef 100).
-- Recall against the exact oracle: on the bench's vectors (200 queries of
-- the 10k+ bucket, query seeds 7, 11, 13, 17, 19) recall@50 0.9999 at ef
-- 200, 150 and 0.9998 at 100; on 1,500 vectors drawn at random in all 384
-- dimensions (no cluster structure, the worst case for a graph; 20 queries,
-- tests/python/test_recall_vector_hnsw_profile.py) recall@50 / @100
-- 0.999 / 0.998 at ef 200, 0.997 / 0.992 at 150, 0.971 / 0.962 at 100 (below
-- the 0.98 target: 100 was measured and rejected). Filtered requests keep
-- 200: there the walk's recall is lower at any ef and drops further at 150
-- (10k+ bench teams, 40 queries, memory types conversation + workflow:
-- 0.9645 at 200, 0.9503 at 150; types episodic, cap 50: 0.958 -> 0.942;
-- created May-August: 0.946 -> 0.937). docs/RECALL.md (vector branch,
-- session 7) has the commands.
--
-- The HNSW build settings (m 16, ef_construction 64) and the size
-- thresholds are unchanged, so the partial indexes built under v1 are the
-- indexes v2 would build: no index is rebuilt. Global configuration:
-- written by the migrating superuser; rows are never updated except the
-- active flag, v1 stays as history.

UPDATE dm_private.search_index_profiles SET is_active = false WHERE is_active;
INSERT INTO dm_private.search_index_profiles (version, is_active, settings, description)
SELECT
    2,
    true,
    pg_catalog.jsonb_set(
        pg_catalog.jsonb_set(sip.settings, '{hnsw,ef_search}', '150'::jsonb),
        '{hnsw,ef_search_filtered}', '200'::jsonb),
    'v1 with hnsw.ef_search 150 for unfiltered requests (was 200) and hnsw.ef_search_filtered 200 for requests '
    'filtered by source group, memory type, creation time or time window: exact scan below 10,000 usable vectors; a per-team partial HNSW '
    'index (m 16, ef_construction 64) from 10,000; relaxed iterative scans.'
FROM dm_private.search_index_profiles AS sip
WHERE sip.version = 1;
