-- 0093: no GIN index keeps a pending list (fastupdate = off).
--
-- Why (session 16, docs/RECALL.md "GIN pending lists under ingest"): with
-- GIN's default fastupdate = on, new entries wait in a pending list of up to
-- gin_pending_list_limit (4 MB) that every GIN search reads in full, until
-- an insert that overflows it or a vacuum flushes it. A recall runs several
-- GIN searches (the full-text passes, the exact branch, parse and discovery
-- lookups), so under steady ingest its cost grew with the writes since the
-- last flush. `densemem bench recall-under-ingest`, 1M / 1,000-team bench,
-- 150 evidence/s committed in batches of 10 (2026-11-30, two runs each):
-- recall p50 of the 101-1k bucket 5.3-5.4 ms with the default list (8,200
-- pending tuples on average), 2.7-3.4 ms with fastupdate off or a 64 kB
-- list, as with no writer. Callgrind (120 rounds of ingest 10 evidence and
-- recall one bench query): each pending tuple costs a recall about 2.1 k
-- instructions, so the default list's average adds ~17 M to a ~13 M recall.
--
-- Off rather than a smaller list (64 kB, the least PostgreSQL accepts):
-- a 64 kB list still adds 0.34 M instructions to every recall under ingest
-- (0.7 M when full) and hands each flush (~15 ms) to whichever writer
-- overflows it; off adds nothing to a read, whatever the write rate or the
-- list's phase, and a rolled-back write no longer leaves entries that every
-- search reads until a vacuum. What it costs writers: each evidence's
-- lexemes go into the GIN trees one at a time, 1.42 M instructions of index
-- insertion per evidence against 1.21 M with a 64 kB list and 0.57 M plus a
-- share of each 4 MB flush with the default: at most 9 % of an evidence's
-- ~9.5 M ingest instructions more than today, 2 % more than 64 kB.
--
-- These are plain indexes of a plain table, so ALTER INDEX ... SET applies
-- (a SHARE UPDATE EXCLUSIVE lock: reads and writes go on). A GIN index of a
-- partitioned table would need the option in its CREATE INDEX ... WITH
-- (...): ALTER INDEX ... SET is refused for a partitioned index, and
-- partitions created later copy the parent's options.
-- tests/pgtap/test_schema_gin_fastupdate.sql checks every GIN index,
-- partitions included.
--
-- Turning fastupdate off does not flush what is pending, and with it off no
-- insert ever will: the migration flushes every list now.

SET LOCAL ROLE densemem_owner;

ALTER INDEX dm_private.search_documents_fulltext_idx SET (fastupdate = off);
ALTER INDEX dm_private.search_documents_team_lexemes_idx SET (fastupdate = off);
ALTER INDEX dm_private.search_documents_entity_fulltext_idx SET (fastupdate = off);
ALTER INDEX dm_private.search_documents_entity_team_lexemes_idx SET (fastupdate = off);
ALTER INDEX dm_private.entity_names_trgm_idx SET (fastupdate = off);
ALTER INDEX dm_private.entity_names_team_trigram_idx SET (fastupdate = off);
ALTER INDEX dm_private.hypotheses_statement_fulltext_idx SET (fastupdate = off);

SELECT pg_catalog.gin_clean_pending_list(i.indexrelid::regclass)
FROM pg_catalog.pg_index AS i
JOIN pg_catalog.pg_class AS c ON c.oid = i.indexrelid
JOIN pg_catalog.pg_am AS am ON am.oid = c.relam
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
WHERE am.amname = 'gin' AND n.nspname = 'dm_private' AND c.relkind = 'i';
