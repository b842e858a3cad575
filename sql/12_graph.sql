-- Stage 1c: the graph. Entities with aliases, and relationships asserted
-- from evidence.
--
-- A relationship always starts as candidate / pending_evidence: it is never
-- eligible for discovery until a verifier accepts it. Asserting one detects
-- disagreements with the team's existing relationships of the same subject
-- and predicate (a different object, or the same object with the opposite
-- polarity, over overlapping valid time) and records each pair in
-- dm_private.conflicts; neither side is changed.

CREATE OR REPLACE FUNCTION dm.upsert_entities(team_id uuid, items jsonb)
RETURNS uuid[]
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
#variable_conflict use_column
DECLARE
    team constant uuid := upsert_entities.team_id;
    batch jsonb;
    item jsonb;
    item_number integer := 0;
    entity_name text;
    entity_kind text;
    alias_value jsonb;
    alias_text text;
    found_entity uuid;
    result_ids uuid [] := '{}';
BEGIN
    PERFORM dm_private.require_active_profile(team);
    IF items IS NULL THEN
        RAISE EXCEPTION 'items is required' USING ERRCODE = '22023';
    END IF;
    batch := CASE pg_catalog.jsonb_typeof(items)
        WHEN 'array' THEN items
        WHEN 'object' THEN pg_catalog.jsonb_build_array(items)
    END;
    IF batch IS NULL THEN
        RAISE EXCEPTION 'items must be an entity object or an array of them' USING ERRCODE = '22023';
    END IF;
    IF pg_catalog.jsonb_array_length(batch) > 1000 THEN
        RAISE EXCEPTION 'a batch holds at most 1000 entities, not %', pg_catalog.jsonb_array_length(batch)
            USING ERRCODE = 'DM413', HINT = 'split the batch';
    END IF;

    FOR item IN SELECT b.value FROM pg_catalog.jsonb_array_elements(batch) AS b (value) LOOP
        item_number := item_number + 1;
        PERFORM dm_private.require_known_keys(item, ARRAY['name', 'aliases', 'kind'],
            pg_catalog.format('entity %s', item_number));
        entity_name := pg_catalog.regexp_replace(
            pg_catalog.btrim(dm_private.json_text(item, 'name', 'entity name', 500, true)), '\s+', ' ', 'g');
        entity_kind := dm_private.normalize_name(
            COALESCE(dm_private.json_text(item, 'kind', 'entity kind', 100), 'thing'));
        IF item ? 'aliases' AND item -> 'aliases' <> 'null'::jsonb
           AND pg_catalog.jsonb_typeof(item -> 'aliases') <> 'array' THEN
            RAISE EXCEPTION 'entity %: aliases must be an array of strings', item_number USING ERRCODE = '22023';
        END IF;
        IF pg_catalog.jsonb_array_length(COALESCE(NULLIF(item -> 'aliases', 'null'::jsonb), '[]'::jsonb)) > 100 THEN
            RAISE EXCEPTION 'entity %: at most 100 aliases', item_number USING ERRCODE = 'DM413';
        END IF;

        INSERT INTO dm_private.entities AS en (team_id, entity_id, canonical_name, normalized_name, kind)
        VALUES (team, pg_catalog.gen_random_uuid(), entity_name, dm_private.normalize_name(entity_name), entity_kind)
        ON CONFLICT ON CONSTRAINT entities_team_name_kind_key DO UPDATE SET updated_at = en.updated_at
        RETURNING en.entity_id INTO found_entity;

        INSERT INTO dm_private.entity_names AS n (team_id, entity_id, name, normalized_name, is_canonical)
        VALUES (team, found_entity, entity_name, dm_private.normalize_name(entity_name), true)
        ON CONFLICT ON CONSTRAINT entity_names_pkey DO NOTHING;

        FOR alias_value IN
            SELECT a.value FROM pg_catalog.jsonb_array_elements(
                COALESCE(NULLIF(item -> 'aliases', 'null'::jsonb), '[]'::jsonb)) AS a (value)
        LOOP
            IF pg_catalog.jsonb_typeof(alias_value) <> 'string' OR pg_catalog.btrim(alias_value #>> '{}') = ''
               OR pg_catalog.length(alias_value #>> '{}') > 500 THEN
                RAISE EXCEPTION 'entity %: every alias must be a non-blank string of at most 500 characters',
                    item_number USING ERRCODE = '22023';
            END IF;
            alias_text := pg_catalog.regexp_replace(pg_catalog.btrim(alias_value #>> '{}'), '\s+', ' ', 'g');
            INSERT INTO dm_private.entity_names AS n (team_id, entity_id, name, normalized_name, is_canonical)
            VALUES (team, found_entity, alias_text, dm_private.normalize_name(alias_text), false)
            ON CONFLICT ON CONSTRAINT entity_names_pkey DO NOTHING;
        END LOOP;
        result_ids := result_ids || found_entity;
    END LOOP;

    PERFORM dm_private.sync_entity_documents(
        team, ARRAY(SELECT DISTINCT x FROM pg_catalog.unnest(result_ids) AS u (x)));
    RETURN result_ids;
END
$$;
COMMENT ON FUNCTION dm.upsert_entities(uuid, jsonb) IS
'Creates or extends entities (one object or an array of at most 1000): [{"name", "aliases"?, "kind"?}]. An entity is identified by its normalized name (lower case, single spaces) and kind within the team; aliases are added, never removed; the first canonical spelling is kept. Returns entity ids in input order and writes entity search documents in the same transaction.';
REVOKE ALL ON FUNCTION dm.upsert_entities(uuid, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm.upsert_entities(uuid, jsonb) TO densemem_app;

CREATE OR REPLACE FUNCTION dm.assert_relationship(team_id uuid, relationship jsonb)
RETURNS uuid
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
#variable_conflict use_column
DECLARE
    team constant uuid := assert_relationship.team_id;
    actor uuid;
    rel jsonb := relationship;
    subject_id uuid;
    object_id uuid;
    object_text text;
    rel_predicate text;
    rel_polarity text;
    rel_valid_from timestamptz;
    rel_valid_to timestamptz;
    rel_group text;
    link jsonb;
    link_number integer := 0;
    link_evidence uuid;
    link_start integer;
    link_end integer;
    link_state text;
    link_length integer;
    new_id uuid := pg_catalog.gen_random_uuid();
BEGIN
    actor := dm_private.require_active_profile(team);
    PERFORM dm_private.require_known_keys(rel,
        ARRAY['subject_entity_id', 'predicate', 'object_entity_id', 'object_value', 'polarity', 'evidence_ids',
              'valid_from', 'valid_to', 'semantic_group'],
        'relationship');
    subject_id := dm_private.json_uuid(rel, 'subject_entity_id', 'subject_entity_id', true);
    object_id := dm_private.json_uuid(rel, 'object_entity_id', 'object_entity_id');
    object_text := dm_private.json_text(rel, 'object_value', 'object_value', 2000);
    IF (object_id IS NULL) = (object_text IS NULL) THEN
        RAISE EXCEPTION 'a relationship has exactly one of object_entity_id and object_value' USING ERRCODE = '22023';
    END IF;
    rel_predicate := dm_private.json_text(rel, 'predicate', 'predicate', 100, true);
    IF rel_predicate !~ '^[a-z][a-z0-9_]{0,99}$' THEN
        RAISE EXCEPTION 'predicate must be lower_snake_case (a letter, then letters, digits or _), not %',
            pg_catalog.quote_literal(rel_predicate) USING ERRCODE = '22023';
    END IF;
    rel_polarity := COALESCE(dm_private.json_text(rel, 'polarity', 'polarity', 1), '+');
    IF rel_polarity NOT IN ('+', '-') THEN
        RAISE EXCEPTION 'polarity must be + or -' USING ERRCODE = '22023';
    END IF;
    rel_valid_from := dm_private.json_timestamp(rel, 'valid_from', 'valid_from');
    rel_valid_to := dm_private.json_timestamp(rel, 'valid_to', 'valid_to');
    IF rel_valid_from IS NOT NULL AND rel_valid_to IS NOT NULL AND rel_valid_from >= rel_valid_to THEN
        RAISE EXCEPTION 'valid_from must be before valid_to' USING ERRCODE = '22023';
    END IF;
    rel_group := dm_private.json_text(rel, 'semantic_group', 'semantic_group', 200);
    IF rel ? 'evidence_ids' AND pg_catalog.jsonb_typeof(rel -> 'evidence_ids') <> 'array' THEN
        RAISE EXCEPTION 'evidence_ids must be an array' USING ERRCODE = '22023';
    END IF;
    IF pg_catalog.jsonb_array_length(COALESCE(rel -> 'evidence_ids', '[]'::jsonb)) > 1000 THEN
        RAISE EXCEPTION 'a relationship cites at most 1000 evidence rows' USING ERRCODE = 'DM413';
    END IF;

    -- Endpoints must be this team's entities; another team's ID reads as unknown.
    IF NOT EXISTS (SELECT 1 FROM dm_private.entities AS en WHERE en.team_id = team AND en.entity_id = subject_id) THEN
        RAISE EXCEPTION 'subject_entity_id is not an entity of this team' USING ERRCODE = '23503';
    END IF;
    IF object_id IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM dm_private.entities AS en WHERE en.team_id = team AND en.entity_id = object_id) THEN
        RAISE EXCEPTION 'object_entity_id is not an entity of this team' USING ERRCODE = '23503';
    END IF;

    INSERT INTO dm_private.relationships (
        team_id, relationship_id, subject_entity_id, predicate, object_entity_id, object_value, polarity,
        owner_profile_id, tier, status, valid_from, valid_to, semantic_group)
    VALUES (team, new_id, subject_id, rel_predicate, object_id, object_text,
            rel_polarity::dm_private.relationship_polarity, actor, 'candidate', 'pending_evidence',
            rel_valid_from, rel_valid_to, rel_group);

    FOR link IN
        SELECT l.value FROM pg_catalog.jsonb_array_elements(COALESCE(rel -> 'evidence_ids', '[]'::jsonb)) AS l (value)
    LOOP
        link_number := link_number + 1;
        link_start := NULL;
        link_end := NULL;
        IF pg_catalog.jsonb_typeof(link) = 'string' THEN
            link_evidence := (link #>> '{}')::uuid;
        ELSIF pg_catalog.jsonb_typeof(link) = 'object' THEN
            PERFORM dm_private.require_known_keys(link, ARRAY['evidence_id', 'span_start', 'span_end'],
                pg_catalog.format('evidence link %s', link_number));
            link_evidence := dm_private.json_uuid(link, 'evidence_id', 'evidence_id', true);
            IF (link ? 'span_start' AND pg_catalog.jsonb_typeof(link -> 'span_start') <> 'number')
               OR (link ? 'span_end' AND pg_catalog.jsonb_typeof(link -> 'span_end') <> 'number') THEN
                RAISE EXCEPTION 'evidence link %: spans are integers', link_number USING ERRCODE = '22023';
            END IF;
            link_start := (link ->> 'span_start')::integer;
            link_end := (link ->> 'span_end')::integer;
        ELSE
            RAISE EXCEPTION 'evidence link %: an evidence id or {"evidence_id", "span_start", "span_end"}', link_number
                USING ERRCODE = '22023';
        END IF;

        SELECT e.state::text, pg_catalog.char_length(e.text) INTO link_state, link_length
        FROM dm_private.evidence AS e
        WHERE e.team_id = team AND e.evidence_id = link_evidence;
        IF link_state IS NULL THEN
            RAISE EXCEPTION 'evidence link %: not an evidence row of this team', link_number USING ERRCODE = '23503';
        END IF;
        IF link_state = 'erased' THEN
            RAISE EXCEPTION 'evidence link %: the evidence was erased and cannot support a relationship', link_number
                USING ERRCODE = '22023';
        END IF;
        IF (link_start IS NULL) <> (link_end IS NULL) OR link_start < 0 OR link_end <= link_start
           OR link_end > link_length THEN
            RAISE EXCEPTION 'evidence link %: span [%, %) is not inside the evidence text (% characters)',
                link_number, link_start, link_end, link_length USING ERRCODE = '23514';
        END IF;
        INSERT INTO dm_private.relationship_evidence AS re (team_id, relationship_id, evidence_id, span_start, span_end)
        VALUES (team, new_id, link_evidence, link_start, link_end)
        ON CONFLICT ON CONSTRAINT relationship_evidence_pkey DO NOTHING;
    END LOOP;

    PERFORM dm_private.record_transition(team, 'relationship', new_id, NULL, 'pending_evidence', NULL, 'candidate',
                                         actor, 'asserted');

    -- Conflicts with the team's live relationships of the same subject and
    -- predicate whose valid times overlap (unbounded ends overlap everything).
    INSERT INTO dm_private.conflicts AS c (team_id, conflict_id, relationship_id, conflicting_relationship_id, kind)
    SELECT team, pg_catalog.gen_random_uuid(), LEAST(new_id, o.relationship_id), GREATEST(new_id, o.relationship_id),
           CASE WHEN o.object_entity_id IS NOT DISTINCT FROM object_id
                     AND o.object_value IS NOT DISTINCT FROM object_text
                THEN 'polarity_mismatch'::dm_private.conflict_kind
                ELSE 'object_mismatch'::dm_private.conflict_kind END
    FROM dm_private.relationships AS o
    WHERE o.team_id = team
      AND o.subject_entity_id = subject_id
      AND o.predicate = rel_predicate
      AND o.relationship_id <> new_id
      AND o.status NOT IN ('retracted', 'superseded', 'rejected')
      AND (o.object_entity_id IS DISTINCT FROM object_id
           OR o.object_value IS DISTINCT FROM object_text
           OR o.polarity <> rel_polarity::dm_private.relationship_polarity)
      AND COALESCE(o.valid_from, '-infinity'::timestamptz) < COALESCE(rel_valid_to, 'infinity'::timestamptz)
      AND COALESCE(rel_valid_from, '-infinity'::timestamptz) < COALESCE(o.valid_to, 'infinity'::timestamptz)
    ON CONFLICT ON CONSTRAINT conflicts_pair_key DO NOTHING;

    PERFORM dm_private.sync_relationship_documents(team, ARRAY[new_id]);
    RETURN new_id;
END
$$;
COMMENT ON FUNCTION dm.assert_relationship(uuid, jsonb) IS
'Asserts a relationship authored by the acting profile: {"subject_entity_id", "predicate", "object_entity_id" | "object_value", "polarity"?, "evidence_ids": [id, ...] or [{"evidence_id", "span_start", "span_end"}], "valid_from"?, "valid_to"?, "semantic_group"?}. It starts as tier candidate, status pending_evidence, with a transition row; disagreements with the team''s live relationships of the same subject and predicate are recorded in conflicts. SQLSTATE 22023 bad value, 22P02 malformed uuid, 23503 entity or evidence not in this team, 23514 span outside the text.';
REVOKE ALL ON FUNCTION dm.assert_relationship(uuid, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm.assert_relationship(uuid, jsonb) TO densemem_app;

-- Evidence -> eligible relationship links (migration 0038): a row per
-- accepted relationship_evidence link whose relationship is eligible by
-- status and tier (active, validated_claim or fact), with the endpoints,
-- owner and recorded end copied, so that recall's proximity signal and
-- discovery's seeds go from an evidence row to its entities in one index
-- range. These statement triggers keep it exact in the transaction of every
-- write (assert, verification, lifecycle moves, erasure, direct SQL).
-- After INSERT on relationship_evidence: links of the new accepted rows
-- whose relationship is eligible.
CREATE OR REPLACE FUNCTION dm_private.evidence_links_inserted()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
    INSERT INTO dm_private.evidence_entity_links AS l (team_id, evidence_id, relationship_id, subject_entity_id,
                                                       object_entity_id, owner_profile_id, known_to)
    SELECT n.team_id, n.evidence_id, n.relationship_id, r.subject_entity_id, r.object_entity_id, r.owner_profile_id,
           r.known_to
    FROM new_rows AS n
    JOIN dm_private.relationships AS r ON r.team_id = n.team_id AND r.relationship_id = n.relationship_id
    WHERE n.accepted
      AND r.status = 'active' AND r.tier IN ('validated_claim', 'fact')
    ON CONFLICT ON CONSTRAINT evidence_entity_links_pkey DO NOTHING;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.evidence_links_inserted() IS
'Trigger (statement, after INSERT on relationship_evidence): adds the evidence_entity_links rows of new accepted links to eligible relationships.';

-- After UPDATE on relationship_evidence: a link whose key or accepted flag
-- changed is removed and re-added from its new row. Each statement runs
-- only when it has a row to change: every statement on evidence_entity_links
-- fires the evidence_link_endpoints recount (0073) even when it changes no
-- row, and the common update (erasure's span-only one) changes none.
CREATE OR REPLACE FUNCTION dm_private.evidence_links_updated()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM old_rows AS o
               WHERE NOT EXISTS (SELECT 1 FROM new_rows AS n
                                 WHERE n.team_id = o.team_id AND n.evidence_id = o.evidence_id
                                   AND n.relationship_id = o.relationship_id AND n.accepted = o.accepted)) THEN
        DELETE FROM dm_private.evidence_entity_links AS l
        USING old_rows AS o
        WHERE l.team_id = o.team_id AND l.evidence_id = o.evidence_id AND l.relationship_id = o.relationship_id
          AND NOT EXISTS (SELECT 1 FROM new_rows AS n
                          WHERE n.team_id = o.team_id AND n.evidence_id = o.evidence_id
                            AND n.relationship_id = o.relationship_id AND n.accepted = o.accepted);
    END IF;
    IF EXISTS (SELECT 1 FROM new_rows AS n
               WHERE n.accepted
                 AND NOT EXISTS (SELECT 1 FROM old_rows AS o
                                 WHERE o.team_id = n.team_id AND o.evidence_id = n.evidence_id
                                   AND o.relationship_id = n.relationship_id AND o.accepted = n.accepted)) THEN
        INSERT INTO dm_private.evidence_entity_links AS l (team_id, evidence_id, relationship_id, subject_entity_id,
                                                           object_entity_id, owner_profile_id, known_to)
        SELECT n.team_id, n.evidence_id, n.relationship_id, r.subject_entity_id, r.object_entity_id,
               r.owner_profile_id, r.known_to
        FROM new_rows AS n
        JOIN dm_private.relationships AS r ON r.team_id = n.team_id AND r.relationship_id = n.relationship_id
        WHERE n.accepted
          AND r.status = 'active' AND r.tier IN ('validated_claim', 'fact')
          AND NOT EXISTS (SELECT 1 FROM old_rows AS o
                          WHERE o.team_id = n.team_id AND o.evidence_id = n.evidence_id
                            AND o.relationship_id = n.relationship_id AND o.accepted = n.accepted)
        ON CONFLICT ON CONSTRAINT evidence_entity_links_pkey DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.evidence_links_updated() IS
'Trigger (statement, after UPDATE on relationship_evidence): a link whose key or accepted flag changed leaves evidence_entity_links and comes back from its new row when accepted and eligible (no statement on the links when nothing changed).';

-- After DELETE on relationship_evidence: the links go with it.
CREATE OR REPLACE FUNCTION dm_private.evidence_links_deleted()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
    DELETE FROM dm_private.evidence_entity_links AS l
    USING old_rows AS o
    WHERE l.team_id = o.team_id AND l.evidence_id = o.evidence_id AND l.relationship_id = o.relationship_id;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.evidence_links_deleted() IS
'Trigger (statement, after DELETE on relationship_evidence): removes the matching evidence_entity_links rows.';

-- After UPDATE on relationships: the links of a relationship whose status,
-- tier, endpoints, owner or recorded end changed follow it. Its links are
-- keyed by (team, evidence, relationship) and hold its accepted evidence
-- rows, which an update of the relationship does not change, so:
--   eligible before and after (a recorded end, new endpoints or owner):
--     the links are updated in place;
--   eligible before only (superseded, retracted, quarantined): deleted;
--   eligible after only (verified, released): inserted;
--   neither, or only status and tier moved within eligibility: untouched.
-- Each statement runs only when it has rows: every statement on
-- evidence_entity_links fires the evidence_link_endpoints recount (0073),
-- and an update in place recounts the evidence once, with both transition
-- tables, where a delete and a re-insert recounted it twice (session 12:
-- 2.8 M of a 4.2 M instruction recorded-end update of one relationship).
CREATE OR REPLACE FUNCTION dm_private.relationship_links_updated()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
DECLARE
    kept_teams uuid [];
    kept_ids uuid [];
    dropped_teams uuid [];
    dropped_ids uuid [];
    added_teams uuid [];
    added_ids uuid [];
BEGIN
    SELECT pg_catalog.array_agg(c.team_id) FILTER (WHERE c.was_eligible AND c.is_eligible AND c.link_changed),
           pg_catalog.array_agg(c.relationship_id) FILTER (WHERE c.was_eligible AND c.is_eligible AND c.link_changed),
           pg_catalog.array_agg(c.team_id) FILTER (WHERE c.was_eligible AND NOT c.is_eligible),
           pg_catalog.array_agg(c.relationship_id) FILTER (WHERE c.was_eligible AND NOT c.is_eligible),
           pg_catalog.array_agg(c.team_id) FILTER (WHERE c.is_eligible AND NOT c.was_eligible),
           pg_catalog.array_agg(c.relationship_id) FILTER (WHERE c.is_eligible AND NOT c.was_eligible)
    INTO kept_teams, kept_ids, dropped_teams, dropped_ids, added_teams, added_ids
    FROM (SELECT n.team_id, n.relationship_id,
                 o.status = 'active' AND o.tier IN ('validated_claim', 'fact') AS was_eligible,
                 n.status = 'active' AND n.tier IN ('validated_claim', 'fact') AS is_eligible,
                 (o.subject_entity_id, o.object_entity_id, o.owner_profile_id, o.known_to)
                 IS DISTINCT FROM (n.subject_entity_id, n.object_entity_id, n.owner_profile_id, n.known_to)
                     AS link_changed
          FROM new_rows AS n
          JOIN old_rows AS o ON o.team_id = n.team_id AND o.relationship_id = n.relationship_id
          WHERE (o.status, o.tier, o.subject_entity_id, o.object_entity_id, o.owner_profile_id, o.known_to)
                IS DISTINCT FROM (n.status, n.tier, n.subject_entity_id, n.object_entity_id, n.owner_profile_id,
                                  n.known_to)) AS c;
    IF kept_ids IS NOT NULL THEN
        UPDATE dm_private.evidence_entity_links AS l
        SET subject_entity_id = n.subject_entity_id, object_entity_id = n.object_entity_id,
            owner_profile_id = n.owner_profile_id, known_to = n.known_to
        FROM ROWS FROM (pg_catalog.unnest(kept_teams), pg_catalog.unnest(kept_ids)) AS c (team_id, relationship_id)
        JOIN new_rows AS n ON n.team_id = c.team_id AND n.relationship_id = c.relationship_id
        WHERE l.team_id = c.team_id AND l.relationship_id = c.relationship_id;
    END IF;
    IF dropped_ids IS NOT NULL THEN
        DELETE FROM dm_private.evidence_entity_links AS l
        USING ROWS FROM (pg_catalog.unnest(dropped_teams), pg_catalog.unnest(dropped_ids))
            AS c (team_id, relationship_id)
        WHERE l.team_id = c.team_id AND l.relationship_id = c.relationship_id;
    END IF;
    IF added_ids IS NOT NULL THEN
        INSERT INTO dm_private.evidence_entity_links AS l (team_id, evidence_id, relationship_id, subject_entity_id,
                                                           object_entity_id, owner_profile_id, known_to)
        SELECT re.team_id, re.evidence_id, re.relationship_id, n.subject_entity_id, n.object_entity_id,
               n.owner_profile_id, n.known_to
        FROM ROWS FROM (pg_catalog.unnest(added_teams), pg_catalog.unnest(added_ids)) AS c (team_id, relationship_id)
        JOIN new_rows AS n ON n.team_id = c.team_id AND n.relationship_id = c.relationship_id
        JOIN dm_private.relationship_evidence AS re
          ON re.team_id = c.team_id AND re.relationship_id = c.relationship_id
        WHERE re.accepted
        ON CONFLICT ON CONSTRAINT evidence_entity_links_pkey DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.relationship_links_updated() IS
'Trigger (statement, after UPDATE on relationships): the evidence_entity_links rows of relationships whose status, tier, endpoints, owner or recorded end changed follow them: updated in place while eligible, deleted when they leave eligibility, inserted from their accepted evidence when they enter it.';

-- TRUNCATE has no transition table: the links are emptied with it.
CREATE OR REPLACE FUNCTION dm_private.evidence_links_truncated()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
    TRUNCATE dm_private.evidence_entity_links;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.evidence_links_truncated() IS
'Trigger (statement, after TRUNCATE on relationship_evidence or relationships): empties evidence_entity_links.';

REVOKE ALL ON FUNCTION dm_private.evidence_links_inserted() FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.evidence_links_updated() FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.evidence_links_deleted() FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.relationship_links_updated() FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.evidence_links_truncated() FROM PUBLIC;

-- Evidence -> the endpoints of its eligible links, one row per evidence
-- (migration 0073): recall's proximity (dm_private.entity_proximity) reads
-- one row per candidate (a hash probe by evidence_id) instead of a range of
-- evidence_entity_links per candidate and a row per link (about a third of
-- a proximity call, session 12). The row carries what the read needs to
-- know the distinct endpoints are exactly its answer: the link count (at
-- most the profile's fan-out: every link is inside the per-evidence cap),
-- the earliest recorded end (none, or later than now: every link is
-- current) and the owners (none inactive). Any other evidence is read from
-- evidence_entity_links as before. Derived from evidence_entity_links, by
-- statement triggers on that table, so every write that changes a link
-- (relationship_evidence, relationships, erasure, replica-mode loads, the
-- links' own truncate) changes the row in the same transaction.
--
-- Concurrency: a row is a count over many links, so two transactions
-- changing links of the same evidence must not both write a count from
-- their own snapshot. Evidence seen for the first time is inserted with
-- ON CONFLICT DO NOTHING (a concurrent first insert makes this one wait,
-- then fall to the second path). Rows that exist are locked in key order,
-- which waits for any other writer of the same evidence to commit; the
-- following statement takes a new snapshot (READ COMMITTED) that sees that
-- writer's links, and recounts. Under REPEATABLE READ the lock raises a
-- serialization failure instead. A row whose links are all gone stays, with
-- a count of 0 and empty arrays, so that a waiting writer always finds the
-- row it locks (rows go only with TRUNCATE).
CREATE OR REPLACE FUNCTION dm_private.evidence_link_endpoints_refresh(team_ids uuid [], evidence_ids uuid [])
RETURNS void
LANGUAGE plpgsql
SET search_path = ''
AS $$
DECLARE
    fresh_teams uuid [];
    fresh_evidence uuid [];
    held_teams uuid [];
    held_evidence uuid [];
BEGIN
    -- Evidence with no row yet (a bulk load: all of it) is counted once and
    -- inserted; evidence with a row is only locked and recounted below. The
    -- same statement sorts every pair for the lock, so when all of them
    -- have a row (an update or a delete of links: the common case, session
    -- 13) the insert statement is not run at all.
    SELECT pg_catalog.array_agg(t.team_id) FILTER (WHERE NOT t.has_row),
           pg_catalog.array_agg(t.evidence_id) FILTER (WHERE NOT t.has_row),
           pg_catalog.array_agg(t.team_id ORDER BY t.team_id, t.evidence_id),
           pg_catalog.array_agg(t.evidence_id ORDER BY t.team_id, t.evidence_id)
    INTO fresh_teams, fresh_evidence, held_teams, held_evidence
    FROM (SELECT p.team_id, p.evidence_id, s.evidence_id IS NOT NULL AS has_row
          FROM (SELECT DISTINCT k.team_id, k.evidence_id
                FROM ROWS FROM (pg_catalog.unnest(team_ids), pg_catalog.unnest(evidence_ids))
                    AS k (team_id, evidence_id)) AS p
          LEFT JOIN dm_private.evidence_link_endpoints AS s
            ON s.team_id = p.team_id AND s.evidence_id = p.evidence_id) AS t;
    IF fresh_teams IS NOT NULL THEN
        WITH inserted AS (
            INSERT INTO dm_private.evidence_link_endpoints AS s (team_id, evidence_id, entity_ids, link_count,
                                                                owner_ids, earliest_known_to)
            SELECT c.team_id, c.evidence_id, c.entity_ids, c.link_count, c.owner_ids, c.earliest_known_to
            FROM dm_private.evidence_link_endpoints_count(fresh_teams, fresh_evidence) AS c
            WHERE c.link_count > 0
            ON CONFLICT ON CONSTRAINT evidence_link_endpoints_pkey DO NOTHING
            RETURNING s.team_id, s.evidence_id
        )
        SELECT pg_catalog.array_agg(t.team_id ORDER BY t.team_id, t.evidence_id),
               pg_catalog.array_agg(t.evidence_id ORDER BY t.team_id, t.evidence_id)
        INTO held_teams, held_evidence
        FROM ROWS FROM (pg_catalog.unnest(held_teams), pg_catalog.unnest(held_evidence)) AS t (team_id, evidence_id)
        WHERE NOT EXISTS (SELECT 1 FROM inserted AS i WHERE i.team_id = t.team_id AND i.evidence_id = t.evidence_id);
    END IF;
    IF held_teams IS NULL THEN
        RETURN;
    END IF;
    PERFORM 1
    FROM dm_private.evidence_link_endpoints AS s
    JOIN ROWS FROM (pg_catalog.unnest(held_teams), pg_catalog.unnest(held_evidence)) AS k (team_id, evidence_id)
      ON s.team_id = k.team_id AND s.evidence_id = k.evidence_id
    ORDER BY s.team_id, s.evidence_id
    FOR UPDATE OF s;
    UPDATE dm_private.evidence_link_endpoints AS s
    SET entity_ids = c.entity_ids, link_count = c.link_count, owner_ids = c.owner_ids,
        earliest_known_to = c.earliest_known_to
    FROM dm_private.evidence_link_endpoints_count(held_teams, held_evidence) AS c
    WHERE s.team_id = c.team_id AND s.evidence_id = c.evidence_id;
END
$$;
COMMENT ON FUNCTION dm_private.evidence_link_endpoints_refresh(uuid [], uuid []) IS
'Recounts the evidence_link_endpoints rows of the given (team, evidence) pairs from evidence_entity_links: evidence without a row counted and inserted, existing rows locked (a concurrent writer of the same evidence commits first) and recounted.';

-- The evidence_link_endpoints rows of the given (team, evidence) pairs, as
-- counted from evidence_entity_links now: sorted distinct endpoints
-- (subjects and entity objects), link count, sorted distinct owners and
-- earliest recorded end; a pair with no link gives a count of 0 and empty
-- arrays. Set-based: one call per trigger statement, however many rows.
CREATE OR REPLACE FUNCTION dm_private.evidence_link_endpoints_count(team_ids uuid [], evidence_ids uuid [])
RETURNS TABLE (team_id uuid, evidence_id uuid, entity_ids uuid [], link_count integer, owner_ids uuid [],
               earliest_known_to timestamptz)
LANGUAGE sql
STABLE
SET search_path = ''
AS $$
    SELECT k.team_id, k.evidence_id,
           COALESCE(pg_catalog.array_agg(DISTINCT e.entity_id) FILTER (WHERE e.entity_id IS NOT NULL), '{}'),
           pg_catalog.count(DISTINCT l.relationship_id)::integer,
           COALESCE(pg_catalog.array_agg(DISTINCT l.owner_profile_id) FILTER (WHERE l.owner_profile_id IS NOT NULL),
                    '{}'),
           pg_catalog.min(l.known_to)
    FROM (SELECT DISTINCT u.team_id, u.evidence_id
          FROM ROWS FROM (pg_catalog.unnest(team_ids), pg_catalog.unnest(evidence_ids)) AS u (team_id, evidence_id)) AS k
    LEFT JOIN dm_private.evidence_entity_links AS l
      ON l.team_id = k.team_id AND l.evidence_id = k.evidence_id
    LEFT JOIN LATERAL (VALUES (l.subject_entity_id), (l.object_entity_id)) AS e (entity_id) ON true
    GROUP BY k.team_id, k.evidence_id
$$;
COMMENT ON FUNCTION dm_private.evidence_link_endpoints_count(uuid [], uuid []) IS
'The evidence_link_endpoints rows of the given (team, evidence) pairs, counted from evidence_entity_links: sorted distinct endpoints, link count, sorted distinct owners, earliest recorded end (count 0 and empty arrays without links).';

-- After INSERT, UPDATE or DELETE on evidence_entity_links (statement): the
-- evidence rows whose links changed are recounted.
CREATE OR REPLACE FUNCTION dm_private.link_endpoints_links_changed()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM dm_private.evidence_link_endpoints_refresh(pg_catalog.array_agg(n.team_id),
                                                           pg_catalog.array_agg(n.evidence_id))
        FROM new_rows AS n;
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM dm_private.evidence_link_endpoints_refresh(pg_catalog.array_agg(o.team_id),
                                                           pg_catalog.array_agg(o.evidence_id))
        FROM old_rows AS o;
    ELSE
        PERFORM dm_private.evidence_link_endpoints_refresh(pg_catalog.array_agg(x.team_id),
                                                           pg_catalog.array_agg(x.evidence_id))
        FROM (SELECT n.team_id, n.evidence_id FROM new_rows AS n
              UNION
              SELECT o.team_id, o.evidence_id FROM old_rows AS o) AS x;
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.link_endpoints_links_changed() IS
'Trigger (statement, after INSERT, UPDATE or DELETE on evidence_entity_links): recounts the evidence_link_endpoints rows of the evidence whose links changed.';

-- TRUNCATE has no transition table: the summaries go with the links.
CREATE OR REPLACE FUNCTION dm_private.link_endpoints_links_truncated()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
    TRUNCATE dm_private.evidence_link_endpoints;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.link_endpoints_links_truncated() IS
'Trigger (statement, after TRUNCATE on evidence_entity_links): empties evidence_link_endpoints.';

REVOKE ALL ON FUNCTION dm_private.evidence_link_endpoints_refresh(uuid [], uuid []) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.evidence_link_endpoints_count(uuid [], uuid []) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.link_endpoints_links_changed() FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.link_endpoints_links_truncated() FROM PUBLIC;
-- The write path (invoker, as densemem_app) reaches them through the triggers.
GRANT EXECUTE ON FUNCTION dm_private.evidence_link_endpoints_refresh(uuid [], uuid []) TO densemem_app;
GRANT EXECUTE ON FUNCTION dm_private.evidence_link_endpoints_count(uuid [], uuid []) TO densemem_app;
