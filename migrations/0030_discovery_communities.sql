-- 0030: discovery, communities and trace support.
--
-- Communities are derived clusters of eligible relationships (connected
-- components), rebuilt by dm.refresh_communities. They are team data like
-- everything else: team_id leads every key and index, row-level security is
-- enabled and forced with the same three policies as migration 0003, and
-- every grant is spelled out.
--
-- The indexes below serve discovery and trace reads on tables of migration
-- 0002 without changing them: entity documents get their own full-text index
-- (the shared one is dominated by evidence documents), hypotheses get a
-- statement full-text index and a source index, and the supersession lineage
-- gets a reverse index.

SET LOCAL ROLE densemem_owner;

CREATE TABLE dm_private.communities (
    team_id uuid NOT NULL,
    community_id uuid NOT NULL,
    algorithm text NOT NULL DEFAULT 'connected_components',
    entity_count integer NOT NULL,
    relationship_count integer NOT NULL,
    summary text NOT NULL,
    top_entity_ids uuid [] NOT NULL DEFAULT '{}',
    top_predicates text [] NOT NULL DEFAULT '{}',
    refreshed_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT communities_pkey PRIMARY KEY (team_id, community_id),
    CONSTRAINT communities_team_fkey FOREIGN KEY (team_id) REFERENCES dm_private.teams (team_id),
    CONSTRAINT communities_counts_positive CHECK (entity_count >= 2 AND relationship_count >= 1),
    CONSTRAINT communities_summary_size CHECK (pg_catalog.length(summary) BETWEEN 1 AND 2000),
    CONSTRAINT communities_algorithm_known CHECK (algorithm IN ('connected_components'))
);
COMMENT ON TABLE dm_private.communities IS
'Derived clusters (connected components) of a team''s eligible relationships, with a deterministic summary built from entity names and predicates (no LLM). Rebuilt by dm.refresh_communities; never evidence, never a relationship, never a tier.';

CREATE TABLE dm_private.community_members (
    team_id uuid NOT NULL,
    community_id uuid NOT NULL,
    entity_id uuid NOT NULL,
    degree integer NOT NULL,
    CONSTRAINT community_members_pkey PRIMARY KEY (team_id, community_id, entity_id),
    CONSTRAINT community_members_community_fkey FOREIGN KEY (team_id, community_id)
    REFERENCES dm_private.communities (team_id, community_id) ON DELETE CASCADE,
    CONSTRAINT community_members_entity_fkey FOREIGN KEY (team_id, entity_id)
    REFERENCES dm_private.entities (team_id, entity_id) ON DELETE CASCADE,
    CONSTRAINT community_members_degree_positive CHECK (degree >= 1)
);
CREATE INDEX community_members_entity_idx ON dm_private.community_members (team_id, entity_id);
COMMENT ON TABLE dm_private.community_members IS
'Entities of each community with their degree (number of eligible relationships touching them at refresh time).';

CREATE TABLE dm_private.community_relationships (
    team_id uuid NOT NULL,
    community_id uuid NOT NULL,
    relationship_id uuid NOT NULL,
    CONSTRAINT community_relationships_pkey PRIMARY KEY (team_id, community_id, relationship_id),
    CONSTRAINT community_relationships_community_fkey FOREIGN KEY (team_id, community_id)
    REFERENCES dm_private.communities (team_id, community_id) ON DELETE CASCADE,
    CONSTRAINT community_relationships_relationship_fkey FOREIGN KEY (team_id, relationship_id)
    REFERENCES dm_private.relationships (team_id, relationship_id)
);
COMMENT ON TABLE dm_private.community_relationships IS
'The eligible relationships that formed each community at refresh time.';

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
    FOREACH team_table IN ARRAY ARRAY['communities', 'community_members', 'community_relationships'] LOOP
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
        EXECUTE pg_catalog.format(
            'CREATE POLICY "the owner works inside the authenticated team" ON dm_private.%I '
            'AS PERMISSIVE FOR ALL TO densemem_owner USING (team_id = %s) WITH CHECK (team_id = %s)',
            team_table, current_team, current_team);
    END LOOP;
END
$policies$;

REVOKE ALL ON dm_private.communities, dm_private.community_members, dm_private.community_relationships FROM PUBLIC;
-- The service rebuilds communities through the invoker function dm.refresh_communities
-- (delete the team's rows, insert the new ones) and reads them under RLS.
GRANT SELECT, INSERT, DELETE ON dm_private.communities, dm_private.community_members,
dm_private.community_relationships TO densemem_app;
GRANT SELECT ON dm_private.communities, dm_private.community_members,
dm_private.community_relationships TO densemem_analyst, densemem_operator;

-- ---------------------------------------------------------------- indexes for discovery and trace

-- Entity documents only: the discovery seed search must not wade through the
-- team's evidence (and relationship) documents that share the main GIN index,
-- where common query words match thousands of rows.
CREATE INDEX search_documents_entity_fulltext_idx ON dm_private.search_documents
USING gin (team_id, search_vector)
WHERE subject_kind = 'entity'::dm_private.subject_kind;

-- Related hypotheses: by statement words and by the source they came from.
CREATE INDEX hypotheses_statement_fulltext_idx ON dm_private.hypotheses
USING gin (team_id, pg_catalog.to_tsvector('english'::regconfig, statement));
CREATE INDEX hypotheses_source_idx ON dm_private.hypotheses (team_id, source_id) WHERE source_id IS NOT NULL;

-- Trace walks supersession lineage both ways: forward by the column, backward by this index.
CREATE INDEX relationships_superseded_by_idx ON dm_private.relationships (team_id, superseded_by_relationship_id)
WHERE superseded_by_relationship_id IS NOT NULL;

-- The discovery seed search runs as a security-definer function owned by
-- densemem_searcher (BYPASSRLS, explicit team predicate checked against the
-- authenticated setting) so that the trigram and full-text indexes are usable.
-- Handing a function to that role requires the role to hold CREATE on the
-- schema; densemem_searcher is NOLOGIN and only densemem_owner (and
-- superusers) can become it.
GRANT CREATE ON SCHEMA dm_private TO densemem_searcher;

-- Corroboration and challenge look up a relationship's equivalents (same
-- semantic group, or same subject and object entity) without scanning a hub's
-- every edge of one predicate.
CREATE INDEX relationships_semantic_group_idx ON dm_private.relationships (team_id, semantic_group)
WHERE semantic_group IS NOT NULL;
CREATE INDEX relationships_endpoints_idx ON dm_private.relationships (team_id, subject_entity_id, object_entity_id)
WHERE object_entity_id IS NOT NULL;
