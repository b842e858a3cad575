-- 0021: ranking profile 'default' v3.
--
-- v2 with fusion.rrf_k 10 instead of 60. Measured on LoCoMo dev
-- (`densemem eval locomo ../shared/data/locomo/locomo_dev.json`, turn-level,
-- 997 questions, 2026-11-29): hybrid recall@10 0.554 -> 0.582, recall@25
-- 0.665 -> 0.724, MRR 0.327 -> 0.372. A smaller k lets each branch's first
-- ranks count for more than agreement far down both lists, which suits
-- natural-language questions where one branch often finds the answer alone.
-- The seed 002 weights and half-lives are unchanged. Global configuration:
-- written by the migrating superuser; v2 stays as history.

UPDATE dm_private.ranking_profiles SET is_default = false WHERE name = 'default' AND is_default;
INSERT INTO dm_private.ranking_profiles (name, version, is_default, settings, description)
SELECT
    'default',
    3,
    true,
    pg_catalog.jsonb_set(rp.settings, '{fusion,rrf_k}', '10'::jsonb),
    'v2 with RRF k = 10 (LoCoMo dev hybrid recall@10 0.554 -> 0.582); seed 002 weights and half-lives.'
FROM dm_private.ranking_profiles AS rp
WHERE rp.name = 'default' AND rp.version = 2;
