-- Stage 1b: ingesting evidence, with its source and source revision.
--
-- One call stores one item or a batch (at most 1000) in input order. A
-- source is found by its external_id or created; the item's revision label
-- selects (or creates) a revision. A new label makes the source's previous
-- current revision non-current: its evidence stays stored and traceable but
-- leaves recall, because the eligibility mirror of each of its search
-- documents is rewritten in the same transaction.

CREATE OR REPLACE FUNCTION dm.ingest_evidence(team_id uuid, items jsonb)
RETURNS uuid[]
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
#variable_conflict use_column
DECLARE
    team constant uuid := ingest_evidence.team_id;
    actor uuid;
    batch jsonb;
    item jsonb;
    src jsonb;
    item_number integer := 0;
    item_text text;
    item_external_id text;
    source_kind text;
    source_title text;
    source_uri text;
    item_group text;
    item_revision text;
    memory_type_name text;
    item_importance real;
    item_confidence real;
    item_labels jsonb;
    item_created_at timestamptz;
    item_valid_from timestamptz;
    item_valid_to timestamptz;
    found_source uuid;
    stored_group text;
    current_revision uuid;
    chosen_revision uuid;
    next_number integer;
    new_evidence uuid;
    result_ids uuid [] := '{}';
    resync_ids uuid [] := '{}';
BEGIN
    actor := dm_private.require_active_profile(team);
    IF items IS NULL THEN
        RAISE EXCEPTION 'items is required' USING ERRCODE = '22023';
    END IF;
    batch := CASE pg_catalog.jsonb_typeof(items)
        WHEN 'array' THEN items
        WHEN 'object' THEN pg_catalog.jsonb_build_array(items)
    END;
    IF batch IS NULL THEN
        RAISE EXCEPTION 'items must be an evidence object or an array of them' USING ERRCODE = '22023';
    END IF;
    IF pg_catalog.jsonb_array_length(batch) > 1000 THEN
        RAISE EXCEPTION 'a batch holds at most 1000 evidence items, not %', pg_catalog.jsonb_array_length(batch)
            USING ERRCODE = 'DM413', HINT = 'split the batch';
    END IF;

    FOR item IN SELECT b.value FROM pg_catalog.jsonb_array_elements(batch) AS b (value) LOOP
        item_number := item_number + 1;
        PERFORM dm_private.require_known_keys(item,
            ARRAY['text', 'source', 'memory_type', 'importance', 'confidence', 'labels', 'created_at',
                  'valid_from', 'valid_to'],
            pg_catalog.format('evidence item %s', item_number));

        -- text
        IF pg_catalog.jsonb_typeof(item -> 'text') IS DISTINCT FROM 'string' THEN
            RAISE EXCEPTION 'evidence item %: text is required and must be a string', item_number
                USING ERRCODE = '22023';
        END IF;
        item_text := item ->> 'text';
        IF pg_catalog.btrim(item_text) = '' THEN
            RAISE EXCEPTION 'evidence item %: text must not be blank', item_number USING ERRCODE = '22023';
        END IF;
        IF pg_catalog.octet_length(item_text) > 65536 THEN
            RAISE EXCEPTION 'evidence item %: text is % bytes, more than 65536', item_number,
                pg_catalog.octet_length(item_text)
                USING ERRCODE = 'DM413', HINT = 'split long documents into several evidence items';
        END IF;

        -- source
        src := item -> 'source';
        PERFORM dm_private.require_known_keys(src,
            ARRAY['external_id', 'kind', 'title', 'uri', 'revision', 'source_group'],
            pg_catalog.format('evidence item %s: source', item_number));
        item_external_id := dm_private.json_text(src, 'external_id', 'source.external_id', 1000, true);
        source_kind := dm_private.json_text(src, 'kind', 'source.kind', 100, true);
        source_title := dm_private.json_text(src, 'title', 'source.title', 1000);
        source_uri := dm_private.json_text(src, 'uri', 'source.uri', 2000);
        item_revision := dm_private.json_text(src, 'revision', 'source.revision', 200);
        item_group := dm_private.json_text(src, 'source_group', 'source.source_group', 200);

        -- attributes
        memory_type_name := COALESCE(dm_private.json_text(item, 'memory_type', 'memory_type', 40), 'semantic');
        IF memory_type_name NOT IN (SELECT pg_catalog.unnest(pg_catalog.enum_range(NULL::dm_private.memory_type))::text) THEN
            RAISE EXCEPTION 'evidence item %: unknown memory_type %', item_number, memory_type_name
                USING ERRCODE = '22023',
                      HINT = 'memory_type is conversation, workflow, episodic, semantic or organizational';
        END IF;
        item_importance := COALESCE(dm_private.json_unit_interval(item, 'importance', 'importance'), 0.5);
        item_confidence := COALESCE(dm_private.json_unit_interval(item, 'confidence', 'confidence'), 1.0);
        item_labels := COALESCE(NULLIF(item -> 'labels', 'null'::jsonb), '{}'::jsonb);
        IF pg_catalog.jsonb_typeof(item_labels) <> 'object' THEN
            RAISE EXCEPTION 'evidence item %: labels must be a JSON object', item_number USING ERRCODE = '22023';
        END IF;
        item_created_at := dm_private.json_timestamp(item, 'created_at', 'created_at');
        item_valid_from := dm_private.json_timestamp(item, 'valid_from', 'valid_from');
        item_valid_to := dm_private.json_timestamp(item, 'valid_to', 'valid_to');
        IF item_valid_from IS NOT NULL AND item_valid_to IS NOT NULL AND item_valid_from >= item_valid_to THEN
            RAISE EXCEPTION 'evidence item %: valid_from must be before valid_to', item_number
                USING ERRCODE = '22023';
        END IF;

        -- the source: found by external id, created when missing (a
        -- concurrent creator wins the unique key and we read its row), locked
        -- so that revision numbering is serial.
        SELECT s.source_id, s.source_group INTO found_source, stored_group
        FROM dm_private.sources AS s
        WHERE s.team_id = team AND s.external_id = item_external_id
        FOR UPDATE;
        IF found_source IS NULL THEN
            INSERT INTO dm_private.sources AS s (team_id, source_id, external_id, kind, title, uri, source_group)
            VALUES (team, pg_catalog.gen_random_uuid(), item_external_id, source_kind, source_title,
                    source_uri, item_group)
            ON CONFLICT ON CONSTRAINT sources_team_external_id_key DO UPDATE SET kind = s.kind
            RETURNING s.source_id, s.source_group INTO found_source, stored_group;
        ELSE
            UPDATE dm_private.sources AS s
            SET kind = source_kind,
                title = COALESCE(source_title, s.title),
                uri = COALESCE(source_uri, s.uri),
                source_group = COALESCE(item_group, s.source_group)
            WHERE s.team_id = team AND s.source_id = found_source
              AND (s.kind <> source_kind
                   OR s.title IS DISTINCT FROM COALESCE(source_title, s.title)
                   OR s.uri IS DISTINCT FROM COALESCE(source_uri, s.uri)
                   OR s.source_group IS DISTINCT FROM COALESCE(item_group, s.source_group))
            RETURNING s.source_group INTO stored_group;
            IF NOT FOUND THEN
                SELECT s.source_group INTO stored_group
                FROM dm_private.sources AS s WHERE s.team_id = team AND s.source_id = found_source;
            END IF;
        END IF;

        -- the revision
        SELECT r.revision_id INTO current_revision
        FROM dm_private.source_revisions AS r
        WHERE r.team_id = team AND r.source_id = found_source AND r.is_current;
        chosen_revision := NULL;
        IF item_revision IS NULL THEN
            chosen_revision := current_revision;
            item_revision := '1';
        ELSE
            SELECT r.revision_id INTO chosen_revision
            FROM dm_private.source_revisions AS r
            WHERE r.team_id = team AND r.source_id = found_source AND r.revision_label = item_revision;
        END IF;
        IF chosen_revision IS NULL THEN
            SELECT COALESCE(pg_catalog.max(r.revision_number), 0) + 1 INTO next_number
            FROM dm_private.source_revisions AS r
            WHERE r.team_id = team AND r.source_id = found_source;
            IF current_revision IS NOT NULL THEN
                UPDATE dm_private.source_revisions AS r
                SET is_current = false
                WHERE r.team_id = team AND r.source_id = found_source AND r.revision_id = current_revision;
                -- Evidence of the old revision leaves recall: rewrite its mirrors.
                resync_ids := resync_ids || COALESCE((
                    SELECT pg_catalog.array_agg(e.evidence_id)
                    FROM dm_private.evidence AS e
                    WHERE e.team_id = team AND e.source_id = found_source AND e.revision_id = current_revision), '{}');
            END IF;
            chosen_revision := pg_catalog.gen_random_uuid();
            INSERT INTO dm_private.source_revisions
                (team_id, source_id, revision_id, revision_label, revision_number, is_current)
            VALUES (team, found_source, chosen_revision, item_revision, next_number, true);
        END IF;

        new_evidence := pg_catalog.gen_random_uuid();
        INSERT INTO dm_private.evidence (
            team_id, evidence_id, source_id, revision_id, owner_profile_id, text, content_hash, source_group,
            memory_type, importance, confidence, labels, valid_from, valid_to, created_at)
        VALUES (
            team, new_evidence, found_source, chosen_revision, actor, item_text,
            pg_catalog.sha256(pg_catalog.convert_to(item_text, 'UTF8')),
            COALESCE(item_group, stored_group),
            memory_type_name::dm_private.memory_type, item_importance, item_confidence, item_labels,
            item_valid_from, item_valid_to, item_created_at);
        result_ids := result_ids || new_evidence;
    END LOOP;

    PERFORM dm_private.sync_evidence_documents(
        team, ARRAY(SELECT DISTINCT x FROM pg_catalog.unnest(result_ids || resync_ids) AS u (x)));
    RETURN result_ids;
END
$$;
COMMENT ON FUNCTION dm.ingest_evidence(uuid, jsonb) IS
'Stores evidence (one object or an array of at most 1000) for the acting profile and returns the new evidence ids in input order. Item: {"text", "source": {"external_id", "kind", "title"?, "uri"?, "revision"?, "source_group"?}, "memory_type"?, "importance"?, "confidence"?, "labels"?, "created_at"?, "valid_from"?, "valid_to"?}. Without a revision label the source''s current revision is used; a new label creates a revision that becomes current, and the evidence of the previous one leaves recall. Writes search documents in the same transaction. SQLSTATE 22023 bad value, 22007/22008 bad timestamp, DM413 batch over 1000 or text over 65536 bytes.';
REVOKE ALL ON FUNCTION dm.ingest_evidence(uuid, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm.ingest_evidence(uuid, jsonb) TO densemem_app;
