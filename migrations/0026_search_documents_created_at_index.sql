-- 0026: evidence documents by creation time, per team.
--
-- A time window parsed from the query ("in 2023", "last week") is a
-- preference: recall runs a first pass inside the window and fills the rest
-- without it. When the team has no recallable evidence in the window at all,
-- that first pass cannot return a row; recall checks this with one index
-- range on (team_id, source_created_at) and skips the pass, so a question
-- about a period the memory does not cover costs one retrieval, not two.

SET LOCAL ROLE densemem_owner;

CREATE INDEX search_documents_created_at_idx ON dm_private.search_documents
(team_id, source_created_at)
WHERE subject_kind = 'evidence';
COMMENT ON INDEX dm_private.search_documents_created_at_idx IS
'Evidence documents of a team by creation time: whether a parsed time window holds any recallable evidence (dm_private.recall_run skips its first pass when none).';
