-- 0011: byte-order indexes for the n-gram lookups of dm.parse_query.
--
-- dm.parse_query looks up every 1- to 4-word n-gram of a query (about 40
-- for a LoCoMo question) in one index scan per table:
-- `normalized_name = ANY (ngrams)`. Before the scan, the btree sorts and
-- de-duplicates the array with the index column's comparison; under the
-- database's default collation every comparison goes through the C
-- library's strcoll (one string copy each), which cost as much as the scan
-- itself. Equality is the same under every deterministic collation, so the
-- lookups compare `COLLATE "C"` (byte order, memcmp) and these indexes
-- serve them. The default-collation indexes stay: other queries sort or
-- compare with them.

SET LOCAL ROLE densemem_owner;

CREATE INDEX entity_names_name_bytes_idx ON dm_private.entity_names (team_id, normalized_name COLLATE "C");
COMMENT ON INDEX dm_private.entity_names_name_bytes_idx IS
'Exact n-gram lookup of entity names and aliases in byte order (dm_private.match_query_entities: normalized_name COLLATE "C" = ANY (ngrams)).';

CREATE INDEX predicate_synonyms_phrase_bytes_idx ON dm_private.predicate_synonyms (team_id, phrase COLLATE "C");
COMMENT ON INDEX dm_private.predicate_synonyms_phrase_bytes_idx IS
'Exact n-gram lookup of a team''s predicate synonyms in byte order (dm_private.predicate_hints).';

CREATE INDEX predicate_synonym_defaults_phrase_bytes_idx ON dm_private.predicate_synonym_defaults (
    phrase COLLATE "C"
);
COMMENT ON INDEX dm_private.predicate_synonym_defaults_phrase_bytes_idx IS
'Exact n-gram lookup of the default predicate synonyms in byte order (dm_private.predicate_hints).';
