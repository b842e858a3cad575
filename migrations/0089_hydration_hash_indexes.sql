-- 0089: hash indexes on the three keys hydration probes.
--
-- Why (session 14, the fixed cost of a recall): hydration re-reads each
-- result under row-level security by its key, one probe per id into
-- evidence, source_revisions and sources (dm_private.recall_run's read and
-- dm_private.recall_hydrate). Through the primary keys each probe is a
-- B-tree descent comparing two or three uuids at every step; a hash index
-- finds the bucket page from the hash of the one id and compares a hash code
-- per entry there, as 0072 does for search_documents. Callgrind, the
-- hydration statement of 20 recalls of the 1M bench's 1k-10k bucket (10 ids
-- each): 863 k instructions per recall, 789 k with the evidence index,
-- 721 k with all three.
--
-- The indexes do not lead with team_id (a hash index has one key column):
-- every statement that can use them keeps its explicit team_id predicate,
-- tested on the row the index returns, and with the tables distributed by
-- team_id (Citus) they are built per shard, where they still serve the
-- probe. Listed with the other documented exceptions in
-- tests/pgtap/test_schema_team_id_leads.sql. None of the three ids is ever
-- updated, so the indexes do not stop HOT updates; an insert maintains one
-- more index entry.

SET LOCAL ROLE densemem_owner;

CREATE INDEX evidence_evidence_hash_idx ON dm_private.evidence USING hash (evidence_id);
COMMENT ON INDEX dm_private.evidence_evidence_hash_idx IS
'Evidence by its id, by hash (one bucket page instead of a B-tree descent comparing two uuids per step): hydration''s probe of each result. Every reader keeps its team_id predicate.';
CREATE INDEX sources_source_hash_idx ON dm_private.sources USING hash (source_id);
COMMENT ON INDEX dm_private.sources_source_hash_idx IS
'A source by its id, by hash: hydration''s probe of each result''s source. Every reader keeps its team_id predicate.';
CREATE INDEX source_revisions_revision_hash_idx ON dm_private.source_revisions USING hash (revision_id);
COMMENT ON INDEX dm_private.source_revisions_revision_hash_idx IS
'A source revision by its id, by hash: hydration''s probe of each result''s revision. Every reader keeps its team_id predicate.';
