-- dm.trace_memory: one relationship from the authoritative tables, with its
-- accepted evidence spans (text only for eligible evidence, erased evidence
-- as a tombstone), verification events, transitions, supersession lineage
-- and conflicts. Another team's ID answers exactly like a missing one.
BEGIN;
SELECT plan(25);

-- Fixture: two teams with shared names (tests/pgtap/fixtures/discovery_two_teams.sql).
DO $fixture$ BEGIN EXECUTE pg_catalog.pg_read_file(
    pg_catalog.current_setting('densemem_test.pgtap_dir') || '/fixtures/discovery_two_teams.sql'); END $fixture$;

-- More history for r1: an erased evidence (tombstone), a quarantined one,
-- a non-accepted link, two verification events and transitions.
INSERT INTO dm_private.evidence (team_id, evidence_id, source_id, revision_id, owner_profile_id, text, content_hash, state)
VALUES ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000e7',
        'aaaaaaaa-0000-0000-0000-00000000005a', 'aaaaaaaa-0000-0000-0000-0000000005a1',
        'aaaaaaaa-0000-0000-0000-0000000000a1', NULL, sha256('EVTEXT-7 gone'::bytea), 'erased'),
       ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000e8',
        'aaaaaaaa-0000-0000-0000-00000000005a', 'aaaaaaaa-0000-0000-0000-0000000005a1',
        'aaaaaaaa-0000-0000-0000-0000000000a2', 'EVTEXT-8 held back', sha256('EVTEXT-8'::bytea), 'quarantined');
INSERT INTO dm_private.erasure_tombstones (team_id, evidence_id, content_hash, erased_by_profile_id, reason)
VALUES ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000e7', sha256('EVTEXT-7 gone'::bytea),
        'aaaaaaaa-0000-0000-0000-0000000000a1', 'EVTEXT-7 erasure request');
INSERT INTO dm_private.relationship_evidence (team_id, relationship_id, evidence_id, accepted) VALUES
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000f1', 'aaaaaaaa-0000-0000-0000-0000000000e7', true),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000f1', 'aaaaaaaa-0000-0000-0000-0000000000e8', true),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000f1', 'aaaaaaaa-0000-0000-0000-0000000000e4', false);
INSERT INTO dm_private.verification_events (team_id, verification_event_id, relationship_id, decision, rationale,
                                            actor_profile_id, created_at) VALUES
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000b1', 'aaaaaaaa-0000-0000-0000-0000000000f1',
     'validated_claim', 'checked e1', 'aaaaaaaa-0000-0000-0000-0000000000a3', '2026-01-01T10:00:00Z'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000000b2', 'aaaaaaaa-0000-0000-0000-0000000000f1',
     'fact', 'confirmed twice', 'aaaaaaaa-0000-0000-0000-0000000000a3', '2026-01-02T10:00:00Z');
INSERT INTO dm_private.lifecycle_transitions (team_id, transition_id, subject_kind, subject_id, from_status, to_status,
                                              from_tier, to_tier, actor_profile_id, reason, created_at) VALUES
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000001a1', 'relationship',
     'aaaaaaaa-0000-0000-0000-0000000000f1', NULL, 'pending_evidence', NULL, 'candidate',
     'aaaaaaaa-0000-0000-0000-0000000000a1', 'asserted', '2026-01-01T09:00:00Z'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000001a2', 'relationship',
     'aaaaaaaa-0000-0000-0000-0000000000f1', 'pending_evidence', 'active', 'candidate', 'validated_claim',
     'aaaaaaaa-0000-0000-0000-0000000000a3', 'verified', '2026-01-01T10:00:00Z'),
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-0000000001a3', 'relationship',
     'aaaaaaaa-0000-0000-0000-0000000000f1', 'active', 'active', 'validated_claim', 'fact',
     'aaaaaaaa-0000-0000-0000-0000000000a3', 'verified', '2026-01-02T10:00:00Z');
-- Lineage: r10 (Mark works_on Redis) superseded by r11 (Mark works_on PostgreSQL), superseded by r12.
INSERT INTO dm_private.relationships (team_id, relationship_id, subject_entity_id, predicate, object_entity_id,
                                      owner_profile_id, tier, status) VALUES
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-000000000f12', 'aaaaaaaa-0000-0000-0000-00000000ee01',
     'leads', 'aaaaaaaa-0000-0000-0000-00000000ee06', 'aaaaaaaa-0000-0000-0000-0000000000a1', 'fact', 'active');
INSERT INTO dm_private.relationships (team_id, relationship_id, subject_entity_id, predicate, object_entity_id,
                                      owner_profile_id, tier, status, superseded_by_relationship_id) VALUES
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-000000000f11', 'aaaaaaaa-0000-0000-0000-00000000ee01',
     'leads', 'aaaaaaaa-0000-0000-0000-00000000ee03', 'aaaaaaaa-0000-0000-0000-0000000000a2', 'fact', 'superseded',
     'aaaaaaaa-0000-0000-0000-000000000f12');
INSERT INTO dm_private.relationships (team_id, relationship_id, subject_entity_id, predicate, object_entity_id,
                                      owner_profile_id, tier, status, superseded_by_relationship_id) VALUES
    ('aaaaaaaa-0000-0000-0000-000000000000', 'aaaaaaaa-0000-0000-0000-000000000f10', 'aaaaaaaa-0000-0000-0000-00000000ee01',
     'leads', 'aaaaaaaa-0000-0000-0000-00000000ee04', 'aaaaaaaa-0000-0000-0000-0000000000a2', 'validated_claim', 'superseded',
     'aaaaaaaa-0000-0000-0000-000000000f11');

CREATE FUNCTION pg_temp.trace(rel uuid, scopes text DEFAULT '') RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE answer jsonb;
BEGIN
    PERFORM set_config('role', 'densemem_app', true),
            set_config('densemem.team_id', 'aaaaaaaa-0000-0000-0000-000000000000', true),
            set_config('densemem.profile_id', 'aaaaaaaa-0000-0000-0000-0000000000a1', true),
            set_config('densemem.scopes', scopes, true);
    answer := dm.trace_memory(rel, 'aaaaaaaa-0000-0000-0000-000000000000');
    PERFORM set_config('role', 'postgres', true);
    RETURN answer;
END
$$;
CREATE TEMPORARY TABLE traces (name text PRIMARY KEY, answer jsonb);
INSERT INTO traces VALUES ('r1', pg_temp.trace('aaaaaaaa-0000-0000-0000-0000000000f1'));
CREATE FUNCTION pg_temp.ev(answer jsonb, id uuid) RETURNS jsonb LANGUAGE sql AS $$
    SELECT e FROM jsonb_array_elements(answer -> 'evidence') AS e WHERE (e ->> 'evidence_id')::uuid = id
$$;

SELECT has_function('dm', 'trace_memory', ARRAY['uuid', 'uuid'], 'dm.trace_memory(relationship_id, team_id) exists');
SELECT is(((SELECT answer FROM traces WHERE name = 'r1') -> 'relationship') - 'created_at' - 'updated_at' - 'known_from',
          '{"relationship_id": "aaaaaaaa-0000-0000-0000-0000000000f1",
            "subject": {"entity_id": "aaaaaaaa-0000-0000-0000-00000000ee01", "name": "Mark"},
            "predicate": "works_on",
            "object": {"entity_id": "aaaaaaaa-0000-0000-0000-00000000ee02", "name": "Dense-Mem"},
            "polarity": "+",
            "owner_profile": {"profile_id": "aaaaaaaa-0000-0000-0000-0000000000a1", "name": "alice", "state": "active"},
            "tier": "fact", "status": "active"}'::jsonb,
          'the relationship record with endpoints, owner, tier and status');
SELECT is(pg_temp.ev((SELECT answer FROM traces WHERE name = 'r1'), 'aaaaaaaa-0000-0000-0000-0000000000e1') ->> 'span_text',
          'Mark works on Dense-Mem', 'the accepted span of eligible evidence, with its text');
SELECT is(pg_temp.ev((SELECT answer FROM traces WHERE name = 'r1'), 'aaaaaaaa-0000-0000-0000-0000000000e1') ->> 'text',
          'EVTEXT-1 Mark works on Dense-Mem every day.', 'the whole evidence text of eligible evidence');
SELECT ok(NOT (pg_temp.ev((SELECT answer FROM traces WHERE name = 'r1'), 'aaaaaaaa-0000-0000-0000-0000000000e7') ? 'text')
          AND pg_temp.ev((SELECT answer FROM traces WHERE name = 'r1'), 'aaaaaaaa-0000-0000-0000-0000000000e7')
              #>> '{tombstone,content_sha256}' = encode(sha256('EVTEXT-7 gone'::bytea), 'hex'),
          'erased evidence shows as a tombstone (hash, time), without text');
SELECT ok((SELECT answer FROM traces WHERE name = 'r1')::text NOT LIKE '%EVTEXT-7%',
          'nothing of the erased evidence or its erasure reason is shown');
SELECT ok(NOT (pg_temp.ev((SELECT answer FROM traces WHERE name = 'r1'), 'aaaaaaaa-0000-0000-0000-0000000000e8') ? 'text')
          AND pg_temp.ev((SELECT answer FROM traces WHERE name = 'r1'), 'aaaaaaaa-0000-0000-0000-0000000000e8') ->> 'state' = 'quarantined',
          'ineligible (quarantined) evidence is listed with its state and without text');
SELECT ok(pg_temp.ev((SELECT answer FROM traces WHERE name = 'r1'), 'aaaaaaaa-0000-0000-0000-0000000000e4') IS NULL,
          'a link that was not accepted is not shown as support');
SELECT is((SELECT array_agg(v ->> 'decision' ORDER BY n)
           FROM jsonb_array_elements((SELECT answer FROM traces WHERE name = 'r1') -> 'verification_events')
                WITH ORDINALITY AS x (v, n)),
          ARRAY['validated_claim', 'fact'], 'verification events in order');
SELECT is((SELECT answer FROM traces WHERE name = 'r1') #>> '{verification_events,1,rationale}', 'confirmed twice',
          'trace shows verifier rationale (recall never does)');
SELECT is((SELECT array_agg(t ->> 'to_status' || '/' || (t ->> 'to_tier') ORDER BY n)
           FROM jsonb_array_elements((SELECT answer FROM traces WHERE name = 'r1') -> 'transitions') WITH ORDINALITY AS x (t, n)),
          ARRAY['pending_evidence/candidate', 'active/validated_claim', 'active/fact'], 'lifecycle transitions in order');
SELECT is((SELECT answer FROM traces WHERE name = 'r1') #>> '{conflicts,0,other,relationship_id}',
          'aaaaaaaa-0000-0000-0000-0000000000f5', 'the recorded conflict with the other relationship');
SELECT is((SELECT answer FROM traces WHERE name = 'r1') #>> '{conflicts,0,other,owner_profile,name}', 'bob',
          'the conflicting relationship names its author');

-- Conflicts respect predicate cardinality (migration 0031): the fixture's
-- team A declares works_on single-valued; by default it is multi-valued.
DELETE FROM dm_private.predicate_cardinalities
WHERE team_id = 'aaaaaaaa-0000-0000-0000-000000000000' AND predicate = 'works_on';
SELECT is(jsonb_array_length(pg_temp.trace('aaaaaaaa-0000-0000-0000-0000000000f1') -> 'conflicts'), 0,
          'different objects of a multi-valued predicate are not a conflict in the trace');
UPDATE dm_private.conflicts SET preferred_relationship_id = 'aaaaaaaa-0000-0000-0000-0000000000f5'
WHERE conflict_id = 'aaaaaaaa-0000-0000-0000-0000000000c1';
SELECT is(pg_temp.trace('aaaaaaaa-0000-0000-0000-0000000000f1') #>> '{conflicts,0,preferred_relationship_id}',
          'aaaaaaaa-0000-0000-0000-0000000000f5',
          'a conflict resolved by a correction (preferred side) stays in the trace whatever the cardinality');
UPDATE dm_private.conflicts SET preferred_relationship_id = NULL
WHERE conflict_id = 'aaaaaaaa-0000-0000-0000-0000000000c1';
INSERT INTO dm_private.predicate_cardinalities (team_id, predicate, cardinality) VALUES
    ('aaaaaaaa-0000-0000-0000-000000000000', 'works_on', 'single');

-- Lineage both ways.
INSERT INTO traces VALUES ('r11', pg_temp.trace('aaaaaaaa-0000-0000-0000-000000000f11'));
SELECT is((SELECT answer FROM traces WHERE name = 'r11') #>> '{lineage,supersedes,0,relationship_id}',
          'aaaaaaaa-0000-0000-0000-000000000f10', 'lineage: what this relationship replaced');
SELECT is((SELECT answer FROM traces WHERE name = 'r11') #>> '{lineage,superseded_by,0,relationship_id}',
          'aaaaaaaa-0000-0000-0000-000000000f12', 'lineage: what replaced it');
SELECT is((SELECT jsonb_array_length(answer #> '{lineage,superseded_by}') FROM traces WHERE name = 'r11'), 1,
          'lineage stops at the end of the chain');
SELECT is(jsonb_path_query_array(pg_temp.trace('aaaaaaaa-0000-0000-0000-000000000f10'),
                                 '$.lineage.superseded_by[*].relationship_id'),
          '["aaaaaaaa-0000-0000-0000-000000000f11", "aaaaaaaa-0000-0000-0000-000000000f12"]'::jsonb,
          'a superseded relationship stays traceable, with its whole forward lineage');

-- Whoever wrote it, a same-team relationship is traceable.
SELECT is(pg_temp.trace('aaaaaaaa-0000-0000-0000-0000000000f5') #>> '{relationship,owner_profile,name}', 'bob',
          'alice traces bob''s relationship');
UPDATE dm_private.profiles SET state = 'disabled' WHERE profile_id = 'aaaaaaaa-0000-0000-0000-0000000000a2';
SELECT is(pg_temp.trace('aaaaaaaa-0000-0000-0000-0000000000f3') #>> '{relationship,owner_profile,state}', 'disabled',
          'a relationship of a disabled profile stays traceable by ID');
UPDATE dm_private.profiles SET state = 'active' WHERE profile_id = 'aaaaaaaa-0000-0000-0000-0000000000a2';

-- No existence leak: another team's ID and a random ID answer the same.
SELECT throws_ok($$SELECT pg_temp.trace('bbbbbbbb-0000-0000-0000-0000000000f1')$$, 'DM404', 'relationship not found',
                 'another team''s relationship ID answers DM404');
SELECT throws_ok($$SELECT pg_temp.trace(gen_random_uuid())$$, 'DM404', 'relationship not found',
                 'a missing relationship ID answers exactly the same');

-- Authoritative tables only: search documents play no part.
REVOKE SELECT ON dm_private.search_documents FROM densemem_app;
SELECT is(pg_temp.trace('aaaaaaaa-0000-0000-0000-0000000000f1') - 'nothing', (SELECT answer FROM traces WHERE name = 'r1'),
          'trace reads no search document');
GRANT SELECT ON dm_private.search_documents TO densemem_app;

-- A read failure is an error, never an empty or synthesized history.
REVOKE SELECT ON dm_private.verification_events FROM densemem_app;
SELECT throws_ok($$SELECT pg_temp.trace('aaaaaaaa-0000-0000-0000-0000000000f1')$$, '42501', NULL,
                 'a failed read of the verification history fails the trace');
GRANT SELECT ON dm_private.verification_events TO densemem_app;

SELECT * FROM finish();
ROLLBACK;
