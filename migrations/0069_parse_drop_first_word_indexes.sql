-- 0069: the first-word indexes of entity names and team synonyms are no
-- longer read.
--
-- Since 0068 dm.parse_query reads a team's names, aliases and synonym
-- phrases from dm_private.parse_lexicon by its own first-word index
-- (parse_lexicon_first_word_idx, the same key); no function has a condition
-- on the first word of entity_names or predicate_synonyms any more (the
-- reference helpers look names and phrases up whole, on the 0013 pattern
-- indexes, and the trigram probe reads the GIN index). Dropping them takes
-- back one btree entry per name, alias and synonym from the write path,
-- which the lexicon's row and index entry replace.

SET LOCAL ROLE densemem_owner;

DROP INDEX dm_private.entity_names_first_word_idx;
DROP INDEX dm_private.predicate_synonyms_first_word_idx;
