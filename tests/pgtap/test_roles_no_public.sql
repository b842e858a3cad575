-- Nothing in dm, dm_private or dm_migrations is usable by PUBLIC (every
-- role of the cluster). Read from the catalogs, so objects added later are
-- checked too. A NULL ACL means the built-in default, which for functions
-- includes EXECUTE for PUBLIC: acldefault() makes that explicit.
BEGIN;
SELECT plan(16);

CREATE TEMPORARY VIEW public_relation_grants AS
SELECT pg_catalog.format('%I.%I', n.nspname, c.relname) COLLATE "default" AS object_name,
       a.privilege_type COLLATE "default" AS privilege
FROM pg_catalog.pg_class AS c
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
CROSS JOIN LATERAL pg_catalog.aclexplode(COALESCE(
    c.relacl, pg_catalog.acldefault(CASE WHEN c.relkind = 'S' THEN 's' ELSE 'r' END::"char", c.relowner))) AS a
WHERE n.nspname IN ('dm', 'dm_private', 'dm_migrations') AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
  AND a.grantee = 0
UNION ALL
SELECT pg_catalog.format('%I.%I.%I', n.nspname, c.relname, att.attname) COLLATE "default",
       a.privilege_type COLLATE "default"
FROM pg_catalog.pg_attribute AS att
JOIN pg_catalog.pg_class AS c ON c.oid = att.attrelid
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
CROSS JOIN LATERAL pg_catalog.aclexplode(att.attacl) AS a
WHERE n.nspname IN ('dm', 'dm_private', 'dm_migrations') AND att.attacl IS NOT NULL AND a.grantee = 0;

-- The same question asked the way PostgreSQL answers it for a role that
-- holds nothing but what PUBLIC holds.
CREATE TEMPORARY VIEW public_usable_relations AS
SELECT pg_catalog.format('%I.%I', n.nspname, c.relname) COLLATE "default" AS object_name
FROM pg_catalog.pg_class AS c
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
WHERE n.nspname IN ('dm', 'dm_private', 'dm_migrations')
  AND ((c.relkind IN ('r', 'p', 'v', 'm', 'f')
        AND (pg_catalog.has_table_privilege('public', c.oid,
                 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER, MAINTAIN')
             OR pg_catalog.has_any_column_privilege('public', c.oid, 'SELECT, INSERT, UPDATE, REFERENCES')))
       OR (c.relkind = 'S' AND pg_catalog.has_sequence_privilege('public', c.oid, 'USAGE, SELECT, UPDATE')));

CREATE TEMPORARY VIEW public_function_grants AS
SELECT p.oid::regprocedure::text COLLATE "default" AS function_name
FROM pg_catalog.pg_proc AS p
JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
CROSS JOIN LATERAL pg_catalog.aclexplode(COALESCE(p.proacl, pg_catalog.acldefault('f', p.proowner))) AS a
WHERE n.nspname IN ('dm', 'dm_private', 'dm_migrations') AND a.grantee = 0
UNION
SELECT p.oid::regprocedure::text COLLATE "default"
FROM pg_catalog.pg_proc AS p
JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
WHERE n.nspname IN ('dm', 'dm_private', 'dm_migrations')
  AND pg_catalog.has_function_privilege('public', p.oid, 'EXECUTE');

CREATE TEMPORARY VIEW public_schema_grants AS
SELECT n.nspname::text COLLATE "default" AS schema_name
FROM pg_catalog.pg_namespace AS n
CROSS JOIN LATERAL pg_catalog.aclexplode(COALESCE(n.nspacl, pg_catalog.acldefault('n', n.nspowner))) AS a
WHERE n.nspname IN ('dm', 'dm_private', 'dm_migrations') AND a.grantee = 0
UNION
SELECT n.nspname::text COLLATE "default"
FROM pg_catalog.pg_namespace AS n
WHERE n.nspname IN ('dm', 'dm_private', 'dm_migrations')
  AND pg_catalog.has_schema_privilege('public', n.oid, 'USAGE, CREATE');

SELECT cmp_ok((SELECT count(*) FROM pg_catalog.pg_proc AS p JOIN pg_catalog.pg_namespace AS n
               ON n.oid = p.pronamespace WHERE n.nspname IN ('dm', 'dm_private'))::integer, '>=', 10,
              'the catalog query sees the Dense-Mem functions (guards against a vacuous pass)');
SELECT is_empty('SELECT * FROM public_relation_grants',
                'no table, view, sequence or column in dm, dm_private, dm_migrations is granted to PUBLIC');
SELECT is_empty('SELECT * FROM public_usable_relations',
                'PUBLIC holds no privilege on any table, view or sequence there');
SELECT is_empty('SELECT * FROM public_function_grants',
                'no function in dm, dm_private, dm_migrations is executable by PUBLIC');
SELECT is_empty('SELECT * FROM public_schema_grants', 'PUBLIC may neither use nor create in the Dense-Mem schemas');

-- A role that holds only what PUBLIC holds is refused at the schema.
CREATE ROLE zz_pgtap_nobody NOLOGIN;
SET LOCAL ROLE zz_pgtap_nobody;
SELECT throws_ok('SELECT count(*) FROM dm_private.teams', '42501', NULL,
                 'a role without grants cannot read a Dense-Mem table');
SELECT throws_ok($$SELECT dm.ensure_team('zz pgtap team')$$, '42501', NULL,
                 'a role without grants cannot call a dm function');
SELECT throws_ok('SELECT dm_private.authenticated_team_id()', '42501', NULL,
                 'a role without grants cannot call a dm_private function');
SELECT throws_ok('SELECT count(*) FROM dm_migrations.applied_migrations', '42501', NULL,
                 'a role without grants cannot read the migration ledger');
RESET ROLE;

-- The checks catch offenders (each probe looks only at its own objects, so
-- that a real offender above fails once). A function created by a superuser (not by
-- densemem_owner, whose default privileges revoke EXECUTE from PUBLIC) is
-- executable by PUBLIC unless revoked.
CREATE FUNCTION dm_private.zz_pgtap_probe() RETURNS integer LANGUAGE sql SET search_path = '' AS 'SELECT 1';
SELECT results_eq('SELECT * FROM public_function_grants WHERE function_name LIKE ''%zz\_pgtap%''',
                  $$VALUES ('dm_private.zz_pgtap_probe()')$$,
                  'the check catches a function left executable by PUBLIC');
CREATE FUNCTION dm.zz_pgtap_owned_probe() RETURNS integer LANGUAGE sql SET search_path = '' AS 'SELECT 1';
ALTER FUNCTION dm.zz_pgtap_owned_probe() OWNER TO densemem_owner;
SELECT set_eq('SELECT * FROM public_function_grants WHERE function_name LIKE ''%zz\_pgtap%''',
              $$VALUES ('dm.zz_pgtap_owned_probe()'), ('dm_private.zz_pgtap_probe()')$$,
                  'a function re-owned by densemem_owner keeps its PUBLIC EXECUTE: only REVOKE removes it');
GRANT SELECT ON dm_private.teams TO PUBLIC;
SELECT results_eq($$SELECT * FROM public_relation_grants WHERE object_name LIKE 'dm_private.teams%'$$,
                  $$VALUES ('dm_private.teams', 'SELECT')$$,
                  'the check catches a table granted to PUBLIC');
SELECT results_eq($$SELECT * FROM public_usable_relations WHERE object_name = 'dm_private.teams'$$,
                  $$VALUES ('dm_private.teams')$$,
                  'has_table_privilege sees it too');
REVOKE SELECT ON dm_private.teams FROM PUBLIC;
GRANT UPDATE (name) ON dm_private.teams TO PUBLIC;
SELECT results_eq($$SELECT * FROM public_relation_grants WHERE object_name LIKE 'dm_private.teams%'$$,
                  $$VALUES ('dm_private.teams.name', 'UPDATE')$$,
                  'the check catches a column granted to PUBLIC');
GRANT USAGE ON SCHEMA dm_migrations TO PUBLIC;
SELECT results_eq($$SELECT * FROM public_schema_grants WHERE schema_name = 'dm_migrations'$$,
                  $$VALUES ('dm_migrations')$$,
                  'the check catches a schema usable by PUBLIC');
GRANT USAGE ON ALL SEQUENCES IN SCHEMA dm_private TO PUBLIC;
SELECT ok((SELECT count(*) FROM public_usable_relations WHERE object_name LIKE '%\_seq') > 0,
          'the check catches a sequence usable by PUBLIC');

SELECT * FROM finish();
ROLLBACK;
