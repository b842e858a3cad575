-- 0039: the searcher reads what discovery's candidate-path stage reads.
--
-- dm_private.discovery_candidate_paths (sql/64) is a security-definer stage
-- owned by densemem_searcher: it checks the team like require_team and
-- filters every table reference by it explicitly, so that its statement of
-- some 25 table references carries no row-level-security InitPlan and
-- filter per reference. Besides the tables the searcher already reads
-- (0003, 0038: relationships, relationship_evidence, evidence,
-- source_revisions, entities, profiles, evidence_entity_links), it reads
-- the recorded conflicts and the team's predicate cardinalities.

SET LOCAL ROLE densemem_owner;

GRANT SELECT ON dm_private.conflicts, dm_private.predicate_cardinalities TO densemem_searcher;
