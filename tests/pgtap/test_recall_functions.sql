BEGIN;
SELECT plan(22);

-- the public functions and their grants
SELECT has_function('dm', 'recall_memory', ARRAY['text', 'uuid', 'vector', 'jsonb'], 'dm.recall_memory exists');
SELECT has_function('dm', 'explain_recall', ARRAY['text', 'uuid', 'vector', 'jsonb'], 'dm.explain_recall exists');
SELECT ok(has_function_privilege('densemem_app', 'dm.recall_memory(text, uuid, public.vector, jsonb)', 'EXECUTE'),
          'the service may recall');
SELECT ok(has_function_privilege('densemem_analyst', 'dm.recall_memory(text, uuid, public.vector, jsonb)', 'EXECUTE'),
          'analysts may recall');
SELECT ok(NOT has_function_privilege('densemem_app', 'dm.explain_recall(text, uuid, public.vector, jsonb)', 'EXECUTE'),
          'the service may not explain');
SELECT ok(NOT has_function_privilege('densemem_analyst', 'dm.explain_recall(text, uuid, public.vector, jsonb)', 'EXECUTE'),
          'analysts may not explain');
SELECT ok(has_function_privilege('densemem_operator', 'dm.explain_recall(text, uuid, public.vector, jsonb)', 'EXECUTE'),
          'operators may explain');
SELECT ok(NOT has_function_privilege('public', 'dm.recall_memory(text, uuid, public.vector, jsonb)', 'EXECUTE'),
          'PUBLIC may not recall');

-- every recall function: empty search_path, a comment; definers belong to the searcher (or the owner for telemetry)
SELECT is(
    (SELECT count(*)::integer FROM pg_catalog.pg_proc AS p JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
     WHERE n.nspname IN ('dm', 'dm_private') AND (p.proname LIKE 'recall%' OR p.proname = 'write_recall_telemetry'
                                                  OR p.proname = 'explain_recall')
       AND NOT ('search_path=""' = ANY (COALESCE(p.proconfig, '{}')))
       -- the one inlined SQL function (tests/pgtap/test_schema_functions.sql's exception)
       AND p.proname <> 'recall_rank_scores'),
    0, 'every recall function sets search_path to empty, but the inlined scoring rows');
SELECT is(
    (SELECT count(*)::integer FROM pg_catalog.pg_proc AS p JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
     WHERE n.nspname IN ('dm', 'dm_private') AND p.proname LIKE 'recall%'
       AND pg_catalog.obj_description(p.oid, 'pg_proc') IS NULL),
    0, 'every recall function has a comment');
SELECT is(
    (SELECT pg_catalog.array_agg(p.proname::text ORDER BY p.proname)
     FROM pg_catalog.pg_proc AS p JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
     WHERE n.nspname = 'dm_private' AND p.prosecdef AND p.proname LIKE 'recall%'
       AND pg_catalog.pg_get_userbyid(p.proowner) = 'densemem_searcher'),
    ARRAY['recall_eligible_documents', 'recall_exact_candidates', 'recall_fulltext_candidates', 'recall_pool_vectors',
          'recall_rank', 'recall_similarity_matrix', 'recall_vector_access_path', 'recall_vector_hits'],
    'candidate generation runs as the searcher, and only candidate generation');
SELECT ok(
    (SELECT NOT p.prosecdef FROM pg_catalog.pg_proc AS p WHERE p.oid = 'dm_private.recall_hydrate(uuid, uuid[], jsonb)'::regprocedure),
    'hydration runs as the caller, under row-level security');
SELECT ok(
    (SELECT 'hnsw.iterative_scan=relaxed_order' = ANY (p.proconfig) FROM pg_catalog.pg_proc AS p
     WHERE p.oid = 'dm_private.recall_vector_hits(uuid, public.vector, jsonb, jsonb, text)'::regprocedure),
    'planner settings are attached to the vector function, not SET LOCAL');

-- the ranking profile and the search-index profile
SELECT is((SELECT version FROM dm_private.ranking_profiles WHERE is_default), 9, 'default ranking profile is v9');
SELECT is((SELECT settings #>> '{fusion,method}' FROM dm_private.ranking_profiles WHERE is_default), 'rrf',
          'the default profile fuses by RRF');
SELECT is((SELECT count(*)::integer FROM dm_private.search_index_profiles WHERE is_active), 1,
          'one active search-index profile');

-- fusion is a pure function a DBA can call on hand-made hits
SELECT is(
    (SELECT pg_catalog.array_agg(f.evidence_id ORDER BY f.fusion_rank)
     FROM dm_private.recall_fuse(ARRAY[
         ROW('fulltext', '00000000-0000-0000-0000-0000000000d1', '00000000-0000-0000-0000-0000000000e1', 1, 0.5, NULL),
         ROW('fulltext', '00000000-0000-0000-0000-0000000000d2', '00000000-0000-0000-0000-0000000000e2', 2, 0.4, NULL),
         ROW('vector', '00000000-0000-0000-0000-0000000000d2', '00000000-0000-0000-0000-0000000000e2', 1, 0.1, NULL),
         ROW('vector', '00000000-0000-0000-0000-0000000000d2', '00000000-0000-0000-0000-0000000000e2', 3, 0.3, NULL)
     ]::dm_private.recall_branch_hit [], '{"fusion": {"method": "rrf", "rrf_k": 60}}') AS f),
    ARRAY['00000000-0000-0000-0000-0000000000e2', '00000000-0000-0000-0000-0000000000e1']::uuid [],
    'RRF puts the evidence both branches found first; a repeated hit counts once');
SELECT is(
    (SELECT pg_catalog.array_agg(f.evidence_id ORDER BY f.fusion_rank)
     FROM dm_private.recall_fuse(ARRAY[
         ROW('fulltext', '00000000-0000-0000-0000-0000000000d1', '00000000-0000-0000-0000-0000000000e1', 1, 0.5, NULL),
         ROW('vector', '00000000-0000-0000-0000-0000000000d2', '00000000-0000-0000-0000-0000000000e2', 1, 0.1, NULL),
         ROW('vector', '00000000-0000-0000-0000-0000000000d1', '00000000-0000-0000-0000-0000000000e1', 2, 0.2, NULL)
     ]::dm_private.recall_branch_hit [],
     '{"fusion": {"method": "priority", "branch_priority": ["vector", "fulltext"]}}') AS f),
    ARRAY['00000000-0000-0000-0000-0000000000e2', '00000000-0000-0000-0000-0000000000e1']::uuid [],
    'branch priority orders by the first branch, then by its rank');
SELECT is(
    (SELECT pg_catalog.array_agg(f.relevance ORDER BY f.fusion_rank)
     FROM dm_private.recall_fuse(ARRAY[
         ROW('fulltext', '00000000-0000-0000-0000-0000000000d1', '00000000-0000-0000-0000-0000000000e1', 1, 0.5, NULL),
         ROW('exact', '00000000-0000-0000-0000-0000000000d2', '00000000-0000-0000-0000-0000000000e2', 1, 1.0, NULL),
         ROW('vector', '00000000-0000-0000-0000-0000000000d2', '00000000-0000-0000-0000-0000000000e2', 2, 0.2, NULL),
         ROW('vector', '00000000-0000-0000-0000-0000000000d3', '00000000-0000-0000-0000-0000000000e3', 1, 0.1, NULL)
     ]::dm_private.recall_branch_hit [],
     '{"fusion": {"method": "rrf", "rrf_k": 1, "branch_weights": {"exact": 2.0}}}') AS f),
    -- e2: 2/(1+1) + 1/(1+2) = 1.333; e1 and e3: 1/(1+1) = 0.5 (tie, by evidence_id)
    ARRAY[1.0, 0.0, 0.0]::double precision [],
    'RRF adds each branch''s weighted term; relevance is min-max over the kept candidates');
SELECT throws_ok(
    $$SELECT * FROM dm_private.recall_fuse(ARRAY[
          ROW('keyword', '00000000-0000-0000-0000-0000000000d1', '00000000-0000-0000-0000-0000000000e1', 1, 0.5, NULL)
      ]::dm_private.recall_branch_hit [], '{}')$$,
    '22023', NULL, 'a hit of a branch fusion does not know is refused');

-- the budget keeps order and skips what does not fit
SELECT is(
    dm_private.recall_budget(
        ARRAY['00000000-0000-0000-0000-000000000001', '00000000-0000-0000-0000-000000000002',
              '00000000-0000-0000-0000-000000000003']::uuid [], ARRAY[60, 80, 30], 3, 100),
    ARRAY['00000000-0000-0000-0000-000000000001', '00000000-0000-0000-0000-000000000003']::uuid [],
    'the byte budget skips a context that does not fit and keeps the order');

-- without an authenticated team, recall is rejected
SET LOCAL ROLE densemem_app;
SELECT throws_ok($$SELECT dm.recall_memory('anything', '00000000-0000-0000-0000-000000000001')$$, '28000',
                 NULL, 'no authenticated team: rejected');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
