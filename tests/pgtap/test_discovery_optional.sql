-- Optional discovery fields: related hypotheses and communities each live
-- in their own field, never replace or reorder discovery paths (or direct
-- results, which discovery never sees), and a failing lookup omits its field
-- and is recorded in "degraded". dm.refresh_communities derives clusters of
-- eligible relationships with a deterministic summary.
BEGIN;
SELECT plan(20);

-- Fixture: two teams with shared names (tests/pgtap/fixtures/discovery_two_teams.sql).
DO $fixture$ BEGIN EXECUTE pg_catalog.pg_read_file(
    pg_catalog.current_setting('densemem_test.pgtap_dir') || '/fixtures/discovery_two_teams.sql'); END $fixture$;

-- Hypotheses: h1 proposed (team A, current revision), h2 retired, h3 linked
-- to a superseded revision, h4 refuted, hb team B.
INSERT INTO dm_private.source_revisions (team_id, source_id, revision_id, revision_label, revision_number, is_current)
VALUES ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-00000000005a',
        'aaaaaaaa-0000-0000-0000-0000000005a0', 'v0', 0, false);
INSERT INTO dm_private.hypotheses (team_id, hypothesis_id, statement, status, owner_profile_id, source_id, revision_id) VALUES
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000d1',
     'Mark may move from Dense-Mem to the wiki team', 'proposed', 'aaaaaaaa-0000-0000-0000-0000000000a1',
     'aaaaaaaa-0000-0000-0000-00000000005a', 'aaaaaaaa-0000-0000-0000-0000000005a1'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000d2',
     'Mark works on everything', 'retired', 'aaaaaaaa-0000-0000-0000-0000000000a1', NULL, NULL),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000d3',
     'Mark used to work on Redis', 'proposed', 'aaaaaaaa-0000-0000-0000-0000000000a2',
     'aaaaaaaa-0000-0000-0000-00000000005a', 'aaaaaaaa-0000-0000-0000-0000000005a0'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000d4',
     'Mark works on nothing', 'refuted', 'aaaaaaaa-0000-0000-0000-0000000000a2', NULL, NULL),
    ('bbbbbbbb-0000-0000-0000-000000000000', 'bbbbbbbb-0000-0000-0000-0000000000d1',
     'Mark works on the Secret Project full time', 'supported', 'bbbbbbbb-0000-0000-0000-0000000000b1', NULL, NULL);

CREATE FUNCTION pg_temp.disc(query text, request jsonb DEFAULT '{}', patch jsonb DEFAULT '{}',
                             results uuid [] DEFAULT '{}')
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE answer jsonb;
BEGIN
    PERFORM set_config('role', 'densemem_app', true),
            set_config('densemem.team_id', 'aaaaaaaa-0000-0000-0000-000000000000', true);
    answer := dm_private.discovery_for_recall('aaaaaaaa-0000-0000-0000-000000000000', query, '{}'::jsonb, results,
        request,
        '{"discovery": {"seed_count": 5, "fan_out": 20, "max_edges": 200, "max_depth": 2, "max_paths": 10,
                        "max_path_bytes": 20000, "time_budget_ms": 60000},
          "budgets": {"default_limit": 10},
          "hypotheses": {"enabled": false, "limit": 3}, "communities": {"enabled": false, "limit": 3}}'::jsonb
        || patch);
    PERFORM set_config('role', 'postgres', true);
    RETURN answer;
END
$$;
CREATE TEMPORARY TABLE answers (name text PRIMARY KEY, answer jsonb);
INSERT INTO answers VALUES
    ('plain', pg_temp.disc('What does Mark work on?')),
    ('asked', pg_temp.disc('What does Mark work on?', '{"include_hypotheses": true}')),
    ('profile', pg_temp.disc('What does Mark work on?', '{}', '{"hypotheses": {"enabled": true, "limit": 3}}'));

-- ---------------------------------------------------------------- hypotheses

SELECT ok(NOT ((SELECT answer FROM answers WHERE name = 'plain') ? 'related_hypotheses'),
          'no related_hypotheses unless the request or the profile asks');
SELECT is((SELECT array_agg(h ->> 'hypothesis_id' ORDER BY h ->> 'hypothesis_id')
           FROM jsonb_array_elements((SELECT answer FROM answers WHERE name = 'asked') -> 'related_hypotheses') AS h),
          ARRAY['aaaaaaaa-0000-0000-0000-0000000000d1'],
          'related hypotheses: same team, not retired or refuted, current source revision only');
SELECT is((SELECT answer FROM answers WHERE name = 'profile') -> 'related_hypotheses',
          (SELECT answer FROM answers WHERE name = 'asked') -> 'related_hypotheses',
          'the profile switch asks for hypotheses as the request flag does');
SELECT is((SELECT answer FROM answers WHERE name = 'asked') -> 'related_hypotheses' -> 0,
          '{"hypothesis_id": "aaaaaaaa-0000-0000-0000-0000000000d1", "statement": "Mark may move from Dense-Mem to the wiki team",
            "status": "proposed", "source_external_id": "chat:1"}'::jsonb,
          'a related hypothesis is labelled by status, with no evidence IDs and no tier');
SELECT is((SELECT answer FROM answers WHERE name = 'asked') -> 'discovery_paths',
          (SELECT answer FROM answers WHERE name = 'plain') -> 'discovery_paths',
          'hypotheses never replace or reorder discovery paths');
SELECT ok(NOT ((SELECT answer FROM answers WHERE name = 'asked') -> 'discovery_paths')::text LIKE '%hypothes%',
          'hypotheses never appear inside discovery paths');
SELECT is(jsonb_array_length(pg_temp.disc('What does Mark work on?', '{"include_hypotheses": true}',
              '{"hypotheses": {"enabled": false, "limit": 0}}') -> 'related_hypotheses'), 0,
          'the hypotheses limit bounds the field');

-- A failing hypothesis lookup omits the field and is recorded.
REVOKE SELECT ON dm_private.hypotheses FROM densemem_app;
INSERT INTO answers VALUES ('hyp_broken', pg_temp.disc('What does Mark work on?', '{"include_hypotheses": true}'));
GRANT SELECT ON dm_private.hypotheses TO densemem_app;
SELECT ok(NOT ((SELECT answer FROM answers WHERE name = 'hyp_broken') ? 'related_hypotheses'),
          'a failed hypothesis lookup omits related_hypotheses');
SELECT is((SELECT answer FROM answers WHERE name = 'hyp_broken') -> 'degraded', '["hypotheses"]'::jsonb,
          'a failed hypothesis lookup is recorded as degraded');
SELECT is((SELECT answer FROM answers WHERE name = 'hyp_broken') -> 'discovery_paths',
          (SELECT answer FROM answers WHERE name = 'plain') -> 'discovery_paths',
          'discovery paths survive a failed hypothesis lookup');

-- ---------------------------------------------------------------- communities

SET LOCAL ROLE densemem_app;
SELECT set_config('densemem.team_id', 'aaaaaaaa-0000-0000-0000-000000000000', true);
SELECT is(dm.refresh_communities('aaaaaaaa-0000-0000-0000-000000000000'), 1,
          'team A''s eligible relationships form one connected community');
CREATE TEMPORARY TABLE first_refresh AS
SELECT community_id, summary, entity_count, relationship_count FROM dm_private.communities;
SELECT is((SELECT summary FROM first_refresh),
          'Dense-Mem, Mark, PostgreSQL and 3 more entities; 6 relationships: uses (2), works_on (2), maintains (1)',
          'the summary is built from entity names by degree and predicate counts');
SELECT is(dm.refresh_communities('aaaaaaaa-0000-0000-0000-000000000000'), 1, 'refreshing again');
SELECT results_eq('SELECT community_id, summary, entity_count, relationship_count FROM dm_private.communities',
                  'SELECT community_id, summary, entity_count, relationship_count FROM first_refresh',
                  'a refresh is deterministic: same id, same summary');
SELECT is((SELECT count(*) FROM dm_private.community_relationships AS cr
           WHERE cr.relationship_id = 'aaaaaaaa-0000-0000-0000-0000000000f6'), 0::bigint,
          'a candidate relationship is not part of any community');
RESET ROLE;
SELECT is((SELECT count(*) FROM dm_private.communities WHERE team_id = 'bbbbbbbb-0000-0000-0000-000000000000'), 0::bigint,
          'refreshing team A writes nothing for team B');

INSERT INTO answers VALUES
    ('communities', pg_temp.disc('What does Mark work on?', '{}', '{"communities": {"enabled": true, "limit": 3}}')),
    ('full', pg_temp.disc('What does Mark work on?', '{"limit": 2}', '{"communities": {"enabled": true, "limit": 3}}',
                          ARRAY['aaaaaaaa-0000-0000-0000-0000000000e1', 'aaaaaaaa-0000-0000-0000-0000000000e2']::uuid []));
SELECT is((SELECT answer FROM answers WHERE name = 'communities') -> 'communities' -> 0 ->> 'summary',
          (SELECT summary FROM first_refresh), 'with the switch on, the community near the query is offered in its own field');
SELECT ok(NOT ((SELECT answer FROM answers WHERE name = 'plain') ? 'communities'), 'communities are off by default');
SELECT is(jsonb_array_length((SELECT answer FROM answers WHERE name = 'full') -> 'communities'), 0,
          'communities only fill result slots the direct results left unused');

REVOKE SELECT ON dm_private.community_members FROM densemem_app;
INSERT INTO answers VALUES
    ('com_broken', pg_temp.disc('What does Mark work on?', '{}', '{"communities": {"enabled": true, "limit": 3}}'));
GRANT SELECT ON dm_private.community_members TO densemem_app;
SELECT ok(NOT ((SELECT answer FROM answers WHERE name = 'com_broken') ? 'communities')
          AND (SELECT answer FROM answers WHERE name = 'com_broken') -> 'degraded' = '["communities"]'::jsonb,
          'a failed community lookup omits the field and is recorded as degraded');

SELECT * FROM finish();
ROLLBACK;
