-- 0093: every GIN index keeps a pending list of at most 64 kB.
--
-- Why (session 16, docs/RECALL.md "GIN pending lists under ingest"): with
-- GIN's default fastupdate = on, new entries wait in a pending list of up to
-- gin_pending_list_limit (4 MB) that every GIN search reads in full, until
-- an insert that overflows it or a vacuum flushes it. A recall runs several
-- GIN searches (the full-text passes, the exact branch, parse and discovery
-- lookups), so under steady ingest its cost grew with the writes since the
-- last flush. `densemem bench recall-under-ingest` on the 1M / 1,000-team
-- bench, 150 evidence/s committed in batches of 10 (2026-11-30): recall p50
-- of the 101-1k bucket 5.4 ms with the default list (8,200 pending tuples
-- on average) against 2.7 ms with the list capped at 64 kB or with
-- fastupdate off, the same as with no writer.
--
-- 64 kB rather than fastupdate = off: with the list off every evidence
-- inserts each of its lexemes into the GIN trees one at a time (backend CPU
-- 1.70 ms per evidence against 1.15 with a 64 kB list); a small list still
-- batches about 80 evidence per flush, sorted by key, and a search reads at
-- most 8 pending pages. The writer whose insert overflows the list does the
-- flush (a batch of 10 then takes up to ~50 ms instead of ~10). 64 kB is the
-- smallest limit PostgreSQL accepts.
--
-- These are plain indexes of a plain table, so ALTER INDEX ... SET applies.
-- A GIN index of a partitioned table would need the option in its CREATE
-- INDEX ... WITH (...) (ALTER INDEX ... SET is refused for a partitioned
-- index; partitions created later copy the parent's options):
-- tests/pgtap/test_schema_gin_pending_list.sql checks every GIN index,
-- partitions included. The options take a SHARE UPDATE EXCLUSIVE lock only.
--
-- Turning the limit down does not flush what is pending: the migration
-- flushes every list now, so the first recalls after it do not read an old
-- 4 MB list until the next overflow.

SET LOCAL ROLE densemem_owner;

ALTER INDEX dm_private.search_documents_fulltext_idx SET (gin_pending_list_limit = 64);
ALTER INDEX dm_private.search_documents_team_lexemes_idx SET (gin_pending_list_limit = 64);
ALTER INDEX dm_private.search_documents_entity_fulltext_idx SET (gin_pending_list_limit = 64);
ALTER INDEX dm_private.search_documents_entity_team_lexemes_idx SET (gin_pending_list_limit = 64);
ALTER INDEX dm_private.entity_names_trgm_idx SET (gin_pending_list_limit = 64);
ALTER INDEX dm_private.entity_names_team_trigram_idx SET (gin_pending_list_limit = 64);
ALTER INDEX dm_private.hypotheses_statement_fulltext_idx SET (gin_pending_list_limit = 64);

SELECT pg_catalog.gin_clean_pending_list(i.indexrelid::regclass)
FROM pg_catalog.pg_index AS i
JOIN pg_catalog.pg_class AS c ON c.oid = i.indexrelid
JOIN pg_catalog.pg_am AS am ON am.oid = c.relam
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
WHERE am.amname = 'gin' AND n.nspname = 'dm_private' AND c.relkind = 'i';
