-- Every function in dm and dm_private follows the conventions of
-- DEVELOPERS.md: a COMMENT (served as API documentation), a pinned
-- search_path (so no caller can shadow a name), and SECURITY DEFINER only
-- with search_path '' and a non-superuser owner. Read from the catalogs, so
-- functions added by later files are checked too.
BEGIN;
SELECT plan(16);

-- Roles that may own functions: the owner owns everything; the searcher
-- owns only candidate-generation SECURITY DEFINER functions, the embedder
-- only the embedding worker's SECURITY DEFINER functions (0015).
CREATE TEMPORARY VIEW function_owners (role_name) AS
VALUES ('densemem_owner'), ('densemem_searcher'), ('densemem_embedder');

CREATE TEMPORARY VIEW dm_functions AS
SELECT p.oid AS function_oid, p.oid::regprocedure::text COLLATE "default" AS function_name,
       p.prokind, p.prosecdef, p.proconfig, p.proowner,
       pg_catalog.obj_description(p.oid, 'pg_proc') AS function_comment
FROM pg_catalog.pg_proc AS p
JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
WHERE n.nspname IN ('dm', 'dm_private')
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend AS d
                  WHERE d.classid = 'pg_catalog.pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e');

CREATE TEMPORARY VIEW uncommented_functions AS
SELECT function_name FROM dm_functions WHERE COALESCE(pg_catalog.btrim(function_comment), '') = '';

-- The one named exception to the pinned search_path: an SQL function the
-- planner must inline into its caller's statement, which PostgreSQL does only
-- for a function without SET clauses (session 13: recall_rank's scoring rows,
-- written once and read by two statements). It must stay a SECURITY INVOKER
-- SQL function with no SET clause at all, every name schema-qualified (its
-- only caller, recall_rank, runs with search_path '' and the recall tests run
-- it there), executable by no role that serves requests (checked below).
CREATE TEMPORARY VIEW inlined_sql_functions (function_name) AS
VALUES ('dm_private.recall_rank_scores(uuid,dm_private.recall_fused[],double precision,double precision,'
        'text[],timestamp with time zone,jsonb,double precision,double precision,double precision,double precision,'
        'double precision,text[],tsquery,double precision,double precision,double precision,double precision,'
        'double precision,double precision,double precision,boolean,jsonb,double precision,double precision,'
        'double precision,double precision,double precision,double precision,double precision,double precision)');

-- Aggregates cannot carry SET clauses; functions and procedures must.
CREATE TEMPORARY VIEW functions_without_search_path AS
SELECT function_name FROM dm_functions
WHERE prokind IN ('f', 'p')
  AND function_name NOT IN (SELECT i.function_name FROM inlined_sql_functions AS i)
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.unnest(proconfig) AS s (setting) WHERE s.setting LIKE 'search\_path=%');

CREATE TEMPORARY VIEW functions_with_nonempty_search_path AS
SELECT function_name FROM dm_functions
WHERE prokind IN ('f', 'p')
  AND function_name NOT IN (SELECT i.function_name FROM inlined_sql_functions AS i)
  AND NOT ('search_path=""' = ANY (COALESCE(proconfig, '{}')));

CREATE TEMPORARY VIEW unsafe_definers AS
SELECT f.function_name FROM dm_functions AS f
JOIN pg_catalog.pg_roles AS r ON r.oid = f.proowner
WHERE f.prosecdef AND (NOT ('search_path=""' = ANY (COALESCE(f.proconfig, '{}'))) OR r.rolsuper);

CREATE TEMPORARY VIEW unexpected_function_owners AS
SELECT f.function_name, r.rolname::text COLLATE "default" AS owner_name FROM dm_functions AS f
JOIN pg_catalog.pg_roles AS r ON r.oid = f.proowner
WHERE r.rolname::text NOT IN (SELECT role_name FROM function_owners);

CREATE TEMPORARY VIEW searcher_invokers AS
SELECT f.function_name FROM dm_functions AS f
WHERE f.proowner IN (SELECT oid FROM pg_catalog.pg_roles WHERE rolname IN ('densemem_searcher', 'densemem_embedder'))
  AND NOT f.prosecdef;

SELECT cmp_ok((SELECT count(*) FROM dm_functions)::integer, '>=', 10,
              'the catalog query sees the Dense-Mem functions (guards against a vacuous pass)');
SELECT is_empty('SELECT * FROM uncommented_functions', 'every dm and dm_private function has a COMMENT');
SELECT is_empty('SELECT * FROM functions_without_search_path',
                'every dm and dm_private function sets search_path');
SELECT is_empty('SELECT * FROM functions_with_nonempty_search_path',
                $$every dm and dm_private function sets search_path = '' (DEVELOPERS.md)$$);
SELECT results_eq(
    $$SELECT i.function_name, p.prosecdef, l.lanname::text COLLATE "default", p.proconfig IS NULL, p.proretset
      FROM inlined_sql_functions AS i
      LEFT JOIN pg_catalog.pg_proc AS p ON p.oid = i.function_name::regprocedure
      LEFT JOIN pg_catalog.pg_language AS l ON l.oid = p.prolang$$,
    $$SELECT i.function_name, false, 'sql', true, true FROM inlined_sql_functions AS i$$,
    'the inlined exception is a SECURITY INVOKER SQL set function with no SET clause');
SELECT is_empty(
    $$SELECT i.function_name, r.role_name FROM inlined_sql_functions AS i
      CROSS JOIN (VALUES ('public'), ('densemem_app'), ('densemem_analyst'), ('densemem_operator')) AS r (role_name)
      WHERE pg_catalog.has_function_privilege(r.role_name, i.function_name, 'EXECUTE')$$,
    'no role that serves requests may execute the inlined exception');
SELECT is_empty('SELECT * FROM unsafe_definers',
                $$every SECURITY DEFINER function has search_path '' and a non-superuser owner$$);
SELECT is_empty('SELECT * FROM unexpected_function_owners',
                'functions are owned by densemem_owner (or densemem_searcher / densemem_embedder)');
SELECT is_empty('SELECT * FROM searcher_invokers',
                'densemem_searcher and densemem_embedder own only SECURITY DEFINER functions');

-- The checks catch offenders (each probe looks only at its own objects).
CREATE FUNCTION dm_private.zz_pgtap_bare() RETURNS integer LANGUAGE sql AS 'SELECT 1';
SELECT results_eq('SELECT * FROM uncommented_functions WHERE function_name LIKE ''%zz\_pgtap%''',
                  $$VALUES ('dm_private.zz_pgtap_bare()')$$,
                  'the comment check catches a function without a COMMENT');
SELECT results_eq('SELECT * FROM functions_without_search_path WHERE function_name LIKE ''%zz\_pgtap%''',
                  $$VALUES ('dm_private.zz_pgtap_bare()')$$,
                  'the search_path check catches a function without SET search_path');
SELECT results_eq('SELECT * FROM unexpected_function_owners WHERE function_name LIKE ''%zz\_pgtap%''',
                  $$VALUES ('dm_private.zz_pgtap_bare()', CURRENT_USER::text COLLATE "default")$$,
                  'the owner check catches a function owned by another role');
DROP FUNCTION dm_private.zz_pgtap_bare();

CREATE FUNCTION dm_private.zz_pgtap_definer() RETURNS integer LANGUAGE sql SECURITY DEFINER
SET search_path = 'public' AS 'SELECT 1';
COMMENT ON FUNCTION dm_private.zz_pgtap_definer() IS 'probe';
SELECT results_eq('SELECT * FROM unsafe_definers WHERE function_name LIKE ''%zz\_pgtap%''',
                  $$VALUES ('dm_private.zz_pgtap_definer()')$$,
                  $$the definer check catches a search_path other than ''$$);
SELECT results_eq('SELECT * FROM functions_with_nonempty_search_path WHERE function_name LIKE ''%zz\_pgtap%''',
                  $$VALUES ('dm_private.zz_pgtap_definer()')$$,
                  $$the search_path check catches a search_path other than ''$$);
ALTER FUNCTION dm_private.zz_pgtap_definer() SET search_path = '';
SELECT results_eq('SELECT * FROM unsafe_definers WHERE function_name LIKE ''%zz\_pgtap%''',
                  $$VALUES ('dm_private.zz_pgtap_definer()')$$,
                  'the definer check catches a superuser-owned definer function');
ALTER FUNCTION dm_private.zz_pgtap_definer() SECURITY INVOKER;
ALTER FUNCTION dm_private.zz_pgtap_definer() OWNER TO densemem_searcher;
SELECT results_eq('SELECT * FROM searcher_invokers WHERE function_name LIKE ''%zz\_pgtap%''',
                  $$VALUES ('dm_private.zz_pgtap_definer()')$$,
                  'the searcher check catches an invoker function owned by the searcher');

SELECT * FROM finish();
ROLLBACK;
