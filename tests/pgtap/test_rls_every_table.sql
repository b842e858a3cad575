-- Row-level security on every table, read from the catalogs so that tables
-- added by later migrations are checked without anyone listing them here.
--
-- Each check is a query that lists offenders and must return nothing; a
-- probe table created inside this (rolled back) transaction then shows that
-- the same query does catch an offender.
BEGIN;
SELECT plan(12);

-- Tables of the three Dense-Mem schemas (partitions included).
CREATE TEMPORARY VIEW dm_tables AS
SELECT c.oid AS table_oid, n.nspname AS schema_name, c.relname AS table_name,
       pg_catalog.format('%I.%I', n.nspname, c.relname) COLLATE "default" AS qualified_name,
       c.relrowsecurity, c.relforcerowsecurity,
       EXISTS (SELECT 1 FROM pg_catalog.pg_attribute AS a
               WHERE a.attrelid = c.oid AND a.attname = 'team_id' AND NOT a.attisdropped) AS has_team_id
FROM pg_catalog.pg_class AS c
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
WHERE n.nspname IN ('dm', 'dm_private', 'dm_migrations') AND c.relkind IN ('r', 'p');

CREATE TEMPORARY VIEW rls_offenders AS
SELECT qualified_name FROM dm_tables WHERE NOT (relrowsecurity AND relforcerowsecurity);

-- Team tables the service cannot reach: a team table needs a policy for densemem_app.
-- Partitions are reached only through their parent (its policies apply) and
-- have no policy of their own on purpose (test_document_embeddings_partitions.sql).
CREATE TEMPORARY VIEW team_tables_without_app_policy AS
SELECT t.qualified_name FROM dm_tables AS t
WHERE t.has_team_id
  AND NOT (SELECT c.relispartition FROM pg_catalog.pg_class AS c WHERE c.oid = t.table_oid)
  AND NOT EXISTS (
      SELECT 1 FROM pg_catalog.pg_policy AS p
      WHERE p.polrelid = t.table_oid
        AND (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = 'densemem_app') = ANY (p.polroles));

-- Policies on team tables whose row filter does not come from the
-- authenticated team setting. The documented exceptions:
--   api_keys / profiles: authentication runs before any team is set; the
--     owner's security-definer dm.authenticate_api_key looks the key up by
--     (team_id, api_key_id) parsed from the key itself.
--   team_role_grants: the analyst policy of every other table reads it, so
--     its own policies are keyed on session_user (a login role sees its
--     grants; the searcher's candidate functions check them, 0020).
--   search_documents / document_embeddings: the embedding worker is
--     cross-team infrastructure (0015); its security-definer functions, owned
--     by densemem_embedder, claim and embed pending documents of every team.
--     A policy naming that role on these two tables was chosen over
--     BYPASSRLS, which would cover every table the role is ever granted.
CREATE TEMPORARY VIEW policy_exceptions (table_name, policy_name) AS
VALUES
    ('api_keys', 'the owner looks up keys to authenticate them'),
    ('profiles', 'the owner reads profiles to authenticate keys'),
    ('team_role_grants', 'a login role sees the grants that name it'),
    ('team_role_grants', 'the searcher sees the grants that name the login role'),
    -- (PostgreSQL truncates names to 63 bytes: this is the stored policy name.)
    ('search_documents', 'the embedding worker reads and updates search documents of ever'),
    ('document_embeddings', 'the embedding worker writes vectors of every team');

CREATE TEMPORARY VIEW unscoped_team_policies AS
SELECT t.qualified_name, p.policyname::text COLLATE "default" AS policyname
FROM dm_tables AS t
JOIN pg_catalog.pg_policies AS p ON p.schemaname = t.schema_name AND p.tablename = t.table_name
WHERE t.has_team_id
  AND (t.schema_name <> 'dm_private'
       OR (t.table_name, p.policyname) NOT IN (SELECT table_name, policy_name FROM policy_exceptions))
  AND NOT (
      p.qual ~ '(densemem\.team_id|authenticated_team_id)'
      AND (p.cmd IN ('SELECT', 'DELETE')
           OR COALESCE(p.with_check, p.qual) ~ '(densemem\.team_id|authenticated_team_id)'));

-- A policy TO PUBLIC would apply to every role in the cluster.
CREATE TEMPORARY VIEW public_policies AS
SELECT t.qualified_name, p.polname::text COLLATE "default" AS polname
FROM dm_tables AS t
JOIN pg_catalog.pg_policy AS p ON p.polrelid = t.table_oid
WHERE 0::oid = ANY (p.polroles);

SELECT cmp_ok((SELECT count(*) FROM dm_tables WHERE schema_name = 'dm_private')::integer, '>=', 20,
              'the catalog query sees the dm_private tables (guards against a vacuous pass)');
SELECT cmp_ok((SELECT count(*) FROM dm_tables WHERE schema_name = 'dm_migrations')::integer, '>=', 2,
              'the catalog query sees the migration ledger');
SELECT is_empty('SELECT * FROM rls_offenders',
                'every table in dm, dm_private and dm_migrations has row-level security enabled and forced');
SELECT is_empty('SELECT * FROM team_tables_without_app_policy',
                'every table with a team_id has a policy for densemem_app');
SELECT is_empty('SELECT * FROM unscoped_team_policies',
                'every policy on a team table filters by the authenticated team, except the documented ones');
SELECT is_empty('SELECT * FROM public_policies', 'no policy applies TO PUBLIC');
SELECT set_eq(
    $$SELECT e.table_name, e.policy_name FROM policy_exceptions AS e
      JOIN pg_catalog.pg_policies AS p
        ON p.schemaname = 'dm_private' AND p.tablename = e.table_name AND p.policyname = e.policy_name$$,
    'SELECT table_name, policy_name FROM policy_exceptions',
    'every documented policy exception still exists (no stale exceptions)');

-- The checks catch offenders: a probe table with a team_id, RLS off, and a
-- policy that ignores the team. (Each probe looks only at the probe's rows,
-- so that a real offender above fails once, not twice.)
CREATE TABLE dm_private.zz_pgtap_probe (team_id uuid NOT NULL, CONSTRAINT zz_pgtap_probe_pkey PRIMARY KEY (team_id));
SELECT results_eq('SELECT * FROM rls_offenders WHERE qualified_name LIKE ''%zz\_pgtap%''',
                  $$VALUES ('dm_private.zz_pgtap_probe')$$,
                  'the RLS check catches a table without row-level security');
SELECT results_eq('SELECT * FROM team_tables_without_app_policy WHERE qualified_name LIKE ''%zz\_pgtap%''',
                  $$VALUES ('dm_private.zz_pgtap_probe')$$,
                  'the policy check catches a team table without a service policy');
ALTER TABLE dm_private.zz_pgtap_probe ENABLE ROW LEVEL SECURITY;
SELECT results_eq('SELECT * FROM rls_offenders WHERE qualified_name LIKE ''%zz\_pgtap%''',
                  $$VALUES ('dm_private.zz_pgtap_probe')$$,
                  'the RLS check catches a table with RLS enabled but not forced');
CREATE POLICY "probe sees everything" ON dm_private.zz_pgtap_probe FOR ALL TO densemem_app USING (true);
SELECT results_eq('SELECT qualified_name, policyname FROM unscoped_team_policies WHERE qualified_name LIKE ''%zz\_pgtap%''',
                  $$VALUES ('dm_private.zz_pgtap_probe', 'probe sees everything')$$,
                  'the policy check catches a team table policy that ignores the team');
CREATE POLICY "probe for everyone" ON dm_private.zz_pgtap_probe FOR SELECT TO PUBLIC
USING (team_id = dm_private.authenticated_team_id());
SELECT results_eq('SELECT qualified_name, polname FROM public_policies WHERE qualified_name LIKE ''%zz\_pgtap%''',
                  $$VALUES ('dm_private.zz_pgtap_probe', 'probe for everyone')$$,
                  'the PUBLIC policy check catches a policy TO PUBLIC');

SELECT * FROM finish();
ROLLBACK;
