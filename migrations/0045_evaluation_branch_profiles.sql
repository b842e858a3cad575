-- 0045: ranking profiles for evaluation branch rows.
--
-- `densemem eval` reports every dataset three ways side by side: full-text
-- only, vector only and the full hybrid default. The single-branch rows are
-- ranking profiles selected by the request field ranking_profile (by name,
-- latest version), so that they run the same dm.recall_memory code path as
-- the default: same eligibility, composite rerank, MMR, hydration and budget,
-- only the retrieval branches differ. Each is the default profile's settings
-- at the time this migration runs, with one branch's candidate cap set to 0
-- (that branch contributes no candidate; RRF relevance is then normalised by
-- the branches that ran). The vector-only row also zeroes the lexical
-- phrase and exact-term signals inside relevance and requires the vector
-- branch, so that a missing query embedding is an error there, not a silent
-- empty row. Neither is ever the default.
--
-- Global configuration rows are written by the migrating superuser: no
-- Dense-Mem role may insert them.

INSERT INTO dm_private.ranking_profiles (name, version, is_default, settings, description)
SELECT
    'fulltext_only',
    1,
    false,
    rp.settings
    || '{"required_branches": ["fulltext"], "optional_branches": []}'::jsonb
    || pg_catalog.jsonb_build_object(
        'candidates', COALESCE(rp.settings -> 'candidates', '{}'::jsonb) || '{"vector": 0}'::jsonb
    ),
    'Evaluation branch row: default v' || rp.version
    || ' with the vector branch off (candidates.vector 0); full-text and exact branches only.'
FROM dm_private.ranking_profiles AS rp
WHERE rp.is_default;

INSERT INTO dm_private.ranking_profiles (name, version, is_default, settings, description)
SELECT
    'vector_only',
    1,
    false,
    rp.settings
    || '{"required_branches": ["vector"], "optional_branches": [],
         "relevance_mix": {"fusion": 1.0, "phrase": 0.0, "exact_terms": 0.0}}'::jsonb
    || pg_catalog.jsonb_build_object(
        'candidates', COALESCE(rp.settings -> 'candidates', '{}'::jsonb) || '{"fulltext": 0, "exact": 0}'::jsonb
    ),
    'Evaluation branch row: default v' || rp.version
    || ' with the full-text and exact branches off and no lexical signals in relevance; vector branch required.'
FROM dm_private.ranking_profiles AS rp
WHERE rp.is_default;
