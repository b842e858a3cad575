-- 0025: evidence documents by (team, lexeme): a GIN index whose keys are
-- team-qualified lexemes.
--
-- The full-text branch looked matches up in the GIN index on
-- (team_id, search_vector). A multicolumn GIN index keeps one posting list
-- per key per column: the team's list and each lexeme's list, the latter
-- holding that lexeme's documents in EVERY team. A scan intersects them, so
-- its cost grows with the whole corpus (a common word's list spans all
-- teams): on the 1M-row bench, 508 index pages for a 76-row match of a
-- 5,000-row team. Here each key is the team's prefix followed by a lexeme,
-- so a key's posting list holds that lexeme's documents of (about) one team
-- only: the scan reads what the team's own document frequencies say.
--
-- The prefix is the first 8 hex digits of the team id. Two teams sharing a
-- prefix only share posting lists (their documents are told apart by the
-- explicit team_id predicate every query keeps), so a collision costs rows
-- read, never a wrong row. The function is IMMUTABLE and must never change
-- while the index exists (an index expression); recall builds its keys the
-- same way (dm_private.recall_fulltext_candidates).

SET LOCAL ROLE densemem_owner;

-- Team-qualified lexemes of a search document: left(team_id::text, 8) ||
-- lexeme for every lexeme of the tsvector.
CREATE FUNCTION dm_private.search_team_lexemes(team_id uuid, search_vector tsvector)
RETURNS text []
LANGUAGE sql
IMMUTABLE
STRICT
PARALLEL SAFE
SET search_path = ''
RETURN ARRAY(
    SELECT pg_catalog.left(team_id::text, 8) || l.lexeme
    FROM pg_catalog.unnest(pg_catalog.tsvector_to_array(search_vector)) AS l (lexeme));
COMMENT ON FUNCTION dm_private.search_team_lexemes(uuid, tsvector) IS
'Index expression of search_documents_team_lexemes_idx: every lexeme of the tsvector prefixed by the first 8 hex digits of the team id, so that a GIN key''s posting list holds one team''s documents. Never change it while the index exists.';
REVOKE ALL ON FUNCTION dm_private.search_team_lexemes(uuid, tsvector) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.search_team_lexemes(uuid, tsvector)
TO densemem_app, densemem_analyst, densemem_operator, densemem_searcher, densemem_embedder, densemem_worker;

CREATE INDEX search_documents_team_lexemes_idx ON dm_private.search_documents
USING gin (dm_private.search_team_lexemes(team_id, search_vector))
WHERE subject_kind = 'evidence';
COMMENT ON INDEX dm_private.search_documents_team_lexemes_idx IS
'Evidence documents by team-qualified lexeme (dm_private.search_team_lexemes): the full-text branch''s match lookups read posting lists of one team, not of every team.';
