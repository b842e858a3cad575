-- The lifecycle state machine, exercised as the service role (densemem_app)
-- under row-level security: every (state, move) pair of evidence and
-- relationships either leads to the state this file expects, with a
-- transition row (from, to, who, why), or raises DM409 and changes nothing.
-- The expectations are written out here, independently of
-- dm_private.lifecycle_moves, so a wrong entry there fails this file.
BEGIN;
SELECT no_plan();

-- pgTAP keeps its bookkeeping in temp tables; let the service role write them.
GRANT ALL ON ALL TABLES IN SCHEMA pg_temp TO densemem_app;
GRANT ALL ON ALL SEQUENCES IN SCHEMA pg_temp TO densemem_app;

CREATE TEMP TABLE fixture AS
SELECT dm.ensure_team('lifecycle-team') AS team_id;
ALTER TABLE fixture ADD COLUMN profile_id uuid;
UPDATE fixture SET profile_id = dm.ensure_profile(team_id, 'lifecycle-author');
GRANT ALL ON fixture TO densemem_app;

CREATE TEMP TABLE expected_moves (kind text, move text, from_state text, to_state text);
INSERT INTO expected_moves VALUES
('evidence', 'quarantine', 'active', 'quarantined'),
('evidence', 'quarantine', 'supersession_pending', 'quarantined'),
('evidence', 'hold_for_supersession', 'active', 'supersession_pending'),
('evidence', 'supersede', 'active', 'superseded'),
('evidence', 'supersede', 'supersession_pending', 'superseded'),
('evidence', 'supersede', 'quarantined', 'superseded'),
('evidence', 'retract', 'active', 'retracted'),
('evidence', 'retract', 'quarantined', 'retracted'),
('evidence', 'retract', 'supersession_pending', 'retracted'),
('evidence', 'release', 'quarantined', 'active'),
('evidence', 'release', 'supersession_pending', 'active'),
('relationship', 'supersede', 'pending_evidence', 'superseded'),
('relationship', 'supersede', 'active', 'superseded'),
('relationship', 'supersede', 'disputed', 'superseded'),
('relationship', 'supersede', 'review_held', 'superseded'),
('relationship', 'supersede', 'quarantined', 'superseded'),
('relationship', 'retract', 'pending_evidence', 'retracted'),
('relationship', 'retract', 'active', 'retracted'),
('relationship', 'retract', 'disputed', 'retracted'),
('relationship', 'retract', 'review_held', 'retracted'),
('relationship', 'retract', 'quarantined', 'retracted'),
('relationship', 'quarantine', 'pending_evidence', 'quarantined'),
('relationship', 'quarantine', 'active', 'quarantined'),
('relationship', 'quarantine', 'disputed', 'quarantined'),
('relationship', 'quarantine', 'review_held', 'quarantined'),
('relationship', 'dispute', 'pending_evidence', 'disputed'),
('relationship', 'dispute', 'active', 'disputed'),
('relationship', 'hold_for_review', 'pending_evidence', 'review_held'),
('relationship', 'hold_for_review', 'active', 'review_held'),
('relationship', 'hold_for_review', 'disputed', 'review_held'),
-- release of a verified, supported relationship returns it to active
('relationship', 'release', 'quarantined', 'active'),
('relationship', 'release', 'disputed', 'active'),
('relationship', 'release', 'review_held', 'active'),
('relationship', 'verify_validated_claim', 'pending_evidence', 'active'),
('relationship', 'verify_validated_claim', 'active', 'active'),
('relationship', 'verify_validated_claim', 'disputed', 'active'),
('relationship', 'verify_validated_claim', 'review_held', 'active'),
('relationship', 'verify_fact', 'pending_evidence', 'active'),
('relationship', 'verify_fact', 'active', 'active'),
('relationship', 'verify_fact', 'disputed', 'active'),
('relationship', 'verify_fact', 'review_held', 'active'),
('relationship', 'verify_rejected', 'pending_evidence', 'rejected'),
('relationship', 'verify_rejected', 'active', 'rejected'),
('relationship', 'verify_rejected', 'disputed', 'rejected'),
('relationship', 'verify_rejected', 'review_held', 'rejected');
GRANT ALL ON expected_moves TO densemem_app;

-- Puts a fresh subject into from_state (a direct UPDATE under RLS, as the
-- test's set-up), performs the move through the public function, and
-- reports '<new state>|<transition row ok>' or 'ERROR <sqlstate>|<state after>'.
CREATE FUNCTION pg_temp.try_move(kind text, move text, from_state text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    team uuid := (SELECT f.team_id FROM fixture AS f);
    actor uuid := (SELECT f.profile_id FROM fixture AS f);
    ev uuid;
    ents uuid[];
    rel uuid;
    replacement uuid;
    subject uuid;
    after_state text;
    logged boolean;
    outcome text;
BEGIN
    ev := (dm.ingest_evidence(team, jsonb_build_object(
        'text', 'Ada maintains the lifecycle module ' || move || ' ' || from_state,
        'source', jsonb_build_object('external_id', 'lifecycle:' || kind || ':' || move || ':' || from_state,
                                     'kind', 'test'))))[1];
    IF kind = 'evidence' THEN
        UPDATE dm_private.evidence AS e
        SET state = from_state::dm_private.evidence_state,
            text = CASE WHEN from_state = 'erased' THEN NULL ELSE e.text END
        WHERE e.team_id = team AND e.evidence_id = ev;
        subject := ev;
    ELSE
        ents := dm.upsert_entities(team, '[{"name": "Ada", "kind": "person"}, {"name": "Lifecycle", "kind": "module"}]');
        rel := dm.assert_relationship(team, jsonb_build_object(
            'subject_entity_id', ents[1], 'predicate', 'maintains', 'object_entity_id', ents[2],
            'evidence_ids', jsonb_build_array(ev)));
        replacement := dm.assert_relationship(team, jsonb_build_object(
            'subject_entity_id', ents[1], 'predicate', 'maintains', 'object_value', 'the lifecycle module',
            'evidence_ids', jsonb_build_array(ev)));
        UPDATE dm_private.relationships AS r
        SET status = from_state::dm_private.relationship_status, tier = 'validated_claim'
        WHERE r.team_id = team AND r.relationship_id = rel;
        subject := rel;
    END IF;
    BEGIN
        IF kind = 'evidence' THEN
            PERFORM dm.move_evidence(team, subject, move, 'because ' || move);
        ELSIF move LIKE 'verify\_%' THEN
            PERFORM dm.record_verification(team, subject, substr(move, 8), 'because ' || move);
        ELSE
            PERFORM dm.move_relationship(team, subject, move, 'because ' || move,
                                         CASE WHEN move = 'supersede' THEN replacement END);
        END IF;
        outcome := NULL;
    EXCEPTION WHEN OTHERS THEN
        outcome := 'ERROR ' || SQLSTATE;
    END;
    IF kind = 'evidence' THEN
        SELECT e.state::text INTO after_state FROM dm_private.evidence AS e
        WHERE e.team_id = team AND e.evidence_id = subject;
    ELSE
        SELECT r.status::text INTO after_state FROM dm_private.relationships AS r
        WHERE r.team_id = team AND r.relationship_id = subject;
    END IF;
    SELECT EXISTS (
        SELECT 1 FROM dm_private.lifecycle_transitions AS t
        WHERE t.team_id = team AND t.subject_kind = kind::dm_private.subject_kind AND t.subject_id = subject
          AND t.from_status = from_state AND t.to_status = after_state AND t.actor_profile_id = actor
          AND t.reason LIKE '%' || replace(move, 'verify_', '') || '%') INTO logged;
    IF outcome IS NOT NULL THEN
        RETURN outcome || '|' || after_state || '|' || CASE WHEN logged THEN 'logged' ELSE 'not logged' END;
    END IF;
    RETURN after_state || '|' || CASE WHEN logged THEN 'logged' ELSE 'not logged' END;
END
$$;
GRANT EXECUTE ON FUNCTION pg_temp.try_move(text, text, text) TO densemem_app;

SELECT set_config('role', 'densemem_app', true),
       set_config('densemem.team_id', (SELECT team_id::text FROM fixture), true),
       set_config('densemem.profile_id', (SELECT profile_id::text FROM fixture), true);

-- Every pair: the expected state with a transition row, or DM409 with nothing changed and nothing logged.
SELECT is(
    pg_temp.try_move(pairs.kind, pairs.move, pairs.from_state),
    COALESCE(x.to_state || '|logged', 'ERROR DM409|' || pairs.from_state || '|not logged'),
    format('%s %s from %s', pairs.kind, pairs.move, pairs.from_state))
FROM (
    SELECT 'evidence' AS kind, m.move, s.state::text AS from_state
    FROM unnest(ARRAY['quarantine', 'hold_for_supersession', 'supersede', 'retract', 'release']) AS m (move)
    CROSS JOIN unnest(enum_range(NULL::dm_private.evidence_state)) AS s (state)
    UNION ALL
    SELECT 'relationship', m.move, s.state::text
    FROM unnest(ARRAY['supersede', 'retract', 'quarantine', 'dispute', 'hold_for_review', 'release',
                      'verify_validated_claim', 'verify_fact', 'verify_rejected']) AS m (move)
    CROSS JOIN unnest(enum_range(NULL::dm_private.relationship_status)) AS s (state)
) AS pairs
LEFT JOIN expected_moves AS x ON x.kind = pairs.kind AND x.move = pairs.move AND x.from_state = pairs.from_state
ORDER BY pairs.kind, pairs.move, pairs.from_state;

-- The machine in the database says exactly what this file expects.
SELECT set_eq(
    $$SELECT subject_kind, move, from_state, to_state FROM dm_private.lifecycle_moves()
      WHERE performed_by IN ('dm.move_evidence', 'dm.move_relationship', 'dm.record_verification')$$,
    $$SELECT kind, move, from_state, to_state FROM expected_moves$$,
    'dm_private.lifecycle_moves lists exactly the expected public moves');

-- A fixed relationship and evidence for the remaining checks.
CREATE TEMP TABLE subjects AS
SELECT (dm.ingest_evidence(f.team_id, '{"text": "Grace reviews the parser.", "source": {"external_id": "lifecycle:fixed", "kind": "test"}}'))[1] AS evidence_id,
       dm.upsert_entities(f.team_id, '[{"name": "Grace"}, {"name": "Parser"}]') AS entity_ids
FROM fixture AS f;
ALTER TABLE subjects ADD COLUMN relationship_id uuid;
UPDATE subjects AS s SET relationship_id = dm.assert_relationship(f.team_id, jsonb_build_object(
    'subject_entity_id', s.entity_ids[1], 'predicate', 'reviews', 'object_entity_id', s.entity_ids[2],
    'evidence_ids', jsonb_build_array(jsonb_build_object('evidence_id', s.evidence_id, 'span_start', 0, 'span_end', 5))))
FROM fixture AS f;

SELECT results_eq(
    $$SELECT r.tier::text, r.status::text FROM dm_private.relationships AS r, subjects AS s
      WHERE r.relationship_id = s.relationship_id$$,
    $$VALUES ('candidate', 'pending_evidence')$$,
    'an asserted relationship starts as candidate / pending_evidence');
SELECT results_eq(
    $$SELECT t.from_status, t.to_status, t.to_tier FROM dm_private.lifecycle_transitions AS t, subjects AS s
      WHERE t.subject_id = s.relationship_id$$,
    $$VALUES (NULL::text, 'pending_evidence'::text, 'candidate'::text)$$,
    'assertion writes its first transition row');

-- Verification: tier and status, the event and its transition.
SELECT lives_ok(
    $$SELECT dm.record_verification(f.team_id, s.relationship_id, 'validated_claim', 'the span says so')
      FROM fixture AS f, subjects AS s$$,
    'validated_claim is recorded');
SELECT results_eq(
    $$SELECT r.tier::text, r.status::text FROM dm_private.relationships AS r, subjects AS s
      WHERE r.relationship_id = s.relationship_id$$,
    $$VALUES ('validated_claim', 'active')$$,
    'validated_claim makes it active with that tier');
SELECT results_eq(
    $$SELECT v.decision::text, v.rationale, v.actor_profile_id = f.profile_id
      FROM dm_private.verification_events AS v, subjects AS s, fixture AS f
      WHERE v.relationship_id = s.relationship_id$$,
    $$VALUES ('validated_claim', 'the span says so', true)$$,
    'the verification event keeps decision, rationale and actor');
SELECT results_eq(
    $$SELECT t.from_status, t.to_status, t.from_tier, t.to_tier FROM dm_private.lifecycle_transitions AS t, subjects AS s
      WHERE t.subject_id = s.relationship_id ORDER BY t.created_at DESC LIMIT 1$$,
    $$VALUES ('pending_evidence', 'active', 'candidate', 'validated_claim')$$,
    'verification writes a transition with the tier change');
SELECT lives_ok(
    $$SELECT dm.record_verification(f.team_id, s.relationship_id, 'fact') FROM fixture AS f, subjects AS s$$,
    'an active validated claim can be promoted to fact');
SELECT results_eq(
    $$SELECT r.tier::text FROM dm_private.relationships AS r, subjects AS s WHERE r.relationship_id = s.relationship_id$$,
    $$VALUES ('fact')$$, 'the tier is fact');

-- Release restores active only to a verified relationship.
SELECT lives_ok($$SELECT dm.move_relationship(f.team_id, s.relationship_id, 'hold_for_review', 'second look')
                  FROM fixture AS f, subjects AS s$$, 'hold_for_review');
SELECT lives_ok($$SELECT dm.move_relationship(f.team_id, s.relationship_id, 'release') FROM fixture AS f, subjects AS s$$,
                'release');
SELECT results_eq(
    $$SELECT r.status::text FROM dm_private.relationships AS r, subjects AS s WHERE r.relationship_id = s.relationship_id$$,
    $$VALUES ('active')$$, 'a released verified relationship is active again');
UPDATE dm_private.relationships AS r SET tier = 'candidate', status = 'quarantined'
FROM subjects AS s WHERE r.relationship_id = s.relationship_id;
SELECT lives_ok($$SELECT dm.move_relationship(f.team_id, s.relationship_id, 'release') FROM fixture AS f, subjects AS s$$,
                'release of an unverified relationship');
SELECT results_eq(
    $$SELECT r.status::text FROM dm_private.relationships AS r, subjects AS s WHERE r.relationship_id = s.relationship_id$$,
    $$VALUES ('pending_evidence')$$, 'a released unverified relationship goes back to pending_evidence, not active');

-- Errors: their SQLSTATEs and messages.
SELECT throws_ok(
    $$SELECT dm.move_relationship(f.team_id, s.relationship_id, 'teleport') FROM fixture AS f, subjects AS s$$,
    '22023', NULL, 'an unknown move is 22023');
SELECT throws_ok(
    $$SELECT dm.move_relationship(f.team_id, s.relationship_id, 'verify_fact') FROM fixture AS f, subjects AS s$$,
    '22023', NULL, 'a verification cannot be smuggled in as a move');
SELECT throws_ok(
    $$SELECT dm.move_relationship(f.team_id, s.relationship_id, 'support_erased') FROM fixture AS f, subjects AS s$$,
    '22023', NULL, 'the erasure side effect is not a public move');
SELECT throws_ok(
    $$SELECT dm.move_evidence(f.team_id, s.evidence_id, 'erase') FROM fixture AS f, subjects AS s$$,
    '22023', NULL, 'erasure is not a move_evidence move');
SELECT throws_ok(
    $$SELECT dm.move_relationship(f.team_id, s.relationship_id, 'supersede') FROM fixture AS f, subjects AS s$$,
    '22023', 'supersede needs replacement_relationship_id', 'supersede without a replacement is 22023');
SELECT throws_ok(
    $$SELECT dm.move_relationship(f.team_id, s.relationship_id, 'supersede', NULL, s.relationship_id)
      FROM fixture AS f, subjects AS s$$,
    '22023', 'a relationship cannot supersede itself', 'self-supersession is 22023');
SELECT throws_ok(
    $$SELECT dm.move_relationship(f.team_id, s.relationship_id, 'supersede', NULL, gen_random_uuid())
      FROM fixture AS f, subjects AS s$$,
    'DM404', 'no such relationship in this team', 'an unknown replacement is DM404');
SELECT throws_ok(
    $$SELECT dm.move_relationship(f.team_id, gen_random_uuid(), 'retract') FROM fixture AS f$$,
    'DM404', 'no such relationship in this team', 'an unknown relationship is DM404');
SELECT throws_ok(
    $$SELECT dm.move_evidence(f.team_id, gen_random_uuid(), 'retract') FROM fixture AS f$$,
    'DM404', 'no such evidence in this team', 'unknown evidence is DM404');
SELECT throws_ok(
    $$SELECT dm.record_verification(f.team_id, gen_random_uuid(), 'fact') FROM fixture AS f$$,
    'DM404', 'no such relationship in this team', 'verifying an unknown relationship is DM404');
SELECT throws_ok(
    $$SELECT dm.record_verification(f.team_id, s.relationship_id, 'probably') FROM fixture AS f, subjects AS s$$,
    '22023', NULL, 'an unknown decision is 22023');
SELECT throws_ok(
    $$SELECT dm.move_evidence(f.team_id, s.evidence_id, 'release') FROM fixture AS f, subjects AS s$$,
    'DM409', 'illegal evidence move: release is not allowed from state active', 'an illegal move names itself and the state');
SELECT throws_ok(
    $$SELECT dm.move_relationship('00000000-0000-0000-0000-000000000000', s.relationship_id, 'retract') FROM subjects AS s$$,
    '42501', NULL, 'another team id than the authenticated one is 42501');
SELECT throws_ok(
    $$SELECT dm.move_relationship(f.team_id, 'not-a-uuid', 'retract') FROM fixture AS f$$,
    '22P02', NULL, 'a malformed uuid is 22P02');

-- Verification needs unerased evidence.
CREATE TEMP TABLE unsupported AS
SELECT dm.assert_relationship(f.team_id, jsonb_build_object(
    'subject_entity_id', s.entity_ids[1], 'predicate', 'reviews', 'object_value', 'nothing in particular')) AS relationship_id
FROM fixture AS f, subjects AS s;
SELECT throws_ok(
    $$SELECT dm.record_verification(f.team_id, u.relationship_id, 'fact') FROM fixture AS f, unsupported AS u$$,
    'DM409', 'cannot accept a relationship without evidence', 'a relationship without evidence cannot be accepted');
SELECT lives_ok(
    $$SELECT dm.record_verification(f.team_id, u.relationship_id, 'rejected', 'no evidence') FROM fixture AS f, unsupported AS u$$,
    'it can be rejected');
SELECT results_eq(
    $$SELECT r.status::text, r.tier::text FROM dm_private.relationships AS r, unsupported AS u
      WHERE r.relationship_id = u.relationship_id$$,
    $$VALUES ('rejected', 'candidate')$$, 'rejected keeps the tier and sets status rejected');

-- Supersession records the replacement and prefers it in the recorded conflict.
CREATE TEMP TABLE correction AS
SELECT dm.assert_relationship(f.team_id, jsonb_build_object(
    'subject_entity_id', s.entity_ids[1], 'predicate', 'reviews', 'object_value', 'the lexer',
    'evidence_ids', jsonb_build_array(s.evidence_id))) AS relationship_id
FROM fixture AS f, subjects AS s;
UPDATE dm_private.relationships AS r SET status = 'active', tier = 'validated_claim'
FROM subjects AS s WHERE r.relationship_id = s.relationship_id;
SELECT lives_ok(
    $$SELECT dm.move_relationship(f.team_id, s.relationship_id, 'supersede', 'corrected', c.relationship_id)
      FROM fixture AS f, subjects AS s, correction AS c$$,
    'supersede with a replacement');
SELECT results_eq(
    $$SELECT r.status::text, r.superseded_by_relationship_id = c.relationship_id
      FROM dm_private.relationships AS r, subjects AS s, correction AS c WHERE r.relationship_id = s.relationship_id$$,
    $$VALUES ('superseded', true)$$, 'the superseded relationship points at its replacement');
SELECT results_eq(
    $$SELECT k.kind::text, k.preferred_relationship_id = c.relationship_id
      FROM dm_private.conflicts AS k, subjects AS s, correction AS c
      WHERE k.relationship_id = LEAST(s.relationship_id, c.relationship_id)
        AND k.conflicting_relationship_id = GREATEST(s.relationship_id, c.relationship_id)$$,
    $$VALUES ('object_mismatch', true)$$, 'the conflict between them prefers the correction; neither is deleted');
SELECT throws_ok(
    $$SELECT dm.move_relationship(f.team_id, s.relationship_id, 'release') FROM fixture AS f, subjects AS s$$,
    'DM409', NULL, 'superseded is terminal');

-- Transition rows are append-only for the service.
SELECT throws_ok(
    $$UPDATE dm_private.lifecycle_transitions SET reason = 'rewritten'$$,
    '42501', NULL, 'the service cannot rewrite transition history');

SELECT * FROM finish();
ROLLBACK;
