-- Stage 1d: verification decisions and lifecycle moves.
--
-- Every move is checked against dm_private.lifecycle_moves (the one list of
-- legal moves) and writes a lifecycle_transitions row: from, to, who, when,
-- why. An unknown ID and another team's ID both raise DM404 with the same
-- message, so a caller cannot probe for rows outside its team. Evidence moves
-- rewrite the evidence search document's eligibility mirror in the same
-- transaction.

-- Locks a relationship of the team for a change; DM404 when there is none.
CREATE OR REPLACE FUNCTION dm_private.lock_relationship(team uuid, relationship uuid)
RETURNS dm_private.relationships
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
DECLARE
    found dm_private.relationships;
BEGIN
    SELECT r.* INTO found
    FROM dm_private.relationships AS r
    WHERE r.team_id = team AND r.relationship_id = relationship
    FOR UPDATE;
    IF found.relationship_id IS NULL THEN
        RAISE EXCEPTION 'no such relationship in this team' USING ERRCODE = 'DM404';
    END IF;
    RETURN found;
END
$$;
COMMENT ON FUNCTION dm_private.lock_relationship(uuid, uuid) IS
'Returns the relationship locked FOR UPDATE; DM404 when it is not a relationship of the team (unknown and foreign IDs answer alike).';

-- Locks an evidence row of the team for a change; DM404 when there is none.
CREATE OR REPLACE FUNCTION dm_private.lock_evidence(team uuid, evidence uuid)
RETURNS dm_private.evidence
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
DECLARE
    found dm_private.evidence;
BEGIN
    SELECT e.* INTO found
    FROM dm_private.evidence AS e
    WHERE e.team_id = team AND e.evidence_id = evidence
    FOR UPDATE;
    IF found.evidence_id IS NULL THEN
        RAISE EXCEPTION 'no such evidence in this team' USING ERRCODE = 'DM404';
    END IF;
    RETURN found;
END
$$;
COMMENT ON FUNCTION dm_private.lock_evidence(uuid, uuid) IS
'Returns the evidence row locked FOR UPDATE; DM404 when it is not evidence of the team (unknown and foreign IDs answer alike).';

CREATE OR REPLACE FUNCTION dm.record_verification(
    team_id uuid, relationship_id uuid, decision text, rationale text DEFAULT NULL
)
RETURNS uuid
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
#variable_conflict use_column
DECLARE
    team constant uuid := record_verification.team_id;
    actor uuid;
    rel dm_private.relationships;
    target_status text;
    target_tier text;
    event_id uuid := pg_catalog.gen_random_uuid();
BEGIN
    actor := dm_private.require_active_profile(team);
    IF decision IS NULL OR decision NOT IN ('validated_claim', 'fact', 'rejected') THEN
        RAISE EXCEPTION 'decision must be validated_claim, fact or rejected, not %',
            COALESCE(pg_catalog.quote_literal(decision), 'NULL') USING ERRCODE = '22023';
    END IF;
    IF rationale IS NOT NULL AND pg_catalog.length(rationale) > 10000 THEN
        RAISE EXCEPTION 'rationale is longer than 10000 characters' USING ERRCODE = 'DM413';
    END IF;
    rel := dm_private.lock_relationship(team, record_verification.relationship_id);
    target_status := dm_private.resolve_move('relationship', 'verify_' || decision, 'dm.record_verification', rel.status::text);
    target_tier := CASE WHEN decision = 'rejected' THEN rel.tier::text ELSE decision END;
    IF decision <> 'rejected' AND NOT dm_private.relationship_has_live_support(team, rel.relationship_id) THEN
        RAISE EXCEPTION 'cannot accept a relationship without evidence'
            USING ERRCODE = 'DM409',
                  DETAIL = 'validated_claim and fact need at least one accepted, unerased evidence link',
                  HINT = 'assert a new relationship citing evidence';
    END IF;

    INSERT INTO dm_private.verification_events
        (team_id, verification_event_id, relationship_id, decision, rationale, actor_profile_id)
    VALUES (team, event_id, rel.relationship_id, decision::dm_private.verification_decision, rationale, actor);
    UPDATE dm_private.relationships AS r
    SET status = target_status::dm_private.relationship_status,
        tier = target_tier::dm_private.relationship_tier,
        updated_at = pg_catalog.now()
    WHERE r.team_id = team AND r.relationship_id = rel.relationship_id;
    PERFORM dm_private.record_transition(team, 'relationship', rel.relationship_id, rel.status::text, target_status,
                                         rel.tier::text, target_tier, actor, 'verification: ' || decision);
    RETURN event_id;
END
$$;
COMMENT ON FUNCTION dm.record_verification(uuid, uuid, text, text) IS
'Records a verifier decision on a relationship of the team: validated_claim or fact makes it status active with that tier (it needs unerased evidence); rejected makes it status rejected. Writes a verification event and a transition row; returns the event id. SQLSTATE 22023 unknown decision, DM404 no such relationship, DM409 illegal from its state.';
REVOKE ALL ON FUNCTION dm.record_verification(uuid, uuid, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm.record_verification(uuid, uuid, text, text) TO densemem_app;

CREATE OR REPLACE FUNCTION dm.move_relationship(
    team_id uuid, relationship_id uuid, move text, reason text DEFAULT NULL,
    replacement_relationship_id uuid DEFAULT NULL
)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
#variable_conflict use_column
DECLARE
    team constant uuid := move_relationship.team_id;
    actor uuid;
    rel dm_private.relationships;
    replacement dm_private.relationships;
    target_status text;
BEGIN
    actor := dm_private.require_active_profile(team);
    IF move = 'supersede' AND replacement_relationship_id IS NULL THEN
        RAISE EXCEPTION 'supersede needs replacement_relationship_id' USING ERRCODE = '22023';
    END IF;
    IF move IS DISTINCT FROM 'supersede' AND replacement_relationship_id IS NOT NULL THEN
        RAISE EXCEPTION 'replacement_relationship_id is only for supersede' USING ERRCODE = '22023';
    END IF;
    IF replacement_relationship_id = move_relationship.relationship_id THEN
        RAISE EXCEPTION 'a relationship cannot supersede itself' USING ERRCODE = '22023';
    END IF;
    rel := dm_private.lock_relationship(team, move_relationship.relationship_id);
    target_status := dm_private.resolve_move('relationship', move, 'dm.move_relationship', rel.status::text);

    IF move = 'supersede' THEN
        replacement := dm_private.lock_relationship(team, replacement_relationship_id);
        IF replacement.status IN ('retracted', 'superseded', 'rejected') THEN
            RAISE EXCEPTION 'the replacement relationship is %', replacement.status
                USING ERRCODE = 'DM409', DETAIL = 'a retracted, superseded or rejected relationship cannot replace another';
        END IF;
    ELSIF move = 'release' AND (rel.tier NOT IN ('validated_claim', 'fact')
                                OR NOT dm_private.relationship_has_live_support(team, rel.relationship_id)) THEN
        -- Release restores eligibility only to what was verified and is still supported.
        target_status := 'pending_evidence';
    END IF;

    UPDATE dm_private.relationships AS r
    SET status = target_status::dm_private.relationship_status,
        superseded_by_relationship_id = CASE WHEN move = 'supersede' THEN replacement.relationship_id
                                             ELSE r.superseded_by_relationship_id END,
        updated_at = pg_catalog.now()
    WHERE r.team_id = team AND r.relationship_id = rel.relationship_id;

    IF move = 'supersede' THEN
        -- A recorded disagreement between the two now has a preferred side;
        -- neither relationship is deleted.
        UPDATE dm_private.conflicts AS c
        SET preferred_relationship_id = replacement.relationship_id
        WHERE c.team_id = team
          AND c.relationship_id = LEAST(rel.relationship_id, replacement.relationship_id)
          AND c.conflicting_relationship_id = GREATEST(rel.relationship_id, replacement.relationship_id);
    END IF;

    PERFORM dm_private.record_transition(team, 'relationship', rel.relationship_id, rel.status::text, target_status,
                                         rel.tier::text, rel.tier::text, actor, COALESCE(reason, move));
END
$$;
COMMENT ON FUNCTION dm.move_relationship(uuid, uuid, text, text, uuid) IS
'Moves a relationship of the team through its lifecycle: supersede (needs replacement_relationship_id), retract, quarantine, dispute, hold_for_review, release (back to active when verified and supported by unerased evidence, else pending_evidence). Writes a transition row. SQLSTATE 22023 unknown move or bad arguments, DM404 no such relationship, DM409 illegal from its state.';
REVOKE ALL ON FUNCTION dm.move_relationship(uuid, uuid, text, text, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm.move_relationship(uuid, uuid, text, text, uuid) TO densemem_app;

CREATE OR REPLACE FUNCTION dm.move_evidence(team_id uuid, evidence_id uuid, move text, reason text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
#variable_conflict use_column
DECLARE
    team constant uuid := move_evidence.team_id;
    actor uuid;
    ev dm_private.evidence;
    target_state text;
BEGIN
    actor := dm_private.require_active_profile(team);
    ev := dm_private.lock_evidence(team, move_evidence.evidence_id);
    target_state := dm_private.resolve_move('evidence', move, 'dm.move_evidence', ev.state::text);
    UPDATE dm_private.evidence AS e
    SET state = target_state::dm_private.evidence_state,
        updated_at = pg_catalog.now()
    WHERE e.team_id = team AND e.evidence_id = ev.evidence_id;
    PERFORM dm_private.record_transition(team, 'evidence', ev.evidence_id, ev.state::text, target_state,
                                         NULL, NULL, actor, COALESCE(reason, move));
    PERFORM dm_private.sync_evidence_documents(team, ARRAY[ev.evidence_id]);
END
$$;
COMMENT ON FUNCTION dm.move_evidence(uuid, uuid, text, text) IS
'Moves evidence of the team through its lifecycle: quarantine, hold_for_supersession, supersede, retract, release (back to active). Only active evidence is recallable; the search document''s eligibility mirror changes in the same transaction. Writes a transition row. SQLSTATE 22023 unknown move, DM404 no such evidence, DM409 illegal from its state.';
REVOKE ALL ON FUNCTION dm.move_evidence(uuid, uuid, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm.move_evidence(uuid, uuid, text, text) TO densemem_app;

REVOKE ALL ON FUNCTION dm_private.lock_relationship(uuid, uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.lock_evidence(uuid, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.lock_relationship(uuid, uuid) TO densemem_app;
GRANT EXECUTE ON FUNCTION dm_private.lock_evidence(uuid, uuid) TO densemem_app;
