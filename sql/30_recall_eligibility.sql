-- Recall stage 1: the request, the ranking profile and eligibility.
--
-- recall_settings resolves which versioned ranking profile applies (a named
-- one for evaluation, else the team's override, else the default) and merges
-- the team's overrides over it. recall_request validates the request once and
-- returns it normalised, so that every later stage reads typed values and no
-- stage sees an unchecked field. recall_eligible_documents is the eligibility
-- rule of seed 000 (plus the policy filter of seed 002 §8) as one set a DBA
-- can query; the branches apply the same predicate inline so that the
-- planner can combine it with their indexes.

-- Deep merge of two JSON objects (the override wins, objects merge by key).
CREATE OR REPLACE FUNCTION dm_private.jsonb_deep_merge(base jsonb, override jsonb)
RETURNS jsonb
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
SET search_path = ''
AS $$
    SELECT CASE
        WHEN override IS NULL THEN base
        WHEN base IS NULL OR pg_catalog.jsonb_typeof(base) <> 'object'
             OR pg_catalog.jsonb_typeof(override) <> 'object' THEN override
        ELSE (
            SELECT pg_catalog.jsonb_object_agg(
                COALESCE(b.key, o.key),
                CASE WHEN b.key IS NULL THEN o.value
                     WHEN o.key IS NULL THEN b.value
                     ELSE dm_private.jsonb_deep_merge(b.value, o.value) END)
            FROM pg_catalog.jsonb_each(base) AS b (key, value)
            FULL JOIN pg_catalog.jsonb_each(override) AS o (key, value) ON o.key = b.key)
    END
$$;
COMMENT ON FUNCTION dm_private.jsonb_deep_merge(jsonb, jsonb) IS
'Merges two JSON objects recursively; values of the second win. Used to lay a team''s ranking overrides over a profile.';
REVOKE ALL ON FUNCTION dm_private.jsonb_deep_merge(jsonb, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.jsonb_deep_merge(jsonb, jsonb)
TO densemem_app, densemem_analyst, densemem_operator, densemem_searcher;

-- Hard anchors (seed 000) are identifiers: ABC-123 must not be satisfied by a
-- text that only holds ABC-1234, nor v1.2.3 by v1.2.30. An anchor therefore
-- counts only where it occurs with identifier boundaries on both sides: the
-- character before and after it is not a letter or digit, and not a joiner
-- of its grammar (docs/QUERY_GRAMMAR.md) that continues the identifier. The
-- joiners are '_' and '-' (they join every grammar's identifiers), every
-- other non-alphanumeric character of the anchor itself ('.' of a version or
-- file name, '/' of a path, ':' and '@' of a scoped name), and the other
-- joiners of the grammar the anchor's shape shows: '. / : @' for a scoped
-- name (its name part may hold '.' and '/'), '. /' for a path, '+' for a
-- dotted version (build metadata); a joiner only
-- continues the identifier when a letter or digit follows it (after the
-- anchor) or precedes it (before the anchor), so "ABC-123." at the end of a
-- sentence and "(v1.2.3)" match while "ABC-123-4", "v1.2.3.4" and
-- "x/src/a.py" do not. Case-insensitive, like the rest of the exact branch.
-- The regular expression of one anchor (lower case), built once per anchor.
CREATE OR REPLACE FUNCTION dm_private.recall_anchor_pattern(anchor text)
RETURNS text
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
SET search_path = ''
AS $$
    SELECT '(?<![[:alnum:]])(?<![[:alnum:]]' || j.joiners || ')'
           || pg_catalog.regexp_replace(pg_catalog.lower(anchor), '([^[:alnum:][:space:]])', '\\\1', 'g')
           || '(?![[:alnum:]])(?!' || j.joiners || '[[:alnum:]])'
    FROM (SELECT '[\_\-' || COALESCE(pg_catalog.string_agg(DISTINCT '\' || c.ch, ''), '') || ']' AS joiners
          FROM pg_catalog.regexp_split_to_table(
                   pg_catalog.lower(anchor)
                   || CASE WHEN anchor ~ '[:@]' THEN './:@' ELSE '' END
                   || CASE WHEN anchor ~ '[/\\]' THEN './' ELSE '' END
                   || CASE WHEN pg_catalog.strpos(anchor, '.') > 0 THEN '+' ELSE '' END, '') AS c (ch)
          WHERE c.ch !~ '[[:alnum:][:space:]]' AND c.ch NOT IN ('_', '-')) AS j
$$;
COMMENT ON FUNCTION dm_private.recall_anchor_pattern(text) IS
'The regular expression (for lower-cased text) that finds one hard anchor with identifier boundaries on both sides: no letter or digit next to it, and no joiner (_ - or a punctuation character of the anchor itself) that continues it into a longer identifier.';
REVOKE ALL ON FUNCTION dm_private.recall_anchor_pattern(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_anchor_pattern(text)
TO densemem_app, densemem_analyst, densemem_operator, densemem_searcher;

-- Whether one text itself satisfies every required anchor (identifier
-- boundaries as above). The one rule the exact branch (sql/36) and the
-- rerank (sql/50) both apply; a cheap substring test runs first.
CREATE OR REPLACE FUNCTION dm_private.recall_has_anchors(body text, anchors text [])
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
SET search_path = ''
AS $$
    SELECT NOT EXISTS (
        SELECT 1
        FROM (SELECT pg_catalog.lower(COALESCE(body, '')) AS text) AS b
        CROSS JOIN pg_catalog.unnest(anchors) AS a (anchor)
        WHERE NOT (pg_catalog.strpos(b.text, pg_catalog.lower(a.anchor)) > 0
                   AND b.text OPERATOR(pg_catalog.~) dm_private.recall_anchor_pattern(a.anchor)))
$$;
COMMENT ON FUNCTION dm_private.recall_has_anchors(text, text []) IS
'True when the text contains every anchor with identifier boundaries on both sides (ABC-123 is not in "ABC-1234", v1.2.3 is not in "v1.2.30"); case-insensitive. Used by the exact branch and the rerank.';
REVOKE ALL ON FUNCTION dm_private.recall_has_anchors(text, text []) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_has_anchors(text, text [])
TO densemem_app, densemem_analyst, densemem_operator, densemem_searcher;

-- The settings a recall runs with: profile settings, the team's overrides,
-- and the profile identity ("profile_name", "profile_version") and the
-- active search-index profile ("index") so that telemetry and explain can
-- name exactly what ranked the answer.
CREATE OR REPLACE FUNCTION dm_private.recall_settings(team_id uuid, profile_name text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SET search_path = ''
AS $$
DECLARE
    chosen record;
BEGIN
    -- One statement per call: the profile (named, or the team's chosen one,
    -- or the default) with the active search-index profile joined on (at
    -- most one row: both are unique partial indexes), where three
    -- statements read them one after another.
    IF profile_name IS NOT NULL THEN
        SELECT rp.ranking_profile_id, rp.name, rp.version, rp.settings, NULL::jsonb AS team_settings,
               sip.version AS index_version, sip.settings AS index_settings, rs.settings AS resolved
        INTO chosen
        FROM (SELECT r.ranking_profile_id, r.name, r.version, r.settings
              FROM dm_private.ranking_profiles AS r
              WHERE r.name = profile_name
              ORDER BY r.version DESC
              LIMIT 1) AS rp
        LEFT JOIN dm_private.search_index_profiles AS sip ON sip.is_active
        LEFT JOIN dm_private.recall_settings_resolved AS rs
            ON rs.ranking_profile_id = rp.ranking_profile_id
           AND rs.search_index_profile_id IS NOT DISTINCT FROM sip.search_index_profile_id;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'unknown ranking profile %', profile_name
                USING ERRCODE = '22023', HINT = 'ranking_profile names a row of dm_private.ranking_profiles';
        END IF;
    ELSE
        -- the team's override row when there is one (pick 1), else the
        -- default profile (pick 2)
        SELECT rp.ranking_profile_id, rp.name, rp.version, rp.settings, rp.team_settings,
               sip.version AS index_version, sip.settings AS index_settings, rs.settings AS resolved
        INTO chosen
        FROM (SELECT c.ranking_profile_id, c.name, c.version, c.settings, c.team_settings
              FROM (SELECT r.ranking_profile_id, r.name, r.version, r.settings, o.settings AS team_settings, 1 AS pick
                    FROM dm_private.team_ranking_overrides AS o
                    JOIN dm_private.ranking_profiles AS r ON r.ranking_profile_id = o.ranking_profile_id
                    WHERE o.team_id = recall_settings.team_id
                    UNION ALL
                    SELECT r.ranking_profile_id, r.name, r.version, r.settings, NULL::jsonb, 2
                    FROM dm_private.ranking_profiles AS r
                    WHERE r.is_default) AS c
              ORDER BY c.pick
              LIMIT 1) AS rp
        LEFT JOIN dm_private.search_index_profiles AS sip ON sip.is_active
        LEFT JOIN dm_private.recall_settings_resolved AS rs
            ON rs.ranking_profile_id = rp.ranking_profile_id
           AND rs.search_index_profile_id IS NOT DISTINCT FROM sip.search_index_profile_id;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'no default ranking profile' USING ERRCODE = 'DM503';
        END IF;
    END IF;
    -- No overrides (the common case): the profile's settings as resolved
    -- when it (or the active search-index profile) last changed (0088,
    -- dm_private.recall_settings_resolve below): the same value as the
    -- concatenation below, which took the whole settings object apart and
    -- built it again on every recall (~0.16 M instructions, session 14).
    -- A profile with no resolved row for the active search-index profile is
    -- resolved here, as before.
    IF chosen.resolved IS NOT NULL AND (chosen.team_settings IS NULL OR chosen.team_settings = '{}'::jsonb) THEN
        RETURN chosen.resolved;
    END IF;
    -- No overrides: no deep merge, which costs more than the rest of this
    -- function.
    RETURN CASE WHEN chosen.team_settings IS NULL OR chosen.team_settings = '{}'::jsonb THEN chosen.settings
                ELSE dm_private.jsonb_deep_merge(chosen.settings, chosen.team_settings) END
        || pg_catalog.jsonb_build_object(
            'profile_name', chosen.name,
            'profile_version', chosen.version,
            'index_version', chosen.index_version,
            'index', COALESCE(chosen.index_settings, '{}'::jsonb));
END
$$;
COMMENT ON FUNCTION dm_private.recall_settings(uuid, text) IS
'The ranking settings of one recall: the named profile (latest version) or the team''s chosen profile with its overrides, or the default; plus profile_name, profile_version, index_version and index (the active search-index profile).';
REVOKE ALL ON FUNCTION dm_private.recall_settings(uuid, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_settings(uuid, text)
TO densemem_app, densemem_analyst, densemem_operator;

-- Rebuilds dm_private.recall_settings_resolved (0088): every ranking profile's
-- settings with its identity and the active search-index profile laid over
-- them, exactly what recall_settings returns for a team without overrides.
-- Statement triggers on ranking_profiles and search_index_profiles call it
-- in the transaction of every change (a handful of rows: the whole table is
-- rebuilt), so recall_settings reads the value instead of building it on
-- every recall.
CREATE OR REPLACE FUNCTION dm_private.recall_settings_resolve()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
    DELETE FROM dm_private.recall_settings_resolved;
    INSERT INTO dm_private.recall_settings_resolved (ranking_profile_id, search_index_profile_id, settings)
    SELECT r.ranking_profile_id, sip.search_index_profile_id,
           r.settings || pg_catalog.jsonb_build_object(
               'profile_name', r.name,
               'profile_version', r.version,
               'index_version', sip.version,
               'index', COALESCE(sip.settings, '{}'::jsonb))
    FROM dm_private.ranking_profiles AS r
    LEFT JOIN dm_private.search_index_profiles AS sip ON sip.is_active;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.recall_settings_resolve() IS
'Trigger (statement, after any change to ranking_profiles or search_index_profiles): rebuilds recall_settings_resolved.';
REVOKE ALL ON FUNCTION dm_private.recall_settings_resolve() FROM PUBLIC;

-- Strict uuid list from a request field: an array of at most max_count
-- strings, each a uuid (22P02 otherwise), duplicates removed.
CREATE OR REPLACE FUNCTION dm_private.recall_uuid_list(request jsonb, field text, max_count integer)
RETURNS uuid []
LANGUAGE plpgsql
IMMUTABLE
SET search_path = ''
AS $$
DECLARE
    value jsonb := request -> field;
    result uuid [];
BEGIN
    IF value IS NULL OR value = 'null'::jsonb THEN
        RETURN '{}'::uuid [];
    END IF;
    IF pg_catalog.jsonb_typeof(value) <> 'array' THEN
        RAISE EXCEPTION '% must be an array of uuids', field USING ERRCODE = '22023';
    END IF;
    IF pg_catalog.jsonb_array_length(value) > max_count THEN
        RAISE EXCEPTION '% holds % ids; at most % are allowed', field, pg_catalog.jsonb_array_length(value), max_count
            USING ERRCODE = '22023', HINT = 'pass only the ids already in the caller''s context';
    END IF;
    IF EXISTS (SELECT 1 FROM pg_catalog.jsonb_array_elements(value) AS v (item)
               WHERE pg_catalog.jsonb_typeof(v.item) <> 'string') THEN
        RAISE EXCEPTION '% must be an array of uuid strings', field USING ERRCODE = '22023';
    END IF;
    BEGIN
        SELECT COALESCE(pg_catalog.array_agg(DISTINCT v.item::uuid), '{}'::uuid [])
        INTO result
        FROM pg_catalog.jsonb_array_elements_text(value) AS v (item);
    EXCEPTION WHEN invalid_text_representation THEN
        RAISE EXCEPTION '% holds a malformed uuid', field USING ERRCODE = '22P02';
    END;
    RETURN result;
END
$$;
COMMENT ON FUNCTION dm_private.recall_uuid_list(jsonb, text, integer) IS
'Reads a request field holding at most max_count uuid strings; 22023 when too many or not an array, 22P02 on a malformed uuid.';
REVOKE ALL ON FUNCTION dm_private.recall_uuid_list(jsonb, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_uuid_list(jsonb, text, integer)
TO densemem_app, densemem_analyst, densemem_operator;

-- A timestamp request field: NULL when absent, 22007 when malformed.
CREATE OR REPLACE FUNCTION dm_private.recall_timestamp(value jsonb, field text)
RETURNS timestamptz
LANGUAGE plpgsql
STABLE
SET search_path = ''
AS $$
BEGIN
    IF value IS NULL OR value = 'null'::jsonb THEN
        RETURN NULL;
    END IF;
    IF pg_catalog.jsonb_typeof(value) <> 'string' THEN
        RAISE EXCEPTION '% must be an ISO 8601 timestamp string', field USING ERRCODE = '22007';
    END IF;
    BEGIN
        RETURN (value #>> '{}')::timestamptz;
    EXCEPTION WHEN invalid_datetime_format OR datetime_field_overflow THEN
        RAISE EXCEPTION '% is not a valid timestamp: %', field, value #>> '{}' USING ERRCODE = '22007';
    END;
END
$$;
COMMENT ON FUNCTION dm_private.recall_timestamp(jsonb, text) IS
'Reads one timestamp field of a recall request (NULL when absent); 22007 when malformed.';
REVOKE ALL ON FUNCTION dm_private.recall_timestamp(jsonb, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_timestamp(jsonb, text)
TO densemem_app, densemem_analyst, densemem_operator;

-- A text-list request field (anchors, phrases, filter values): a string or
-- an array of strings (anchors may be {"value", "required"} objects).
CREATE OR REPLACE FUNCTION dm_private.recall_text_list(value jsonb, field text, max_count integer)
RETURNS text []
LANGUAGE plpgsql
IMMUTABLE
SET search_path = ''
AS $$
DECLARE
    result text [];
BEGIN
    IF value IS NULL OR value = 'null'::jsonb THEN
        RETURN NULL;
    END IF;
    IF pg_catalog.jsonb_typeof(value) = 'string' THEN
        value := pg_catalog.jsonb_build_array(value);
    END IF;
    IF pg_catalog.jsonb_typeof(value) <> 'array' THEN
        RAISE EXCEPTION '% must be a string or an array of strings', field USING ERRCODE = '22023';
    END IF;
    IF pg_catalog.jsonb_array_length(value) > max_count THEN
        RAISE EXCEPTION '% holds more than % values', field, max_count USING ERRCODE = '22023';
    END IF;
    SELECT pg_catalog.array_agg(t.item ORDER BY t.ord)
    INTO result
    FROM (
        SELECT v.ord,
               CASE pg_catalog.jsonb_typeof(v.item)
                   WHEN 'string' THEN v.item #>> '{}'
                   WHEN 'object' THEN CASE WHEN COALESCE((v.item ->> 'required')::boolean, true)
                                           THEN v.item ->> 'value' END
               END AS item,
               pg_catalog.jsonb_typeof(v.item) AS kind
        FROM pg_catalog.jsonb_array_elements(value) WITH ORDINALITY AS v (item, ord)
    ) AS t
    WHERE t.kind IN ('string', 'object') AND t.item IS NOT NULL AND pg_catalog.btrim(t.item) <> '';
    IF EXISTS (SELECT 1 FROM pg_catalog.jsonb_array_elements(value) AS v (item)
               WHERE pg_catalog.jsonb_typeof(v.item) NOT IN ('string', 'object')) THEN
        RAISE EXCEPTION '% must hold strings', field USING ERRCODE = '22023';
    END IF;
    IF EXISTS (SELECT 1 FROM pg_catalog.unnest(result) AS r (item) WHERE pg_catalog.length(r.item) > 500) THEN
        RAISE EXCEPTION '% values are at most 500 characters', field USING ERRCODE = '22023';
    END IF;
    RETURN COALESCE(result, '{}'::text []);
END
$$;
COMMENT ON FUNCTION dm_private.recall_text_list(jsonb, text, integer) IS
'Reads a string or array-of-strings request field (anchor objects keep their value when required); 22023 on other shapes.';
REVOKE ALL ON FUNCTION dm_private.recall_text_list(jsonb, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_text_list(jsonb, text, integer)
TO densemem_app, densemem_analyst, densemem_operator;

-- Validates a recall request and returns it normalised (every field present,
-- typed as text the later stages cast once). Errors are named: 22023 for a
-- bad value or unknown key, 22P02 for a malformed uuid, 22007 for a bad
-- timestamp, DM413 for an oversized query.
CREATE OR REPLACE FUNCTION dm_private.recall_request(query text, request jsonb, settings jsonb)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SET search_path = ''
AS $$
DECLARE
    req jsonb := COALESCE(request, '{}'::jsonb);
    budgets jsonb := settings -> 'budgets';
    max_query_bytes integer := COALESCE((budgets ->> 'max_query_bytes')::integer, 10000);
    max_limit integer := COALESCE((budgets ->> 'max_limit')::integer, 50);
    result_limit integer;
    max_bytes integer;
    filters jsonb;
    window_from timestamptz;
    window_to timestamptz;
    intent text;
    snapshot bigint;
    clock timestamptz;
BEGIN
    IF query IS NULL THEN
        RAISE EXCEPTION 'query is required' USING ERRCODE = '22023';
    END IF;
    IF pg_catalog.octet_length(query) > max_query_bytes THEN
        RAISE EXCEPTION 'query is % bytes; at most % are accepted', pg_catalog.octet_length(query), max_query_bytes
            USING ERRCODE = 'DM413', HINT = 'ask a focused question; recall is not a document upload';
    END IF;
    IF pg_catalog.jsonb_typeof(req) <> 'object' THEN
        RAISE EXCEPTION 'request must be a JSON object' USING ERRCODE = '22023';
    END IF;
    -- Unknown keys: what is left after removing the known ones (an
    -- expression, not a statement; the message lists them in a statement
    -- only on the error path).
    IF req OPERATOR(pg_catalog.-) ARRAY['limit', 'max_context_bytes', 'valid_at', 'known_at', 'now', 'filters',
                                        'known_evidence_ids', 'known_relationship_ids', 'expand_from_entity_ids',
                                        'include_hypotheses', 'anchors', 'phrases', 'time_window', 'temporal_intent',
                                        'usage_snapshot_id', 'ranking_profile'] <> '{}'::jsonb THEN
        RAISE EXCEPTION 'unknown request field(s): %',
            (SELECT pg_catalog.string_agg(k.key, ', ' ORDER BY k.key) FROM pg_catalog.jsonb_object_keys(req) AS k (key)
             WHERE k.key <> ALL (ARRAY['limit', 'max_context_bytes', 'valid_at', 'known_at', 'now', 'filters',
                                       'known_evidence_ids', 'known_relationship_ids', 'expand_from_entity_ids',
                                       'include_hypotheses', 'anchors', 'phrases', 'time_window',
                                       'temporal_intent', 'usage_snapshot_id', 'ranking_profile']))
            USING ERRCODE = '22023';
    END IF;

    -- limit
    IF req ? 'limit' AND req -> 'limit' <> 'null'::jsonb THEN
        IF pg_catalog.jsonb_typeof(req -> 'limit') <> 'number' OR (req ->> 'limit') !~ '^[0-9]+$' THEN
            RAISE EXCEPTION 'limit must be an integer from 1 to %', max_limit USING ERRCODE = '22023';
        END IF;
        IF pg_catalog.length(req ->> 'limit') > 9 OR (req ->> 'limit')::integer NOT BETWEEN 1 AND max_limit THEN
            RAISE EXCEPTION 'limit must be from 1 to %, not %', max_limit, req ->> 'limit' USING ERRCODE = '22023';
        END IF;
        result_limit := (req ->> 'limit')::integer;
    ELSE
        result_limit := COALESCE((budgets ->> 'default_limit')::integer, 10);
    END IF;

    -- max_context_bytes
    IF req ? 'max_context_bytes' AND req -> 'max_context_bytes' <> 'null'::jsonb THEN
        IF pg_catalog.jsonb_typeof(req -> 'max_context_bytes') <> 'number'
           OR (req ->> 'max_context_bytes') !~ '^[0-9]{1,9}$'
           OR (req ->> 'max_context_bytes')::integer NOT BETWEEN 1 AND 1000000 THEN
            RAISE EXCEPTION 'max_context_bytes must be an integer from 1 to 1000000' USING ERRCODE = '22023';
        END IF;
        max_bytes := (req ->> 'max_context_bytes')::integer;
    ELSE
        max_bytes := COALESCE((budgets ->> 'max_context_bytes')::integer, 16000);
    END IF;

    -- filters: only the four known keys
    filters := COALESCE(NULLIF(req -> 'filters', 'null'::jsonb), '{}'::jsonb);
    IF pg_catalog.jsonb_typeof(filters) <> 'object' THEN
        RAISE EXCEPTION 'filters must be a JSON object' USING ERRCODE = '22023';
    END IF;
    IF filters OPERATOR(pg_catalog.-) ARRAY['source_group', 'memory_type', 'created_after', 'created_before']
       <> '{}'::jsonb THEN
        RAISE EXCEPTION 'unknown filter key(s): %',
            (SELECT pg_catalog.string_agg(k.key, ', ' ORDER BY k.key) FROM pg_catalog.jsonb_object_keys(filters) AS k (key)
             WHERE k.key <> ALL (ARRAY['source_group', 'memory_type', 'created_after', 'created_before']))
            USING ERRCODE = '22023',
                  HINT = 'filters are source_group, memory_type, created_after and created_before';
    END IF;
    -- (nested IF: the key test is an expression; the EXISTS statement runs
    -- only when the filter is given)
    IF filters ? 'memory_type' THEN
        IF EXISTS (
            SELECT 1 FROM pg_catalog.unnest(dm_private.recall_text_list(filters -> 'memory_type', 'filters.memory_type', 10)) AS m (v)
            WHERE m.v <> ALL (SELECT pg_catalog.unnest(pg_catalog.enum_range(NULL::dm_private.memory_type))::text)) THEN
            RAISE EXCEPTION 'filters.memory_type must be conversation, workflow, episodic, semantic or organizational'
                USING ERRCODE = '22023';
        END IF;
    END IF;

    -- time window and intent
    IF req ? 'time_window' AND req -> 'time_window' <> 'null'::jsonb THEN
        IF pg_catalog.jsonb_typeof(req -> 'time_window') <> 'object'
           OR EXISTS (SELECT 1 FROM pg_catalog.jsonb_object_keys(req -> 'time_window') AS k (key)
                      WHERE k.key NOT IN ('from', 'to')) THEN
            RAISE EXCEPTION 'time_window must be {"from", "to"}' USING ERRCODE = '22023';
        END IF;
        window_from := dm_private.recall_timestamp(req #> '{time_window,from}', 'time_window.from');
        window_to := dm_private.recall_timestamp(req #> '{time_window,to}', 'time_window.to');
        IF window_from IS NOT NULL AND window_to IS NOT NULL AND window_from > window_to THEN
            RAISE EXCEPTION 'time_window.from is after time_window.to' USING ERRCODE = '22023';
        END IF;
    END IF;
    intent := NULLIF(req ->> 'temporal_intent', '');
    IF intent IS NOT NULL AND intent NOT IN ('latest', 'earliest') THEN
        RAISE EXCEPTION 'temporal_intent must be latest or earliest' USING ERRCODE = '22023';
    END IF;

    IF req ? 'usage_snapshot_id' AND req -> 'usage_snapshot_id' <> 'null'::jsonb THEN
        IF pg_catalog.jsonb_typeof(req -> 'usage_snapshot_id') <> 'number'
           OR (req ->> 'usage_snapshot_id') !~ '^[0-9]{1,18}$' THEN
            RAISE EXCEPTION 'usage_snapshot_id must be a positive integer' USING ERRCODE = '22023';
        END IF;
        snapshot := (req ->> 'usage_snapshot_id')::bigint;
    END IF;
    IF req ? 'include_hypotheses' AND req -> 'include_hypotheses' <> 'null'::jsonb
       AND pg_catalog.jsonb_typeof(req -> 'include_hypotheses') <> 'boolean' THEN
        RAISE EXCEPTION 'include_hypotheses must be true or false' USING ERRCODE = '22023';
    END IF;
    clock := COALESCE(CASE WHEN req ? 'now' THEN dm_private.recall_timestamp(req -> 'now', 'now') END, pg_catalog.now());

    -- A field the request leaves out is not read by a function call: each
    -- reader returns NULL (timestamps, text lists) or an empty list (uuid
    -- lists) for an absent value, so the CASE gives what the call gave; a
    -- present field (null included) is read and validated as before.

    RETURN pg_catalog.jsonb_build_object(
        'limit', result_limit,
        'max_context_bytes', max_bytes,
        'now', clock,
        'valid_at', COALESCE(CASE WHEN req ? 'valid_at' THEN dm_private.recall_timestamp(req -> 'valid_at', 'valid_at') END, clock),
        'known_at', COALESCE(CASE WHEN req ? 'known_at' THEN dm_private.recall_timestamp(req -> 'known_at', 'known_at') END,
                             pg_catalog.now()),
        'source_groups', CASE WHEN filters ? 'source_group'
                              THEN COALESCE(pg_catalog.to_jsonb(dm_private.recall_text_list(filters -> 'source_group', 'filters.source_group', 50)), '[]'::jsonb)
                              ELSE '[]'::jsonb END,
        'memory_types', CASE WHEN filters ? 'memory_type'
                             THEN COALESCE(pg_catalog.to_jsonb(dm_private.recall_text_list(filters -> 'memory_type', 'filters.memory_type', 10)), '[]'::jsonb)
                             ELSE '[]'::jsonb END,
        'created_after', CASE WHEN filters ? 'created_after'
                              THEN dm_private.recall_timestamp(filters -> 'created_after', 'filters.created_after') END,
        'created_before', CASE WHEN filters ? 'created_before'
                               THEN dm_private.recall_timestamp(filters -> 'created_before', 'filters.created_before') END,
        'known_evidence_ids', CASE WHEN req ? 'known_evidence_ids'
                                   THEN pg_catalog.to_jsonb(dm_private.recall_uuid_list(req, 'known_evidence_ids', 200))
                                   ELSE '[]'::jsonb END,
        'known_relationship_ids', CASE WHEN req ? 'known_relationship_ids'
                                       THEN pg_catalog.to_jsonb(dm_private.recall_uuid_list(req, 'known_relationship_ids', 200))
                                       ELSE '[]'::jsonb END,
        'expand_from_entity_ids', CASE WHEN req ? 'expand_from_entity_ids'
                                       THEN pg_catalog.to_jsonb(dm_private.recall_uuid_list(req, 'expand_from_entity_ids', 50))
                                       ELSE '[]'::jsonb END,
        'include_hypotheses', COALESCE((req ->> 'include_hypotheses')::boolean, false),
        'anchors', CASE WHEN req ? 'anchors'
                        THEN COALESCE(pg_catalog.to_jsonb(dm_private.recall_text_list(req -> 'anchors', 'anchors', 20)), '[]'::jsonb)
                        ELSE '[]'::jsonb END,
        'phrases', CASE WHEN req ? 'phrases'
                        THEN COALESCE(pg_catalog.to_jsonb(dm_private.recall_text_list(req -> 'phrases', 'phrases', 20)), '[]'::jsonb)
                        ELSE '[]'::jsonb END,
        'window_from', window_from,
        'window_to', window_to,
        'has_window', req ? 'time_window' AND req -> 'time_window' <> 'null'::jsonb,
        'temporal_intent', intent,
        'usage_snapshot_id', snapshot,
        'ranking_profile', req ->> 'ranking_profile',
        -- filled by the parse of the query (recall_merge_parse, which
        -- takes the field out when there is no parse)
        'parsed_entity_ids', '[]'::jsonb,
        -- dm_private.authenticated_scopes()'s expression, written out (as
        -- recall_run's hydration does): that SQL function carries its own
        -- SET search_path, so each call ran its statement through the
        -- executor (start, run, end) for one setting read
        'scopes', pg_catalog.to_jsonb(COALESCE(
            pg_catalog.array_remove(
                pg_catalog.string_to_array(
                    pg_catalog.replace(COALESCE(pg_catalog.current_setting('densemem.scopes', true), ''), ' ', ''),
                    ','),
                ''),
            '{}'::text [])));
END
$$;
COMMENT ON FUNCTION dm_private.recall_request(text, jsonb, jsonb) IS
'Validates a recall request against the ranking settings and returns it normalised (limit, budget, clock, times, filters, known ids, anchors, phrases, window, intent, snapshot, scopes, and the parsed entity ids the parse fills). 22023 / 22P02 / 22007 / DM413 on bad input.';
REVOKE ALL ON FUNCTION dm_private.recall_request(text, jsonb, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_request(text, jsonb, jsonb)
TO densemem_app, densemem_analyst, densemem_operator;

-- The eligible evidence documents of a team for a normalised request: the
-- rule every branch applies inline. Runs as the searcher (no RLS, explicit
-- team predicate checked by require_team) so that a DBA can count and
-- EXPLAIN it the same way the branches run; the exact vector oracle and the
-- tests compare branch output with it.
CREATE OR REPLACE FUNCTION dm_private.recall_eligible_documents(team_id uuid, req jsonb)
RETURNS TABLE (document_id uuid, evidence_id uuid)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = ''
AS $$
DECLARE
    team constant uuid := dm_private.require_team(recall_eligible_documents.team_id);
    valid_at timestamptz := (req ->> 'valid_at')::timestamptz;
    known_at timestamptz := (req ->> 'known_at')::timestamptz;
    scopes text [] := dm_private.authenticated_scopes();
    source_groups text [] := ARRAY(SELECT pg_catalog.jsonb_array_elements_text(req -> 'source_groups'));
    memory_types text [] := ARRAY(SELECT pg_catalog.jsonb_array_elements_text(req -> 'memory_types'));
    created_after timestamptz := (req ->> 'created_after')::timestamptz;
    created_before timestamptz := (req ->> 'created_before')::timestamptz;
    has_window boolean := COALESCE((req ->> 'has_window')::boolean, false);
    window_from timestamptz := (req ->> 'window_from')::timestamptz;
    window_to timestamptz := (req ->> 'window_to')::timestamptz;
    known_ids uuid [] := ARRAY(SELECT pg_catalog.jsonb_array_elements_text(req -> 'known_evidence_ids')::uuid);
    disabled uuid [] := ARRAY(SELECT p.profile_id FROM dm_private.profiles AS p
                              WHERE p.team_id = team AND p.state <> 'active');
BEGIN
    IF pg_catalog.cardinality(source_groups) = 0 THEN source_groups := NULL; END IF;
    IF pg_catalog.cardinality(memory_types) = 0 THEN memory_types := NULL; END IF;
    RETURN QUERY
        SELECT d.document_id, d.subject_id
        FROM dm_private.search_documents AS d
        WHERE d.team_id = team
          AND d.subject_kind = 'evidence'
          AND d.is_recallable
          AND d.owner_profile_id <> ALL (disabled)
          AND (d.valid_from IS NULL OR d.valid_from <= valid_at)
          AND (d.valid_to IS NULL OR d.valid_to > valid_at)
          AND (d.known_from IS NULL OR d.known_from <= known_at)
          AND (d.known_to IS NULL OR d.known_to > known_at)
          AND d.policy_labels <@ scopes
          AND (source_groups IS NULL OR d.source_group = ANY (source_groups))
          AND (memory_types IS NULL OR d.memory_type::text = ANY (memory_types))
          AND (created_after IS NULL OR d.source_created_at >= created_after)
          AND (created_before IS NULL OR d.source_created_at < created_before)
          AND (NOT has_window OR (d.source_created_at IS NOT NULL
                                  AND (window_from IS NULL OR d.source_created_at >= window_from)
                                  AND (window_to IS NULL OR d.source_created_at <= window_to)))
          AND d.subject_id <> ALL (known_ids);
END
$$;
COMMENT ON FUNCTION dm_private.recall_eligible_documents(uuid, jsonb) IS
'Eligibility (seed 000) and policy filter (seed 002 §8) for a normalised request: current recallable evidence of active owners, current for valid_at / known_at, labels covered by the principal''s scopes, request filters and time window (no created_at never matches a window), caller-known ids excluded.';
ALTER FUNCTION dm_private.recall_eligible_documents(uuid, jsonb) OWNER TO densemem_searcher;
REVOKE ALL ON FUNCTION dm_private.recall_eligible_documents(uuid, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_eligible_documents(uuid, jsonb)
TO densemem_app, densemem_analyst, densemem_operator;
