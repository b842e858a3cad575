-- 0022: ranking profile 'default' v4.
--
-- v3 with fulltext.scan_cap 10000 (was 1000) and mmr.lambda 0.9 (was 0.7).
-- Measured on SciFact (`densemem eval scifact ../shared/data/scifact --qrels
-- .../qrels/train.tsv`, 809 queries, 2026-11-29): the OR-of-terms pass of a
-- long natural-language claim matches most of the 5,183 abstracts, and a cap
-- of 1,000 kept an arbitrary (physical-order) subset before ranking: full
-- text alone nDCG@10 0.273 -> 0.400; hybrid 0.479 (v3) -> 0.632 (cap 10,000)
-- -> 0.648 (and lambda 0.9). LoCoMo teams (under 700 turns) never reach the
-- cap; lambda 0.9 moved LoCoMo dev recall@10 by -0.005. The price is latency
-- for very large teams, whose any-term matches are now ranked up to 10,000
-- rows (see docs/RECALL.md). Global configuration: written by the migrating
-- superuser; v3 stays as history.

UPDATE dm_private.ranking_profiles SET is_default = false WHERE name = 'default' AND is_default;
INSERT INTO dm_private.ranking_profiles (name, version, is_default, settings, description)
SELECT
    'default',
    4,
    true,
    pg_catalog.jsonb_set(
        pg_catalog.jsonb_set(rp.settings, '{fulltext,scan_cap}', '10000'::jsonb),
        '{mmr,lambda}', '0.9'::jsonb),
    'v3 with fulltext.scan_cap 10000 and mmr.lambda 0.9 (SciFact train hybrid nDCG@10 0.479 -> 0.648).'
FROM dm_private.ranking_profiles AS rp
WHERE rp.name = 'default' AND rp.version = 3;
