-- The Dense-Mem roles and exactly the grants intended for them.
--
-- The intended state is written once below (roles, memberships, schema
-- grants, the table grant matrix, column grants) and compared both ways with
-- the catalogs. A table added by a later migration fails here until its
-- grants are added to the matrix: that is the point, every grant is a
-- decision someone wrote down.
BEGIN;
SELECT plan(20);

-- ---------------------------------------------------------------- roles

-- (role, can log in, bypasses RLS). No Dense-Mem role is a superuser or may
-- create roles or databases. Only the searcher bypasses RLS: it owns the
-- candidate-generation definer functions, which carry an explicit team
-- predicate checked against the authenticated setting (DEVELOPERS.md).
CREATE TEMPORARY VIEW intended_roles (role_name, can_login, bypass_rls) AS
VALUES
    ('densemem_owner', false, false),
    ('densemem_app', false, false),
    ('densemem_analyst', false, false),
    ('densemem_operator', false, false),
    ('densemem_searcher', false, true),
    -- 0015: what an embedding-worker login is granted (EXECUTE on the worker
    -- functions only), and the owner of those security-definer functions,
    -- which reaches every team's documents through its own named policies.
    ('densemem_worker', false, false),
    ('densemem_embedder', false, false);

-- (member, granted role): who inherits whose privileges among Dense-Mem roles.
-- The owner is a member of the searcher and the embedder so that it can
-- create functions they own (CREATE OR REPLACE ... then ALTER ... OWNER).
CREATE TEMPORARY VIEW intended_memberships (member_name, role_name) AS
VALUES
    ('densemem_owner', 'densemem_searcher'),
    ('densemem_owner', 'densemem_embedder');

-- Login roles are deployment, not schema: docker/bootstrap_service_role.py
-- creates one (densemem_service) that may only SET ROLE to the roles above,
-- and tests create their own. They are left out here; a project role that
-- gained LOGIN shows up as missing.
CREATE TEMPORARY VIEW actual_roles AS
SELECT r.rolname::text COLLATE "default" AS role_name, r.rolcanlogin AS can_login, r.rolbypassrls AS bypass_rls
FROM pg_catalog.pg_roles AS r
WHERE r.rolname LIKE 'densemem\_%' AND NOT r.rolcanlogin;

-- Memberships of any Dense-Mem role, in any role (predefined roles such as
-- pg_read_all_data included): none but the intended ones.
CREATE TEMPORARY VIEW actual_memberships AS
SELECT m.rolname::text COLLATE "default" AS member_name, g.rolname::text COLLATE "default" AS role_name
FROM pg_catalog.pg_auth_members AS am
JOIN pg_catalog.pg_roles AS m ON m.oid = am.member
JOIN pg_catalog.pg_roles AS g ON g.oid = am.roleid
WHERE m.rolname LIKE 'densemem\_%' AND NOT m.rolcanlogin;

SELECT set_eq('SELECT * FROM actual_roles', 'SELECT * FROM intended_roles',
              'the Dense-Mem roles exist, NOLOGIN, with the intended BYPASSRLS, and there are no others');
SELECT is_empty(
    $$SELECT rolname FROM pg_catalog.pg_roles
      WHERE rolname LIKE 'densemem\_%'
        AND (rolsuper OR rolcreaterole OR rolcreatedb OR rolreplication OR (rolcanlogin AND rolbypassrls))$$,
    'no Dense-Mem role (login roles included) is a superuser, may create roles or databases, replicate, '
    || 'or log in with BYPASSRLS');
SELECT set_eq('SELECT * FROM actual_memberships', 'SELECT * FROM intended_memberships',
              'Dense-Mem roles are members of exactly the intended roles');

-- ---------------------------------------------------------------- ownership

-- densemem_owner owns every relation and type in dm and dm_private (the
-- ledger in dm_migrations belongs to whoever runs the migrations).
SELECT is_empty(
    $$SELECT n.nspname, c.relname, pg_catalog.pg_get_userbyid(c.relowner)
      FROM pg_catalog.pg_class AS c JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
      WHERE n.nspname IN ('dm', 'dm_private') AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
        AND c.relowner <> 'densemem_owner'::regrole$$,
    'densemem_owner owns every table, view and sequence in dm and dm_private');
SELECT is_empty(
    $$SELECT n.nspname, t.typname, pg_catalog.pg_get_userbyid(t.typowner)
      FROM pg_catalog.pg_type AS t JOIN pg_catalog.pg_namespace AS n ON n.oid = t.typnamespace
      WHERE n.nspname IN ('dm', 'dm_private') AND t.typtype IN ('e', 'c', 'd', 'r')
        AND NOT (t.typtype = 'c' AND EXISTS (
            SELECT 1 FROM pg_catalog.pg_class AS c WHERE c.oid = t.typrelid AND c.relkind <> 'c'))
        AND t.typowner <> 'densemem_owner'::regrole$$,
    'densemem_owner owns every type in dm and dm_private');
SELECT is_empty(
    $$SELECT n.nspname, pg_catalog.pg_get_userbyid(n.nspowner) FROM pg_catalog.pg_namespace AS n
      WHERE n.nspname IN ('dm', 'dm_private') AND n.nspowner <> 'densemem_owner'::regrole$$,
    'densemem_owner owns the dm and dm_private schemas');

-- ---------------------------------------------------------------- schema grants

-- (schema, privileges, grantees): USAGE lets a role name objects in the
-- schema. CREATE only for densemem_searcher on dm_private (0020, 0030):
-- ALTER FUNCTION ... OWNER TO densemem_searcher requires the new owner to hold
-- CREATE on the schema; the searcher is NOLOGIN and only densemem_owner (its
-- member) and superusers can act as it. The ledger schema is granted to no one.
CREATE TEMPORARY VIEW intended_schema_grants_written (schema_name, privileges, grantees) AS
VALUES
    ('dm', 'USAGE', 'densemem_app, densemem_analyst, densemem_operator, densemem_worker'),
    ('dm_private', 'USAGE',
     'densemem_app, densemem_analyst, densemem_operator, densemem_searcher, densemem_worker, densemem_embedder'),
    ('dm_private', 'CREATE', 'densemem_searcher'),
    ('dm_migrations', '', '');

CREATE TEMPORARY VIEW intended_schema_grants AS
SELECT w.schema_name::text COLLATE "default" AS schema_name,
       pg_catalog.btrim(g) COLLATE "default" AS grantee,
       pg_catalog.btrim(p) COLLATE "default" AS privilege
FROM intended_schema_grants_written AS w,
     pg_catalog.regexp_split_to_table(w.grantees, ',') AS g,
     pg_catalog.regexp_split_to_table(w.privileges, ',') AS p
WHERE pg_catalog.btrim(g) <> '' AND pg_catalog.btrim(p) <> '';

CREATE TEMPORARY VIEW actual_schema_grants AS
SELECT n.nspname::text COLLATE "default" AS schema_name,
       CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.pg_get_userbyid(a.grantee)::text END COLLATE "default"
           AS grantee,
       a.privilege_type COLLATE "default" AS privilege
FROM pg_catalog.pg_namespace AS n,
     pg_catalog.aclexplode(COALESCE(n.nspacl, pg_catalog.acldefault('n', n.nspowner))) AS a
WHERE n.nspname IN ('dm', 'dm_private', 'dm_migrations') AND a.grantee <> n.nspowner;

SELECT set_eq('SELECT * FROM actual_schema_grants', 'SELECT * FROM intended_schema_grants',
              'the Dense-Mem schemas carry exactly the intended grants');

-- ---------------------------------------------------------------- table grants

-- The grant matrix: one line per (table, privileges, grantees). A table
-- granted to no one is listed with empty strings, so that every table of
-- dm, dm_private and dm_migrations appears here. The owner's own privileges
-- are implicit and not listed.
--
-- densemem_app (the service) reads and writes under RLS but never deletes
-- history: append-only tables (transitions, verifications, tombstones,
-- feedback) take INSERT without UPDATE; DELETE only on derived rows
-- (vectors, entity names, snapshot counts). Global configuration
-- (embedding contracts, ranking profiles) is read-only to every Dense-Mem role.
-- densemem_analyst / densemem_operator read under RLS, never API key hashes.
-- densemem_searcher reads only what candidate generation needs.
CREATE TEMPORARY VIEW grant_matrix (table_name, privileges, grantees) AS
VALUES
    ('dm_private.teams', 'SELECT', 'densemem_app'),
    ('dm_private.teams', 'SELECT', 'densemem_analyst, densemem_operator'),
    ('dm_private.profiles', 'SELECT', 'densemem_app'),
    -- Keys are read only by dm.authenticate_api_key (a definer function of the owner).
    ('dm_private.api_keys', '', ''),
    ('dm_private.profiles', 'SELECT', 'densemem_analyst, densemem_operator, densemem_searcher'),
    -- The searcher's candidate functions apply dm_private.require_team, which reads it (0010, 0020).
    ('dm_private.team_role_grants', 'SELECT', 'densemem_app, densemem_analyst, densemem_operator, densemem_searcher'),
    ('dm_private.sources', 'SELECT, INSERT, UPDATE', 'densemem_app'),
    ('dm_private.sources', 'SELECT', 'densemem_analyst, densemem_operator'),
    ('dm_private.source_revisions', 'SELECT, INSERT, UPDATE', 'densemem_app'),
    ('dm_private.source_revisions', 'SELECT', 'densemem_analyst, densemem_operator, densemem_searcher'),
    ('dm_private.evidence', 'SELECT, INSERT, UPDATE', 'densemem_app'),
    ('dm_private.evidence', 'SELECT', 'densemem_analyst, densemem_operator, densemem_searcher'),
    ('dm_private.erasure_tombstones', 'SELECT, INSERT', 'densemem_app'),
    ('dm_private.erasure_tombstones', 'SELECT', 'densemem_analyst, densemem_operator'),
    ('dm_private.entities', 'SELECT, INSERT, UPDATE', 'densemem_app'),
    ('dm_private.entities', 'SELECT', 'densemem_analyst, densemem_operator, densemem_searcher'),
    ('dm_private.entity_names', 'SELECT, INSERT, UPDATE, DELETE', 'densemem_app'),
    ('dm_private.entity_names', 'SELECT', 'densemem_analyst, densemem_operator, densemem_searcher'),
    ('dm_private.relationships', 'SELECT, INSERT, UPDATE', 'densemem_app'),
    ('dm_private.relationships', 'SELECT', 'densemem_analyst, densemem_operator, densemem_searcher'),
    ('dm_private.relationship_evidence', 'SELECT, INSERT, UPDATE', 'densemem_app'),
    ('dm_private.relationship_evidence', 'SELECT', 'densemem_analyst, densemem_operator, densemem_searcher'),
    ('dm_private.verification_events', 'SELECT, INSERT', 'densemem_app'),
    ('dm_private.verification_events', 'SELECT', 'densemem_analyst, densemem_operator'),
    ('dm_private.lifecycle_transitions', 'SELECT, INSERT', 'densemem_app'),
    ('dm_private.lifecycle_transitions', 'SELECT', 'densemem_analyst, densemem_operator'),
    ('dm_private.conflicts', 'SELECT, INSERT, UPDATE', 'densemem_app'),
    ('dm_private.conflicts', 'SELECT', 'densemem_analyst, densemem_operator, densemem_searcher'),
    ('dm_private.hypotheses', 'SELECT, INSERT, UPDATE', 'densemem_app'),
    ('dm_private.hypotheses', 'SELECT', 'densemem_analyst, densemem_operator'),
    ('dm_private.embedding_contracts', 'SELECT',
     'densemem_app, densemem_analyst, densemem_operator, densemem_searcher, densemem_embedder'),
    ('dm_private.search_documents', 'SELECT, INSERT, UPDATE', 'densemem_app'),
    ('dm_private.search_documents', 'SELECT', 'densemem_analyst, densemem_operator, densemem_searcher'),
    ('dm_private.document_embeddings', 'SELECT, INSERT, UPDATE, DELETE', 'densemem_app'),
    ('dm_private.document_embeddings', 'SELECT', 'densemem_analyst, densemem_operator, densemem_searcher'),
    -- The embedding worker's functions write the vectors of every team (0015).
    ('dm_private.document_embeddings', 'SELECT, INSERT, UPDATE, DELETE', 'densemem_embedder'),
    ('dm_private.ranking_profiles', 'SELECT', 'densemem_app, densemem_analyst, densemem_operator'),
    ('dm_private.team_ranking_overrides', 'SELECT, INSERT, UPDATE', 'densemem_app'),
    ('dm_private.team_ranking_overrides', 'SELECT', 'densemem_analyst, densemem_operator'),
    ('dm_private.recall_feedback', 'SELECT, INSERT', 'densemem_app'),
    ('dm_private.recall_feedback', 'SELECT', 'densemem_analyst, densemem_operator'),
    ('dm_private.usage_counters', 'SELECT, INSERT, UPDATE', 'densemem_app'),
    ('dm_private.usage_counters', 'SELECT', 'densemem_analyst, densemem_operator'),
    ('dm_private.usage_snapshots', 'SELECT, INSERT, UPDATE', 'densemem_app'),
    -- The searcher reads rerank features too, so a rerank needs no second RLS pass (0020).
    ('dm_private.usage_snapshots', 'SELECT', 'densemem_analyst, densemem_operator, densemem_searcher'),
    ('dm_private.usage_snapshot_counts', 'SELECT, INSERT, UPDATE, DELETE', 'densemem_app'),
    ('dm_private.usage_snapshot_counts', 'SELECT', 'densemem_analyst, densemem_operator, densemem_searcher'),
    ('dm_private.recall_telemetry', 'SELECT, INSERT, UPDATE', 'densemem_app'),
    ('dm_private.recall_telemetry', 'SELECT', 'densemem_analyst, densemem_operator'),
    -- 0010: a team's predicate synonyms are configuration, not history (the
    -- service may change them); the global defaults are read-only.
    ('dm_private.predicate_synonyms', 'SELECT, INSERT, UPDATE, DELETE', 'densemem_app'),
    -- 0012: dm.parse_query's one definer lookup (dm_private.match_query_names,
    -- explicit checked team predicate) reads the team's synonyms as the searcher.
    ('dm_private.predicate_synonyms', 'SELECT', 'densemem_analyst, densemem_operator, densemem_searcher'),
    ('dm_private.predicate_synonym_defaults', 'SELECT',
     'densemem_app, densemem_analyst, densemem_operator, densemem_searcher'),
    -- 0020: global search-index profiles (read-only) and the per-team vector
    -- indexes, written by an administrator.
    ('dm_private.search_index_profiles', 'SELECT',
     'densemem_app, densemem_analyst, densemem_operator, densemem_searcher'),
    -- 0088: the ranking settings resolved per profile, rebuilt by triggers
    -- on the profile tables (read-only like them).
    ('dm_private.recall_settings_resolved', 'SELECT',
     'densemem_app, densemem_analyst, densemem_operator, densemem_searcher'),
    ('dm_private.team_vector_indexes', 'SELECT',
     'densemem_app, densemem_analyst, densemem_operator, densemem_searcher'),
    -- 0031: a team's predicate cardinalities are configuration (the service
    -- may change them); the global defaults are read-only.
    ('dm_private.predicate_cardinalities', 'SELECT, INSERT, UPDATE, DELETE', 'densemem_app'),
    ('dm_private.predicate_cardinalities', 'SELECT', 'densemem_analyst, densemem_operator, densemem_searcher'),
    ('dm_private.predicate_cardinality_defaults', 'SELECT',
     'densemem_app, densemem_analyst, densemem_operator, densemem_searcher'),
    -- 0030: the service rebuilds a team's communities (delete its rows, insert new ones).
    ('dm_private.communities', 'SELECT, INSERT, DELETE', 'densemem_app'),
    ('dm_private.communities', 'SELECT', 'densemem_analyst, densemem_operator'),
    ('dm_private.community_members', 'SELECT, INSERT, DELETE', 'densemem_app'),
    ('dm_private.community_members', 'SELECT', 'densemem_analyst, densemem_operator'),
    ('dm_private.community_relationships', 'SELECT, INSERT, DELETE', 'densemem_app'),
    ('dm_private.community_relationships', 'SELECT', 'densemem_analyst, densemem_operator'),
    ('dm_private.evidence_entity_links', 'SELECT, INSERT, DELETE', 'densemem_app'),
    ('dm_private.evidence_entity_links', 'SELECT', 'densemem_analyst, densemem_operator, densemem_searcher'),
    -- 0073: per-evidence link endpoints, written by the triggers on evidence_entity_links (invoker; UPDATE for the row lock).
    ('dm_private.evidence_link_endpoints', 'SELECT, INSERT, UPDATE', 'densemem_app'),
    ('dm_private.evidence_link_endpoints', 'SELECT', 'densemem_analyst, densemem_operator'),
    -- 0068: the parse's lexicon is written only by its definer triggers (owned by the searcher).
    ('dm_private.parse_lexicon', 'SELECT, INSERT, UPDATE, DELETE', 'densemem_searcher'),
    ('dm_private.parse_lexicon', 'SELECT', 'densemem_app, densemem_analyst, densemem_operator'),
    ('dm_private.team_predicates', 'SELECT, INSERT', 'densemem_app'),
    ('dm_private.team_predicates', 'SELECT', 'densemem_analyst, densemem_operator, densemem_searcher'),
    -- 0070: discovery context marks, added by the write path's triggers (invoker).
    ('dm_private.discovery_context_marks', 'SELECT, INSERT', 'densemem_app'),
    ('dm_private.discovery_context_marks', 'SELECT', 'densemem_analyst, densemem_operator, densemem_searcher'),
    -- 0024: BM25 statistics. The write path appends deltas (statement
    -- triggers, invoker) and compacts its team; the searcher reads them.
    ('dm_private.search_statistics_deltas', 'SELECT, INSERT, DELETE', 'densemem_app'),
    ('dm_private.search_statistics_deltas', 'SELECT', 'densemem_analyst, densemem_operator, densemem_searcher'),
    ('dm_private.search_term_statistics', 'SELECT, INSERT, UPDATE, DELETE', 'densemem_app'),
    ('dm_private.search_term_statistics', 'SELECT', 'densemem_analyst, densemem_operator, densemem_searcher'),
    ('dm_private.search_team_statistics', 'SELECT, INSERT, UPDATE, DELETE', 'densemem_app'),
    ('dm_private.search_team_statistics', 'SELECT', 'densemem_analyst, densemem_operator, densemem_searcher'),
    -- The migration ledger: the migrating role only.
    ('dm_migrations.applied_migrations', '', ''),
    ('dm_migrations.applied_function_files', '', '');

-- Column-level grants, one line per (table, columns, privileges, grantees).
-- 0015: the embedder reads what it embeds and the bookkeeping it checks, and
-- may update only the bookkeeping (never body, versions or the eligibility mirror).
CREATE TEMPORARY VIEW column_grant_matrix (table_name, column_names, privileges, grantees) AS
VALUES
    ('dm_private.search_documents',
     'team_id, document_id, subject_kind, document_version, source_version, body, search_state, '
     || 'embed_attempts, last_error, claimed_until, pending_since',
     'SELECT', 'densemem_embedder'),
    ('dm_private.search_documents',
     'search_state, embed_attempts, last_error, claimed_until, pending_since, updated_at',
     'UPDATE', 'densemem_embedder'),
    -- 0081: the relationship trigger updates an eligible relationship's links
    -- in place (one endpoint recount); only the columns copied from the
    -- relationship, never the key, so no link moves to another team.
    ('dm_private.evidence_entity_links',
     'subject_entity_id, object_entity_id, owner_profile_id, known_to',
     'UPDATE', 'densemem_app');

CREATE TEMPORARY VIEW dm_relations AS
SELECT c.oid AS table_oid, c.relowner, c.relacl,
       pg_catalog.format('%I.%I', n.nspname, c.relname) COLLATE "default" AS table_name
FROM pg_catalog.pg_class AS c
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
WHERE n.nspname IN ('dm', 'dm_private', 'dm_migrations') AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
  -- partitions carry no grant at all (test_document_embeddings_partitions.sql)
  AND NOT c.relispartition;

CREATE TEMPORARY VIEW intended_table_grants AS
SELECT m.table_name COLLATE "default" AS table_name,
       pg_catalog.btrim(g) COLLATE "default" AS grantee,
       pg_catalog.btrim(p) COLLATE "default" AS privilege
FROM grant_matrix AS m,
     pg_catalog.regexp_split_to_table(m.grantees, ',') AS g,
     pg_catalog.regexp_split_to_table(m.privileges, ',') AS p
WHERE pg_catalog.btrim(g) <> '' AND pg_catalog.btrim(p) <> '';

CREATE TEMPORARY VIEW actual_table_grants AS
SELECT r.table_name,
       CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.pg_get_userbyid(a.grantee)::text END COLLATE "default"
           AS grantee,
       a.privilege_type COLLATE "default" AS privilege
FROM dm_relations AS r,
     pg_catalog.aclexplode(COALESCE(r.relacl, pg_catalog.acldefault('r', r.relowner))) AS a
WHERE a.grantee <> r.relowner;

CREATE TEMPORARY VIEW intended_column_grants AS
SELECT m.table_name COLLATE "default" AS table_name,
       pg_catalog.btrim(c) COLLATE "default" AS column_name,
       pg_catalog.btrim(g) COLLATE "default" AS grantee,
       pg_catalog.btrim(p) COLLATE "default" AS privilege
FROM column_grant_matrix AS m,
     pg_catalog.regexp_split_to_table(m.column_names, ',') AS c,
     pg_catalog.regexp_split_to_table(m.grantees, ',') AS g,
     pg_catalog.regexp_split_to_table(m.privileges, ',') AS p;

CREATE TEMPORARY VIEW actual_column_grants AS
SELECT r.table_name,
       att.attname::text COLLATE "default" AS column_name,
       CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.pg_get_userbyid(a.grantee)::text END COLLATE "default"
           AS grantee,
       a.privilege_type COLLATE "default" AS privilege
FROM dm_relations AS r
JOIN pg_catalog.pg_attribute AS att ON att.attrelid = r.table_oid AND att.attacl IS NOT NULL
CROSS JOIN LATERAL pg_catalog.aclexplode(att.attacl) AS a
WHERE a.grantee <> r.relowner;

SELECT cmp_ok((SELECT count(*) FROM dm_relations)::integer, '>=', 28,
              'the catalog query sees the Dense-Mem tables (guards against a vacuous pass)');
SELECT is_empty(
    $$SELECT table_name FROM dm_relations EXCEPT SELECT table_name FROM grant_matrix$$,
    'every table in dm, dm_private and dm_migrations is in the grant matrix (add new tables to it)');
SELECT is_empty(
    $$SELECT table_name FROM grant_matrix EXCEPT SELECT table_name FROM dm_relations$$,
    'every table in the grant matrix exists (no stale lines)');
SELECT is_empty(
    $$SELECT * FROM actual_table_grants EXCEPT SELECT * FROM intended_table_grants$$,
    'no table privilege is granted beyond the matrix');
SELECT is_empty(
    $$SELECT * FROM intended_table_grants EXCEPT SELECT * FROM actual_table_grants$$,
    'every table privilege in the matrix is granted');
SELECT is_empty(
    $$SELECT * FROM actual_column_grants EXCEPT SELECT * FROM intended_column_grants$$,
    'no column privilege is granted beyond the column matrix');
SELECT is_empty(
    $$SELECT * FROM intended_column_grants EXCEPT SELECT * FROM actual_column_grants$$,
    'every column privilege in the column matrix is granted');

-- The comparison catches a difference in either direction. (Each probe looks
-- only at the probe's rows, so that a real difference above fails once.)
GRANT DELETE ON dm_private.evidence TO densemem_analyst;
REVOKE SELECT ON dm_private.teams FROM densemem_operator;
GRANT SELECT (team_id) ON dm_private.api_keys TO densemem_searcher;
SELECT results_eq(
    $$SELECT * FROM (SELECT * FROM actual_table_grants EXCEPT SELECT * FROM intended_table_grants) AS d
      WHERE d.table_name = 'dm_private.evidence' AND d.grantee = 'densemem_analyst'$$,
    $$VALUES ('dm_private.evidence', 'densemem_analyst', 'DELETE')$$,
    'the matrix check catches an extra grant');
SELECT results_eq(
    $$SELECT * FROM (SELECT * FROM intended_table_grants EXCEPT SELECT * FROM actual_table_grants) AS d
      WHERE d.table_name = 'dm_private.teams' AND d.grantee = 'densemem_operator'$$,
    $$VALUES ('dm_private.teams', 'densemem_operator', 'SELECT')$$,
    'the matrix check catches a missing grant');
SELECT results_eq(
    $$SELECT * FROM (SELECT * FROM actual_column_grants EXCEPT SELECT * FROM intended_column_grants) AS d
      WHERE d.table_name = 'dm_private.api_keys' AND d.grantee = 'densemem_searcher'$$,
    $$VALUES ('dm_private.api_keys', 'team_id', 'densemem_searcher', 'SELECT')$$,
    'the column check catches an extra column grant');
CREATE ROLE densemem_zz_pgtap NOLOGIN;
SELECT results_eq(
    $$SELECT * FROM (SELECT * FROM actual_roles EXCEPT SELECT * FROM intended_roles) AS d
      WHERE d.role_name LIKE '%zz\_pgtap%'$$,
    $$VALUES ('densemem_zz_pgtap', false, false)$$,
    'the role check catches an unlisted Dense-Mem role');
ALTER ROLE densemem_analyst LOGIN;
SELECT results_eq(
    $$SELECT * FROM (SELECT * FROM intended_roles EXCEPT SELECT * FROM actual_roles) AS d
      WHERE d.role_name = 'densemem_analyst'$$,
    $$VALUES ('densemem_analyst', false, false)$$,
    'the role check catches a project role that can log in');
CREATE TABLE dm_private.zz_pgtap_probe (team_id uuid NOT NULL);
SELECT results_eq(
    $$SELECT * FROM (SELECT table_name FROM dm_relations EXCEPT SELECT table_name FROM grant_matrix) AS d
      WHERE d.table_name LIKE '%zz\_pgtap%'$$,
    $$VALUES ('dm_private.zz_pgtap_probe')$$,
    'a new table fails until it is added to the matrix');

SELECT * FROM finish();
ROLLBACK;
