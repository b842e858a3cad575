-- 0001: roles, schemas and extensions.
--
-- Roles are cluster-wide, so they are created only when missing: several
-- Dense-Mem databases (a test's two builds, say) share one cluster, and the
-- runner's advisory lock is per database, so a concurrent creation by another
-- database's migration is tolerated.
-- Extensions need a superuser (pgvector is not a trusted extension), so this
-- migration runs as the connecting role; every later object is owned by
-- densemem_owner.

DO $roles$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'densemem_owner') THEN
        BEGIN
            CREATE ROLE densemem_owner NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;  -- created meanwhile by a migration of another database
        END;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'densemem_app') THEN
        BEGIN
            CREATE ROLE densemem_app NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;  -- created meanwhile by a migration of another database
        END;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'densemem_analyst') THEN
        BEGIN
            CREATE ROLE densemem_analyst NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;  -- created meanwhile by a migration of another database
        END;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'densemem_operator') THEN
        BEGIN
            CREATE ROLE densemem_operator NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;  -- created meanwhile by a migration of another database
        END;
    END IF;
    -- The searcher owns only the candidate-generation functions. It bypasses
    -- row-level security so that the planner may use the GIN and HNSW indexes
    -- for non-leakproof operators (@@, <=>); every function it owns takes an
    -- explicit team predicate checked against the authenticated setting, and
    -- hydration re-reads the chosen rows under RLS.
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'densemem_searcher') THEN
        BEGIN
            CREATE ROLE densemem_searcher NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE BYPASSRLS;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;  -- created meanwhile by a migration of another database
        END;
    END IF;
END
$roles$;

-- The owner must be able to hand objects to the searcher role.
GRANT densemem_searcher TO densemem_owner;

CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public;
CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;
CREATE EXTENSION IF NOT EXISTS btree_gin WITH SCHEMA public;

CREATE SCHEMA IF NOT EXISTS dm AUTHORIZATION densemem_owner;
CREATE SCHEMA IF NOT EXISTS dm_private AUTHORIZATION densemem_owner;

COMMENT ON SCHEMA dm IS
'Dense-Mem public API: recall, trace and write functions shared by the HTTP service and analysts.';
COMMENT ON SCHEMA dm_private IS
'Dense-Mem storage: tables and internal functions. Not granted to callers; reached only through dm functions and row-level security.';

REVOKE ALL ON SCHEMA dm FROM PUBLIC;
REVOKE ALL ON SCHEMA dm_private FROM PUBLIC;
GRANT USAGE ON SCHEMA dm TO densemem_app, densemem_analyst, densemem_operator;
-- Invoker functions in dm read tables here under RLS, so callers need USAGE.
GRANT USAGE ON SCHEMA dm_private TO densemem_app, densemem_analyst, densemem_operator, densemem_searcher;

-- Functions created in these schemas are not executable by PUBLIC unless granted.
ALTER DEFAULT PRIVILEGES FOR ROLE densemem_owner REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;
