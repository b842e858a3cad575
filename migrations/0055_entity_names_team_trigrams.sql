-- 0055: entity names by team-qualified trigram, for discovery's fuzzy seeds.
--
-- When a query spells no entity name, dm_private.discovery_entity_seeds looks
-- up each of up to five query words by trigram similarity (`%`), team-scoped.
-- On entity_names_trgm_idx (0002), GIN on (team_id, normalized_name), the
-- team is a key of its own whose posting list holds every name of the team,
-- and the threshold match leaves it the only required key, so GIN decodes
-- that whole list per word (100,000 TIDs on the 1M-relationship bench: about
-- 0.45 M instructions per word). Here, as in migration 0025's team lexemes,
-- each key is the team id's first 8 hex digits followed by one trigram of the
-- name (public.show_trgm), so a key's posting list holds that trigram's names
-- of (about) one team. The team still leads every key; the lookup keeps an
-- explicit team_id predicate, so two teams sharing a prefix only share
-- posting lists, never rows.
--
-- The function is IMMUTABLE and must never change while the index exists
-- (an index expression); sql/60_discovery_graph.sql redefines it with the
-- same body.

SET LOCAL ROLE densemem_owner;

CREATE FUNCTION dm_private.entity_name_team_trigrams(team_id uuid, normalized_name text)
RETURNS text []
LANGUAGE sql
IMMUTABLE
STRICT
PARALLEL SAFE
SET search_path = ''
RETURN ARRAY(
    SELECT pg_catalog.left(team_id::text, 8) || t.trigram
    FROM pg_catalog.unnest(public.show_trgm(normalized_name)) AS t (trigram));
COMMENT ON FUNCTION dm_private.entity_name_team_trigrams(uuid, text) IS
'Index expression of entity_names_team_trigram_idx: every trigram of the name (public.show_trgm) prefixed by the first 8 hex digits of the team id, so that a GIN key''s posting list holds one team''s names. Never change it while the index exists.';
REVOKE ALL ON FUNCTION dm_private.entity_name_team_trigrams(uuid, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.entity_name_team_trigrams(uuid, text)
TO densemem_app, densemem_analyst, densemem_operator, densemem_searcher, densemem_embedder, densemem_worker;

CREATE INDEX entity_names_team_trigram_idx ON dm_private.entity_names
USING gin (dm_private.entity_name_team_trigrams(team_id, normalized_name));
COMMENT ON INDEX dm_private.entity_names_team_trigram_idx IS
'Entity names by team-qualified trigram (dm_private.entity_name_team_trigrams): discovery''s fuzzy seed lookup reads the posting lists of a few of the word''s trigrams in one team, not the team''s whole list.';
