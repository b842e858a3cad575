-- No GIN index of the product's schemas keeps a pending list (migration
-- 0093): a GIN search reads the whole pending list, so with the default
-- fastupdate = on a recall under steady ingest slowed with every write since
-- the last flush (docs/RECALL.md, session 16). Read from the catalogs, so a
-- GIN index added later without the option fails here; partitions of a
-- partitioned index are checked too (they take the options of their CREATE
-- INDEX, not of a later ALTER INDEX, which partitioned indexes refuse).
BEGIN;
SELECT plan(2);

CREATE TEMPORARY VIEW product_gin_indexes (index_name, options) AS
SELECT c.oid::regclass::text, coalesce(c.reloptions, '{}')
FROM pg_catalog.pg_class AS c
JOIN pg_catalog.pg_am AS am ON am.oid = c.relam
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
WHERE am.amname = 'gin' AND n.nspname IN ('dm', 'dm_private') AND c.relkind IN ('i', 'I');

SELECT cmp_ok(
    (SELECT count(*) FROM product_gin_indexes), '>=', 7::bigint,
    'the full-text, entity-name and hypothesis GIN indexes are all found'
);

SELECT is(
    ARRAY(
        SELECT index_name FROM product_gin_indexes
        WHERE NOT 'fastupdate=off' = ANY (options)
        ORDER BY 1
    ),
    '{}'::text [],
    'every GIN index has fastupdate = off'
);

SELECT * FROM finish();
ROLLBACK;
