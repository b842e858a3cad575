-- 0082: a partial index of the evidence that has a source group and a
-- sequence number, by team.
--
-- Why (session 13, "ranking 100 candidates p95 <= 1 ms"): the ranking
-- (dm_private.recall_rank, sql/50) needs the neighbouring-turn lift's window
-- only when a candidate can be lifted: when some evidence of the team has
-- both a source group and a sequence number (conversations). Without such
-- evidence it scores the candidates in a statement that reads them once
-- (no materialized copy for the window). It asks that once per call, when
-- the profile's context weight is above 0. No existing index answers it in
-- one descent: search_documents_filter_idx has memory_type before
-- source_group (a skip scan over the memory types), and
-- search_documents_sequence_idx would walk every evidence of a team with
-- sequence numbers but no groups (the bench's teams). Here a team without
-- grouped evidence has no entry at all: one descent finds nothing; a team
-- with some finds its first entry.
--
-- Its key leads with team_id; every reader keeps its team predicate. Rows
-- enter only when grouped (conversations), so notes' writes do not touch it.

SET LOCAL ROLE densemem_owner;

CREATE INDEX search_documents_grouped_idx ON dm_private.search_documents (team_id)
WHERE subject_kind = 'evidence' AND source_group IS NOT NULL AND sequence_number IS NOT NULL;
COMMENT ON INDEX dm_private.search_documents_grouped_idx IS
'Evidence with a source group and a sequence number, by team: whether the ranking''s neighbouring-turn lift can apply (dm_private.recall_rank), in one descent.';
