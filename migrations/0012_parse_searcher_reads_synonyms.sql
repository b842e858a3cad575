-- 0012: the searcher reads a team's predicate synonyms.
--
-- dm.parse_query reads everything it needs from the team's tables in one
-- definer call and one statement (dm_private.match_query_names, owned by
-- densemem_searcher): the exact entity names and the predicate hints
-- together, where they were two calls and two statements, the second run as
-- the caller under row-level security. densemem_searcher bypasses row-level
-- security, so it may read the synonyms only inside definer functions that
-- carry an explicit team predicate checked against the authenticated team
-- (dm_private.require_team), like every other table it reads.

SET LOCAL ROLE densemem_owner;

GRANT SELECT ON dm_private.predicate_synonyms TO densemem_searcher;
