-- Composition: dm.recall_memory and dm.explain_recall.
--
-- One call, one round trip: validate, resolve the profile, parse (when the
-- parser exists), run the branches, fuse, rerank, MMR, hydrate under RLS,
-- budget, discover (when discovery exists), write telemetry. Both public
-- functions run the same dm_private.recall_run, so explain's order is
-- recall's order by construction (and a test checks it).
--
-- Degradation contract (seed 000), driven by the profile's
-- required_branches / optional_branches:
--   auth or team invalid                 reject (28000 / 42501, require_team)
--   required query embedding missing     DM503
--   optional vector branch missing/fails omitted; 'vector' in degraded_branches
--   required full-text branch fails      its error propagates
--   optional discovery / hypotheses fail omitted; 'discovery' recorded
--   query parser fails                   request fields only; 'parse' recorded

-- dm_private.recall_parse (dm.parse_query when installed, else NULL) is
-- gone since session 14: recall_run calls dm.parse_query directly and tells
-- an absent stage from a failing one only when the call fails, so nothing
-- called it any more; a DBA calls dm.parse_query itself.
DROP FUNCTION IF EXISTS dm_private.recall_parse(text, uuid, timestamptz);

-- Request fields override the parse: anchors, phrases, time window and
-- temporal intent come from the parse only when the request leaves them out.
-- A window from the parse is marked window_is_parsed: recall_run treats it
-- as a preference (window matches first, then the unfiltered ranking), never
-- as the hard filter a request's time_window or created_* filters are.
CREATE OR REPLACE FUNCTION dm_private.recall_merge_parse(req jsonb, request jsonb, parsed jsonb)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SET search_path = ''
AS $$
DECLARE
    -- The parse's fields are collected in a small object and laid over the
    -- request with one concatenation (session 13): each `req || {...}` took
    -- the whole normalised request (some forty keys) apart and sorted it
    -- again, four or five times per recall (0.11 M instructions); jsonb's
    -- || is associative on objects (the right side's keys win), so one
    -- concatenation of the collected fields gives the same value.
    -- Session 14: only the fields whose value changes are collected. The
    -- normalised request already holds '[]' for anchors and phrases the
    -- request left out, and for parsed_entity_ids (recall_request), so the
    -- common parse (no anchor, phrase, window, intent or entity) changes
    -- nothing and the request is returned as it is, without the
    -- concatenation (~0.06 M instructions per recall). When there is no
    -- parse, parsed_entity_ids is taken out again: the request is then what
    -- it was without a parse (explain shows it).
    overlay jsonb := '{}'::jsonb;
    window_value jsonb;
BEGIN
    IF parsed IS NULL OR pg_catalog.jsonb_typeof(parsed) <> 'object' THEN
        RETURN req OPERATOR(pg_catalog.-) 'parsed_entity_ids';
    END IF;
    -- (an empty list from the parse, the common case, leaves the request's
    -- '[]' as it is: the aggregates below over no element give the same '[]')
    IF NOT COALESCE(request, '{}'::jsonb) ? 'anchors' AND pg_catalog.jsonb_typeof(parsed -> 'anchors') = 'array'
       AND pg_catalog.jsonb_array_length(parsed -> 'anchors') > 0 THEN
        overlay := overlay || pg_catalog.jsonb_build_object('anchors', COALESCE((
            SELECT pg_catalog.jsonb_agg(a.item ->> 'value' ORDER BY a.ord)
            FROM pg_catalog.jsonb_array_elements(parsed -> 'anchors') WITH ORDINALITY AS a (item, ord)
            WHERE pg_catalog.jsonb_typeof(a.item) = 'object'
              AND COALESCE((a.item ->> 'required')::boolean, false)
              AND COALESCE(pg_catalog.btrim(a.item ->> 'value'), '') <> ''), '[]'::jsonb));
    END IF;
    IF NOT COALESCE(request, '{}'::jsonb) ? 'phrases' AND pg_catalog.jsonb_typeof(parsed -> 'phrases') = 'array'
       AND pg_catalog.jsonb_array_length(parsed -> 'phrases') > 0 THEN
        overlay := overlay || pg_catalog.jsonb_build_object('phrases', COALESCE((
            SELECT pg_catalog.jsonb_agg(p.item #>> '{}' ORDER BY p.ord)
            FROM pg_catalog.jsonb_array_elements(parsed -> 'phrases') WITH ORDINALITY AS p (item, ord)
            WHERE pg_catalog.jsonb_typeof(p.item) = 'string' AND pg_catalog.btrim(p.item #>> '{}') <> ''), '[]'::jsonb));
    END IF;
    window_value := parsed #> '{time,window}';
    IF NOT COALESCE(request, '{}'::jsonb) ? 'time_window' AND pg_catalog.jsonb_typeof(window_value) = 'object' THEN
        overlay := overlay || pg_catalog.jsonb_build_object(
            'has_window', true,
            'window_is_parsed', true,
            'window_from', dm_private.recall_timestamp(window_value -> 'from', 'parsed time window from'),
            'window_to', dm_private.recall_timestamp(window_value -> 'to', 'parsed time window to'));
    END IF;
    IF NOT COALESCE(request, '{}'::jsonb) ? 'temporal_intent'
       AND parsed #>> '{time,intent}' IN ('latest', 'earliest') THEN
        overlay := overlay || pg_catalog.jsonb_build_object('temporal_intent', parsed #>> '{time,intent}');
    END IF;
    IF pg_catalog.jsonb_typeof(parsed -> 'entities') = 'array'
       AND pg_catalog.jsonb_array_length(parsed -> 'entities') > 0 THEN
        overlay := overlay || pg_catalog.jsonb_build_object('parsed_entity_ids', COALESCE((
            SELECT pg_catalog.jsonb_agg(DISTINCT x.item ->> 'entity_id')
            FROM pg_catalog.jsonb_array_elements(parsed -> 'entities') AS x (item)
            WHERE x.item ->> 'entity_id' ~ '^[0-9a-fA-F-]{36}$'), '[]'::jsonb));
    END IF;
    IF overlay = '{}'::jsonb THEN
        RETURN req;
    END IF;
    RETURN req || overlay;
END
$$;
COMMENT ON FUNCTION dm_private.recall_merge_parse(jsonb, jsonb, jsonb) IS
'Lays the parse of the query under the normalised request: required anchors, phrases, time window and intent from the parse only where the request gave none; parsed entity ids for proximity and discovery.';
REVOKE ALL ON FUNCTION dm_private.recall_merge_parse(jsonb, jsonb, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_merge_parse(jsonb, jsonb, jsonb)
TO densemem_app, densemem_analyst, densemem_operator;

-- The whole recall. Returns the public answer itself and, when
-- with_explain, {"answer": the answer, "explain": the internal breakdown}.
CREATE OR REPLACE FUNCTION dm_private.recall_run(query text, team_id uuid, query_embedding public.vector, request jsonb,
    with_explain boolean)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
DECLARE
    started timestamptz := pg_catalog.clock_timestamp();
    mark timestamptz;
    timings jsonb := '{}';
    team uuid;
    settings jsonb;
    req jsonb;
    parsed jsonb;
    degraded text [] := '{}';
    required_branches text [];
    seeds_json jsonb;
    fulltext_hits dm_private.recall_branch_hit [] := '{}';
    exact_hits dm_private.recall_branch_hit [] := '{}';
    vector_hits dm_private.recall_branch_hit [] := '{}';
    vector_path record;
    fused dm_private.recall_fused [];
    -- the fusion core's answer: fused, best_score, worst_score
    fusion record;
    -- recall_rank's answer: ordered_ids, scored, mmr_rows
    ranking record;
    scored dm_private.recall_scored [];
    hops jsonb := '{}';
    seeds uuid [];
    ordered_ids uuid [];
    mmr_rows jsonb;
    contexts jsonb := '{}';
    pass_contexts jsonb;
    chunk_items jsonb [];
    kept_items jsonb [] := '{}';
    hydrate_ids uuid [];
    hydrate_scopes text [];
    hydrate_valid_at timestamptz;
    hydrate_known_at timestamptz;
    hydrated integer;
    pass_used integer;
    sizes integer [];
    kept uuid [] := '{}';
    pass_kept uuid [];
    all_ordered uuid [] := '{}';
    pass integer;
    pass_req jsonb;
    pass_want integer;
    pass_bytes integer;
    window_fallback boolean := false;
    window_empty boolean := false;
    window_from timestamptz;
    window_to timestamptz;
    first_hits jsonb [];
    first_fused dm_private.recall_fused [];
    first_mmr jsonb;
    scored_all dm_private.recall_scored [];
    first_scored integer;
    results jsonb;
    discovery jsonb;
    discovery_paths jsonb := '[]';
    related jsonb;
    vector_branch_ran boolean := false;
    telemetry jsonb;
    answer jsonb;
    guidance constant text :=
        'These are the best evidence contexts for the query under the context budget. If a specific part '
        || 'remains uncertain, call recall_memory again with a focused query; pass the evidence_id values '
        || 'you already hold in known_evidence_ids (at most 200) so they do not repeat, or an entity id in '
        || 'expand_from_entity_ids for adjacent context. Use trace_memory(relationship_id) on a discovery '
        || 'path to see its evidence and history.';
    explain jsonb;
    trigram_loaded boolean;
    want integer;
    error_state text;
    error_message text;
BEGIN
    team := dm_private.require_team(recall_run.team_id);
    IF request IS NOT NULL AND pg_catalog.jsonb_typeof(request) = 'object' AND request ? 'ranking_profile'
       AND pg_catalog.jsonb_typeof(request -> 'ranking_profile') <> 'string' THEN
        RAISE EXCEPTION 'ranking_profile must be a profile name' USING ERRCODE = '22023';
    END IF;
    settings := dm_private.recall_settings(team, CASE WHEN pg_catalog.jsonb_typeof(request) = 'object'
                                                      THEN request ->> 'ranking_profile' END);
    req := dm_private.recall_request(query, request, settings);
    want := (req ->> 'limit')::integer;
    -- the profile's list, read without a statement when it is the usual
    -- array (an expression); anything else as before (which raises on a
    -- value that is not a list)
    -- ('fulltext' and 'vector' are all recall asks about: ? finds exactly the
    -- string elements that jsonb_array_elements_text would give)
    IF pg_catalog.jsonb_typeof(COALESCE(settings -> 'required_branches', '["fulltext"]')) = 'array' THEN
        required_branches := CASE
            WHEN COALESCE(settings -> 'required_branches', '["fulltext"]') ? 'fulltext'
                 AND COALESCE(settings -> 'required_branches', '["fulltext"]') ? 'vector' THEN ARRAY['fulltext', 'vector']
            WHEN COALESCE(settings -> 'required_branches', '["fulltext"]') ? 'fulltext' THEN ARRAY['fulltext']
            WHEN COALESCE(settings -> 'required_branches', '["fulltext"]') ? 'vector' THEN ARRAY['vector']
            ELSE '{}'::text [] END;
    ELSE
        required_branches := ARRAY(SELECT pg_catalog.jsonb_array_elements_text(COALESCE(settings -> 'required_branches', '["fulltext"]')));
    END IF;
    -- stage timings are read only by explain: a recall does not keep them
    -- (a clock read and a jsonb concatenation per stage)
    IF with_explain THEN
        mark := pg_catalog.clock_timestamp();
        timings := timings || pg_catalog.jsonb_build_object('request_ms', EXTRACT(EPOCH FROM mark - started) * 1000);
    END IF;

    -- query understanding (optional stage): recall_parse's body, called
    -- directly (session 14). Its to_regprocedure test parsed three type
    -- names with the SQL parser on every recall; here the call simply fails
    -- when the stage is absent, and only then is the test made, to tell an
    -- absent stage (no degradation, as recall_parse's NULL) from a failing
    -- one. The library load is an assignment (an expression), not PERFORM
    -- (a statement).
    BEGIN
        trigram_loaded := public.similarity('', '') IS NOT NULL;
        parsed := dm.parse_query(query, team, (req ->> 'now')::timestamptz);
    EXCEPTION WHEN OTHERS THEN
        parsed := NULL;
        IF pg_catalog.to_regprocedure('dm.parse_query(text,uuid,timestamp with time zone)') IS NOT NULL THEN
            degraded := degraded || 'parse'::text;
        END IF;
    END;
    req := dm_private.recall_merge_parse(req, request, parsed);
    IF with_explain THEN
        timings := timings || pg_catalog.jsonb_build_object('parse_ms', EXTRACT(EPOCH FROM pg_catalog.clock_timestamp() - mark) * 1000);
    END IF;

    -- Retrieval, ranking, hydration and budget. Pass 1 runs the request as
    -- normalised. A time window that came from the parse of the query (not
    -- from the request) is a preference, not a filter: when pass 1 leaves
    -- fewer than `limit` results, pass 2 runs without that window, excluding
    -- what pass 1 kept, and fills the rest (window matches first, then the
    -- unfiltered ranking) under the remaining byte budget.
    pass_req := req;
    pass_want := want;
    pass_bytes := (req ->> 'max_context_bytes')::integer;
    -- Every branch filters pass 1 by the parsed window (and by is_recallable).
    -- When the team has no recallable evidence in it, pass 1 cannot return a
    -- row: its branches are skipped (one index range on 0026's index decides)
    -- and pass 2 fills the answer as before, so a question about a period the
    -- memory does not cover costs one retrieval, not two. Same answer, same
    -- explain (pass 1's branches were empty either way).
    -- The bounds are plain variables, not COALESCE expressions in the
    -- qual: this statement runs as the caller under row-level security, and
    -- the planner keeps an expression it cannot prove leakproof (COALESCE)
    -- out of the index condition, which made the check read every document
    -- of the team instead of one index range.
    IF COALESCE((req ->> 'window_is_parsed')::boolean, false) THEN
        window_from := COALESCE((req ->> 'window_from')::timestamptz, '-infinity'::timestamptz);
        window_to := COALESCE((req ->> 'window_to')::timestamptz, 'infinity'::timestamptz);
        window_empty := NOT EXISTS (
            SELECT 1
            FROM dm_private.search_documents AS d
            WHERE d.team_id = team AND d.subject_kind = 'evidence'
              AND d.source_created_at >= window_from
              AND d.source_created_at <= window_to
              AND d.is_recallable);
    END IF;
    FOR pass IN 1..2 LOOP
        IF pass = 2 THEN
            EXIT WHEN NOT COALESCE((req ->> 'window_is_parsed')::boolean, false)
                      OR pg_catalog.cardinality(kept) >= want OR pass_bytes <= 0;
            pass_req := req || pg_catalog.jsonb_build_object(
                'has_window', false, 'window_from', NULL, 'window_to', NULL, 'window_is_parsed', false,
                'known_evidence_ids', COALESCE(req -> 'known_evidence_ids', '[]'::jsonb) || pg_catalog.to_jsonb(kept));
            pass_want := want - pg_catalog.cardinality(kept);
            window_fallback := true;
        END IF;
        IF with_explain THEN
            mark := pg_catalog.clock_timestamp();
        END IF;

        -- The branches' rows are packed as the composites the functions
        -- return (the function in the select list): `SELECT h FROM f() AS h`
        -- stored each row in a function scan's tuplestore and formed it again
        -- as a whole-row value (session 8: 0.13 M instructions per recall on
        -- the LoCoMo team; the same values in the same order).
        -- full-text branch: required by default, so its errors propagate
        IF pass = 1 AND window_empty THEN
            fulltext_hits := '{}';
        ELSIF 'fulltext' = ANY (required_branches) THEN
            fulltext_hits := ARRAY(SELECT dm_private.recall_fulltext_candidates(team, query, pass_req, settings));
        ELSE
            BEGIN
                fulltext_hits := ARRAY(SELECT dm_private.recall_fulltext_candidates(team, query, pass_req, settings));
            EXCEPTION WHEN OTHERS THEN
                fulltext_hits := '{}';
                IF NOT 'fulltext' = ANY (degraded) THEN degraded := degraded || 'fulltext'::text; END IF;
            END;
        END IF;
        -- exact branch: only when the request (or the parse) names anchors or
        -- phrases; without either it returns no row, so it is not called
        IF NOT (pass = 1 AND window_empty)
           AND (pg_catalog.jsonb_array_length(pass_req -> 'anchors') > 0
                OR pg_catalog.jsonb_array_length(pass_req -> 'phrases') > 0) THEN
            exact_hits := ARRAY(SELECT dm_private.recall_exact_candidates(team, pass_req, settings));
        ELSE
            exact_hits := '{}';
        END IF;
        IF with_explain AND pass = 1 THEN
            timings := timings || pg_catalog.jsonb_build_object('fulltext_ms', EXTRACT(EPOCH FROM pg_catalog.clock_timestamp() - mark) * 1000);
            mark := pg_catalog.clock_timestamp();
        END IF;

        -- vector branch: required → DM503 without a usable query embedding;
        -- optional → omitted and recorded
        IF with_explain AND pass = 1 THEN
            SELECT * INTO vector_path FROM dm_private.recall_vector_access_path(team) AS a;
        END IF;
        IF pass = 1 AND window_empty THEN
            vector_hits := '{}';  -- pass 2 runs the branch (and its DM503 checks)
        ELSIF query_embedding IS NULL THEN
            IF 'vector' = ANY (required_branches) THEN
                RAISE EXCEPTION 'the ranking profile requires the vector branch and no query embedding was given'
                    USING ERRCODE = 'DM503', HINT = 'pass the query embedding (the service embeds every query)';
            END IF;
            IF NOT 'vector' = ANY (degraded) THEN degraded := degraded || 'vector'::text; END IF;
        ELSE
            BEGIN
                -- the array itself (an expression: no statement, no set to pack)
                vector_hits := dm_private.recall_vector_hits(team, query_embedding, pass_req, settings);
                -- the telemetry row names the active contract (read with
                -- its freshness figures, one statement fewer here)
                vector_branch_ran := true;
            EXCEPTION WHEN OTHERS THEN
                GET STACKED DIAGNOSTICS error_state = RETURNED_SQLSTATE, error_message = MESSAGE_TEXT;
                IF 'vector' = ANY (required_branches) THEN
                    RAISE EXCEPTION 'vector branch unavailable: %', error_message
                        USING ERRCODE = 'DM503', HINT = 'the ranking profile requires the vector branch';
                END IF;
                vector_hits := '{}';
                IF NOT 'vector' = ANY (degraded) THEN degraded := degraded || 'vector'::text; END IF;
            END;
        END IF;
        IF with_explain AND pass = 1 THEN
            timings := timings || pg_catalog.jsonb_build_object('vector_ms', EXTRACT(EPOCH FROM pg_catalog.clock_timestamp() - mark) * 1000);
            mark := pg_catalog.clock_timestamp();
        END IF;

        -- fusion
        -- (the array form: an expression, no set to pack again). The core
        -- leaves the RRF relevance and position out (no window pass, session
        -- 13): recall_rank reads relevance from the best and worst kept
        -- scores, and only explain, which shows the fused rows and their
        -- fusion_rank, completes them
        -- (each branch's array apart: no regrouping without exact hits, session 15)
        fusion := dm_private.recall_fuse_branches(fulltext_hits, exact_hits, vector_hits, settings);
        fused := fusion.fused;
        IF with_explain THEN
            fused := dm_private.recall_fuse_normalised(fused, fusion.best_score, fusion.worst_score);
        END IF;
        IF with_explain AND pass = 1 THEN
            timings := timings || pg_catalog.jsonb_build_object('fusion_ms', EXTRACT(EPOCH FROM pg_catalog.clock_timestamp() - mark) * 1000);
            mark := pg_catalog.clock_timestamp();
        END IF;

        -- proximity from the query's entities (when discovery is installed)
        hops := '{}';
        IF pass = 1 THEN
            seeds_json := COALESCE(req -> 'expand_from_entity_ids', '[]') || COALESCE(req -> 'parsed_entity_ids', '[]');
            -- no entity ids (the common case): no statement
            IF pg_catalog.jsonb_typeof(seeds_json) = 'array' AND pg_catalog.jsonb_array_length(seeds_json) = 0 THEN
                seeds := '{}';
            ELSE
                seeds := ARRAY(SELECT DISTINCT x::uuid FROM pg_catalog.jsonb_array_elements_text(seeds_json) AS x);
            END IF;
        END IF;
        IF pg_catalog.cardinality(seeds) > 0 AND pg_catalog.cardinality(fused) > 0
           AND pg_catalog.to_regprocedure('dm_private.entity_proximity(uuid,uuid[],uuid[],integer)') IS NOT NULL THEN
            BEGIN
                -- static (a kept plan), as the parse and discovery calls
                SELECT COALESCE(pg_catalog.jsonb_object_agg(p.evidence_id::text, p.hops), '{}')
                INTO hops
                FROM dm_private.entity_proximity(team, seeds, ARRAY(SELECT f.evidence_id FROM pg_catalog.unnest(fused) AS f),
                                                 COALESCE((settings #>> '{proximity,max_hops}')::integer, 2)) AS p;
            EXCEPTION WHEN OTHERS THEN
                hops := '{}';
                IF NOT 'proximity' = ANY (degraded) THEN degraded := degraded || 'proximity'::text; END IF;
            END;
        END IF;

        -- composite rerank and MMR
        -- with the neighbouring-turn context lift (sql/52's stage, off unless
        -- the profile sets context.weight), in one call on arrays
        -- (dm_private.recall_rank, sql/50): it returns the MMR order, and the
        -- scored rows and MMR rows only when explaining. rerank_ms covers
        -- rerank, lift and MMR; mmr_ms is what is left after the call.
        -- (an assignment of the function's row, as fusion's: an expression,
        -- not a statement with a function scan and its one-row tuplestore;
        -- session 16)
        ranking := dm_private.recall_rank(team, query, fused, pass_req, settings, hops, true, pass_want, with_explain,
                                          fusion.best_score, fusion.worst_score);
        ordered_ids := ranking.ordered_ids;
        scored := ranking.scored;
        mmr_rows := ranking.mmr_rows;
        IF with_explain AND pass = 1 THEN
            timings := timings || pg_catalog.jsonb_build_object('rerank_ms', EXTRACT(EPOCH FROM pg_catalog.clock_timestamp() - mark) * 1000);
            mark := pg_catalog.clock_timestamp();
        END IF;
        ordered_ids := COALESCE(ordered_ids, '{}');
        IF with_explain AND pass = 1 THEN
            timings := timings || pg_catalog.jsonb_build_object('mmr_ms', EXTRACT(EPOCH FROM pg_catalog.clock_timestamp() - mark) * 1000);
            mark := pg_catalog.clock_timestamp();
        END IF;

        -- hydration under RLS (one bounded read), then the byte budget.
        IF with_explain THEN
            -- Explain hydrates the whole ordered list at once (it reports
            -- every candidate hydration dropped): one statement builds the
            -- contexts and their byte sizes in MMR order, recall_budget walks them.
            SELECT COALESCE(pg_catalog.jsonb_object_agg(h.evidence_id::text, pg_catalog.jsonb_object(
                       ARRAY['evidence_id', 'context', 'source_id', 'source_external_id'],
                       ARRAY[h.evidence_id::text, h.context, h.source_id::text, h.source_external_id]))
                       FILTER (WHERE h.evidence_id IS NOT NULL), '{}'::jsonb),
                   pg_catalog.array_agg(pg_catalog.octet_length(h.context) ORDER BY o.ord)
            INTO pass_contexts, sizes
            FROM pg_catalog.unnest(ordered_ids) WITH ORDINALITY AS o (id, ord)
            LEFT JOIN dm_private.recall_hydrate(team, ordered_ids, pass_req) AS h ON h.evidence_id = o.id;
            pass_kept := dm_private.recall_budget(ordered_ids, sizes, pass_want, pass_bytes);
            -- what is left of the byte budget matters only to pass 2, which
            -- runs only after a parsed window's pass 1
            IF pass = 1 AND COALESCE((req ->> 'window_is_parsed')::boolean, false) THEN
                pass_bytes := pass_bytes - COALESCE((SELECT pg_catalog.sum(pg_catalog.octet_length(pass_contexts #>> ARRAY[k.id::text, 'context']))
                                                     FROM pg_catalog.unnest(pass_kept) AS k (id)), 0)::integer;
            END IF;
            contexts := contexts || pass_contexts;
        ELSE
            -- A recall reads the first `want` candidates, and the rest of the
            -- ordered list (up to hydration's 200) only when those did not
            -- fill `want` (one dropped by hydration, or one that did not
            -- fit). The result objects come back as an array in MMR order
            -- (NULL where hydration dropped the row), and the budget walk
            -- (recall_budget's, written out: keep in order while the text
            -- fits, stop at `want`) goes on where the first read stopped, so
            -- it keeps what one walk over the whole list keeps; the answer is
            -- the array of kept objects, with no statement to look them up.
            pass_kept := '{}';
            pass_used := 0;
            hydrated := 0;
            LOOP
                hydrate_ids := CASE WHEN hydrated = 0 THEN ordered_ids[1:pass_want]
                                    ELSE ordered_ids[hydrated + 1:200] END;
                -- dm_private.recall_hydrate's read written out (session 8):
                -- the same tables, joins and checks, run as the caller under
                -- row-level security as that function is (SECURITY INVOKER),
                -- one key lookup per id (LATERAL), without the function call,
                -- its RETURN QUERY tuplestore and the join back to the ids
                -- (1.05 M instructions per recall on the LoCoMo team before;
                -- the generic plan there also hashed every source revision of
                -- the team). recall_hydrate stays the stage a DBA calls and
                -- explain's read; a test compares the two on dropped rows.
                IF hydrate_scopes IS NULL THEN
                    -- dm_private.authenticated_scopes()'s expression (its call
                    -- saves and restores search_path): the same array
                    hydrate_scopes := COALESCE(
                        pg_catalog.array_remove(
                            pg_catalog.string_to_array(
                                pg_catalog.replace(COALESCE(pg_catalog.current_setting('densemem.scopes', true), ''),
                                                   ' ', ''),
                                ','),
                            ''),
                        '{}'::text []);
                END IF;
                hydrate_valid_at := (pass_req ->> 'valid_at')::timestamptz;
                hydrate_known_at := (pass_req ->> 'known_at')::timestamptz;
                -- Each result object from two text arrays (session 14):
                -- jsonb_object gives the same object as jsonb_build_object
                -- (every value a JSON string, a NULL external id null; a uuid
                -- as text is the string its JSON conversion writes), without
                -- working out each argument's type and output function again
                -- for every object (~10 k instructions per result).
                SELECT pg_catalog.array_agg(CASE WHEN h.evidence_id IS NOT NULL THEN pg_catalog.jsonb_object(
                           ARRAY['evidence_id', 'context', 'source_id', 'source_external_id'],
                           ARRAY[h.evidence_id::text, h.context, h.source_id::text, h.source_external_id]) END
                                            ORDER BY o.ord),
                       pg_catalog.array_agg(pg_catalog.octet_length(h.context) ORDER BY o.ord)
                INTO chunk_items, sizes
                FROM pg_catalog.unnest(hydrate_ids[1:200]) WITH ORDINALITY AS o (id, ord)
                LEFT JOIN LATERAL (
                    -- each lookup by its whole key, fenced (OFFSET 0) so that
                    -- no plan hashes or scans a table of the team
                    SELECT e.evidence_id, e.text AS context, e.source_id, s.external_id AS source_external_id
                    FROM (SELECT x.evidence_id, x.text, x.source_id, x.revision_id, x.owner_profile_id
                          FROM dm_private.evidence AS x
                          WHERE x.team_id = team AND x.evidence_id = o.id
                            AND x.state = 'active'
                            AND x.text IS NOT NULL
                            AND (x.valid_from IS NULL OR x.valid_from <= hydrate_valid_at)
                            AND (x.valid_to IS NULL OR x.valid_to > hydrate_valid_at)
                            AND x.known_from <= hydrate_known_at
                            AND (x.known_to IS NULL OR x.known_to > hydrate_known_at)
                            -- the policy labels: no label set to true outside the
                            -- caller's scopes (see recall_hydrate, sql/58)
                            AND NOT ((x.labels OPERATOR(pg_catalog.-) hydrate_scopes)
                                     OPERATOR(pg_catalog.@?) 'strict $.* ? (@ == true)'::pg_catalog.jsonpath)
                            -- the owner profile is active: not one of the
                            -- team's profiles in another state (see
                            -- recall_hydrate, sql/58)
                            AND x.owner_profile_id <> ALL (ARRAY(
                                SELECT p.profile_id FROM dm_private.profiles AS p
                                WHERE p.team_id = team AND p.state <> 'active'))
                          OFFSET 0) AS e
                    CROSS JOIN LATERAL (
                        SELECT 1 FROM dm_private.source_revisions AS r
                        WHERE r.team_id = team AND r.source_id = e.source_id AND r.revision_id = e.revision_id
                          AND r.is_current
                        OFFSET 0) AS r
                    CROSS JOIN LATERAL (
                        SELECT y.external_id FROM dm_private.sources AS y
                        WHERE y.team_id = team AND y.source_id = e.source_id
                        OFFSET 0) AS s
                ) AS h ON true;
                FOR i IN 1..COALESCE(pg_catalog.cardinality(hydrate_ids), 0) LOOP
                    EXIT WHEN pg_catalog.cardinality(pass_kept) >= pass_want;
                    CONTINUE WHEN sizes[i] IS NULL OR pass_used + sizes[i] > pass_bytes;
                    pass_kept := pass_kept || hydrate_ids[i];
                    kept_items := kept_items || chunk_items[i];
                    pass_used := pass_used + sizes[i];
                END LOOP;
                hydrated := hydrated + COALESCE(pg_catalog.cardinality(hydrate_ids), 0);
                EXIT WHEN pg_catalog.cardinality(pass_kept) >= pass_want
                          OR hydrated >= LEAST(pg_catalog.cardinality(ordered_ids), 200);
            END LOOP;
            IF pass = 1 THEN
                pass_bytes := pass_bytes - pass_used;
            END IF;
        END IF;
        kept := kept || pass_kept;
        -- what only explain shows (branch hits as JSON, fused and scored
        -- candidates) is kept only when explaining: converting and copying
        -- them cost every recall a few hundred composite values
        IF with_explain THEN
            all_ordered := all_ordered || ordered_ids;
            IF pass = 1 THEN
                first_hits := ARRAY[pg_catalog.to_jsonb(fulltext_hits), pg_catalog.to_jsonb(exact_hits), pg_catalog.to_jsonb(vector_hits)];
                first_fused := fused;
                scored_all := scored;
                first_scored := COALESCE(pg_catalog.cardinality(scored), 0);
                first_mmr := mmr_rows;
            ELSE
                scored_all := scored_all || ARRAY(SELECT s FROM pg_catalog.unnest(scored) AS s
                                                 WHERE s.evidence_id = ANY (pass_kept));
            END IF;
        END IF;
        IF NOT with_explain THEN
            NULL;
        ELSIF pass = 1 THEN
            timings := timings || pg_catalog.jsonb_build_object('hydrate_budget_ms', EXTRACT(EPOCH FROM pg_catalog.clock_timestamp() - mark) * 1000);
        ELSE
            timings := timings || pg_catalog.jsonb_build_object('window_fallback_ms', EXTRACT(EPOCH FROM pg_catalog.clock_timestamp() - mark) * 1000);
        END IF;
    END LOOP;
    IF with_explain THEN
        results := COALESCE((SELECT pg_catalog.jsonb_agg(contexts -> k.id::text ORDER BY k.ord)
                             FROM pg_catalog.unnest(kept) WITH ORDINALITY AS k (id, ord)), '[]'::jsonb);
        mark := pg_catalog.clock_timestamp();
    END IF;

    -- discovery paths (optional stage, after the direct results are chosen)
    -- (called directly, as the parse above: the to_regprocedure test that
    -- tells an absent stage from a failing one runs only when the call fails)
    BEGIN
        discovery := dm_private.discovery_for_recall(team, query, COALESCE(parsed, '{}'::jsonb), kept, req, settings);
        discovery_paths := COALESCE(discovery -> 'discovery_paths', '[]'::jsonb);
        related := discovery -> 'related_hypotheses';
        IF pg_catalog.jsonb_typeof(discovery -> 'degraded') = 'array'
           AND pg_catalog.jsonb_array_length(discovery -> 'degraded') > 0 THEN
            degraded := degraded || ARRAY(SELECT pg_catalog.jsonb_array_elements_text(discovery -> 'degraded'));
        END IF;
    EXCEPTION WHEN OTHERS THEN
        discovery_paths := '[]';
        related := NULL;
        IF pg_catalog.to_regprocedure('dm_private.discovery_for_recall(uuid,text,jsonb,uuid[],jsonb,jsonb)') IS NOT NULL THEN
            degraded := degraded || 'discovery'::text;
        END IF;
    END;
    IF with_explain THEN
        timings := timings || pg_catalog.jsonb_build_object('discovery_ms', EXTRACT(EPOCH FROM pg_catalog.clock_timestamp() - mark) * 1000);
    END IF;

    -- A recall builds its answer from the kept result objects themselves
    -- (session 13): jsonb copies a jsonb argument token by token, so
    -- to_jsonb(kept_items) and then the answer object walked every result
    -- text twice; the array given to jsonb_build_object is converted once,
    -- to the same value.
    IF with_explain THEN
        answer := pg_catalog.jsonb_build_object('results', results, 'discovery_paths', discovery_paths,
                                                'guidance', guidance);
    ELSE
        answer := pg_catalog.jsonb_build_object('results', kept_items, 'discovery_paths', discovery_paths,
                                                'guidance', guidance);
    END IF;
    IF (req ->> 'include_hypotheses')::boolean AND related IS NOT NULL THEN
        answer := answer || pg_catalog.jsonb_build_object('related_hypotheses', related);
    END IF;

    -- (described as JSON only for explain)
    telemetry := dm_private.write_recall_telemetry(
        team, pg_catalog.gen_random_uuid(),
        (settings ->> 'profile_name') || ':v' || (settings ->> 'profile_version'),
        'v' || COALESCE(settings ->> 'index_version', '0'),
        degraded, vector_branch_ran, pg_catalog.cardinality(kept),
        EXTRACT(EPOCH FROM pg_catalog.clock_timestamp() - started) * 1000, with_explain);

    -- A recall returns its answer as it is: wrapping it as {"answer": ...}
    -- for dm.recall_memory to take apart again copied every result a third
    -- time (session 13).
    IF NOT with_explain THEN
        RETURN answer;
    END IF;
    -- (the heap addresses a branch hit and a fused candidate carry for the
    -- ranking, migration 0094, are left out: a physical detail of one read)
    explain := pg_catalog.jsonb_build_object(
        'request', req,
        'parsed', parsed,
        'ranking_profile', pg_catalog.jsonb_build_object('name', settings ->> 'profile_name',
                                                         'version', (settings ->> 'profile_version')::integer),
        'settings', settings,
        'vector_access_path', CASE WHEN vector_path IS NULL THEN NULL ELSE pg_catalog.to_jsonb(vector_path) END,
        'branches', pg_catalog.jsonb_build_object(
            'fulltext', COALESCE((SELECT pg_catalog.jsonb_agg(h.item - 'row_tid' ORDER BY (h.item ->> 'branch_rank')::integer)
                                  FROM pg_catalog.jsonb_array_elements(first_hits[1]) AS h (item)), '[]'),
            'exact', COALESCE((SELECT pg_catalog.jsonb_agg(h.item - 'row_tid' ORDER BY (h.item ->> 'branch_rank')::integer)
                               FROM pg_catalog.jsonb_array_elements(first_hits[2]) AS h (item)), '[]'),
            'vector', COALESCE((SELECT pg_catalog.jsonb_agg(h.item - 'row_tid' ORDER BY (h.item ->> 'branch_rank')::integer)
                                FROM pg_catalog.jsonb_array_elements(first_hits[3]) AS h (item)), '[]')),
        'fused', COALESCE((SELECT pg_catalog.jsonb_agg(pg_catalog.to_jsonb(f) - 'row_tid' ORDER BY f.fusion_rank)
                           FROM pg_catalog.unnest(first_fused) AS f), '[]'),
        'scored', COALESCE((SELECT pg_catalog.jsonb_agg(pg_catalog.to_jsonb(s) - 'body_key' ORDER BY s.score_rank)
                            FROM pg_catalog.unnest(scored_all[1:first_scored]) AS s), '[]'),
        'mmr', COALESCE(first_mmr, '[]'),
        'window_fallback', window_fallback,
        'results', COALESCE((
            SELECT pg_catalog.jsonb_agg(
                pg_catalog.jsonb_build_object(
                    'rank', k.ord,
                    'evidence_id', k.id,
                    'score', s.score,
                    'score_breakdown', pg_catalog.jsonb_build_object(
                        'relevance', pg_catalog.jsonb_build_object('value', s.relevance, 'weight', settings #> '{weights,relevance}'),
                        'recency', pg_catalog.jsonb_build_object('value', s.recency, 'weight', settings #> '{weights,recency}'),
                        'importance', pg_catalog.jsonb_build_object('value', s.importance, 'weight', settings #> '{weights,importance}'),
                        'frequency', pg_catalog.jsonb_build_object('value', s.frequency, 'weight', settings #> '{weights,frequency}'),
                        'proximity', pg_catalog.jsonb_build_object('value', s.proximity, 'weight', settings #> '{weights,proximity}'),
                        'confidence', pg_catalog.jsonb_build_object('value', s.confidence, 'weight', settings #> '{weights,confidence}'),
                        'support', pg_catalog.jsonb_build_object('value', s.support, 'weight', settings -> 'support_weight',
                                                                 'scaled_by', 'relevance'),
                        'temporal', pg_catalog.jsonb_build_object('value', s.temporal, 'weight',
                            CASE WHEN req ->> 'temporal_intent' IS NULL THEN '0'::jsonb ELSE settings -> 'temporal_intent_weight' END),
                        'phrase', s.phrase,
                        'exact_terms', s.exact_terms),
                    'branch_ranks', pg_catalog.jsonb_build_object('fulltext', s.fulltext_rank, 'vector', s.vector_rank,
                                                                  'exact', s.exact_rank, 'fusion', s.fusion_rank),
                    'score_rank', s.score_rank)
                ORDER BY k.ord)
            FROM pg_catalog.unnest(kept) WITH ORDINALITY AS k (id, ord)
            LEFT JOIN LATERAL (SELECT x.* FROM pg_catalog.unnest(scored_all) AS x
                               WHERE x.evidence_id = k.id LIMIT 1) AS s ON true), '[]'),
        'dropped_by_hydration', pg_catalog.to_jsonb(ARRAY(
            SELECT DISTINCT o.id FROM pg_catalog.unnest(all_ordered) AS o (id) WHERE NOT contexts ? o.id::text)),
        'timings_ms', timings,
        'telemetry', telemetry);
    RETURN pg_catalog.jsonb_build_object('answer', answer, 'explain', explain);
END
$$;
COMMENT ON FUNCTION dm_private.recall_run(text, uuid, public.vector, jsonb, boolean) IS
'The recall pipeline shared by dm.recall_memory and dm.explain_recall: request, profile, parse, branches, fusion, rerank, MMR, hydration under RLS, budget, discovery, telemetry. Returns the public answer and, with with_explain, {"answer", "explain"}.';
REVOKE ALL ON FUNCTION dm_private.recall_run(text, uuid, public.vector, jsonb, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_run(text, uuid, public.vector, jsonb, boolean)
TO densemem_app, densemem_analyst, densemem_operator;

-- The public recall: best evidence contexts under the byte budget, compact
-- discovery paths and follow-up guidance. No scores, tiers, embedding
-- details or verifier rationale.
CREATE OR REPLACE FUNCTION dm.recall_memory(query text, team_id uuid, query_embedding public.vector DEFAULT NULL,
    request jsonb DEFAULT '{}')
RETURNS jsonb
LANGUAGE sql
VOLATILE
SET search_path = ''
AS $$
    SELECT dm_private.recall_run(query, team_id, query_embedding, request, false)
$$;
COMMENT ON FUNCTION dm.recall_memory(text, uuid, public.vector, jsonb) IS
'Recall: {"results": [{"evidence_id", "context", "source_id", "source_external_id"}], "discovery_paths": [...], "guidance"} for the query in the authenticated team. request: limit (1-50), max_context_bytes, valid_at, known_at, now, filters {source_group, memory_type, created_after, created_before}, known_evidence_ids (<= 200), known_relationship_ids (<= 200), expand_from_entity_ids, include_hypotheses, anchors, phrases, time_window {from, to}, temporal_intent (latest | earliest), usage_snapshot_id, ranking_profile. Errors: 22023 bad value, 22P02 bad uuid, DM413 query too large, DM503 required embedding missing.';
REVOKE ALL ON FUNCTION dm.recall_memory(text, uuid, public.vector, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm.recall_memory(text, uuid, public.vector, jsonb)
TO densemem_app, densemem_analyst, densemem_operator;

-- Operators only: the same run with every branch's candidates and ranks,
-- each result's score breakdown (every signal with its weight), stage
-- timings and the telemetry row.
CREATE OR REPLACE FUNCTION dm.explain_recall(query text, team_id uuid, query_embedding public.vector DEFAULT NULL,
    request jsonb DEFAULT '{}')
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
DECLARE
    run jsonb;
BEGIN
    IF NOT pg_catalog.pg_has_role(current_user, 'densemem_operator', 'MEMBER') THEN
        RAISE EXCEPTION 'explain_recall is for operators' USING ERRCODE = '42501';
    END IF;
    run := dm_private.recall_run(query, team_id, query_embedding, request, true);
    RETURN (run -> 'explain') || pg_catalog.jsonb_build_object('answer', run -> 'answer');
END
$$;
COMMENT ON FUNCTION dm.explain_recall(text, uuid, public.vector, jsonb) IS
'Operators: the recall of dm.recall_memory (same order, under "answer") with branch candidates and ranks, fusion, each result''s score breakdown (seed 002 §9), MMR, stage timings and the telemetry row.';
REVOKE ALL ON FUNCTION dm.explain_recall(text, uuid, public.vector, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm.explain_recall(text, uuid, public.vector, jsonb) TO densemem_operator;
