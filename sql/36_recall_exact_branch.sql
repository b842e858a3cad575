-- Recall stage 2b: the exact branch (required anchors and quoted phrases).
--
-- Runs as densemem_searcher (BYPASSRLS, SECURITY DEFINER, empty
-- search_path) for the same reason as the full-text branch: @@ is not
-- leakproof, so under row-level security the GIN index could not serve it.
-- The explicit team predicate replaces the policy; hydration re-reads the
-- chosen rows under RLS as the caller.

-- Exact branch: evidence that itself contains every required anchor (and,
-- when phrases are given, at least one of them), found through the GIN index
-- by the anchors' phrase queries and confirmed on the text with identifier
-- boundaries (dm_private.recall_has_anchors: ABC-123 is not in ABC-1234).
-- Ranked by the number of phrases contained, then by evidence id; when more
-- than fulltext.scan_cap documents match, the scan keeps the lowest evidence
-- ids. Empty when the request has neither anchors nor phrases.
CREATE OR REPLACE FUNCTION dm_private.recall_exact_candidates(team_id uuid, req jsonb, settings jsonb)
RETURNS SETOF dm_private.recall_branch_hit
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = ''
AS $$
DECLARE
    team constant uuid := dm_private.require_team(recall_exact_candidates.team_id);
    config regconfig := COALESCE(settings #>> '{fulltext,config}', 'english')::regconfig;
    scan_cap integer := COALESCE((settings #>> '{fulltext,scan_cap}')::integer, 1000);
    cap integer := COALESCE((settings #>> '{candidates,exact}')::integer, 50);
    anchors text [] := ARRAY(SELECT pg_catalog.lower(a) FROM pg_catalog.jsonb_array_elements_text(req -> 'anchors') AS a);
    -- each anchor's regular expression, built once per call: the test below
    -- is dm_private.recall_has_anchors' written out, which, called per
    -- matching row, built every pattern again for every row (as the rerank
    -- did before session 7)
    anchor_patterns text [] := '{}';
    phrases text [] := ARRAY(SELECT pg_catalog.lower(p) FROM pg_catalog.jsonb_array_elements_text(req -> 'phrases') AS p);
    index_q tsquery;
    piece tsquery;
    item text;
    valid_at timestamptz := (req ->> 'valid_at')::timestamptz;
    known_at timestamptz := (req ->> 'known_at')::timestamptz;
    scopes text [] := dm_private.authenticated_scopes();
    source_groups text [];
    memory_types text [];
    created_after timestamptz := (req ->> 'created_after')::timestamptz;
    created_before timestamptz := (req ->> 'created_before')::timestamptz;
    has_window boolean := COALESCE((req ->> 'has_window')::boolean, false);
    window_from timestamptz := (req ->> 'window_from')::timestamptz;
    window_to timestamptz := (req ->> 'window_to')::timestamptz;
    known_ids uuid [] := '{}';
    disabled uuid [] := ARRAY(SELECT p.profile_id FROM dm_private.profiles AS p
                              WHERE p.team_id = team AND p.state <> 'active');
BEGIN
    IF pg_catalog.cardinality(anchors) = 0 AND pg_catalog.cardinality(phrases) = 0 THEN
        RETURN;
    END IF;
    IF pg_catalog.cardinality(anchors) > 0 THEN
        anchor_patterns := ARRAY(SELECT dm_private.recall_anchor_pattern(a.anchor)
                                 FROM pg_catalog.unnest(anchors) WITH ORDINALITY AS a (anchor, o)
                                 ORDER BY a.o);
    END IF;
    -- The index query: every anchor's phrase query AND-ed, then (phrases
    -- only) the OR of the phrases' queries. Parts with no lexeme are skipped
    -- and confirmed by the text test alone.
    FOREACH item IN ARRAY anchors LOOP
        piece := pg_catalog.phraseto_tsquery(config, item);
        IF pg_catalog.numnode(piece) > 0 THEN
            index_q := CASE WHEN index_q IS NULL THEN piece ELSE index_q OPERATOR(pg_catalog.&&) piece END;
        END IF;
    END LOOP;
    IF pg_catalog.cardinality(anchors) = 0 THEN
        FOREACH item IN ARRAY phrases LOOP
            piece := pg_catalog.phraseto_tsquery(config, item);
            IF pg_catalog.numnode(piece) > 0 THEN
                index_q := CASE WHEN index_q IS NULL THEN piece ELSE index_q OPERATOR(pg_catalog.||) piece END;
            END IF;
        END LOOP;
    END IF;
    -- List filters, read only when given (the normalised request holds
    -- empty arrays otherwise, and an empty list is no filter: NULL here);
    -- the IF is an expression, the ARRAY a statement run only when needed.
    IF pg_catalog.jsonb_array_length(req -> 'source_groups') > 0 THEN
        source_groups := ARRAY(SELECT pg_catalog.jsonb_array_elements_text(req -> 'source_groups'));
    END IF;
    IF pg_catalog.jsonb_array_length(req -> 'memory_types') > 0 THEN
        memory_types := ARRAY(SELECT pg_catalog.jsonb_array_elements_text(req -> 'memory_types'));
    END IF;
    IF pg_catalog.jsonb_array_length(req -> 'known_evidence_ids') > 0 THEN
        known_ids := ARRAY(SELECT pg_catalog.jsonb_array_elements_text(req -> 'known_evidence_ids')::uuid);
    END IF;
    RETURN QUERY
        WITH matched AS (
            -- (ctid: where the document was read, carried with the hit; the
            -- ranking fetches the row there, migration 0094)
            SELECT d.document_id, d.subject_id, d.ctid AS row_tid,
                   (SELECT pg_catalog.count(*) FROM pg_catalog.unnest(phrases) AS p (phrase)
                    WHERE pg_catalog.strpos(pg_catalog.lower(d.body), p.phrase) > 0) AS phrase_hits
            FROM dm_private.search_documents AS d
            WHERE d.team_id = team
              AND (index_q IS NULL OR d.search_vector @@ index_q)
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
              AND d.subject_id <> ALL (known_ids)
              AND (pg_catalog.cardinality(anchors) = 0 OR NOT EXISTS (
                       SELECT 1
                       FROM (SELECT pg_catalog.lower(COALESCE(d.body, '')) AS text OFFSET 0) AS b
                       CROSS JOIN ROWS FROM (pg_catalog.unnest(anchors), pg_catalog.unnest(anchor_patterns))
                           AS a (anchor, pattern)
                       WHERE NOT (pg_catalog.strpos(b.text, pg_catalog.lower(a.anchor)) > 0
                                  AND b.text OPERATOR(pg_catalog.~) a.pattern)))
            -- the scan cap keeps the lowest evidence ids, not whichever rows
            -- the plan met first: when more than scan_cap documents match,
            -- the same request returns the same candidates whatever the plan
            ORDER BY d.subject_id
            LIMIT scan_cap
        )
        SELECT 'exact'::text, m.document_id, m.subject_id,
               (pg_catalog.rank() OVER (ORDER BY m.phrase_hits DESC))::integer,
               m.phrase_hits::double precision, m.row_tid
        FROM matched AS m
        WHERE pg_catalog.cardinality(phrases) = 0 OR pg_catalog.cardinality(anchors) > 0 OR m.phrase_hits > 0
        ORDER BY m.phrase_hits DESC, m.subject_id
        LIMIT cap;
END
$$;
COMMENT ON FUNCTION dm_private.recall_exact_candidates(uuid, jsonb, jsonb) IS
'Exact branch: eligible evidence that itself contains every required anchor (and at least one requested phrase), found through the GIN index and confirmed with identifier boundaries (recall_has_anchors'' test, each pattern built once per call); ranked by phrases contained. Runs as densemem_searcher.';
ALTER FUNCTION dm_private.recall_exact_candidates(uuid, jsonb, jsonb) OWNER TO densemem_searcher;
REVOKE ALL ON FUNCTION dm_private.recall_exact_candidates(uuid, jsonb, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_exact_candidates(uuid, jsonb, jsonb)
TO densemem_app, densemem_analyst, densemem_operator;
