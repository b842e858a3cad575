-- Entity and relationship documents by vector seed discovery when a query
-- embedding is given and the query spells no name: only current vectors of
-- the active contract, only the team's own documents.
BEGIN;
SELECT plan(5);

-- Fixture: two teams with shared names (tests/pgtap/fixtures/discovery_two_teams.sql).
DO $fixture$ BEGIN EXECUTE pg_catalog.pg_read_file(
    pg_catalog.current_setting('densemem_test.pgtap_dir') || '/fixtures/discovery_two_teams.sql'); END $fixture$;

-- Unit vectors: Redis's entity document points along axis 1, team B's Mark
-- along axis 1 too, and the relationship document of r4 (Mark maintains Wiki)
-- along axis 2. A stale vector (old document_version) for Linux along axis 3.
INSERT INTO dm_private.search_documents (team_id, document_id, subject_kind, subject_id, body, search_vector,
                                         search_state, pending_since, document_version) VALUES
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000d0001', 'entity',
     'aaaaaaaa-0000-0000-0000-00000000ee04', 'Redis', to_tsvector('english', 'Redis'), 'ready', NULL, 1),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000d0002', 'relationship',
     'aaaaaaaa-0000-0000-0000-0000000000f4', 'Mark maintains Wiki', to_tsvector('english', 'Mark maintains Wiki'),
     'ready', NULL, 1),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000d0003', 'entity',
     'aaaaaaaa-0000-0000-0000-00000000ee06', 'Linux', to_tsvector('english', 'Linux'), 'pending', now(), 2),
    ('bbbbbbbb-0000-0000-0000-000000000000', 'bbbbbbbb-0000-0000-0000-0000000d0001', 'entity',
     'bbbbbbbb-0000-0000-0000-00000000ee01', 'Mark', to_tsvector('english', 'Mark'), 'ready', NULL, 1);
CREATE FUNCTION pg_temp.axis(n integer) RETURNS public.vector LANGUAGE sql AS $$
    SELECT (SELECT array_agg(CASE WHEN i = n THEN 1.0 ELSE 0.0 END ORDER BY i) FROM generate_series(1, 384) AS i)::real[]::public.vector
$$;
INSERT INTO dm_private.document_embeddings (team_id, document_id, contract_id, document_version, source_version, embedding)
SELECT d.team_id, d.document_id, (SELECT contract_id FROM dm_private.embedding_contracts WHERE is_active), v.version, 1,
       pg_temp.axis(v.axis)::public.halfvec
FROM dm_private.search_documents AS d
JOIN (VALUES ('aaaaaaaa-0000-0000-0000-0000000d0001'::uuid, 1, 1), ('aaaaaaaa-0000-0000-0000-0000000d0002'::uuid, 2, 1),
             ('aaaaaaaa-0000-0000-0000-0000000d0003'::uuid, 3, 1), ('bbbbbbbb-0000-0000-0000-0000000d0001'::uuid, 1, 1))
     AS v (document_id, axis, version) ON v.document_id = d.document_id;

SET LOCAL ROLE densemem_app;
SELECT set_config('densemem.team_id', 'aaaaaaaa-0000-0000-0000-000000000000', true);
SELECT is((SELECT array_agg(s.entity_id) FROM dm_private.discovery_entity_seeds(
              'aaaaaaaa-0000-0000-0000-000000000000', 'the in-memory cache thing', pg_temp.axis(1), 5) AS s),
          ARRAY['aaaaaaaa-0000-0000-0000-00000000ee04'::uuid],
          'an entity document near the query embedding seeds its entity (and never team B''s document)');
SELECT is((SELECT array_agg(s.entity_id ORDER BY s.entity_id) FROM dm_private.discovery_entity_seeds(
              'aaaaaaaa-0000-0000-0000-000000000000', 'who looks after the handbook', pg_temp.axis(2), 5) AS s),
          ARRAY['aaaaaaaa-0000-0000-0000-00000000ee01', 'aaaaaaaa-0000-0000-0000-00000000ee05']::uuid [],
          'a relationship document near the query embedding seeds both endpoints');
SELECT is((SELECT count(*) FROM dm_private.discovery_entity_seeds(
              'aaaaaaaa-0000-0000-0000-000000000000', 'the penguin operating system', pg_temp.axis(3), 5) AS s),
          0::bigint, 'a vector of an older document version is never used');
SELECT is((SELECT count(*) FROM dm_private.discovery_entity_seeds(
              'aaaaaaaa-0000-0000-0000-000000000000', 'the in-memory cache thing', NULL, 5) AS s),
          0::bigint, 'without a query embedding and without a name there is no seed');
SELECT ok(jsonb_array_length(dm_private.discovery_for_recall_embedded(
              'aaaaaaaa-0000-0000-0000-000000000000', 'the in-memory cache thing', '{}', '{}', '{}',
              '{"discovery": {"time_budget_ms": 60000}}', pg_temp.axis(1)) -> 'discovery_paths') > 0,
          'discovery with a query embedding finds paths from vector seeds');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
