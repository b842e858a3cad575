-- 0090: a hash index on dm_private.document_embeddings (document_id).
--
-- Why (session 15, "ranking 100 candidates p95 <= 1 ms"): the ranking
-- (dm_private.recall_rank, sql/50) reads the current vector of each MMR pool
-- member (20 on the bench) by its key, one probe per member. Through the
-- partition's primary key (team_id, document_id, contract_id) each probe is
-- a B-tree descent comparing two uuids and an integer at every step (about
-- 8 k instructions of _bt_first per probe); a hash index finds the bucket
-- page from the hash of the document id and compares one hash code per entry
-- there, as 0072 does for search_documents. Callgrind, the 200 bench ranking
-- inputs of the 100k / 1,000-team bench: 3.365 M instructions per
-- recall_rank call before, 3.240 M with this index; a whole
-- dm.recall_memory (20 bench queries) 135 k instructions less per recall.
-- docs/RECALL.md, session 15.
--
-- The index does not lead with team_id (a hash index has one key column):
-- every statement that can use it keeps its explicit team_id predicate,
-- tested on the row the index returns, and with the table distributed by
-- team_id (Citus) it is built per shard, where it still serves the probe.
-- Created on the partitioned table, so every partition (present and future)
-- has it. Listed with the other documented exceptions in
-- tests/pgtap/test_schema_team_id_leads.sql. document_id is never updated,
-- so the index does not stop HOT updates; an insert maintains one more
-- index entry.

SET LOCAL ROLE densemem_owner;

CREATE INDEX document_embeddings_document_hash_idx ON dm_private.document_embeddings USING hash (document_id);
COMMENT ON INDEX dm_private.document_embeddings_document_hash_idx IS
'A vector row by its document id, by hash (one bucket page instead of a B-tree descent comparing two uuids and the contract per step): the ranking''s probe of each MMR pool member''s vector (dm_private.recall_rank). Every reader keeps its team_id predicate.';
