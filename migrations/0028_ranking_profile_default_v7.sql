-- 0028: ranking profile 'default' v7.
--
-- v6 (BM25 full-text, migration 0024) with the neighbouring-turn context
-- stage on (sql/52, dm_private.recall_context_lift): context.weight 0.3,
-- context.radius 2. A candidate's score rises by 0.3 times the best
-- relevance among the candidates of the same source group (conversation
-- session, thread) written within two sequence numbers of it.
-- Why: in a conversation the turn that answers a question is often the reply
-- next to the turn that repeats the question's words ("Which team did you
-- sign with?" -> "The Minnesota Wolves!"); scored alone it shares no term
-- with the question. Tuned on the dev data only (LoCoMo locomo_dev.json);
-- figures, commands and intervals in docs/EVALUATION.md (tuning record).
-- Evidence without a source group (SciFact documents, notes) is untouched.
-- Global configuration: written by the migrating superuser; v6 stays as
-- history.

UPDATE dm_private.ranking_profiles SET is_default = false WHERE name = 'default' AND is_default;
INSERT INTO dm_private.ranking_profiles (name, version, is_default, settings, description)
SELECT
    'default',
    7,
    true,
    rp.settings || '{"context": {"weight": 0.3, "radius": 2}}'::jsonb,
    'v6 with the neighbouring-turn context stage: context.weight 0.3, context.radius 2 (tuned on LoCoMo dev).'
FROM dm_private.ranking_profiles AS rp
WHERE rp.name = 'default' AND rp.version = 6;

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM dm_private.ranking_profiles AS rp
                   WHERE rp.name = 'default' AND rp.version = 7 AND rp.is_default) THEN
        RAISE EXCEPTION 'ranking profile default v7 needs default v6 (migration 0024)';
    END IF;
END
$$;
