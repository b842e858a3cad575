-- 0047: evaluation branch rows for ranking profile 'default' v8.
--
-- The rows fulltext_only and vector_only are the default profile with one
-- retrieval branch off (see 0045), so that the side-by-side rows of
-- `densemem eval` differ from the hybrid row in the branches only. Default
-- v8 (0029) changes rrf_k, the BM25 parameters and the exact-term share of
-- relevance; these v4 rows carry the same settings, built from v8 exactly as
-- 0046 built v3 from v7. Global configuration: written by the migrating
-- superuser.

INSERT INTO dm_private.ranking_profiles (name, version, is_default, settings, description)
SELECT
    'fulltext_only',
    4,
    false,
    rp.settings
    || '{"required_branches": ["fulltext"], "optional_branches": []}'::jsonb
    || pg_catalog.jsonb_build_object(
        'candidates', COALESCE(rp.settings -> 'candidates', '{}'::jsonb) || '{"vector": 0}'::jsonb
    ),
    'Evaluation branch row: default v8 with the vector branch off (candidates.vector 0); full-text and exact branches only.'
FROM dm_private.ranking_profiles AS rp
WHERE rp.name = 'default' AND rp.version = 8;

INSERT INTO dm_private.ranking_profiles (name, version, is_default, settings, description)
SELECT
    'vector_only',
    4,
    false,
    rp.settings
    || '{"required_branches": ["vector"], "optional_branches": [],
         "relevance_mix": {"fusion": 1.0, "phrase": 0.0, "exact_terms": 0.0}}'::jsonb
    || pg_catalog.jsonb_build_object(
        'candidates', COALESCE(rp.settings -> 'candidates', '{}'::jsonb) || '{"fulltext": 0, "exact": 0}'::jsonb
    ),
    'Evaluation branch row: default v8 with the full-text and exact branches off and no lexical signals in relevance; vector branch required.'
FROM dm_private.ranking_profiles AS rp
WHERE rp.name = 'default' AND rp.version = 8;
