-- 0056: entity documents by team-qualified lexeme, for discovery's
-- full-text seeds.
--
-- When a query spells no entity name, dm_private.discovery_entity_seeds also
-- looks entity documents up by any query lexeme. On
-- search_documents_entity_fulltext_idx (0030), GIN on (team_id,
-- search_vector), the team's key is required by an OR query, so GIN decodes
-- the team's whole posting list (every entity document of the team: 100,000
-- on the 1M-relationship bench) per call. This is migration 0025's index for
-- entity documents: each key is the team id's first 8 hex digits followed
-- by a lexeme (dm_private.search_team_lexemes, 0025), so a key's posting list
-- holds that lexeme's entity documents of (about) one team. The lookup keeps
-- its explicit team_id predicate, so a prefix collision costs rows read,
-- never a wrong row.

SET LOCAL ROLE densemem_owner;

CREATE INDEX search_documents_entity_team_lexemes_idx ON dm_private.search_documents
USING gin (dm_private.search_team_lexemes(team_id, search_vector))
WHERE subject_kind = 'entity';
COMMENT ON INDEX dm_private.search_documents_entity_team_lexemes_idx IS
'Entity documents by team-qualified lexeme (dm_private.search_team_lexemes): discovery''s full-text seed lookup reads posting lists of one team, not the team''s whole list.';
