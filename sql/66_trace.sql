-- Stage 6d: dm.trace_memory. One relationship explained from the
-- authoritative tables only (never search documents, never a cache): the
-- relationship, its accepted evidence spans (text only for evidence that is
-- eligible now; erased evidence as a tombstone), verification events,
-- lifecycle transitions, supersession lineage and recorded conflicts.
-- Any relationship of the team is traceable whoever wrote it and whatever
-- its status; an ID of another team answers exactly like a missing one
-- (DM404). A failed read raises: history is never synthesized.

-- A relationship's compact description, for the record itself, its
-- lineage and its conflicts.
CREATE OR REPLACE FUNCTION dm_private.trace_relationship_json(trace_team_id uuid, trace_relationship_id uuid)
RETURNS jsonb
LANGUAGE sql
STABLE
SET search_path = ''
AS $$
    SELECT pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
        'relationship_id', r.relationship_id,
        'subject', pg_catalog.jsonb_build_object('entity_id', s.entity_id, 'name', s.canonical_name),
        'predicate', r.predicate,
        'object', CASE WHEN o.entity_id IS NOT NULL THEN
            pg_catalog.jsonb_build_object('entity_id', o.entity_id, 'name', o.canonical_name) END,
        'object_value', r.object_value,
        'polarity', r.polarity,
        'owner_profile', pg_catalog.jsonb_build_object('profile_id', p.profile_id, 'name', p.name, 'state', p.state),
        'tier', r.tier,
        'status', r.status,
        'valid_from', r.valid_from,
        'valid_to', r.valid_to,
        'known_from', r.known_from,
        'known_to', r.known_to,
        'semantic_group', r.semantic_group,
        'superseded_by_relationship_id', r.superseded_by_relationship_id,
        'created_at', r.created_at,
        'updated_at', r.updated_at))
    FROM dm_private.relationships AS r
    JOIN dm_private.entities AS s ON s.team_id = r.team_id AND s.entity_id = r.subject_entity_id
    LEFT JOIN dm_private.entities AS o ON o.team_id = r.team_id AND o.entity_id = r.object_entity_id
    JOIN dm_private.profiles AS p ON p.team_id = r.team_id AND p.profile_id = r.owner_profile_id
    WHERE r.team_id = trace_team_id AND r.relationship_id = trace_relationship_id
$$;
COMMENT ON FUNCTION dm_private.trace_relationship_json(uuid, uuid) IS
'One relationship of the team as trace shows it (endpoints with names, predicate, polarity, owner profile, tier, status, times, group, successor), or NULL.';

CREATE OR REPLACE FUNCTION dm.trace_memory(relationship_id uuid, team_id uuid)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SET search_path = ''
AS $$
DECLARE
    team constant uuid := dm_private.require_team(trace_memory.team_id);
    wanted constant uuid := trace_memory.relationship_id;
    scopes constant text [] := dm_private.authenticated_scopes();
    record_json jsonb;
    evidence_json jsonb;
    verifications_json jsonb;
    transitions_json jsonb;
    supersedes_json jsonb;
    superseded_by_json jsonb;
    conflicts_json jsonb;
BEGIN
    IF wanted IS NULL THEN
        RAISE EXCEPTION 'relationship not found' USING ERRCODE = 'DM404';
    END IF;
    record_json := dm_private.trace_relationship_json(team, wanted);
    IF record_json IS NULL THEN
        -- The same answer for a missing ID and another team's ID.
        RAISE EXCEPTION 'relationship not found' USING ERRCODE = 'DM404',
              HINT = 'relationship IDs come from discovery_paths of recall in this team';
    END IF;

    -- Accepted evidence links. Text (and the span's text) only when the
    -- evidence is eligible now; other states say why without text.
    SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
               'evidence_id', re.evidence_id,
               'span_start', re.span_start,
               'span_end', re.span_end,
               'state', e.state,
               'eligible', ok.evidence_id IS NOT NULL,
               'source', pg_catalog.jsonb_build_object(
                   'source_id', s.source_id, 'external_id', s.external_id, 'kind', s.kind,
                   'revision', sr.revision_label, 'revision_is_current', sr.is_current),
               'owner_profile', pg_catalog.jsonb_build_object('profile_id', p.profile_id, 'name', p.name),
               'text', CASE WHEN ok.evidence_id IS NOT NULL THEN e.text END,
               'span_text', CASE WHEN ok.evidence_id IS NOT NULL AND re.span_start IS NOT NULL
                                 THEN pg_catalog.substr(e.text, re.span_start + 1, re.span_end - re.span_start) END,
               'tombstone', CASE WHEN e.state = 'erased' THEN pg_catalog.jsonb_build_object(
                   'erased_at', t.erased_at,
                   'content_sha256', pg_catalog.encode(COALESCE(t.content_hash, e.content_hash), 'hex')) END,
               'linked_at', re.created_at))
               ORDER BY re.created_at, re.evidence_id), '[]'::jsonb)
    INTO evidence_json
    FROM dm_private.relationship_evidence AS re
    JOIN dm_private.evidence AS e ON e.team_id = re.team_id AND e.evidence_id = re.evidence_id
    JOIN dm_private.sources AS s ON s.team_id = e.team_id AND s.source_id = e.source_id
    JOIN dm_private.source_revisions AS sr
      ON sr.team_id = e.team_id AND sr.source_id = e.source_id AND sr.revision_id = e.revision_id
    JOIN dm_private.profiles AS p ON p.team_id = e.team_id AND p.profile_id = e.owner_profile_id
    LEFT JOIN dm_private.erasure_tombstones AS t ON t.team_id = e.team_id AND t.evidence_id = e.evidence_id
    LEFT JOIN LATERAL dm_private.discovery_eligible_evidence(team, ARRAY[e.evidence_id], NULL, NULL, scopes) AS ok
        ON true
    WHERE re.team_id = team AND re.relationship_id = wanted AND re.accepted;

    SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
               'verification_event_id', v.verification_event_id,
               'decision', v.decision,
               'rationale', v.rationale,
               'actor_profile', pg_catalog.jsonb_build_object('profile_id', p.profile_id, 'name', p.name),
               'created_at', v.created_at))
               ORDER BY v.created_at, v.verification_event_id), '[]'::jsonb)
    INTO verifications_json
    FROM dm_private.verification_events AS v
    JOIN dm_private.profiles AS p ON p.team_id = v.team_id AND p.profile_id = v.actor_profile_id
    WHERE v.team_id = team AND v.relationship_id = wanted;

    SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
               'transition_id', lt.transition_id,
               'from_status', lt.from_status,
               'to_status', lt.to_status,
               'from_tier', lt.from_tier,
               'to_tier', lt.to_tier,
               'actor_profile', CASE WHEN p.profile_id IS NOT NULL THEN
                   pg_catalog.jsonb_build_object('profile_id', p.profile_id, 'name', p.name) END,
               'reason', lt.reason,
               'created_at', lt.created_at))
               ORDER BY lt.created_at, lt.transition_id), '[]'::jsonb)
    INTO transitions_json
    FROM dm_private.lifecycle_transitions AS lt
    LEFT JOIN dm_private.profiles AS p ON p.team_id = lt.team_id AND p.profile_id = lt.actor_profile_id
    WHERE lt.team_id = team AND lt.subject_kind = 'relationship' AND lt.subject_id = wanted;

    -- Lineage: what this relationship replaced (backwards, through the
    -- reverse index) and what replaced it (forwards), at most 20 steps each,
    -- cycle-safe.
    WITH RECURSIVE back (relationship_id, step) AS (
        SELECT r.relationship_id, 1
        FROM dm_private.relationships AS r
        WHERE r.team_id = team AND r.superseded_by_relationship_id = wanted
        UNION ALL
        SELECT r.relationship_id, b.step + 1
        FROM back AS b
        JOIN dm_private.relationships AS r ON r.team_id = team AND r.superseded_by_relationship_id = b.relationship_id
        WHERE b.step < 20
    ) CYCLE relationship_id SET is_cycle USING visited
    SELECT COALESCE(pg_catalog.jsonb_agg(
               dm_private.trace_relationship_json(team, b.relationship_id) || pg_catalog.jsonb_build_object('step', b.step)
               ORDER BY b.step, b.relationship_id), '[]'::jsonb)
    INTO supersedes_json
    FROM back AS b
    WHERE NOT b.is_cycle AND b.relationship_id <> wanted;

    WITH RECURSIVE fwd (relationship_id, step) AS (
        SELECT r.superseded_by_relationship_id, 1
        FROM dm_private.relationships AS r
        WHERE r.team_id = team AND r.relationship_id = wanted AND r.superseded_by_relationship_id IS NOT NULL
        UNION ALL
        SELECT r.superseded_by_relationship_id, f.step + 1
        FROM fwd AS f
        JOIN dm_private.relationships AS r ON r.team_id = team AND r.relationship_id = f.relationship_id
        WHERE r.superseded_by_relationship_id IS NOT NULL AND f.step < 20
    ) CYCLE relationship_id SET is_cycle USING visited
    SELECT COALESCE(pg_catalog.jsonb_agg(
               dm_private.trace_relationship_json(team, f.relationship_id) || pg_catalog.jsonb_build_object('step', f.step)
               ORDER BY f.step), '[]'::jsonb)
    INTO superseded_by_json
    FROM fwd AS f
    WHERE NOT f.is_cycle AND f.relationship_id <> wanted;

    SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'conflict_id', c.conflict_id,
               'kind', c.kind,
               'preferred_relationship_id', c.preferred_relationship_id,
               'detected_at', c.detected_at,
               'other', dm_private.trace_relationship_json(team, c.other_id))
               ORDER BY c.detected_at, c.conflict_id), '[]'::jsonb)
    INTO conflicts_json
    FROM (
        SELECT c1.conflict_id, c1.kind, c1.preferred_relationship_id, c1.detected_at,
               c1.conflicting_relationship_id AS other_id
        FROM dm_private.conflicts AS c1
        WHERE c1.team_id = team AND c1.relationship_id = wanted
        UNION ALL
        SELECT c2.conflict_id, c2.kind, c2.preferred_relationship_id, c2.detected_at, c2.relationship_id
        FROM dm_private.conflicts AS c2
        WHERE c2.team_id = team AND c2.conflicting_relationship_id = wanted
    ) AS c
    -- Only disagreements under the predicate's cardinality (migration 0031),
    -- the same rule as discovery: different objects of a multi-valued
    -- predicate are not a conflict (unless a correction chose a preferred
    -- side); opposite polarity on one object always is.
    JOIN dm_private.relationships AS r ON r.team_id = team AND r.relationship_id = wanted
    JOIN dm_private.relationships AS o ON o.team_id = team AND o.relationship_id = c.other_id
    WHERE c.preferred_relationship_id IS NOT NULL
       OR dm_private.relationships_disagree(r.predicate, r.polarity, r.object_entity_id, r.object_value,
                                            o.polarity, o.object_entity_id, o.object_value,
                                            (SELECT dm_private.single_valued_predicates(team)));

    RETURN pg_catalog.jsonb_build_object(
        'relationship', record_json,
        'evidence', evidence_json,
        'verification_events', verifications_json,
        'transitions', transitions_json,
        'lineage', pg_catalog.jsonb_build_object('supersedes', supersedes_json, 'superseded_by', superseded_by_json),
        'conflicts', conflicts_json);
END
$$;
COMMENT ON FUNCTION dm.trace_memory(uuid, uuid) IS
'Explains one relationship of the team from authoritative tables: the relationship, accepted evidence spans (text only for currently eligible evidence; erased evidence as a tombstone), verification events, lifecycle transitions, supersession lineage both ways and recorded conflicts that are disagreements under the predicate''s cardinality. SQLSTATE DM404 when the ID is missing or belongs to another team (same message).';

REVOKE ALL ON FUNCTION dm_private.trace_relationship_json(uuid, uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm.trace_memory(uuid, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.trace_relationship_json(uuid, uuid) TO
densemem_app, densemem_analyst, densemem_operator;
GRANT EXECUTE ON FUNCTION dm.trace_memory(uuid, uuid) TO densemem_app, densemem_analyst, densemem_operator;
