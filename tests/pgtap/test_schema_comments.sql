-- COMMENT ON every schema, table and enum type, and every enum value
-- documented in its type's comment as "value: meaning". The comments are the
-- API documentation analysts read in psql (\d+, \dT+); read from the
-- catalogs, so objects added later are checked too. (Function comments are
-- checked in test_schema_functions.sql.)
BEGIN;
SELECT plan(10);

CREATE TEMPORARY VIEW uncommented_schemas AS
SELECT n.nspname::text COLLATE "default" AS schema_name
FROM pg_catalog.pg_namespace AS n
WHERE n.nspname IN ('dm', 'dm_private', 'dm_migrations')
  AND COALESCE(pg_catalog.btrim(pg_catalog.obj_description(n.oid, 'pg_namespace')), '') = '';

CREATE TEMPORARY VIEW uncommented_tables AS
SELECT pg_catalog.format('%I.%I', n.nspname, c.relname) COLLATE "default" AS table_name
FROM pg_catalog.pg_class AS c
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
WHERE n.nspname IN ('dm', 'dm_private', 'dm_migrations') AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
  AND COALESCE(pg_catalog.btrim(pg_catalog.obj_description(c.oid, 'pg_class')), '') = '';

CREATE TEMPORARY VIEW dm_enums AS
SELECT t.oid AS type_oid, pg_catalog.format('%I.%I', n.nspname, t.typname) COLLATE "default" AS type_name,
       pg_catalog.obj_description(t.oid, 'pg_type') AS type_comment
FROM pg_catalog.pg_type AS t
JOIN pg_catalog.pg_namespace AS n ON n.oid = t.typnamespace
WHERE n.nspname IN ('dm', 'dm_private', 'dm_migrations') AND t.typtype = 'e';

CREATE TEMPORARY VIEW uncommented_enums AS
SELECT type_name FROM dm_enums WHERE COALESCE(pg_catalog.btrim(type_comment), '') = '';

-- Each label must open an entry of the comment, "label: meaning", at the
-- start or after "; " (the style of 0002: 'active: ...; disabled: ...');
-- labels sharing one meaning may be grouped as "relevant / irrelevant: ...".
CREATE TEMPORARY VIEW undocumented_enum_values AS
SELECT d.type_name, e.enumlabel::text COLLATE "default" AS enum_value
FROM dm_enums AS d
JOIN pg_catalog.pg_enum AS e ON e.enumtypid = d.type_oid
WHERE COALESCE(d.type_comment, '') !~ (
    '(^|; )([^:;]+ / )?'
    || pg_catalog.regexp_replace(e.enumlabel, '([.^$*+?()\[\]{}|\\-])', '\\\1', 'g')
    || '( / [^:;]+)?:');

SELECT cmp_ok((SELECT count(*) FROM dm_enums)::integer, '>=', 10,
              'the catalog query sees the Dense-Mem enum types (guards against a vacuous pass)');
SELECT is_empty('SELECT * FROM uncommented_schemas', 'dm, dm_private and dm_migrations have a COMMENT');
SELECT is_empty('SELECT * FROM uncommented_tables',
                'every table and view in dm, dm_private and dm_migrations has a COMMENT');
SELECT is_empty('SELECT * FROM uncommented_enums', 'every enum type has a COMMENT');
SELECT is_empty('SELECT * FROM undocumented_enum_values',
                'every enum value is documented in its type''s COMMENT as "value: meaning"');

-- The checks catch offenders (each probe looks only at its own objects).
COMMENT ON SCHEMA dm_migrations IS NULL;
SELECT results_eq($$SELECT * FROM uncommented_schemas WHERE schema_name = 'dm_migrations'$$,
                  $$VALUES ('dm_migrations')$$,
                  'the schema check catches a schema without a COMMENT');
CREATE TABLE dm_private.zz_pgtap_probe (team_id uuid NOT NULL);
SELECT results_eq('SELECT * FROM uncommented_tables WHERE table_name LIKE ''%zz\_pgtap%''',
                  $$VALUES ('dm_private.zz_pgtap_probe')$$,
                  'the table check catches a table without a COMMENT');
CREATE TYPE dm_private.zz_pgtap_kind AS ENUM ('alpha', 'beta');
SELECT results_eq('SELECT * FROM uncommented_enums WHERE type_name LIKE ''%zz\_pgtap%''',
                  $$VALUES ('dm_private.zz_pgtap_kind')$$,
                  'the enum check catches an enum type without a COMMENT');
COMMENT ON TYPE dm_private.zz_pgtap_kind IS 'alpha: the first; the beta value is mentioned but not defined.';
SELECT results_eq('SELECT * FROM undocumented_enum_values WHERE type_name LIKE ''%zz\_pgtap%''',
                  $$VALUES ('dm_private.zz_pgtap_kind', 'beta')$$,
                  'the enum value check catches a value without its "value:" entry');
ALTER TYPE dm_private.memory_type ADD VALUE 'zz_pgtap_procedural';
SELECT results_eq(
    $$SELECT * FROM undocumented_enum_values
      WHERE type_name = 'dm_private.memory_type' AND enum_value LIKE 'zz\_pgtap%'$$,
    $$VALUES ('dm_private.memory_type', 'zz_pgtap_procedural')$$,
    'a value added to an existing enum fails until its comment documents it');

SELECT * FROM finish();
ROLLBACK;
