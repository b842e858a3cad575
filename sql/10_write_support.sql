-- Stage 1a: shared pieces of the write path.
--
-- The lifecycle state machine (every legal move, in one table-valued
-- function), the transition log, name normalization and the search-document
-- writers. Every write function in dm calls these inside its own transaction,
-- so a source row and its search document never disagree after a commit.
-- All are SECURITY INVOKER: row-level security checks every row they touch.

-- Entity names are matched on a normal form so that "Mark  Smith" and
-- "mark smith" are one name.
CREATE OR REPLACE FUNCTION dm_private.normalize_name(name text)
RETURNS text
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
SET search_path = ''
AS $$
    SELECT pg_catalog.lower(pg_catalog.regexp_replace(pg_catalog.btrim(name), '\s+', ' ', 'g'))
$$;
COMMENT ON FUNCTION dm_private.normalize_name(text) IS
'Normal form of an entity name or alias: trimmed, lower case, runs of white space collapsed to one space.';

-- The one place that says which lifecycle moves are legal. Functions never
-- hard-code a from/to pair: they ask dm_private.resolve_move, which reads this
-- list. A move absent from the list is illegal (DM409).
CREATE OR REPLACE FUNCTION dm_private.lifecycle_moves()
RETURNS TABLE (subject_kind text, move text, performed_by text, from_state text, to_state text, note text)
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
SET search_path = ''
AS $$
    SELECT m.subject_kind, m.move, m.performed_by, m.from_state, m.to_state, m.note
    FROM (VALUES
        -- evidence: dm.move_evidence and dm.erase_evidence
        ('evidence', 'quarantine', 'dm.move_evidence', 'active', 'quarantined', NULL),
        ('evidence', 'quarantine', 'dm.move_evidence', 'supersession_pending', 'quarantined', NULL),
        ('evidence', 'hold_for_supersession', 'dm.move_evidence', 'active', 'supersession_pending', NULL),
        ('evidence', 'supersede', 'dm.move_evidence', 'active', 'superseded', NULL),
        ('evidence', 'supersede', 'dm.move_evidence', 'supersession_pending', 'superseded', NULL),
        ('evidence', 'supersede', 'dm.move_evidence', 'quarantined', 'superseded', NULL),
        ('evidence', 'retract', 'dm.move_evidence', 'active', 'retracted', NULL),
        ('evidence', 'retract', 'dm.move_evidence', 'quarantined', 'retracted', NULL),
        ('evidence', 'retract', 'dm.move_evidence', 'supersession_pending', 'retracted', NULL),
        ('evidence', 'release', 'dm.move_evidence', 'quarantined', 'active', NULL),
        ('evidence', 'release', 'dm.move_evidence', 'supersession_pending', 'active', NULL),
        ('evidence', 'erase', 'dm.erase_evidence', 'active', 'erased', NULL),
        ('evidence', 'erase', 'dm.erase_evidence', 'quarantined', 'erased', NULL),
        ('evidence', 'erase', 'dm.erase_evidence', 'supersession_pending', 'erased', NULL),
        ('evidence', 'erase', 'dm.erase_evidence', 'superseded', 'erased', NULL),
        ('evidence', 'erase', 'dm.erase_evidence', 'retracted', 'erased', NULL),
        -- relationships: dm.move_relationship
        ('relationship', 'supersede', 'dm.move_relationship', 'pending_evidence', 'superseded', 'needs a replacement relationship'),
        ('relationship', 'supersede', 'dm.move_relationship', 'active', 'superseded', 'needs a replacement relationship'),
        ('relationship', 'supersede', 'dm.move_relationship', 'disputed', 'superseded', 'needs a replacement relationship'),
        ('relationship', 'supersede', 'dm.move_relationship', 'review_held', 'superseded', 'needs a replacement relationship'),
        ('relationship', 'supersede', 'dm.move_relationship', 'quarantined', 'superseded', 'needs a replacement relationship'),
        ('relationship', 'retract', 'dm.move_relationship', 'pending_evidence', 'retracted', NULL),
        ('relationship', 'retract', 'dm.move_relationship', 'active', 'retracted', NULL),
        ('relationship', 'retract', 'dm.move_relationship', 'disputed', 'retracted', NULL),
        ('relationship', 'retract', 'dm.move_relationship', 'review_held', 'retracted', NULL),
        ('relationship', 'retract', 'dm.move_relationship', 'quarantined', 'retracted', NULL),
        ('relationship', 'quarantine', 'dm.move_relationship', 'pending_evidence', 'quarantined', NULL),
        ('relationship', 'quarantine', 'dm.move_relationship', 'active', 'quarantined', NULL),
        ('relationship', 'quarantine', 'dm.move_relationship', 'disputed', 'quarantined', NULL),
        ('relationship', 'quarantine', 'dm.move_relationship', 'review_held', 'quarantined', NULL),
        ('relationship', 'dispute', 'dm.move_relationship', 'pending_evidence', 'disputed', NULL),
        ('relationship', 'dispute', 'dm.move_relationship', 'active', 'disputed', NULL),
        ('relationship', 'hold_for_review', 'dm.move_relationship', 'pending_evidence', 'review_held', NULL),
        ('relationship', 'hold_for_review', 'dm.move_relationship', 'active', 'review_held', NULL),
        ('relationship', 'hold_for_review', 'dm.move_relationship', 'disputed', 'review_held', NULL),
        ('relationship', 'release', 'dm.move_relationship', 'quarantined', 'active',
         'active only when verified (validated_claim or fact) and supported by unerased evidence; else pending_evidence'),
        ('relationship', 'release', 'dm.move_relationship', 'disputed', 'active',
         'active only when verified (validated_claim or fact) and supported by unerased evidence; else pending_evidence'),
        ('relationship', 'release', 'dm.move_relationship', 'review_held', 'active',
         'active only when verified (validated_claim or fact) and supported by unerased evidence; else pending_evidence'),
        -- relationships: dm.record_verification (the move is the decision)
        ('relationship', 'verify_validated_claim', 'dm.record_verification', 'pending_evidence', 'active', 'tier becomes validated_claim'),
        ('relationship', 'verify_validated_claim', 'dm.record_verification', 'active', 'active', 'tier becomes validated_claim'),
        ('relationship', 'verify_validated_claim', 'dm.record_verification', 'disputed', 'active', 'tier becomes validated_claim'),
        ('relationship', 'verify_validated_claim', 'dm.record_verification', 'review_held', 'active', 'tier becomes validated_claim'),
        ('relationship', 'verify_fact', 'dm.record_verification', 'pending_evidence', 'active', 'tier becomes fact'),
        ('relationship', 'verify_fact', 'dm.record_verification', 'active', 'active', 'tier becomes fact'),
        ('relationship', 'verify_fact', 'dm.record_verification', 'disputed', 'active', 'tier becomes fact'),
        ('relationship', 'verify_fact', 'dm.record_verification', 'review_held', 'active', 'tier becomes fact'),
        ('relationship', 'verify_rejected', 'dm.record_verification', 'pending_evidence', 'rejected', 'tier unchanged'),
        ('relationship', 'verify_rejected', 'dm.record_verification', 'active', 'rejected', 'tier unchanged'),
        ('relationship', 'verify_rejected', 'dm.record_verification', 'disputed', 'rejected', 'tier unchanged'),
        ('relationship', 'verify_rejected', 'dm.record_verification', 'review_held', 'rejected', 'tier unchanged'),
        -- relationships: automatic, by dm.erase_evidence
        ('relationship', 'support_erased', 'dm.erase_evidence', 'active', 'pending_evidence',
         'every supporting evidence row was erased: the relationship leaves discovery until re-supported and re-verified')
    ) AS m (subject_kind, move, performed_by, from_state, to_state, note)
$$;
COMMENT ON FUNCTION dm_private.lifecycle_moves() IS
'The lifecycle state machine: every legal (subject_kind, move, from_state) and the state it leads to. Anything not listed is illegal (DM409). retracted, superseded, rejected and erased are terminal.';

-- Checks a move against the state machine and returns the target state.
-- 22023 for a move that the calling function does not perform at all;
-- DM409 for a move it performs but not from the current state.
CREATE OR REPLACE FUNCTION dm_private.resolve_move(kind text, move text, performer text, current_state text)
RETURNS text
LANGUAGE plpgsql
STABLE
SET search_path = ''
AS $$
DECLARE
    target text;
    legal text;
BEGIN
    IF move IS NULL OR NOT EXISTS (
        SELECT 1 FROM dm_private.lifecycle_moves() AS m
        WHERE m.subject_kind = kind AND m.move = resolve_move.move AND m.performed_by = performer) THEN
        SELECT pg_catalog.string_agg(DISTINCT m.move, ', ' ORDER BY m.move) INTO legal
        FROM dm_private.lifecycle_moves() AS m
        WHERE m.subject_kind = kind AND m.performed_by = performer;
        RAISE EXCEPTION 'unknown % move %', kind, COALESCE(pg_catalog.quote_literal(move), 'NULL')
            USING ERRCODE = '22023', HINT = pg_catalog.format('%s performs: %s', performer, legal);
    END IF;
    SELECT m.to_state INTO target
    FROM dm_private.lifecycle_moves() AS m
    WHERE m.subject_kind = kind AND m.move = resolve_move.move AND m.performed_by = performer
      AND m.from_state = current_state;
    IF target IS NULL THEN
        SELECT pg_catalog.string_agg(m.from_state, ', ' ORDER BY m.from_state) INTO legal
        FROM dm_private.lifecycle_moves() AS m
        WHERE m.subject_kind = kind AND m.move = resolve_move.move AND m.performed_by = performer;
        RAISE EXCEPTION 'illegal % move: % is not allowed from state %', kind, move, current_state
            USING ERRCODE = 'DM409',
                  DETAIL = pg_catalog.format('%s is allowed only from: %s', move, legal);
    END IF;
    RETURN target;
END
$$;
COMMENT ON FUNCTION dm_private.resolve_move(text, text, text, text) IS
'Returns the state a legal move leads to (from dm_private.lifecycle_moves), for the function that performs it. SQLSTATE 22023 for a move that function does not perform, DM409 for a move not allowed from the current state.';

-- Appends one row to the lifecycle log: from, to, who, when (clock time), why.
CREATE OR REPLACE FUNCTION dm_private.record_transition(
    team uuid, kind text, subject uuid, from_status text, to_status text,
    from_tier text, to_tier text, actor uuid, why text
)
RETURNS uuid
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
DECLARE
    new_id uuid := pg_catalog.gen_random_uuid();
BEGIN
    IF why IS NOT NULL AND pg_catalog.length(why) > 10000 THEN
        RAISE EXCEPTION 'reason is longer than 10000 characters' USING ERRCODE = 'DM413';
    END IF;
    INSERT INTO dm_private.lifecycle_transitions
        (team_id, transition_id, subject_kind, subject_id, from_status, to_status, from_tier, to_tier,
         actor_profile_id, reason)
    VALUES (team, new_id, kind::dm_private.subject_kind, subject, from_status, to_status, from_tier, to_tier,
            actor, why);
    RETURN new_id;
END
$$;
COMMENT ON FUNCTION dm_private.record_transition(uuid, text, uuid, text, text, text, text, uuid, text) IS
'Appends a lifecycle_transitions row (from, to, tier change, actor, reason) and returns its id.';

-- Evidence search documents: body is the evidence text ('' once erased);
-- the eligibility columns mirror the evidence row and its revision's
-- currency. A changed body or source version bumps the version and makes the
-- document pending for the embedding worker; a mirror-only change does not.
CREATE OR REPLACE FUNCTION dm_private.sync_evidence_documents(team uuid, evidence_ids uuid[])
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
DECLARE
    touched integer;
BEGIN
    INSERT INTO dm_private.search_documents AS d (
        team_id, document_id, subject_kind, subject_id, document_version, source_version, body, search_vector,
        search_state, pending_since, is_recallable, owner_profile_id, memory_type, source_group,
        source_created_at, sequence_number, valid_from, valid_to, known_from, known_to, importance,
        confidence, policy_labels)
    SELECT e.team_id, pg_catalog.gen_random_uuid(), 'evidence', e.evidence_id, 1, r.revision_number,
           COALESCE(e.text, ''), pg_catalog.to_tsvector('english'::regconfig, COALESCE(e.text, '')),
           'pending', pg_catalog.now(),
           e.state = 'active' AND r.is_current,
           e.owner_profile_id, e.memory_type, e.source_group, e.created_at, e.sequence_number,
           e.valid_from, e.valid_to, e.known_from, e.known_to, e.importance, e.confidence,
           COALESCE((SELECT pg_catalog.array_agg(l.key ORDER BY l.key)
                     FROM pg_catalog.jsonb_each(e.labels) AS l (key, value)
                     WHERE l.value = 'true'::jsonb), '{}'::text [])
    FROM dm_private.evidence AS e
    JOIN dm_private.source_revisions AS r
        ON r.team_id = e.team_id AND r.source_id = e.source_id AND r.revision_id = e.revision_id
    WHERE e.team_id = team AND e.evidence_id = ANY (evidence_ids)
    ON CONFLICT ON CONSTRAINT search_documents_subject_key DO UPDATE SET
        document_version = d.document_version
            + CASE WHEN d.body IS DISTINCT FROM excluded.body THEN 1 ELSE 0 END,
        source_version = excluded.source_version,
        body = excluded.body,
        search_vector = excluded.search_vector,
        search_state = CASE
            WHEN d.body IS DISTINCT FROM excluded.body OR d.source_version <> excluded.source_version
                THEN 'pending'::dm_private.search_state
            ELSE d.search_state END,
        pending_since = CASE
            WHEN d.body IS DISTINCT FROM excluded.body OR d.source_version <> excluded.source_version
                THEN pg_catalog.now()
            ELSE d.pending_since END,
        embed_attempts = CASE
            WHEN d.body IS DISTINCT FROM excluded.body OR d.source_version <> excluded.source_version THEN 0
            ELSE d.embed_attempts END,
        last_error = CASE
            WHEN d.body IS DISTINCT FROM excluded.body OR d.source_version <> excluded.source_version THEN NULL
            ELSE d.last_error END,
        is_recallable = excluded.is_recallable,
        owner_profile_id = excluded.owner_profile_id,
        memory_type = excluded.memory_type,
        source_group = excluded.source_group,
        source_created_at = excluded.source_created_at,
        sequence_number = excluded.sequence_number,
        valid_from = excluded.valid_from,
        valid_to = excluded.valid_to,
        known_from = excluded.known_from,
        known_to = excluded.known_to,
        importance = excluded.importance,
        confidence = excluded.confidence,
        policy_labels = excluded.policy_labels,
        updated_at = pg_catalog.now();
    GET DIAGNOSTICS touched = ROW_COUNT;
    RETURN touched;
END
$$;
COMMENT ON FUNCTION dm_private.sync_evidence_documents(uuid, uuid[]) IS
'Writes the search documents of these evidence rows from the authoritative rows: body, tsvector, versions, pending state and the eligibility mirror (is_recallable = state active and revision current). Returns the number of documents written.';

-- Entity and relationship documents are written the same way: insert, or on
-- a changed body bump document_version and make the document pending again.
CREATE OR REPLACE FUNCTION dm_private.upsert_graph_documents(
    team uuid, kind dm_private.subject_kind, subject_ids uuid[], bodies text[])
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
DECLARE
    touched integer;
BEGIN
    INSERT INTO dm_private.search_documents AS d (
        team_id, document_id, subject_kind, subject_id, document_version, source_version, body, search_vector,
        search_state, pending_since)
    SELECT team, pg_catalog.gen_random_uuid(), kind, u.subject_id, 1, 1, u.body,
           pg_catalog.to_tsvector('english'::regconfig, u.body), 'pending', pg_catalog.now()
    FROM ROWS FROM (pg_catalog.unnest(subject_ids), pg_catalog.unnest(bodies)) AS u (subject_id, body)
    ON CONFLICT ON CONSTRAINT search_documents_subject_key DO UPDATE SET
        document_version = d.document_version + 1,
        body = excluded.body,
        search_vector = excluded.search_vector,
        search_state = 'pending',
        pending_since = pg_catalog.now(),
        embed_attempts = 0,
        last_error = NULL,
        updated_at = pg_catalog.now()
    WHERE d.body IS DISTINCT FROM excluded.body;
    GET DIAGNOSTICS touched = ROW_COUNT;
    RETURN touched;
END
$$;
COMMENT ON FUNCTION dm_private.upsert_graph_documents(uuid, dm_private.subject_kind, uuid[], text[]) IS
'Writes entity or relationship search documents from (subject_id, body) pairs; a changed body bumps document_version and makes the document pending. Returns the number written or changed.';

-- Entity search documents: canonical name, kind and aliases.
CREATE OR REPLACE FUNCTION dm_private.sync_entity_documents(team uuid, entity_ids uuid[])
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
DECLARE
    touched integer;
BEGIN
    WITH bodies AS (
        SELECT en.team_id, en.entity_id,
               en.canonical_name || ' (' || en.kind || ')'
               || COALESCE('. Also known as: ' || (
                   SELECT pg_catalog.string_agg(n.name, ', ' ORDER BY n.normalized_name)
                   FROM dm_private.entity_names AS n
                   WHERE n.team_id = en.team_id AND n.entity_id = en.entity_id AND NOT n.is_canonical), '')
               AS body
        FROM dm_private.entities AS en
        WHERE en.team_id = team AND en.entity_id = ANY (entity_ids)
    )
    SELECT dm_private.upsert_graph_documents(team, 'entity', pg_catalog.array_agg(b.entity_id), pg_catalog.array_agg(b.body))
    INTO touched
    FROM bodies AS b;
    RETURN touched;
END
$$;
COMMENT ON FUNCTION dm_private.sync_entity_documents(uuid, uuid[]) IS
'Writes the search documents of these entities (canonical name, kind, aliases); a changed body bumps document_version and makes it pending. Returns the number written or changed.';

-- Relationship search documents: endpoint display names, predicate, object,
-- polarity, valid-time bounds and semantic group. Never evidence text and
-- never verifier rationale.
CREATE OR REPLACE FUNCTION dm_private.sync_relationship_documents(team uuid, relationship_ids uuid[])
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
DECLARE
    touched integer;
BEGIN
    WITH bodies AS (
        SELECT r.team_id, r.relationship_id,
               s.canonical_name
               || CASE WHEN r.polarity = '-' THEN ' not ' ELSE ' ' END
               || pg_catalog.replace(r.predicate, '_', ' ') || ' '
               || COALESCE(o.canonical_name, r.object_value)
               || ' [predicate ' || r.predicate || '; polarity ' || r.polarity::text
               || COALESCE('; valid from ' || pg_catalog.to_char(r.valid_from AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), '')
               || COALESCE('; valid to ' || pg_catalog.to_char(r.valid_to AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), '')
               || COALESCE('; group ' || r.semantic_group, '')
               || ']' AS body
        FROM dm_private.relationships AS r
        JOIN dm_private.entities AS s ON s.team_id = r.team_id AND s.entity_id = r.subject_entity_id
        LEFT JOIN dm_private.entities AS o ON o.team_id = r.team_id AND o.entity_id = r.object_entity_id
        WHERE r.team_id = team AND r.relationship_id = ANY (relationship_ids)
    )
    SELECT dm_private.upsert_graph_documents(team, 'relationship', pg_catalog.array_agg(b.relationship_id), pg_catalog.array_agg(b.body))
    INTO touched
    FROM bodies AS b;
    RETURN touched;
END
$$;
COMMENT ON FUNCTION dm_private.sync_relationship_documents(uuid, uuid[]) IS
'Writes the search documents of these relationships (endpoint names, predicate, object, polarity, valid time, semantic group; never evidence text or rationale). Returns the number written or changed.';

-- Does a relationship still have evidence whose text exists? Verification and
-- release ask this; erasure uses it to withdraw relationships left without support.
CREATE OR REPLACE FUNCTION dm_private.relationship_has_live_support(team uuid, relationship uuid)
RETURNS boolean
LANGUAGE sql
STABLE
SET search_path = ''
AS $$
    SELECT EXISTS (
        SELECT 1
        FROM dm_private.relationship_evidence AS re
        JOIN dm_private.evidence AS e ON e.team_id = re.team_id AND e.evidence_id = re.evidence_id
        WHERE re.team_id = team AND re.relationship_id = relationship AND re.accepted AND e.state <> 'erased')
$$;
COMMENT ON FUNCTION dm_private.relationship_has_live_support(uuid, uuid) IS
'True when the relationship has at least one accepted evidence link whose evidence is not erased.';

-- Strict jsonb readers: the write functions validate payloads with named
-- SQLSTATEs instead of surfacing cast errors from deep inside a statement.
CREATE OR REPLACE FUNCTION dm_private.json_text(
    payload jsonb, key text, what text, max_length integer,
    required boolean DEFAULT false
)
RETURNS text
LANGUAGE plpgsql
IMMUTABLE
SET search_path = ''
AS $$
DECLARE
    value jsonb := payload -> key;
BEGIN
    IF value IS NULL OR value = 'null'::jsonb THEN
        IF required THEN
            RAISE EXCEPTION '% is required', what USING ERRCODE = '22023';
        END IF;
        RETURN NULL;
    END IF;
    IF pg_catalog.jsonb_typeof(value) <> 'string' THEN
        RAISE EXCEPTION '% must be a string', what USING ERRCODE = '22023';
    END IF;
    IF pg_catalog.btrim(value #>> '{}') = '' THEN
        RAISE EXCEPTION '% must not be blank', what USING ERRCODE = '22023';
    END IF;
    IF pg_catalog.length(value #>> '{}') > max_length THEN
        RAISE EXCEPTION '% is longer than % characters', what, max_length USING ERRCODE = '22023';
    END IF;
    RETURN value #>> '{}';
END
$$;
COMMENT ON FUNCTION dm_private.json_text(jsonb, text, text, integer, boolean) IS
'Reads a non-blank string field of a payload; SQLSTATE 22023 when it is missing (and required), not a string, blank or too long.';

CREATE OR REPLACE FUNCTION dm_private.json_unit_interval(payload jsonb, key text, what text)
RETURNS real
LANGUAGE plpgsql
IMMUTABLE
SET search_path = ''
AS $$
DECLARE
    value jsonb := payload -> key;
BEGIN
    IF value IS NULL OR value = 'null'::jsonb THEN
        RETURN NULL;
    END IF;
    IF pg_catalog.jsonb_typeof(value) <> 'number' THEN
        RAISE EXCEPTION '% must be a number in [0, 1]', what USING ERRCODE = '22023';
    END IF;
    IF value::numeric < 0 OR value::numeric > 1 THEN
        RAISE EXCEPTION '% must be in [0, 1], not %', what, value USING ERRCODE = '22023';
    END IF;
    RETURN value::numeric::real;
END
$$;
COMMENT ON FUNCTION dm_private.json_unit_interval(jsonb, text, text) IS
'Reads a number in [0, 1] (importance, confidence); SQLSTATE 22023 otherwise.';

CREATE OR REPLACE FUNCTION dm_private.json_timestamp(payload jsonb, key text, what text)
RETURNS timestamptz
LANGUAGE plpgsql
STABLE
SET search_path = ''
AS $$
DECLARE
    value jsonb := payload -> key;
BEGIN
    IF value IS NULL OR value = 'null'::jsonb THEN
        RETURN NULL;
    END IF;
    IF pg_catalog.jsonb_typeof(value) <> 'string' THEN
        RAISE EXCEPTION '% must be an ISO 8601 timestamp string', what USING ERRCODE = '22007';
    END IF;
    -- A malformed timestamp raises 22007 / 22008 from the cast itself.
    RETURN (value #>> '{}')::timestamptz;
END
$$;
COMMENT ON FUNCTION dm_private.json_timestamp(jsonb, text, text) IS
'Reads an ISO 8601 timestamp field; SQLSTATE 22007 or 22008 when malformed.';

CREATE OR REPLACE FUNCTION dm_private.json_uuid(payload jsonb, key text, what text, required boolean DEFAULT false)
RETURNS uuid
LANGUAGE plpgsql
IMMUTABLE
SET search_path = ''
AS $$
DECLARE
    value jsonb := payload -> key;
BEGIN
    IF value IS NULL OR value = 'null'::jsonb THEN
        IF required THEN
            RAISE EXCEPTION '% is required', what USING ERRCODE = '22023';
        END IF;
        RETURN NULL;
    END IF;
    IF pg_catalog.jsonb_typeof(value) <> 'string' THEN
        RAISE EXCEPTION '% must be a uuid string', what USING ERRCODE = '22P02';
    END IF;
    -- A malformed uuid raises 22P02 from the cast itself.
    RETURN (value #>> '{}')::uuid;
END
$$;
COMMENT ON FUNCTION dm_private.json_uuid(jsonb, text, text, boolean) IS
'Reads a uuid field; SQLSTATE 22023 when required and missing, 22P02 when malformed.';

-- Rejects keys a payload does not define, so a misspelt field is an error
-- rather than a silently ignored value.
CREATE OR REPLACE FUNCTION dm_private.require_known_keys(payload jsonb, allowed text[], what text)
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
SET search_path = ''
AS $$
DECLARE
    unknown text;
BEGIN
    IF payload IS NULL OR pg_catalog.jsonb_typeof(payload) <> 'object' THEN
        RAISE EXCEPTION '% must be a JSON object', what USING ERRCODE = '22023';
    END IF;
    SELECT pg_catalog.string_agg(k.key, ', ' ORDER BY k.key) INTO unknown
    FROM pg_catalog.jsonb_object_keys(payload) AS k (key)
    WHERE k.key <> ALL (allowed);
    IF unknown IS NOT NULL THEN
        RAISE EXCEPTION '% has unknown fields: %', what, unknown
            USING ERRCODE = '22023', HINT = pg_catalog.format('known fields: %s', pg_catalog.array_to_string(allowed, ', '));
    END IF;
END
$$;
COMMENT ON FUNCTION dm_private.require_known_keys(jsonb, text[], text) IS
'SQLSTATE 22023 unless the payload is an object whose keys are all in the allowed list.';

REVOKE ALL ON FUNCTION dm_private.normalize_name(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.lifecycle_moves() FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.resolve_move(text, text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.record_transition(uuid, text, uuid, text, text, text, text, uuid, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.sync_evidence_documents(uuid, uuid[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.upsert_graph_documents(uuid, dm_private.subject_kind, uuid[], text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.sync_entity_documents(uuid, uuid[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.sync_relationship_documents(uuid, uuid[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.relationship_has_live_support(uuid, uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.json_text(jsonb, text, text, integer, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.json_unit_interval(jsonb, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.json_timestamp(jsonb, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.json_uuid(jsonb, text, text, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.require_known_keys(jsonb, text[], text) FROM PUBLIC;

-- Read-only helpers are shared with analysts (trace and eligibility use them);
-- writers only with the service.
GRANT EXECUTE ON FUNCTION dm_private.normalize_name(text) TO
densemem_app, densemem_analyst, densemem_operator, densemem_searcher;
GRANT EXECUTE ON FUNCTION dm_private.lifecycle_moves() TO densemem_app, densemem_analyst, densemem_operator;
GRANT EXECUTE ON FUNCTION dm_private.relationship_has_live_support(uuid, uuid) TO
densemem_app, densemem_analyst, densemem_operator;
GRANT EXECUTE ON FUNCTION dm_private.resolve_move(text, text, text, text) TO densemem_app;
GRANT EXECUTE ON FUNCTION dm_private.record_transition(uuid, text, uuid, text, text, text, text, uuid, text)
TO densemem_app;
GRANT EXECUTE ON FUNCTION dm_private.sync_evidence_documents(uuid, uuid[]) TO densemem_app;
GRANT EXECUTE ON FUNCTION dm_private.upsert_graph_documents(uuid, dm_private.subject_kind, uuid[], text[])
TO densemem_app;
GRANT EXECUTE ON FUNCTION dm_private.sync_entity_documents(uuid, uuid[]) TO densemem_app;
GRANT EXECUTE ON FUNCTION dm_private.sync_relationship_documents(uuid, uuid[]) TO densemem_app;
GRANT EXECUTE ON FUNCTION dm_private.json_text(jsonb, text, text, integer, boolean) TO densemem_app;
GRANT EXECUTE ON FUNCTION dm_private.json_unit_interval(jsonb, text, text) TO densemem_app;
GRANT EXECUTE ON FUNCTION dm_private.json_timestamp(jsonb, text, text) TO densemem_app;
GRANT EXECUTE ON FUNCTION dm_private.json_uuid(jsonb, text, text, boolean) TO densemem_app;
GRANT EXECUTE ON FUNCTION dm_private.require_known_keys(jsonb, text[], text) TO densemem_app;
