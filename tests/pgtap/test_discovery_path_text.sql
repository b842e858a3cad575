-- Discovery paths are put together as text (session 9): every candidate path
-- of dm_private.discovery_candidate_paths must be exactly the text jsonb
-- prints for it (so that the byte budget counts what the answer holds), and
-- every edge must hold what the former SQL/JSON construction built from the
-- same rows: subject / object {entity_id, name}, predicate, object_value,
-- polarity, owner_profile {profile_id, name} where authorship matters,
-- preferred, conflicts. Names, values and profile names with quotes,
-- backslashes, control characters and non-ASCII text.
--
-- Fixture: tests/pgtap/fixtures/discovery_two_teams.sql (rolled back), plus
-- r8 Mark lives_in a literal value (alice, fact, e4) and a preferred side of
-- the r1 / r5 conflict.
BEGIN;
SELECT plan(13);

DO $fixture$ BEGIN EXECUTE pg_catalog.pg_read_file(
    pg_catalog.current_setting('densemem_test.pgtap_dir') || '/fixtures/discovery_two_teams.sql'); END $fixture$;

UPDATE dm_private.entities SET canonical_name = E'Dense-Mem "β" \\ x\ty'
WHERE team_id = 'aaaaaaaa-0000-0000-0000-000000000000' AND entity_id = 'aaaaaaaa-0000-0000-0000-00000000ee02';
UPDATE dm_private.entities SET canonical_name = E'Wiki\n''quoted'' é'
WHERE team_id = 'aaaaaaaa-0000-0000-0000-000000000000' AND entity_id = 'aaaaaaaa-0000-0000-0000-00000000ee05';
UPDATE dm_private.profiles SET name = E'bo"b\\'
WHERE team_id = 'aaaaaaaa-0000-0000-0000-000000000000' AND profile_id = 'aaaaaaaa-0000-0000-0000-0000000000a2';
INSERT INTO dm_private.relationships (team_id, relationship_id, subject_entity_id, predicate, object_value,
                                      owner_profile_id, tier, status) VALUES
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000f8',
     'aaaaaaaa-0000-0000-0000-00000000ee01', 'lives_in', E'Ber"lin \\ ✓\u0001',
     'aaaaaaaa-0000-0000-0000-0000000000a1', 'fact', 'active');
INSERT INTO dm_private.relationship_evidence (team_id, relationship_id, evidence_id, span_start, span_end) VALUES
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000f8',
     'aaaaaaaa-0000-0000-0000-0000000000e4', NULL, NULL);
UPDATE dm_private.conflicts SET preferred_relationship_id = 'aaaaaaaa-0000-0000-0000-0000000000f5'
WHERE conflict_id = 'aaaaaaaa-0000-0000-0000-0000000000c1';

-- Every candidate path from Mark, Dense-Mem and Wiki, as the service of team A.
CREATE TEMPORARY TABLE candidates (n bigint, relationship_ids uuid [], path_text text);
GRANT INSERT ON candidates TO densemem_app;
SELECT set_config('densemem.team_id', 'aaaaaaaa-0000-0000-0000-000000000000', true);
SET LOCAL ROLE densemem_app;
INSERT INTO candidates
SELECT pg_catalog.row_number() OVER (), c.path_relationship_ids, c.path_json
FROM dm_private.discovery_candidate_paths(
    'aaaaaaaa-0000-0000-0000-000000000000',
    '{aaaaaaaa-0000-0000-0000-00000000ee01,aaaaaaaa-0000-0000-0000-00000000ee02,aaaaaaaa-0000-0000-0000-00000000ee05}',
    '{"aaaaaaaa-0000-0000-0000-00000000ee01": 3.0}', '{}', 20, 2, 200, 50, NULL, NULL, '{}', NULL, '{}',
    '{aaaaaaaa-0000-0000-0000-0000000000e1}', '{mark,work}', '{mark}',
    pg_catalog.clock_timestamp() + interval '60 seconds') AS c;
RESET ROLE;

SELECT ok((SELECT count(*) FROM candidates) >= 6, 'candidate paths were found');
SELECT is((SELECT count(*) FROM candidates WHERE path_text IS DISTINCT FROM path_text::jsonb::text), 0::bigint,
          'every candidate path is the text jsonb prints for it');

-- The edges as the former construction built them (JSON_OBJECT ... ABSENT ON
-- NULL, conflicts from dm_private.discovery_edge_context).
CREATE TEMPORARY TABLE edges AS
SELECT c.n, e.m, e.edge
FROM candidates AS c
CROSS JOIN LATERAL pg_catalog.jsonb_array_elements(c.path_text::jsonb -> 'relationships') WITH ORDINALITY AS e (edge, m);
CREATE TEMPORARY TABLE context AS
SELECT x.*
FROM dm_private.discovery_edge_context(
    'aaaaaaaa-0000-0000-0000-000000000000',
    ARRAY(SELECT DISTINCT (edges.edge ->> 'relationship_id')::uuid FROM edges), '{}', NULL, '{}', '{}') AS x;
CREATE TEMPORARY TABLE expected AS
SELECT
    r.relationship_id,
    JSON_OBJECT(
       'relationship_id': r.relationship_id,
       'subject': JSON_OBJECT('entity_id': se.entity_id, 'name': se.canonical_name ABSENT ON NULL RETURNING jsonb),
       'predicate': r.predicate,
       'object': CASE WHEN oe.entity_id IS NOT NULL THEN
           JSON_OBJECT('entity_id': oe.entity_id, 'name': oe.canonical_name ABSENT ON NULL RETURNING jsonb) END,
       'object_value': r.object_value,
       'polarity': r.polarity::text,
       'owner_profile': CASE WHEN cx.refs IS NOT NULL OR COALESCE(cx.corroborators, 0) > 0 THEN
           JSON_OBJECT('profile_id': r.owner_profile_id, 'name': p.name ABSENT ON NULL RETURNING jsonb) END,
       'preferred': CASE WHEN cx.is_preferred THEN true END,
       'conflicts': cx.refs
       ABSENT ON NULL RETURNING jsonb) AS edge
FROM dm_private.relationships AS r
JOIN dm_private.entities AS se ON se.team_id = r.team_id AND se.entity_id = r.subject_entity_id
LEFT JOIN dm_private.entities AS oe ON oe.team_id = r.team_id AND oe.entity_id = r.object_entity_id
LEFT JOIN dm_private.profiles AS p ON p.team_id = r.team_id AND p.profile_id = r.owner_profile_id
LEFT JOIN context AS cx ON cx.context_relationship_id = r.relationship_id
WHERE
    r.team_id = 'aaaaaaaa-0000-0000-0000-000000000000'
    AND r.relationship_id IN (SELECT (edges.edge ->> 'relationship_id')::uuid FROM edges);

SELECT is((SELECT count(*) FROM edges AS e
           JOIN expected AS x ON x.relationship_id = (e.edge ->> 'relationship_id')::uuid
           WHERE x.edge IS DISTINCT FROM e.edge), 0::bigint,
          'every edge holds what the SQL/JSON construction builds from the same rows');
SELECT is((SELECT count(*) FROM edges AS e
           WHERE NOT EXISTS (SELECT 1 FROM expected AS x
                             WHERE x.relationship_id = (e.edge ->> 'relationship_id')::uuid)), 0::bigint,
          'every edge is a relationship of the team');
-- The test reaches every optional key and every kind of character.
SELECT ok(EXISTS (SELECT 1 FROM edges
                  WHERE edges.edge ->> 'object_value' = E'Ber"lin \\ ✓\u0001'),
          'an edge with a literal object keeps the value as stored');
SELECT ok(EXISTS (SELECT 1 FROM edges WHERE edges.edge -> 'preferred' = 'true'::jsonb), 'a preferred edge is marked');
SELECT ok(EXISTS (SELECT 1 FROM edges WHERE edges.edge -> 'owner_profile' ->> 'name' = E'bo"b\\'),
          'the owner profile is named where authorship matters');
SELECT ok(EXISTS (SELECT 1 FROM edges WHERE edges.edge ? 'conflicts')
          AND EXISTS (SELECT 1 FROM edges WHERE edges.edge -> 'subject' ->> 'name' = E'Dense-Mem "β" \\ x\ty'
                                                OR edges.edge -> 'object' ->> 'name' = E'Dense-Mem "β" \\ x\ty')
          AND EXISTS (SELECT 1 FROM edges WHERE edges.edge -> 'object' ->> 'name' = E'Wiki\n''quoted'' é'),
          'conflict references and names with quotes, backslashes, control characters and non-ASCII text');
-- Evidence IDs: distinct, in order, at most five.
SELECT is((SELECT count(*) FROM candidates AS c
           WHERE (c.path_text::jsonb -> 'evidence_ids') IS DISTINCT FROM pg_catalog.to_jsonb(ARRAY(
                     SELECT DISTINCT v.id::uuid
                     FROM pg_catalog.jsonb_array_elements_text(c.path_text::jsonb -> 'evidence_ids') AS v (id)
                     ORDER BY 1 LIMIT 5))
              OR pg_catalog.jsonb_array_length(c.path_text::jsonb -> 'evidence_ids') = 0), 0::bigint,
          'evidence IDs are distinct, ordered and present on every path');


-- Predicate relevance (a predicate word starting with a query lexeme) is a
-- LIKE per lexeme with \, % and _ escaped: a lexeme is matched literally, at
-- the start of a predicate word only.
CREATE FUNCTION pg_temp.order_for(lexemes text []) RETURNS text LANGUAGE plpgsql AS $$
DECLARE got text;
BEGIN
    PERFORM set_config('densemem.team_id', 'aaaaaaaa-0000-0000-0000-000000000000', true);
    SET LOCAL ROLE densemem_app;
    SELECT string_agg(c.path_relationship_ids::text, ' ') INTO got
    FROM dm_private.discovery_candidate_paths(
        'aaaaaaaa-0000-0000-0000-000000000000', '{aaaaaaaa-0000-0000-0000-00000000ee01}', '{}', '{}', 20, 1, 200, 50,
        NULL, NULL, '{}', NULL, '{}', '{}', lexemes, '{}', pg_catalog.clock_timestamp() + interval '60 seconds') AS c;
    RESET ROLE;
    RETURN got;
END
$$;
SELECT isnt(pg_temp.order_for('{maint}'), pg_temp.order_for('{}'), 'a lexeme starting a predicate word reorders the paths');
SELECT is(pg_temp.order_for('{works_on}'), pg_temp.order_for('{work}'), 'a lexeme holding _ matches it literally');
SELECT is(pg_temp.order_for('{m%nt}'), pg_temp.order_for('{}'), 'a % in a lexeme is no wildcard');
SELECT is(pg_temp.order_for('{m_intains}'), pg_temp.order_for('{}'), 'an _ in a lexeme is no wildcard');

SELECT * FROM finish();
ROLLBACK;
