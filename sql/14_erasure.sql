-- Stage 1e: erasure, the GDPR path.
--
-- In one transaction the text leaves every place the write path put it:
--   * the evidence row: text NULL, state erased (content hash kept);
--   * its search document: body '', tsvector empty, version bumped, and its
--     vectors deleted (document_embeddings rows of every contract);
--   * relationship_evidence links into it keep only the two IDs: the span
--     offsets, which point into text that no longer exists, become NULL;
--   * the team's BM25 statistics are compacted, so a lexeme only the erased
--     text held leaves them;
--   * a tombstone records the content hash, who and when (and the reason).
-- A relationship that was active and is now supported only by erased
-- evidence loses eligibility: it moves to status pending_evidence (tier
-- kept, for history) with a transition row 'support_erased'. It can become
-- active again only by a new verification, which needs unerased evidence.
-- Older transaction versions of the rows remain until VACUUM reclaims them.

CREATE OR REPLACE FUNCTION dm.erase_evidence(team_id uuid, evidence_id uuid, reason text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
#variable_conflict use_column
DECLARE
    team constant uuid := erase_evidence.team_id;
    actor uuid;
    ev dm_private.evidence;
    target_state text;
    orphan record;
BEGIN
    actor := dm_private.require_active_profile(team);
    IF reason IS NOT NULL AND pg_catalog.length(reason) > 10000 THEN
        RAISE EXCEPTION 'reason is longer than 10000 characters' USING ERRCODE = 'DM413';
    END IF;
    ev := dm_private.lock_evidence(team, erase_evidence.evidence_id);
    target_state := dm_private.resolve_move('evidence', 'erase', 'dm.erase_evidence', ev.state::text);

    INSERT INTO dm_private.erasure_tombstones (team_id, evidence_id, content_hash, erased_by_profile_id, reason)
    VALUES (team, ev.evidence_id, ev.content_hash, actor, erase_evidence.reason);

    UPDATE dm_private.evidence AS e
    SET text = NULL,
        state = target_state::dm_private.evidence_state,
        updated_at = pg_catalog.now()
    WHERE e.team_id = team AND e.evidence_id = ev.evidence_id;

    UPDATE dm_private.relationship_evidence AS re
    SET span_start = NULL, span_end = NULL
    WHERE re.team_id = team AND re.evidence_id = ev.evidence_id;

    -- Body '' and an empty tsvector, version bumped (pending by the contract).
    PERFORM dm_private.sync_evidence_documents(team, ARRAY[ev.evidence_id]);
    -- The BM25 statistics hold the erased words as lexemes until their
    -- entering and leaving deltas are folded: fold the team's now, so a word
    -- no other document holds leaves the statistics in this transaction.
    PERFORM dm.compact_search_statistics(team);
    DELETE FROM dm_private.document_embeddings AS v
    USING dm_private.search_documents AS d
    WHERE v.team_id = team AND d.team_id = team
      AND v.document_id = d.document_id
      AND d.subject_kind = 'evidence' AND d.subject_id = ev.evidence_id;

    PERFORM dm_private.record_transition(team, 'evidence', ev.evidence_id, ev.state::text, target_state,
                                         NULL, NULL, actor, COALESCE(erase_evidence.reason, 'erased'));

    -- Active relationships left with no unerased support leave discovery.
    FOR orphan IN
        SELECT r.relationship_id, r.status::text AS status, r.tier::text AS tier
        FROM dm_private.relationship_evidence AS re
        JOIN dm_private.relationships AS r ON r.team_id = re.team_id AND r.relationship_id = re.relationship_id
        WHERE re.team_id = team AND re.evidence_id = ev.evidence_id
          AND r.status = 'active'
          AND NOT dm_private.relationship_has_live_support(team, r.relationship_id)
        ORDER BY r.relationship_id
        FOR UPDATE OF r
    LOOP
        UPDATE dm_private.relationships AS r
        SET status = dm_private.resolve_move('relationship', 'support_erased', 'dm.erase_evidence', orphan.status)
                     ::dm_private.relationship_status,
            updated_at = pg_catalog.now()
        WHERE r.team_id = team AND r.relationship_id = orphan.relationship_id;
        PERFORM dm_private.record_transition(team, 'relationship', orphan.relationship_id, orphan.status,
                                             'pending_evidence', orphan.tier, orphan.tier, actor,
                                             'support_erased: every supporting evidence row was erased');
    END LOOP;
END
$$;
COMMENT ON FUNCTION dm.erase_evidence(uuid, uuid, text) IS
'GDPR erasure of one evidence row of the team, in one transaction: text NULL and state erased; search document body and tsvector emptied and its vectors deleted; relationship links keep only IDs (spans NULL); a tombstone keeps the content hash, who, when and why. Active relationships left supported only by erased evidence move to pending_evidence with a transition row. SQLSTATE DM404 no such evidence, DM409 already erased.';
REVOKE ALL ON FUNCTION dm.erase_evidence(uuid, uuid, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm.erase_evidence(uuid, uuid, text) TO densemem_app;
