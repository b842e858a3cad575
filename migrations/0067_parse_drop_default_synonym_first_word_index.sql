-- 0067: drop the default synonyms' first-word index (0060), which nothing
-- reads any more.
--
-- Since session 9, dm.parse_query reads the default predicate synonyms from
-- their constant copy, dm_private.parse_default_synonyms() (generated from
-- the table by dm_private.parse_write_default_synonyms() and rewritten by a
-- statement trigger after every change), not from the table: no function
-- has a condition on split_part(phrase, ' ', 1) of
-- dm_private.predicate_synonym_defaults. The table's other readers scan it
-- whole (dm_private.parse_write_default_synonyms(), 81 rows) or look phrases
-- up by the whole phrase (dm_private.predicate_hints, the reference helper,
-- and dm_private.parse_query_names: the 0013 pattern index). The index cost
-- a btree entry per default written and nothing else.
--
-- The two other 0060 indexes stay: entity_names_first_word_idx and
-- predicate_synonyms_first_word_idx key dm_private.parse_query_team's
-- lookup statement (the team's names, aliases and synonym phrases).

SET LOCAL ROLE densemem_owner;

DROP INDEX dm_private.predicate_synonym_defaults_first_word_idx;
