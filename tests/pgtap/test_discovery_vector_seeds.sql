-- Entity and relationship documents by vector seed discovery when a query
-- embedding is given and the query spells no name: only current vectors of
-- the active contract, only the team's own documents.
BEGIN;
SELECT plan(5);

-- Fixture: two teams with shared names. Team A: alice, bob (authors), carol (reviewer).
INSERT INTO dm_private.teams (team_id, name) VALUES
    ('aaaaaaaa-0000-0000-0000-000000000000', 'disc team a'),
    ('bbbbbbbb-0000-0000-0000-000000000000', 'disc team b');
INSERT INTO dm_private.profiles (team_id, profile_id, name) VALUES
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000a1', 'alice'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000a2', 'bob'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000a3', 'carol'),
    ('bbbbbbbb-0000-0000-0000-000000000000', 'bbbbbbbb-0000-0000-0000-0000000000b1', 'eve');
INSERT INTO dm_private.sources (team_id, source_id, external_id, kind) VALUES
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-00000000005a', 'chat:1', 'chat'),
    ('bbbbbbbb-0000-0000-0000-000000000000', 'bbbbbbbb-0000-0000-0000-00000000005b', 'chat:1', 'chat');
INSERT INTO dm_private.source_revisions (team_id, source_id, revision_id, revision_label, revision_number, is_current) VALUES
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-00000000005a', 'aaaaaaaa-0000-0000-0000-0000000005a1', 'v1', 1, true),
    ('bbbbbbbb-0000-0000-0000-000000000000', 'bbbbbbbb-0000-0000-0000-00000000005b', 'bbbbbbbb-0000-0000-0000-0000000005b1', 'v1', 1, true);
INSERT INTO dm_private.evidence (team_id, evidence_id, source_id, revision_id, owner_profile_id, text, content_hash, labels)
SELECT t.team, t.ev, t.src, t.rev, t.owner, t.body, pg_catalog.sha256(pg_catalog.convert_to(t.body, 'UTF8')), t.labels::jsonb
FROM (VALUES
    ('aaaaaaaa-0000-0000-0000-000000000000'::uuid, 'aaaaaaaa-0000-0000-0000-0000000000e1'::uuid, 'aaaaaaaa-0000-0000-0000-00000000005a'::uuid, 'aaaaaaaa-0000-0000-0000-0000000005a1'::uuid, 'aaaaaaaa-0000-0000-0000-0000000000a1'::uuid, 'EVTEXT-1 Mark works on Dense-Mem every day.', '{}'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000e2', 'aaaaaaaa-0000-0000-0000-00000000005a', 'aaaaaaaa-0000-0000-0000-0000000005a1', 'aaaaaaaa-0000-0000-0000-0000000000a1', 'EVTEXT-2 Dense-Mem stores everything in PostgreSQL.', '{}'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000e3', 'aaaaaaaa-0000-0000-0000-00000000005a', 'aaaaaaaa-0000-0000-0000-0000000005a1', 'aaaaaaaa-0000-0000-0000-0000000000a2', 'EVTEXT-3 Dense-Mem caches sessions in Redis.', '{}'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000e4', 'aaaaaaaa-0000-0000-0000-00000000005a', 'aaaaaaaa-0000-0000-0000-0000000005a1', 'aaaaaaaa-0000-0000-0000-0000000000a1', 'EVTEXT-4 Mark maintains the team wiki.', '{}'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000e5', 'aaaaaaaa-0000-0000-0000-00000000005a', 'aaaaaaaa-0000-0000-0000-0000000005a1', 'aaaaaaaa-0000-0000-0000-0000000000a2', 'EVTEXT-5 Bob says Mark works on the Wiki, not Dense-Mem.', '{}'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000e6', 'aaaaaaaa-0000-0000-0000-00000000005a', 'aaaaaaaa-0000-0000-0000-0000000005a1', 'aaaaaaaa-0000-0000-0000-0000000000a2', 'EVTEXT-6 PostgreSQL runs on Linux.', '{"pii": true}'),
    ('bbbbbbbb-0000-0000-0000-000000000000', 'bbbbbbbb-0000-0000-0000-0000000000e1', 'bbbbbbbb-0000-0000-0000-00000000005b', 'bbbbbbbb-0000-0000-0000-0000000005b1', 'bbbbbbbb-0000-0000-0000-0000000000b1', 'EVTEXT-B1 Mark works on Secret Project.', '{}')
) AS t (team, ev, src, rev, owner, body, labels);
INSERT INTO dm_private.entities (team_id, entity_id, canonical_name, normalized_name, kind) VALUES
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-00000000ee01', 'Mark', 'mark', 'person'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-00000000ee02', 'Dense-Mem', 'dense-mem', 'project'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-00000000ee03', 'PostgreSQL', 'postgresql', 'software'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-00000000ee04', 'Redis', 'redis', 'software'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-00000000ee05', 'Wiki', 'wiki', 'thing'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-00000000ee06', 'Linux', 'linux', 'software'),
    ('bbbbbbbb-0000-0000-0000-000000000000', 'bbbbbbbb-0000-0000-0000-00000000ee01', 'Mark', 'mark', 'person'),
    ('bbbbbbbb-0000-0000-0000-000000000000', 'bbbbbbbb-0000-0000-0000-00000000ee02', 'Secret Project', 'secret project', 'project');
INSERT INTO dm_private.entity_names (team_id, entity_id, name, normalized_name, is_canonical)
SELECT e.team_id, e.entity_id, e.canonical_name, e.normalized_name, true FROM dm_private.entities AS e
WHERE e.team_id IN ('aaaaaaaa-0000-0000-0000-000000000000', 'bbbbbbbb-0000-0000-0000-000000000000');
INSERT INTO dm_private.entity_names (team_id, entity_id, name, normalized_name, is_canonical) VALUES
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-00000000ee02', 'densemem', 'densemem', false);
-- r1 Mark works_on Dense-Mem (alice, fact); r2 Dense-Mem uses PostgreSQL (alice);
-- r3 Dense-Mem uses Redis (bob); r4 Mark maintains Wiki (alice);
-- r5 Mark works_on Wiki (bob, validated) conflicts with r1 (object_mismatch);
-- r6 Mark works_on Linux (bob, candidate: never eligible);
-- r7 PostgreSQL runs_on Linux (bob) supported only by pii evidence;
-- rb1 team B: Mark works_on Secret Project.
INSERT INTO dm_private.relationships (team_id, relationship_id, subject_entity_id, predicate, object_entity_id,
                                      owner_profile_id, tier, status) VALUES
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000f1', 'aaaaaaaa-0000-0000-0000-00000000ee01', 'works_on', 'aaaaaaaa-0000-0000-0000-00000000ee02', 'aaaaaaaa-0000-0000-0000-0000000000a1', 'fact', 'active'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000f2', 'aaaaaaaa-0000-0000-0000-00000000ee02', 'uses', 'aaaaaaaa-0000-0000-0000-00000000ee03', 'aaaaaaaa-0000-0000-0000-0000000000a1', 'validated_claim', 'active'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000f3', 'aaaaaaaa-0000-0000-0000-00000000ee02', 'uses', 'aaaaaaaa-0000-0000-0000-00000000ee04', 'aaaaaaaa-0000-0000-0000-0000000000a2', 'validated_claim', 'active'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000f4', 'aaaaaaaa-0000-0000-0000-00000000ee01', 'maintains', 'aaaaaaaa-0000-0000-0000-00000000ee05', 'aaaaaaaa-0000-0000-0000-0000000000a1', 'fact', 'active'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000f5', 'aaaaaaaa-0000-0000-0000-00000000ee01', 'works_on', 'aaaaaaaa-0000-0000-0000-00000000ee05', 'aaaaaaaa-0000-0000-0000-0000000000a2', 'validated_claim', 'active'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000f6', 'aaaaaaaa-0000-0000-0000-00000000ee01', 'works_on', 'aaaaaaaa-0000-0000-0000-00000000ee06', 'aaaaaaaa-0000-0000-0000-0000000000a2', 'candidate', 'pending_evidence'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000f7', 'aaaaaaaa-0000-0000-0000-00000000ee03', 'runs_on', 'aaaaaaaa-0000-0000-0000-00000000ee06', 'aaaaaaaa-0000-0000-0000-0000000000a2', 'fact', 'active'),
    ('bbbbbbbb-0000-0000-0000-000000000000', 'bbbbbbbb-0000-0000-0000-0000000000f1', 'bbbbbbbb-0000-0000-0000-00000000ee01', 'works_on', 'bbbbbbbb-0000-0000-0000-00000000ee02', 'bbbbbbbb-0000-0000-0000-0000000000b1', 'fact', 'active');
INSERT INTO dm_private.relationship_evidence (team_id, relationship_id, evidence_id, span_start, span_end) VALUES
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000f1', 'aaaaaaaa-0000-0000-0000-0000000000e1', 9, 32),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000f2', 'aaaaaaaa-0000-0000-0000-0000000000e2', NULL, NULL),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000f3', 'aaaaaaaa-0000-0000-0000-0000000000e3', NULL, NULL),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000f4', 'aaaaaaaa-0000-0000-0000-0000000000e4', NULL, NULL),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000f5', 'aaaaaaaa-0000-0000-0000-0000000000e5', NULL, NULL),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000f6', 'aaaaaaaa-0000-0000-0000-0000000000e5', NULL, NULL),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000f7', 'aaaaaaaa-0000-0000-0000-0000000000e6', NULL, NULL),
    ('bbbbbbbb-0000-0000-0000-000000000000', 'bbbbbbbb-0000-0000-0000-0000000000f1', 'bbbbbbbb-0000-0000-0000-0000000000e1', NULL, NULL);
INSERT INTO dm_private.conflicts (team_id, conflict_id, relationship_id, conflicting_relationship_id, kind) VALUES
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000c1', 'aaaaaaaa-0000-0000-0000-0000000000f1', 'aaaaaaaa-0000-0000-0000-0000000000f5', 'object_mismatch');

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
