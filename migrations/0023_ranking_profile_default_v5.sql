-- 0023: ranking profile 'default' v5.
--
-- v4 with weights.recency 0.05 (was 0.20) and fulltext.rank_normalization 0
-- (was 1), tuned on the dev data only (LoCoMo locomo_dev.json, SciFact train
-- judgments); figures and commands in docs/BENCHMARKS.md.
-- Why: with the clock at the end of a long conversation, a 0.20 recency
-- weight and a two-day half-life score every turn older than a few days near
-- zero, so the last session wins regardless of relevance; 0.05 keeps recency
-- as a tie-breaker. ts_rank_cd divided by log(length) (normalization 1)
-- favours short turns that merely mention a name. Global configuration:
-- written by the migrating superuser; v4 stays as history.

UPDATE dm_private.ranking_profiles SET is_default = false WHERE name = 'default' AND is_default;
INSERT INTO dm_private.ranking_profiles (name, version, is_default, settings, description)
SELECT
    'default',
    5,
    true,
    pg_catalog.jsonb_set(
        pg_catalog.jsonb_set(rp.settings, '{weights,recency}', '0.05'::jsonb),
        '{fulltext,rank_normalization}', '0'::jsonb),
    'v4 with weights.recency 0.05 and fulltext.rank_normalization 0 (tuned on LoCoMo dev and SciFact train).'
FROM dm_private.ranking_profiles AS rp
WHERE rp.name = 'default' AND rp.version = 4;
