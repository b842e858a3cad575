-- 0060: the team lookup of dm.parse_query keys on the first word of each
-- entity name, alias and predicate phrase.
--
-- Keyed by the first two words (the second is '' for a one-word name): a
-- team with many names that share a first word ("person 1" ... "person
-- 99980" in the discovery benchmark's team) reads only the names whose
-- second word is also a token of the query, not the whole group.
--
-- dm.parse_query used to build the query's 1-4 token n-grams (~35 for a
-- LoCoMo question) and look each one up with `= ANY (n-grams)` in three
-- index scans (0013): building, sorting and advancing through that many
-- array keys, and reading the team's leaf tuples between them, was the
-- largest part of a parse. These indexes let it look up the query's
-- distinct tokens instead (~9): a row whose first and second words are
-- tokens of the query (or the second is empty) is read, and kept when the whole name or phrase (one to four
-- words) stands between spaces in the query's tokens, which is exactly
-- n-gram equality (dm_private.parse_query_team). The 0013 indexes stay:
-- the reference functions and the trigram probe read them.
--
-- Write cost: one more btree entry per entity name or alias and per
-- synonym row (measured in docs/QUERY_GRAMMAR.md, session 8). A team whose
-- names share a first word with a query token reads all of those names
-- (filtered by one strpos each): the trade-off is documented there.

SET LOCAL ROLE densemem_owner;

CREATE INDEX entity_names_first_word_idx ON dm_private.entity_names (
    team_id,
    pg_catalog.split_part(normalized_name, ' ', 1) COLLATE "C" text_pattern_ops,
    pg_catalog.split_part(normalized_name, ' ', 2) COLLATE "C" text_pattern_ops
);
COMMENT ON INDEX dm_private.entity_names_first_word_idx IS
'Entity names and aliases by their first two words in byte order (dm.parse_query: split_part(normalized_name, '' '', 1) and split_part(normalized_name, '' '', 2) COLLATE "C" = ANY (query tokens; the second also '''')).';

CREATE INDEX predicate_synonyms_first_word_idx ON dm_private.predicate_synonyms (
    team_id,
    pg_catalog.split_part(phrase, ' ', 1) COLLATE "C" text_pattern_ops,
    pg_catalog.split_part(phrase, ' ', 2) COLLATE "C" text_pattern_ops
);
COMMENT ON INDEX dm_private.predicate_synonyms_first_word_idx IS
'A team''s predicate synonyms by the first two words of their phrase in byte order (dm.parse_query).';

CREATE INDEX predicate_synonym_defaults_first_word_idx ON dm_private.predicate_synonym_defaults (
    pg_catalog.split_part(phrase, ' ', 1) COLLATE "C" text_pattern_ops,
    pg_catalog.split_part(phrase, ' ', 2) COLLATE "C" text_pattern_ops
);
COMMENT ON INDEX dm_private.predicate_synonym_defaults_first_word_idx IS
'The default predicate synonyms by the first two words of their phrase in byte order (dm.parse_query).';
