-- 0052: ranking profile settings stored inline and uncompressed.
--
-- Every recall reads its ranking profile's settings (dm_private.recall_settings):
-- the default profile's settings are ~2.5 kB of jsonb, over the 2 kB
-- threshold at which PostgreSQL compresses a row's long values, so each
-- recall decompressed them (pglz, ~25,000 instructions of the ~440,000 that
-- recall_settings and recall_request cost per recall; callgrind, session 8).
-- With toast_tuple_target at its maximum a row is compressed or moved out
-- of line only when it would not otherwise fit in a page (8 kB): a profile
-- stays inline and plain, a larger one is still toasted as before. Same
-- values; only their storage changes.
--
-- Write cost: none on the write path (profiles are written by migrations and
-- operators, a handful of rows).

ALTER TABLE dm_private.ranking_profiles SET (toast_tuple_target = 8160);

-- Rewrite the rows stored so far (compressed) as plain values: `|| '{}'`
-- returns the same jsonb, decompressed, which is then stored as it is.
UPDATE dm_private.ranking_profiles
SET settings = settings || '{}'::jsonb
WHERE pg_catalog.pg_column_compression(settings) IS NOT NULL;
