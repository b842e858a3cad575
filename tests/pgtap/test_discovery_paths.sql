-- Discovery paths for recall: dm_private.discovery_for_recall,
-- dm_private.discovery_entity_seeds, dm_private.entity_proximity.
--
-- Fixture (superuser, rolled back): two teams that share the names "Mark"
-- and "PostgreSQL". Team A: alice and bob author, carol reviews.
--   r1 Mark works_on Dense-Mem (alice, fact)      e1
--   r2 Dense-Mem uses PostgreSQL (alice)          e2
--   r3 Dense-Mem uses Redis (bob)                 e3
--   r4 Mark maintains Wiki (alice, fact)          e4
--   r5 Mark works_on Wiki (bob), recorded conflict with r1   e5
--   r6 Mark works_on Linux (bob, candidate: never eligible)  e5
--   r7 PostgreSQL runs_on Linux (bob), only evidence e6 is labelled pii
-- Team B: rb1 Mark works_on Secret Project.
BEGIN;
SELECT plan(52);

-- Fixture: two teams with shared names (tests/pgtap/fixtures/discovery_two_teams.sql).
DO $fixture$ BEGIN EXECUTE pg_catalog.pg_read_file(
    pg_catalog.current_setting('densemem_test.pgtap_dir') || '/fixtures/discovery_two_teams.sql'); END $fixture$;

-- Settings with a generous time budget, so that a loaded test machine cannot
-- turn a correctness check into a budget check.
CREATE TEMPORARY TABLE disc_settings AS
SELECT '{"discovery": {"seed_count": 5, "fan_out": 20, "max_edges": 200, "max_depth": 2, "max_paths": 10,
                       "max_path_bytes": 20000, "time_budget_ms": 60000},
         "hypotheses": {"enabled": false, "limit": 3}, "communities": {"enabled": false}}'::jsonb AS s;
GRANT SELECT ON disc_settings TO densemem_app;

-- Discovery as the service of team A (scopes given), settings patched (the
-- discovery key merged one level deep).
CREATE FUNCTION pg_temp.disc(query text, request jsonb DEFAULT '{}', patch jsonb DEFAULT '{}',
                             results uuid [] DEFAULT '{}', scopes text DEFAULT '')
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE answer jsonb;
BEGIN
    PERFORM set_config('role', 'densemem_app', true),
            set_config('densemem.team_id', 'aaaaaaaa-0000-0000-0000-000000000000', true),
            set_config('densemem.scopes', scopes, true);
    answer := dm_private.discovery_for_recall('aaaaaaaa-0000-0000-0000-000000000000', query, '{}'::jsonb, results,
                                              request, (SELECT d.s || patch || jsonb_build_object('discovery',
                                                  (d.s -> 'discovery') || COALESCE(patch -> 'discovery', '{}'))
                                                        FROM disc_settings AS d));
    PERFORM set_config('role', 'postgres', true);
    RETURN answer;
END
$$;
-- Every relationship ID anywhere in an answer (edges and conflict references).
CREATE FUNCTION pg_temp.rel_ids(answer jsonb) RETURNS uuid [] LANGUAGE sql AS $$
    SELECT COALESCE(array_agg(DISTINCT m[1]::uuid), '{}')
    FROM regexp_matches(answer::text, '"relationship_id": "([0-9a-f-]{36})"', 'g') AS m
$$;
-- The relationship IDs of the edges of the paths, in path order.
CREATE FUNCTION pg_temp.edge_ids(answer jsonb) RETURNS uuid [] LANGUAGE sql AS $$
    SELECT COALESCE(array_agg((e.edge ->> 'relationship_id')::uuid ORDER BY p.n, e.m), '{}')
    FROM jsonb_array_elements(answer -> 'discovery_paths') WITH ORDINALITY AS p (path, n)
    CROSS JOIN LATERAL jsonb_array_elements(p.path -> 'relationships') WITH ORDINALITY AS e (edge, m)
$$;
-- Position (1-based) of the single-edge path of a relationship, or NULL.
CREATE FUNCTION pg_temp.rank_of(answer jsonb, rel uuid) RETURNS bigint LANGUAGE sql AS $$
    SELECT min(p.n)
    FROM jsonb_array_elements(answer -> 'discovery_paths') WITH ORDINALITY AS p (path, n)
    WHERE jsonb_array_length(p.path -> 'relationships') = 1
      AND (p.path #>> '{relationships,0,relationship_id}')::uuid = rel
$$;
-- The edge object of a relationship in an answer.
CREATE FUNCTION pg_temp.edge(answer jsonb, rel uuid) RETURNS jsonb LANGUAGE sql AS $$
    SELECT e.edge
    FROM jsonb_array_elements(answer -> 'discovery_paths') AS p (path)
    CROSS JOIN LATERAL jsonb_array_elements(p.path -> 'relationships') AS e (edge)
    WHERE (e.edge ->> 'relationship_id')::uuid = rel
    LIMIT 1
$$;

SELECT has_function('dm_private', 'discovery_for_recall',
    ARRAY['uuid', 'text', 'jsonb', 'uuid[]', 'jsonb', 'jsonb'], 'discovery_for_recall has the agreed signature');
SELECT has_function('dm_private', 'entity_proximity', ARRAY['uuid', 'uuid[]', 'uuid[]', 'integer'],
    'entity_proximity exists');

-- ---------------------------------------------------------------- seeds stay in the team

SET LOCAL ROLE densemem_app;
SELECT set_config('densemem.team_id', 'aaaaaaaa-0000-0000-0000-000000000000', true);
SELECT is((SELECT array_agg(s.entity_id) FROM dm_private.discovery_entity_seeds(
              'aaaaaaaa-0000-0000-0000-000000000000', 'What does Mark work on?', NULL, 5) AS s),
          ARRAY['aaaaaaaa-0000-0000-0000-00000000ee01'::uuid],
          'the name Mark seeds team A''s Mark only, never team B''s same-name entity');
SELECT is((SELECT count(*) FROM dm_private.discovery_entity_seeds(
              'aaaaaaaa-0000-0000-0000-000000000000', 'Tell me about the Secret Project', NULL, 5) AS s),
          0::bigint, 'a name that exists only in team B seeds nothing in team A');
SELECT ok(EXISTS (SELECT 1 FROM dm_private.discovery_entity_seeds(
              'aaaaaaaa-0000-0000-0000-000000000000', 'what about densemem', NULL, 5) AS s
          WHERE s.entity_id = 'aaaaaaaa-0000-0000-0000-00000000ee02'), 'an alias seeds its entity');
SELECT ok(EXISTS (SELECT 1 FROM dm_private.discovery_entity_seeds(
              'aaaaaaaa-0000-0000-0000-000000000000', 'anything on postgressql?', NULL, 5) AS s
          WHERE s.entity_id = 'aaaaaaaa-0000-0000-0000-00000000ee03'), 'a misspelled name seeds by trigram similarity');
SELECT throws_ok($$SELECT * FROM dm_private.discovery_entity_seeds(
              'bbbbbbbb-0000-0000-0000-000000000000', 'Mark', NULL, 5)$$,
          '42501', NULL, 'seeding another team than the authenticated one is refused');
SELECT throws_ok($$SELECT dm_private.discovery_for_recall('bbbbbbbb-0000-0000-0000-000000000000', 'Mark', '{}',
              '{}', '{}', '{}')$$, '42501', NULL, 'discovery for another team than the authenticated one is refused');
RESET ROLE;

-- ---------------------------------------------------------------- shape, eligibility, no text

CREATE TEMPORARY TABLE answers (name text PRIMARY KEY, answer jsonb);
INSERT INTO answers VALUES ('mark', pg_temp.disc('What does Mark work on?'));

SELECT ok(jsonb_array_length((SELECT answer FROM answers WHERE name = 'mark') -> 'discovery_paths') > 0,
          'a query naming Mark yields discovery paths');
SELECT is((SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys((SELECT answer FROM answers WHERE name = 'mark')) AS k),
          ARRAY['degraded', 'discovery_paths'],
          'discovery answers only discovery_paths and degraded: no results, no context, nothing to rank as evidence');
SELECT ok(pg_temp.rel_ids((SELECT answer FROM answers WHERE name = 'mark'))
          <@ (SELECT array_agg(relationship_id) FROM dm_private.relationships
              WHERE team_id = 'aaaaaaaa-0000-0000-0000-000000000000'),
          'every relationship in the answer belongs to team A');
SELECT ok(NOT ('bbbbbbbb-0000-0000-0000-0000000000f1'::uuid = ANY(pg_temp.rel_ids((SELECT answer FROM answers WHERE name = 'mark')))),
          'team B''s Mark works_on Secret Project never appears');
SELECT ok((SELECT answer FROM answers WHERE name = 'mark')::text NOT LIKE '%EVTEXT%',
          'discovery paths never contain evidence text');
SELECT ok(NOT EXISTS (
              SELECT 1 FROM jsonb_array_elements((SELECT answer FROM answers WHERE name = 'mark') -> 'discovery_paths') AS p (path)
              WHERE jsonb_array_length(p.path -> 'relationships') NOT BETWEEN 1 AND 2),
          'every path has one or two edges');
SELECT ok(NOT ('aaaaaaaa-0000-0000-0000-0000000000f6'::uuid = ANY(pg_temp.edge_ids((SELECT answer FROM answers WHERE name = 'mark')))),
          'a candidate relationship is never a discovery edge');
SELECT is(pg_temp.edge((SELECT answer FROM answers WHERE name = 'mark'), 'aaaaaaaa-0000-0000-0000-0000000000f1')
              - 'conflicts' - 'owner_profile',
          '{"relationship_id": "aaaaaaaa-0000-0000-0000-0000000000f1",
            "subject": {"entity_id": "aaaaaaaa-0000-0000-0000-00000000ee01", "name": "Mark"},
            "predicate": "works_on",
            "object": {"entity_id": "aaaaaaaa-0000-0000-0000-00000000ee02", "name": "Dense-Mem"},
            "polarity": "+"}'::jsonb,
          'an edge carries relationship_id, subject and object {entity_id, name}, predicate and polarity');
SELECT ok(NOT EXISTS (
              SELECT 1 FROM jsonb_array_elements((SELECT answer FROM answers WHERE name = 'mark') -> 'discovery_paths') AS p (path)
              CROSS JOIN LATERAL jsonb_array_elements_text(p.path -> 'evidence_ids') AS e (id)
              WHERE e.id::uuid NOT IN ('aaaaaaaa-0000-0000-0000-0000000000e1', 'aaaaaaaa-0000-0000-0000-0000000000e2',
                                       'aaaaaaaa-0000-0000-0000-0000000000e3', 'aaaaaaaa-0000-0000-0000-0000000000e4',
                                       'aaaaaaaa-0000-0000-0000-0000000000e5')),
          'supporting evidence IDs are eligible evidence of the path''s relationships (never the pii-labelled e6)');

-- Evidence eligibility decides support: r7 rests on pii evidence only.
SELECT ok(NOT ('aaaaaaaa-0000-0000-0000-0000000000f7'::uuid = ANY(pg_temp.edge_ids(pg_temp.disc('What runs PostgreSQL?')))),
          'a relationship supported only by evidence the principal may not see is not a path edge');
SELECT ok('aaaaaaaa-0000-0000-0000-0000000000f7'::uuid = ANY(pg_temp.edge_ids(pg_temp.disc('What runs PostgreSQL?',
              scopes => 'pii'))),
          'with the pii scope the same relationship is a path edge');

-- Known relationship IDs never reappear, not even as conflict references.
SELECT ok(NOT ('aaaaaaaa-0000-0000-0000-0000000000f1'::uuid = ANY(pg_temp.rel_ids(pg_temp.disc('What does Mark work on?',
              '{"known_relationship_ids": ["aaaaaaaa-0000-0000-0000-0000000000f1"]}')))),
          'a known relationship ID never reappears');
SELECT ok(jsonb_array_length(pg_temp.disc('What does Mark work on?',
              '{"known_relationship_ids": ["aaaaaaaa-0000-0000-0000-0000000000f1"]}') -> 'discovery_paths') > 0,
          'other paths are still offered when one relationship is known');
SELECT throws_ok($$SELECT pg_temp.disc('Mark', jsonb_build_object('known_relationship_ids',
              (SELECT jsonb_agg(gen_random_uuid()) FROM generate_series(1, 201))))$$,
          '22023', NULL, 'more than 200 known relationship IDs are refused');

-- Bounds: count and bytes.
SELECT ok(jsonb_array_length(pg_temp.disc('What does Mark work on?', '{}', '{"discovery": {"max_paths": 2}}')
              -> 'discovery_paths') <= 2, 'at most max_paths paths');
SELECT ok(octet_length((pg_temp.disc('What does Mark work on?', '{}',
              '{"discovery": {"max_path_bytes": 700}}') -> 'discovery_paths')::text) <= 700,
          'the serialized paths stay within max_path_bytes');
SELECT ok(NOT EXISTS (
              SELECT 1 FROM jsonb_array_elements(pg_temp.disc('Mark', '{}', '{"discovery": {"max_depth": 1}}')
                                                 -> 'discovery_paths') AS p (path)
              WHERE jsonb_array_length(p.path -> 'relationships') > 1),
          'max_depth 1 gives single-edge paths only');

-- ---------------------------------------------------------------- authorship and conflicts

SELECT is(pg_temp.edge((SELECT answer FROM answers WHERE name = 'mark'), 'aaaaaaaa-0000-0000-0000-0000000000f1')
              -> 'owner_profile' ->> 'name', 'alice',
          'an edge in a recorded conflict names its owner profile');
SELECT is(pg_temp.edge((SELECT answer FROM answers WHERE name = 'mark'), 'aaaaaaaa-0000-0000-0000-0000000000f1')
              -> 'conflicts' -> 0,
          '{"relationship_id": "aaaaaaaa-0000-0000-0000-0000000000f5", "kind": "object_mismatch",
            "owner_profile": {"profile_id": "aaaaaaaa-0000-0000-0000-0000000000a2", "name": "bob"},
            "preferred": false, "superseded": false}'::jsonb,
          'the conflict reference names the other relationship and its author');
SELECT ok(NOT (pg_temp.edge((SELECT answer FROM answers WHERE name = 'mark'), 'aaaaaaaa-0000-0000-0000-0000000000f4')
              ? 'owner_profile'),
          'an edge where authorship does not matter carries no owner profile');

-- ---------------------------------------------------------------- conflicts respect predicate cardinality

-- The rule itself: opposite polarity on one object always disagrees;
-- different objects only for a single-valued predicate with both sides positive.
SELECT is(dm_private.relationships_disagree('uses', '+', 'aaaaaaaa-0000-0000-0000-00000000ee04', NULL,
                                            '-', 'aaaaaaaa-0000-0000-0000-00000000ee04', NULL, '{}'),
          true, 'opposite polarity on the same object conflicts, even for a multi-valued predicate');
SELECT is(dm_private.relationships_disagree('lives_in', '+', NULL, 'Berlin', '+', NULL, 'Paris', '{lives_in}'),
          true, 'different objects of a single-valued predicate conflict');
SELECT is(dm_private.relationships_disagree('uses', '+', NULL, 'vim', '+', NULL, 'emacs', '{lives_in}'),
          false, 'different objects of a multi-valued predicate do not conflict');
SELECT is(dm_private.relationships_disagree('lives_in', '+', NULL, 'Berlin', '-', NULL, 'Paris', '{lives_in}'),
          false, 'lives in Berlin and does not live in Paris agree');
SELECT is(dm_private.relationships_disagree('lives_in', '+', NULL, 'Berlin', '+', NULL, 'Berlin', '{lives_in}'),
          false, 'the same statement twice is no conflict');
SELECT ok('lives_in' = ANY(dm_private.single_valued_predicates('aaaaaaaa-0000-0000-0000-000000000000'))
          AND 'works_on' = ANY(dm_private.single_valued_predicates('aaaaaaaa-0000-0000-0000-000000000000'))
          AND NOT ('works_on' = ANY(dm_private.single_valued_predicates('bbbbbbbb-0000-0000-0000-000000000000')))
          AND NOT ('uses' = ANY(dm_private.single_valued_predicates('aaaaaaaa-0000-0000-0000-000000000000'))),
          'single-valued predicates: the defaults (lives_in), plus a team''s own rows (team A: works_on) for that team only');

-- Without team A's works_on row (the default: multi-valued) the recorded
-- r1 / r5 disagreement is no conflict: Mark may work on Dense-Mem and the Wiki.
DELETE FROM dm_private.predicate_cardinalities
WHERE team_id = 'aaaaaaaa-0000-0000-0000-000000000000' AND predicate = 'works_on';
INSERT INTO answers VALUES ('multi', pg_temp.disc('What does Mark work on?'));
SELECT ok(NOT (pg_temp.edge((SELECT answer FROM answers WHERE name = 'multi'), 'aaaaaaaa-0000-0000-0000-0000000000f1')
               ? 'conflicts')
          AND NOT (pg_temp.edge((SELECT answer FROM answers WHERE name = 'multi'), 'aaaaaaaa-0000-0000-0000-0000000000f5')
                   ? 'conflicts'),
          'different objects of a multi-valued predicate (works_on by default) carry no conflict reference');
SELECT ok(NOT (pg_temp.edge((SELECT answer FROM answers WHERE name = 'multi'), 'aaaaaaaa-0000-0000-0000-0000000000f1')
               ? 'owner_profile'),
          'without a conflict (or corroboration) authorship does not matter: no owner profile');
INSERT INTO dm_private.predicate_cardinalities (team_id, predicate, cardinality) VALUES
    ('aaaaaaaa-0000-0000-0000-000000000000', 'works_on', 'single');

-- A default single-valued predicate (lives_in), a team override to
-- multi-valued, and opposite polarity on a multi-valued one (uses).
--   r10 Mark lives_in Berlin (alice) vs r11 Mark lives_in Paris (bob): object_mismatch
--   r12 Mark uses Redis (alice) vs r13 Mark does not use Redis (bob): polarity_mismatch
--   r12 vs r14 Mark uses PostgreSQL (bob): object_mismatch of a multi-valued predicate
INSERT INTO dm_private.entities (team_id, entity_id, canonical_name, normalized_name, kind) VALUES
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-00000000ee07', 'Berlin', 'berlin', 'place'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-00000000ee08', 'Paris', 'paris', 'place');
INSERT INTO dm_private.relationships (team_id, relationship_id, subject_entity_id, predicate, object_entity_id,
                                      polarity, owner_profile_id, tier, status) VALUES
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-000000000010', 'aaaaaaaa-0000-0000-0000-00000000ee01', 'lives_in', 'aaaaaaaa-0000-0000-0000-00000000ee07', '+', 'aaaaaaaa-0000-0000-0000-0000000000a1', 'fact', 'active'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-000000000011', 'aaaaaaaa-0000-0000-0000-00000000ee01', 'lives_in', 'aaaaaaaa-0000-0000-0000-00000000ee08', '+', 'aaaaaaaa-0000-0000-0000-0000000000a2', 'validated_claim', 'active'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-000000000012', 'aaaaaaaa-0000-0000-0000-00000000ee01', 'uses', 'aaaaaaaa-0000-0000-0000-00000000ee04', '+', 'aaaaaaaa-0000-0000-0000-0000000000a1', 'fact', 'active'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-000000000013', 'aaaaaaaa-0000-0000-0000-00000000ee01', 'uses', 'aaaaaaaa-0000-0000-0000-00000000ee04', '-', 'aaaaaaaa-0000-0000-0000-0000000000a2', 'validated_claim', 'active'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-000000000014', 'aaaaaaaa-0000-0000-0000-00000000ee01', 'uses', 'aaaaaaaa-0000-0000-0000-00000000ee03', '+', 'aaaaaaaa-0000-0000-0000-0000000000a2', 'validated_claim', 'active');
INSERT INTO dm_private.relationship_evidence (team_id, relationship_id, evidence_id)
SELECT 'aaaaaaaa-0000-0000-0000-000000000000', r.id, r.ev
FROM (VALUES ('aaaaaaaa-0000-0000-0000-000000000010'::uuid, 'aaaaaaaa-0000-0000-0000-0000000000e1'::uuid),
             ('aaaaaaaa-0000-0000-0000-000000000011', 'aaaaaaaa-0000-0000-0000-0000000000e5'),
             ('aaaaaaaa-0000-0000-0000-000000000012', 'aaaaaaaa-0000-0000-0000-0000000000e1'),
             ('aaaaaaaa-0000-0000-0000-000000000013', 'aaaaaaaa-0000-0000-0000-0000000000e5'),
             ('aaaaaaaa-0000-0000-0000-000000000014', 'aaaaaaaa-0000-0000-0000-0000000000e5')) AS r (id, ev);
INSERT INTO dm_private.conflicts (team_id, conflict_id, relationship_id, conflicting_relationship_id, kind) VALUES
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000c2', 'aaaaaaaa-0000-0000-0000-000000000010', 'aaaaaaaa-0000-0000-0000-000000000011', 'object_mismatch'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000c3', 'aaaaaaaa-0000-0000-0000-000000000012', 'aaaaaaaa-0000-0000-0000-000000000013', 'polarity_mismatch'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000c4', 'aaaaaaaa-0000-0000-0000-000000000012', 'aaaaaaaa-0000-0000-0000-000000000014', 'object_mismatch');
SELECT is(pg_temp.edge(pg_temp.disc('Where does Mark live?'), 'aaaaaaaa-0000-0000-0000-000000000010') #>> '{conflicts,0,relationship_id}',
          'aaaaaaaa-0000-0000-0000-000000000011',
          'different objects of a default single-valued predicate (lives_in) conflict');
INSERT INTO dm_private.predicate_cardinalities (team_id, predicate, cardinality) VALUES
    ('aaaaaaaa-0000-0000-0000-000000000000', 'lives_in', 'multi');
SELECT ok(pg_temp.edge(pg_temp.disc('Where does Mark live?'), 'aaaaaaaa-0000-0000-0000-000000000010') IS NOT NULL
          AND NOT (pg_temp.edge(pg_temp.disc('Where does Mark live?'), 'aaaaaaaa-0000-0000-0000-000000000010') ? 'conflicts'),
          'a team that declares lives_in multi-valued sees no conflict there');
SELECT is((SELECT array_agg(c ->> 'relationship_id' ORDER BY c ->> 'relationship_id')
           FROM jsonb_array_elements(pg_temp.edge(pg_temp.disc('What does Mark use?'), 'aaaaaaaa-0000-0000-0000-000000000012')
                                     -> 'conflicts') AS c),
          ARRAY['aaaaaaaa-0000-0000-0000-000000000013'],
          'uses (multi-valued): opposite polarity on the same object conflicts, a different object does not');
DELETE FROM dm_private.conflicts WHERE conflict_id IN ('aaaaaaaa-0000-0000-0000-0000000000c2', 'aaaaaaaa-0000-0000-0000-0000000000c3',
                                                       'aaaaaaaa-0000-0000-0000-0000000000c4');
DELETE FROM dm_private.relationship_evidence WHERE relationship_id IN ('aaaaaaaa-0000-0000-0000-000000000010',
    'aaaaaaaa-0000-0000-0000-000000000011', 'aaaaaaaa-0000-0000-0000-000000000012', 'aaaaaaaa-0000-0000-0000-000000000013',
    'aaaaaaaa-0000-0000-0000-000000000014');
DELETE FROM dm_private.relationships WHERE relationship_id IN ('aaaaaaaa-0000-0000-0000-000000000010',
    'aaaaaaaa-0000-0000-0000-000000000011', 'aaaaaaaa-0000-0000-0000-000000000012', 'aaaaaaaa-0000-0000-0000-000000000013',
    'aaaaaaaa-0000-0000-0000-000000000014');
DELETE FROM dm_private.predicate_cardinalities
WHERE team_id = 'aaaaaaaa-0000-0000-0000-000000000000' AND predicate = 'lives_in';

-- Without preference r1 and r5 tie and r1 (smaller id) comes first; a
-- preferred correction r5 ranks higher, and r1 stays, unchanged.
CREATE TEMPORARY TABLE r1_before AS
SELECT md5(r::text) AS h FROM dm_private.relationships AS r WHERE r.relationship_id = 'aaaaaaaa-0000-0000-0000-0000000000f1';
SELECT ok(pg_temp.rank_of(pg_temp.disc('Mark', '{}', '{"discovery": {"max_depth": 1}}'), 'aaaaaaaa-0000-0000-0000-0000000000f1')
          < pg_temp.rank_of(pg_temp.disc('Mark', '{}', '{"discovery": {"max_depth": 1}}'), 'aaaaaaaa-0000-0000-0000-0000000000f5'),
          'without a preference the tie between r1 and r5 breaks by id');
UPDATE dm_private.conflicts SET preferred_relationship_id = 'aaaaaaaa-0000-0000-0000-0000000000f5'
WHERE conflict_id = 'aaaaaaaa-0000-0000-0000-0000000000c1';
INSERT INTO answers VALUES ('preferred', pg_temp.disc('Mark', '{}', '{"discovery": {"max_depth": 1}}'));
SELECT ok(pg_temp.rank_of((SELECT answer FROM answers WHERE name = 'preferred'), 'aaaaaaaa-0000-0000-0000-0000000000f5')
          < pg_temp.rank_of((SELECT answer FROM answers WHERE name = 'preferred'), 'aaaaaaaa-0000-0000-0000-0000000000f1'),
          'a preferred correction ranks higher');
SELECT ok(pg_temp.rank_of((SELECT answer FROM answers WHERE name = 'preferred'), 'aaaaaaaa-0000-0000-0000-0000000000f1') IS NOT NULL,
          'the other author''s relationship is still offered');
SELECT is((SELECT md5(r::text) FROM dm_private.relationships AS r
           WHERE r.relationship_id = 'aaaaaaaa-0000-0000-0000-0000000000f1'), (SELECT h FROM r1_before),
          'the other author''s relationship is not mutated');
SELECT is(pg_temp.edge((SELECT answer FROM answers WHERE name = 'preferred'), 'aaaaaaaa-0000-0000-0000-0000000000f5') -> 'preferred',
          'true'::jsonb, 'the preferred edge is marked preferred');
UPDATE dm_private.conflicts SET preferred_relationship_id = NULL
WHERE conflict_id = 'aaaaaaaa-0000-0000-0000-0000000000c1';

-- Corroboration changes ranking only through verified evidence: carol's r9
-- repeats r5 (Mark works_on Wiki).
INSERT INTO dm_private.evidence (team_id, evidence_id, source_id, revision_id, owner_profile_id, text, content_hash, state)
VALUES ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000e9',
        'aaaaaaaa-0000-0000-0000-00000000005a', 'aaaaaaaa-0000-0000-0000-0000000005a1',
        'aaaaaaaa-0000-0000-0000-0000000000a3', 'EVTEXT-9 Carol confirms Mark works on the Wiki.',
        sha256('EVTEXT-9'::bytea), 'quarantined');
INSERT INTO dm_private.relationships (team_id, relationship_id, subject_entity_id, predicate, object_entity_id,
                                      owner_profile_id, tier, status)
VALUES ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000f9',
        'aaaaaaaa-0000-0000-0000-00000000ee01', 'works_on', 'aaaaaaaa-0000-0000-0000-00000000ee05',
        'aaaaaaaa-0000-0000-0000-0000000000a3', 'candidate', 'pending_evidence');
INSERT INTO dm_private.relationship_evidence (team_id, relationship_id, evidence_id)
VALUES ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000f9', 'aaaaaaaa-0000-0000-0000-0000000000e9');
SELECT ok(pg_temp.rank_of(pg_temp.disc('Mark', '{}', '{"discovery": {"max_depth": 1}}'), 'aaaaaaaa-0000-0000-0000-0000000000f1')
          < pg_temp.rank_of(pg_temp.disc('Mark', '{}', '{"discovery": {"max_depth": 1}}'), 'aaaaaaaa-0000-0000-0000-0000000000f5'),
          'an unverified corroboration changes nothing');
UPDATE dm_private.relationships SET tier = 'validated_claim', status = 'active'
WHERE relationship_id = 'aaaaaaaa-0000-0000-0000-0000000000f9';
SELECT ok(pg_temp.rank_of(pg_temp.disc('Mark', '{}', '{"discovery": {"max_depth": 1}}'), 'aaaaaaaa-0000-0000-0000-0000000000f1')
          < pg_temp.rank_of(pg_temp.disc('Mark', '{}', '{"discovery": {"max_depth": 1}}'), 'aaaaaaaa-0000-0000-0000-0000000000f5'),
          'a verified corroboration whose evidence is quarantined changes nothing');
UPDATE dm_private.evidence SET state = 'active' WHERE evidence_id = 'aaaaaaaa-0000-0000-0000-0000000000e9';
INSERT INTO answers VALUES ('corroborated', pg_temp.disc('Mark', '{}', '{"discovery": {"max_depth": 1}}'));
SELECT ok(pg_temp.rank_of((SELECT answer FROM answers WHERE name = 'corroborated'), 'aaaaaaaa-0000-0000-0000-0000000000f5')
          < pg_temp.rank_of((SELECT answer FROM answers WHERE name = 'corroborated'), 'aaaaaaaa-0000-0000-0000-0000000000f1'),
          'a verified corroboration by another author with eligible evidence ranks the relationship higher');
SELECT is(pg_temp.edge((SELECT answer FROM answers WHERE name = 'corroborated'), 'aaaaaaaa-0000-0000-0000-0000000000f5')
              -> 'owner_profile' ->> 'name', 'bob',
          'a corroborated edge names its owner profile');
SELECT ok(pg_temp.rank_of((SELECT answer FROM answers WHERE name = 'corroborated'), 'aaaaaaaa-0000-0000-0000-0000000000f9') IS NOT NULL
          AND pg_temp.rank_of((SELECT answer FROM answers WHERE name = 'corroborated'), 'aaaaaaaa-0000-0000-0000-0000000000f5') IS NOT NULL,
          'equivalent relationships of different authors both stay discoverable');

-- ---------------------------------------------------------------- novelty and proximity

SELECT ok(pg_temp.rank_of(pg_temp.disc('Mark', '{}', '{"discovery": {"max_depth": 1}}',
                                       ARRAY['aaaaaaaa-0000-0000-0000-0000000000e4']::uuid []),
                          'aaaaaaaa-0000-0000-0000-0000000000f4')
          > pg_temp.rank_of(pg_temp.disc('Mark', '{}', '{"discovery": {"max_depth": 1}}'), 'aaaaaaaa-0000-0000-0000-0000000000f4'),
          'a path whose only support is already returned ranks lower (novelty)');

SET LOCAL ROLE densemem_app;
SELECT is((SELECT array_agg(p.hops ORDER BY p.evidence_id) FROM dm_private.entity_proximity(
              'aaaaaaaa-0000-0000-0000-000000000000', ARRAY['aaaaaaaa-0000-0000-0000-00000000ee01']::uuid [],
              ARRAY['aaaaaaaa-0000-0000-0000-0000000000e1', 'aaaaaaaa-0000-0000-0000-0000000000e2',
                    'aaaaaaaa-0000-0000-0000-0000000000e6']::uuid [], 2) AS p),
          ARRAY[0, 1, 2], 'proximity: hops from Mark to the entities each evidence supports');
SELECT is((SELECT count(*) FROM dm_private.entity_proximity(
              'aaaaaaaa-0000-0000-0000-000000000000', ARRAY['aaaaaaaa-0000-0000-0000-00000000ee01']::uuid [],
              ARRAY['aaaaaaaa-0000-0000-0000-0000000000e6', 'bbbbbbbb-0000-0000-0000-0000000000e1']::uuid [], 1) AS p),
          0::bigint, 'proximity respects max_hops and never reaches another team''s evidence');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
