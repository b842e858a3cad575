-- 0072: a hash index on dm_private.search_documents (document_id).
--
-- Why (session 11, "ranking 100 candidates p95 <= 1 ms"): the ranking
-- (dm_private.recall_rank, sql/50) reads each fused candidate's document by
-- its key, one probe per candidate (100 per call on the bench's large
-- teams). Through the primary key (team_id, document_id) each probe is a
-- three-level B-tree descent that compares two uuids at every step (about
-- 9.5 k instructions, session 9); a hash index finds the document's bucket
-- page from the hash of its id and compares one hash code per entry there.
-- Callgrind, 200 bench ranking inputs (100k / 1,000-team bench): 5.58 M
-- instructions per recall_rank call before, 4.85 M with this index (-13 %);
-- a whole dm.recall_memory (80 bench queries of every team size) 15.95 M
-- before, 15.03 M after (-5.8 %: other statements that read a document by
-- its id take the index too). docs/RECALL.md, session 11.
--
-- The index does not lead with team_id (a hash index has one key column):
-- every statement that can use it still has its explicit team_id predicate,
-- tested on the row the index returns, so no row of another team is read as
-- a match; with the table distributed by team_id (Citus) the index is built
-- per shard, where it still serves the probe. It is listed with the other
-- documented exceptions in tests/pgtap/test_schema_team_id_leads.sql.
-- document_id is never updated, so the index does not stop HOT updates.

SET LOCAL ROLE densemem_owner;

CREATE INDEX search_documents_document_hash_idx ON dm_private.search_documents USING hash (document_id);
COMMENT ON INDEX dm_private.search_documents_document_hash_idx IS
'A document by its id, by hash (one bucket page instead of a B-tree descent comparing two uuids per step): the ranking''s probe of each fused candidate (dm_private.recall_rank). Every reader keeps its team_id predicate.';
