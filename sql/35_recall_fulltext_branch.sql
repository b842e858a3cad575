-- Recall stage 2a: the full-text and exact branches.
--
-- Both run as densemem_searcher (BYPASSRLS, SECURITY DEFINER, empty
-- search_path): @@ and ts_rank_cd are not leakproof, so under row-level
-- security the planner could not use the GIN index ahead of the policy. The
-- explicit team predicate, checked against the authenticated setting by
-- require_team, replaces the policy here; hydration re-reads the chosen rows
-- under RLS as the caller.
--
-- ts_rank_cd reads every matching row's tsvector, so matches are capped
-- (settings fulltext.scan_cap) before ranking. The cap is applied twice: to
-- the rows matching every query term (websearch_to_tsquery, so quoted
-- phrases and -exclusions work) and to the rows matching any term (an OR of
-- the query's lexemes, which natural-language questions need), so the cap
-- never drops an all-terms match in favour of an any-term one.

-- The query's tsqueries: "all" is websearch_to_tsquery; "any" is the OR of
-- the lexemes of the query text (NULL when the query excludes terms, since
-- an OR would let excluded terms back in, or has fewer than two lexemes).
CREATE OR REPLACE FUNCTION dm_private.recall_tsqueries(query text, config regconfig DEFAULT 'english')
RETURNS TABLE (all_terms tsquery, any_terms tsquery)
LANGUAGE plpgsql
STABLE
PARALLEL SAFE
SET search_path = ''
AS $$
DECLARE
    all_q tsquery := pg_catalog.websearch_to_tsquery(config, COALESCE(query, ''));
    any_text text;
    lexeme_count integer;
BEGIN
    SELECT pg_catalog.string_agg(
               '''' || pg_catalog.replace(pg_catalog.replace(l.lexeme, '\', '\\'), '''', '''''') || '''',
               ' | ' ORDER BY l.lexeme),
           pg_catalog.count(*)
    INTO any_text, lexeme_count
    FROM pg_catalog.unnest(pg_catalog.to_tsvector(config, COALESCE(query, ''))) AS l;
    IF pg_catalog.numnode(all_q) = 0 THEN
        all_q := NULL;
    END IF;
    IF lexeme_count < 2 OR pg_catalog.strpos(COALESCE(all_q::text, ''), '!') > 0 THEN
        RETURN QUERY SELECT all_q, NULL::tsquery;
    ELSE
        RETURN QUERY SELECT all_q, any_text::tsquery;
    END IF;
END
$$;
COMMENT ON FUNCTION dm_private.recall_tsqueries(text, regconfig) IS
'The two full-text queries of a recall: all_terms (websearch_to_tsquery) and any_terms (OR of the query''s lexemes; NULL with exclusions or fewer than two lexemes).';
REVOKE ALL ON FUNCTION dm_private.recall_tsqueries(text, regconfig) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_tsqueries(text, regconfig)
TO densemem_app, densemem_analyst, densemem_operator, densemem_searcher;

-- Full-text candidates of one team: eligible evidence documents matching the
-- query, at most scan_cap per tsquery before ranking; the rank_cap best by
-- ts_rank, then ordered by ts_rank_cd against the any-terms query (all-terms
-- when there is none); top `candidates.fulltext`, one row per evidence.
CREATE OR REPLACE FUNCTION dm_private.recall_fulltext_candidates(team_id uuid, query text, req jsonb, settings jsonb)
RETURNS SETOF dm_private.recall_branch_hit
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = ''
AS $$
DECLARE
    team constant uuid := dm_private.require_team(recall_fulltext_candidates.team_id);
    config regconfig := COALESCE(settings #>> '{fulltext,config}', 'english')::regconfig;
    scan_cap integer := COALESCE((settings #>> '{fulltext,scan_cap}')::integer, 1000);
    cap integer := COALESCE((settings #>> '{candidates,fulltext}')::integer, 100);
    normalization integer := COALESCE((settings #>> '{fulltext,rank_normalization}')::integer, 1);
    rank_cap integer := GREATEST(cap, COALESCE((settings #>> '{fulltext,rank_cap}')::integer, 2 * cap));
    use_or boolean := COALESCE((settings #>> '{fulltext,or_terms}')::boolean, true);
    all_q tsquery;
    any_q tsquery;
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
    SELECT q.all_terms, q.any_terms INTO all_q, any_q FROM dm_private.recall_tsqueries(query, config) AS q;
    IF NOT use_or THEN
        any_q := NULL;
    END IF;
    IF all_q IS NULL THEN
        RETURN;
    END IF;
    IF pg_catalog.cardinality(source_groups) = 0 THEN source_groups := NULL; END IF;
    IF pg_catalog.cardinality(memory_types) = 0 THEN memory_types := NULL; END IF;
    -- One statement: the rows matching any term (all terms when there is no
    -- any-terms query), capped; only when that pass was cut by the cap, the
    -- all-terms rows too (capped), so the cap never drops an all-terms match.
    RETURN QUERY
        WITH any_pass AS MATERIALIZED (
            SELECT d.document_id, d.subject_id, d.search_vector
            FROM dm_private.search_documents AS d
            WHERE d.team_id = team
              AND d.search_vector @@ COALESCE(any_q, all_q)
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
            LIMIT scan_cap
        ),
        all_pass AS (
            SELECT d.document_id, d.subject_id, d.search_vector
            FROM dm_private.search_documents AS d
            WHERE any_q IS NOT NULL
              AND (SELECT pg_catalog.count(*) FROM any_pass) >= scan_cap
              AND d.team_id = team
              AND d.search_vector @@ all_q
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
            LIMIT scan_cap
        ),
        matched AS (
            SELECT a.document_id, a.subject_id, a.search_vector FROM any_pass AS a
            UNION ALL
            SELECT b.document_id, b.subject_id, b.search_vector FROM all_pass AS b
            WHERE NOT EXISTS (SELECT 1 FROM any_pass AS a WHERE a.document_id = b.document_id)
        ),
        prefiltered AS (
            -- ts_rank is about four times cheaper than ts_rank_cd: it picks
            -- the rank_cap best of the capped matches, which ts_rank_cd orders
            SELECT m.document_id, m.subject_id, m.search_vector
            FROM matched AS m
            ORDER BY pg_catalog.ts_rank(m.search_vector, COALESCE(any_q, all_q), normalization) DESC, m.subject_id
            LIMIT rank_cap
        ),
        ranked AS (
            SELECT pf.document_id, pf.subject_id,
                   pg_catalog.ts_rank_cd(pf.search_vector, COALESCE(any_q, all_q), normalization)::double precision AS score
            FROM prefiltered AS pf
        )
        SELECT 'fulltext'::text, r.document_id, r.subject_id,
               -- equal scores share a rank, so ties stay ties through fusion
               (pg_catalog.rank() OVER (ORDER BY r.score DESC))::integer,
               r.score
        FROM ranked AS r
        ORDER BY r.score DESC, r.subject_id
        LIMIT cap;
END
$$;
COMMENT ON FUNCTION dm_private.recall_fulltext_candidates(uuid, text, jsonb, jsonb) IS
'Full-text branch: eligible evidence documents of the team matching the query (all terms, and any term for natural-language questions), capped at fulltext.scan_cap per query before ts_rank_cd, top candidates.fulltext by rank, one row per evidence. Runs as densemem_searcher so the GIN index serves @@.';
ALTER FUNCTION dm_private.recall_fulltext_candidates(uuid, text, jsonb, jsonb) OWNER TO densemem_searcher;
REVOKE ALL ON FUNCTION dm_private.recall_fulltext_candidates(uuid, text, jsonb, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_fulltext_candidates(uuid, text, jsonb, jsonb)
TO densemem_app, densemem_analyst, densemem_operator;
