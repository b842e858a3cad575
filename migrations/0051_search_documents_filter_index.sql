-- 0051: evidence documents of a team by memory type, source group and
-- creation time.
--
-- The vector branch of a team with its own partial HNSW index walks the
-- index and drops the rows a request filter rejects. A filter that keeps few
-- documents (an unknown source group, one rare memory type, a narrow
-- creation range) makes the walk read up to hnsw.max_scan_tuples index rows
-- (164-410 ms on the 1M bench's 10k+ teams, against 4-15 ms unfiltered) and
-- still miss some of the exact nearest. With this index the branch counts the
-- documents the filters can keep (one bounded index-only range) and, when
-- they are few, ranks exactly those documents' vectors instead of walking
-- (sql/40_recall_vector_branch.sql): exact by construction and cheaper. The
-- leading team_id keeps the key team-first. Write cost: one index entry per
-- new row version of an evidence document that is not a HOT update (the
-- insert, and updates that already change an indexed column, such as the
-- embedding worker's search_state); memory_type, source_group and
-- source_created_at are set when a document is written, so the index makes
-- no update non-HOT that was HOT before. Size on the 1M bench: see
-- docs/RECALL.md (vector branch, session 7b).

SET LOCAL ROLE densemem_owner;

CREATE INDEX search_documents_filter_idx ON dm_private.search_documents
(team_id, memory_type, source_group, source_created_at)
WHERE subject_kind = 'evidence';
COMMENT ON INDEX dm_private.search_documents_filter_idx IS
'Evidence documents of a team by memory type, source group and creation time: how many documents a filtered vector request can keep (dm_private.recall_vector_candidates ranks them exactly when few, instead of walking the team''s HNSW index), and the eligible-first read of those documents.';
