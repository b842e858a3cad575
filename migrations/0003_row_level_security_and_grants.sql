-- 0003: row-level security on every table, and every grant spelled out.
--
-- The team scope is the transaction setting densemem.team_id, set by the
-- service after it authenticates an API key (as densemem_app), or by an
-- analyst whose login role is granted the team in team_role_grants.
-- Policies compare with a scalar sub-select so the setting is read once per
-- statement (an InitPlan), not once per row.

SET LOCAL ROLE densemem_owner;

DO $policies$
DECLARE
    team_table text;
    current_team constant text :=
        '(SELECT NULLIF(pg_catalog.current_setting(''densemem.team_id'', true), '''')::uuid)';
    analyst_allowed constant text :=
        '(pg_catalog.pg_has_role(session_user, ''densemem_app'', ''MEMBER'') OR EXISTS ('
        || 'SELECT 1 FROM dm_private.team_role_grants AS g WHERE g.team_id = '
        || '(SELECT NULLIF(pg_catalog.current_setting(''densemem.team_id'', true), '''')::uuid) '
        || 'AND g.role_name = session_user))';
BEGIN
    FOREACH team_table IN ARRAY ARRAY[
        'teams', 'profiles', 'api_keys', 'sources', 'source_revisions', 'evidence',
        'erasure_tombstones', 'entities', 'entity_names', 'relationships', 'relationship_evidence',
        'verification_events', 'lifecycle_transitions', 'conflicts', 'hypotheses', 'search_documents',
        'document_embeddings', 'team_ranking_overrides', 'recall_feedback', 'usage_counters',
        'usage_snapshots', 'usage_snapshot_counts', 'recall_telemetry'
    ] LOOP
        EXECUTE pg_catalog.format('ALTER TABLE dm_private.%I ENABLE ROW LEVEL SECURITY', team_table);
        EXECUTE pg_catalog.format('ALTER TABLE dm_private.%I FORCE ROW LEVEL SECURITY', team_table);
        EXECUTE pg_catalog.format(
            'CREATE POLICY "the service works inside the authenticated team" ON dm_private.%I '
            'AS PERMISSIVE FOR ALL TO densemem_app USING (team_id = %s) WITH CHECK (team_id = %s)',
            team_table, current_team, current_team);
        EXECUTE pg_catalog.format(
            'CREATE POLICY "analysts and operators read only their granted team" ON dm_private.%I '
            'AS PERMISSIVE FOR SELECT TO densemem_analyst, densemem_operator USING (team_id = %s AND %s)',
            team_table, current_team, analyst_allowed);
        -- The owner runs security-definer helpers (telemetry, authentication);
        -- it too stays inside the authenticated team.
        EXECUTE pg_catalog.format(
            'CREATE POLICY "the owner works inside the authenticated team" ON dm_private.%I '
            'AS PERMISSIVE FOR ALL TO densemem_owner USING (team_id = %s) WITH CHECK (team_id = %s)',
            team_table, current_team, current_team);
    END LOOP;
END
$policies$;

-- team_role_grants is read by the analyst policy itself, so its own policy
-- must not recurse: a login role sees the grants that name it.
ALTER TABLE dm_private.team_role_grants ENABLE ROW LEVEL SECURITY;
ALTER TABLE dm_private.team_role_grants FORCE ROW LEVEL SECURITY;
CREATE POLICY "a login role sees the grants that name it" ON dm_private.team_role_grants
AS PERMISSIVE FOR SELECT TO densemem_app, densemem_analyst, densemem_operator, densemem_owner
USING (role_name = session_user);

-- Authentication happens before a team is set: the owner's definer function
-- looks a key up by its primary key (team and key id parsed from the key).
CREATE POLICY "the owner looks up keys to authenticate them" ON dm_private.api_keys
AS PERMISSIVE FOR SELECT TO densemem_owner USING (true);
CREATE POLICY "the owner reads profiles to authenticate keys" ON dm_private.profiles
AS PERMISSIVE FOR SELECT TO densemem_owner USING (true);

-- Global configuration: readable by every Dense-Mem role, written only by migrations
-- and administrators (superusers bypass RLS).
ALTER TABLE dm_private.embedding_contracts ENABLE ROW LEVEL SECURITY;
ALTER TABLE dm_private.embedding_contracts FORCE ROW LEVEL SECURITY;
CREATE POLICY "every dense-mem role reads embedding contracts" ON dm_private.embedding_contracts
AS PERMISSIVE FOR SELECT TO densemem_app, densemem_analyst, densemem_operator, densemem_owner, densemem_searcher
USING (true);

ALTER TABLE dm_private.ranking_profiles ENABLE ROW LEVEL SECURITY;
ALTER TABLE dm_private.ranking_profiles FORCE ROW LEVEL SECURITY;
CREATE POLICY "every dense-mem role reads ranking profiles" ON dm_private.ranking_profiles
AS PERMISSIVE FOR SELECT TO densemem_app, densemem_analyst, densemem_operator, densemem_owner, densemem_searcher
USING (true);

-- ---------------------------------------------------------------- grants

REVOKE ALL ON ALL TABLES IN SCHEMA dm_private FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA dm_private FROM PUBLIC;

-- The service writes through invoker functions, so RLS checks every row it
-- touches. It never deletes history; deletes are limited to derived rows.
GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA dm_private TO densemem_app;
REVOKE INSERT, UPDATE ON dm_private.embedding_contracts, dm_private.ranking_profiles FROM densemem_app;
REVOKE UPDATE ON dm_private.lifecycle_transitions, dm_private.verification_events,
dm_private.erasure_tombstones, dm_private.recall_feedback, dm_private.team_role_grants FROM densemem_app;
REVOKE INSERT, UPDATE ON dm_private.team_role_grants FROM densemem_app;
-- Teams, profiles and keys are administered, never written by the service;
-- keys are read only by the authentication definer function.
REVOKE INSERT, UPDATE ON dm_private.teams, dm_private.profiles FROM densemem_app;
REVOKE ALL ON dm_private.api_keys FROM densemem_app;
GRANT DELETE ON dm_private.document_embeddings, dm_private.entity_names, dm_private.usage_snapshot_counts TO densemem_app;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA dm_private TO densemem_app;

-- Analysts and operators read under RLS; they change nothing directly.
GRANT SELECT ON ALL TABLES IN SCHEMA dm_private TO densemem_analyst, densemem_operator;
REVOKE SELECT ON dm_private.api_keys FROM densemem_analyst, densemem_operator;

-- The searcher reads only what candidate generation needs.
GRANT SELECT ON dm_private.search_documents, dm_private.document_embeddings, dm_private.evidence,
dm_private.source_revisions, dm_private.profiles, dm_private.embedding_contracts, dm_private.entity_names,
dm_private.entities, dm_private.relationships, dm_private.relationship_evidence TO densemem_searcher;
