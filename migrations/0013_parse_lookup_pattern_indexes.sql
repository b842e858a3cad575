-- 0013: the n-gram lookup indexes of dm.parse_query compare with
-- text_pattern_ops.
--
-- dm.parse_query looks up its ~40 n-grams with `= ANY (n-grams)` in one
-- index scan per table (0011). Most of that scan's comparisons are the
-- btree's own work on the array (its presorted check, de-duplication and
-- binary searches as it advances) and on the team's leaf tuples. Under
-- COLLATE "C" each comparison still goes through varstr_cmp and a
-- collation look-up before its memcmp; text_pattern_ops compares by memcmp
-- then length directly, which is the same order (byte order), so the
-- n-grams sorted by dm.parse_query stay presorted for the scan, and
-- equality is the same. These indexes replace 0011's, which nothing else
-- reads.

SET LOCAL ROLE densemem_owner;

DROP INDEX dm_private.entity_names_name_bytes_idx;
DROP INDEX dm_private.predicate_synonyms_phrase_bytes_idx;
DROP INDEX dm_private.predicate_synonym_defaults_phrase_bytes_idx;

CREATE INDEX entity_names_name_pattern_idx ON dm_private.entity_names (
    team_id, normalized_name COLLATE "C" text_pattern_ops
);
COMMENT ON INDEX dm_private.entity_names_name_pattern_idx IS
'Exact n-gram lookup of entity names and aliases in byte order, compared by memcmp (dm.parse_query: normalized_name COLLATE "C" = ANY (n-grams)).';

CREATE INDEX predicate_synonyms_phrase_pattern_idx ON dm_private.predicate_synonyms (
    team_id, phrase COLLATE "C" text_pattern_ops
);
COMMENT ON INDEX dm_private.predicate_synonyms_phrase_pattern_idx IS
'Exact n-gram lookup of a team''s predicate synonyms in byte order, compared by memcmp (dm.parse_query).';

CREATE INDEX predicate_synonym_defaults_phrase_pattern_idx ON dm_private.predicate_synonym_defaults (
    phrase COLLATE "C" text_pattern_ops
);
COMMENT ON INDEX dm_private.predicate_synonym_defaults_phrase_pattern_idx IS
'Exact n-gram lookup of the default predicate synonyms in byte order, compared by memcmp (dm.parse_query).';
