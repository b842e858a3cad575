-- Recall stage 4: the deterministic composite rerank (seed 002 §3-§6,
-- seed 000 "final selection").
--
-- Every signal is normalised to [0, 1] before weighting:
--   relevance   fusion relevance mixed with the phrase signal (share of the
--               request's phrases the text contains) and the exact-term
--               signal (the text matches every query term) and the content
--               signal (how much the text says: its distinct lexemes over
--               relevance_mix.content_pivot, at most 1; off unless
--               relevance_mix.content > 0), by relevance_mix; a part with
--               nothing to measure drops out of the mix;
--   recency     exp(-age / half_life) per memory type (no half-life: 1);
--               age is request.now minus created_at in days, or, for a
--               record without created_at, its sequence distance from the
--               team's newest evidence in the same units;
--   importance  stored importance;
--   frequency   (used + prior_used) / (retrieved + prior_retrieved) from the
--               usage snapshot (the requested one, else the team's latest),
--               so retrieved-but-unused falls and used rises;
--   proximity   0.5 ^ hops from the query's entities (0 without discovery);
--   confidence  stored confidence.
-- score = sum of weight * signal, plus the bounded support (tier) bonus
-- support_weight * tier_strength * relevance, which is applied after fusion
-- and scales with relevance so a tier never lifts an irrelevant row, plus
-- temporal_intent_weight * temporal when the request asks for the latest or
-- earliest. Required hard anchors: a candidate that does not itself contain
-- every anchor with identifier boundaries (dm_private.recall_has_anchors) is
-- dropped. Ties break by evidence_id.
--
-- with_context: the neighbouring-turn lift of sql/52
-- (dm_private.recall_context_lift) applied inside the same statement, when
-- the profile's context.weight is above 0: the lift needs the source group
-- and sequence number of each candidate, which this statement already reads,
-- so recall pays for one read of the documents and one candidate array, not
-- two. The result equals recall_context_lift(team, rerank(...), settings)
-- bit for bit (a test checks it); recall_context_lift stays the stage a DBA
-- can call and EXPLAIN alone.
CREATE OR REPLACE FUNCTION dm_private.recall_rerank(team_id uuid, query text, fused dm_private.recall_fused [],
    req jsonb, settings jsonb, hops jsonb, with_context boolean)
RETURNS SETOF dm_private.recall_scored
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = ''
AS $$
DECLARE
    team constant uuid := dm_private.require_team(recall_rerank.team_id);
    config regconfig := COALESCE(settings #>> '{fulltext,config}', 'english')::regconfig;
    all_q tsquery;
    clock timestamptz := COALESCE((req ->> 'now')::timestamptz, pg_catalog.now());
    anchors text [] := '{}';
    phrases text [] := '{}';
    intent text := req ->> 'temporal_intent';
    snapshot bigint := (req ->> 'usage_snapshot_id')::bigint;
    w_rel double precision := COALESCE((settings #>> '{weights,relevance}')::double precision, 0.55);
    w_rec double precision := COALESCE((settings #>> '{weights,recency}')::double precision, 0.20);
    w_imp double precision := COALESCE((settings #>> '{weights,importance}')::double precision, 0.15);
    w_frq double precision := COALESCE((settings #>> '{weights,frequency}')::double precision, 0.05);
    w_prx double precision := COALESCE((settings #>> '{weights,proximity}')::double precision, 0.05);
    w_conf double precision := COALESCE((settings #>> '{weights,confidence}')::double precision, 0.0);
    w_support double precision := COALESCE((settings ->> 'support_weight')::double precision, 0.05);
    w_temporal double precision := CASE WHEN req ->> 'temporal_intent' IS NULL THEN 0
        ELSE COALESCE((settings ->> 'temporal_intent_weight')::double precision, 0.25) END;
    mix_fusion double precision := COALESCE((settings #>> '{relevance_mix,fusion}')::double precision, 1.0);
    mix_phrase double precision := COALESCE((settings #>> '{relevance_mix,phrase}')::double precision, 0.0);
    mix_exact double precision := COALESCE((settings #>> '{relevance_mix,exact_terms}')::double precision, 0.0);
    mix_content double precision := COALESCE((settings #>> '{relevance_mix,content}')::double precision, 0.0);
    content_pivot double precision := GREATEST(COALESCE((settings #>> '{relevance_mix,content_pivot}')::double precision, 20), 1);
    prior_used double precision := COALESCE((settings #>> '{frequency_prior,used}')::double precision, 1);
    prior_retrieved double precision := COALESCE((settings #>> '{frequency_prior,retrieved}')::double precision, 2);
    half_lives jsonb := COALESCE(settings -> 'half_life_days', '{}'::jsonb);
    scopes text [] := dm_private.authenticated_scopes();
    lift_weight double precision := 0;
    radius bigint := 1;
    -- no hops (no discovery, no query entities): proximity is 0 for every
    -- candidate without a jsonb look-up of its id
    with_hops boolean := COALESCE(hops <> '{}'::jsonb, false);
BEGIN
    -- Cost notes (ranking 100 candidates is budgeted at 1 ms, seed 002):
    -- every statement here pays executor start-up and plan validation, so
    -- lists that are usually empty (anchors, phrases) are only built when
    -- the request has them, the candidate id arrays are init-plans of the
    -- main query, and the usage snapshot is looked up inside it.
    IF fused IS NULL OR pg_catalog.cardinality(fused) = 0 THEN
        RETURN;
    END IF;
    IF req -> 'anchors' IS NOT NULL AND req -> 'anchors' <> '[]'::jsonb THEN
        anchors := ARRAY(SELECT pg_catalog.lower(a) FROM pg_catalog.jsonb_array_elements_text(req -> 'anchors') AS a);
    END IF;
    IF req -> 'phrases' IS NOT NULL AND req -> 'phrases' <> '[]'::jsonb THEN
        phrases := ARRAY(SELECT pg_catalog.lower(p) FROM pg_catalog.jsonb_array_elements_text(req -> 'phrases') AS p);
    END IF;
    -- the all-terms query of the full-text branch (dm_private.recall_tsqueries'
    -- all_terms), computed here directly: one function call less per recall
    all_q := pg_catalog.websearch_to_tsquery(config, COALESCE(query, ''));
    IF pg_catalog.numnode(all_q) = 0 THEN
        all_q := NULL;
    END IF;
    IF pg_catalog.cardinality(phrases) = 0 THEN mix_phrase := 0; END IF;
    IF all_q IS NULL THEN mix_exact := 0; END IF;
    IF mix_content < 0 THEN mix_content := 0; END IF;
    IF mix_fusion + mix_phrase + mix_exact + mix_content <= 0 THEN mix_fusion := 1; END IF;
    IF with_context THEN
        -- as recall_run gated sql/52: the stage runs only for a weight above
        -- 0, and refuses one above 1
        lift_weight := COALESCE((settings #>> '{context,weight}')::double precision, 0);
        IF lift_weight > 1 THEN
            RAISE EXCEPTION 'context.weight must be between 0 and 1, not %', lift_weight USING ERRCODE = '22023';
        END IF;
        lift_weight := GREATEST(lift_weight, 0);
        radius := LEAST(GREATEST(COALESCE((settings #>> '{context,radius}')::integer, 1), 1), 5);
    END IF;
    IF snapshot IS NOT NULL AND NOT EXISTS (SELECT 1 FROM dm_private.usage_snapshots AS s
                                            WHERE s.team_id = team AND s.usage_snapshot_id = snapshot) THEN
        RAISE EXCEPTION 'usage snapshot % does not exist in this team', snapshot USING ERRCODE = '22023';
    END IF;

    RETURN QUERY
        WITH features AS MATERIALIZED (
            -- the candidates' documents in one scan of the primary key
            -- (team_id, document_id = ANY): no plan can range-scan the team
            SELECT x.document_id, x.subject_id, x.body, x.search_vector, x.memory_type, x.source_created_at,
                   x.sequence_number, x.source_group, x.importance, x.confidence, x.policy_labels
            FROM dm_private.search_documents AS x
            WHERE x.team_id = team AND x.subject_kind = 'evidence'
              AND x.document_id = ANY (ARRAY(SELECT f.document_id FROM pg_catalog.unnest(fused) AS f))
        ),
        anchored AS MATERIALIZED (
            -- everything that needs the text, once per candidate, so the
            -- sorts below carry narrow rows (no body, no tsvector)
            SELECT f.document_id, f.evidence_id, f.relevance AS fused_relevance,
                   f.fulltext_rank, f.vector_rank, f.exact_rank, f.fusion_rank,
                   d.memory_type, d.source_created_at, d.sequence_number, d.source_group,
                   COALESCE(d.importance, 0.5)::double precision AS importance,
                   COALESCE(d.confidence, 1.0)::double precision AS confidence,
                   (half_lives ->> d.memory_type::text)::double precision AS half_life,
                   CASE WHEN pg_catalog.cardinality(phrases) = 0 THEN 0 ELSE
                       (SELECT pg_catalog.count(*) FROM pg_catalog.unnest(phrases) AS p (phrase)
                        WHERE pg_catalog.strpos(pg_catalog.lower(d.body), p.phrase) > 0)::double precision
                       / pg_catalog.cardinality(phrases) END AS phrase,
                   CASE WHEN all_q IS NOT NULL AND d.search_vector @@ all_q THEN 1 ELSE 0 END AS exact_terms,
                   CASE WHEN mix_content > 0
                        THEN LEAST(1.0, pg_catalog.length(d.search_vector) / content_pivot) ELSE 0 END AS content,
                   pg_catalog.octet_length(d.body) AS body_bytes,
                   pg_catalog.md5(d.body) AS body_key
            FROM pg_catalog.unnest(fused) AS f
            JOIN features AS d ON d.document_id = f.document_id AND d.subject_id = f.evidence_id
            WHERE d.policy_labels <@ scopes
              AND (pg_catalog.cardinality(anchors) = 0 OR dm_private.recall_has_anchors(d.body, anchors))
        ),
        -- usage and support are MATERIALIZED: each runs once and is joined by
        -- hash. Inlined, a generic plan puts them on the inner side of a
        -- nested loop over the candidates, and every rescan sorts the
        -- candidate-id array of its "= ANY" index condition again (100
        -- candidates: 100 sorts of 100 uuids per recall).
        usage AS MATERIALIZED (
            SELECT u.evidence_id, u.retrieved_count, u.used_count
            FROM dm_private.usage_snapshot_counts AS u
            WHERE u.team_id = team
              AND u.usage_snapshot_id = COALESCE(snapshot, (SELECT pg_catalog.max(s.usage_snapshot_id)
                                                            FROM dm_private.usage_snapshots AS s
                                                            WHERE s.team_id = team))
              AND u.evidence_id = ANY (ARRAY(SELECT f.evidence_id FROM pg_catalog.unnest(fused) AS f))
        ),
        support AS MATERIALIZED (
            SELECT re.evidence_id,
                   pg_catalog.max(CASE r.tier WHEN 'fact' THEN 1.0 WHEN 'validated_claim' THEN 0.7 ELSE 0.0 END)
                       ::double precision AS strength
            FROM dm_private.relationship_evidence AS re
            JOIN dm_private.relationships AS r ON r.team_id = re.team_id AND r.relationship_id = re.relationship_id
            WHERE re.team_id = team AND re.accepted
              AND re.evidence_id = ANY (ARRAY(SELECT f.evidence_id FROM pg_catalog.unnest(fused) AS f))
              AND r.status = 'active' AND r.tier IN ('validated_claim', 'fact')
            GROUP BY re.evidence_id
        ),
        temporal AS MATERIALIZED (
            -- the share of candidates written before (latest) or after
            -- (earliest) each one; read only when the request has an intent
            -- (the WHERE is a one-time filter: no intent, no sort)
            SELECT a.document_id, a.evidence_id,
                   CASE
                       WHEN a.source_created_at IS NULL THEN 0.0
                       WHEN intent = 'latest' THEN
                           pg_catalog.percent_rank() OVER (ORDER BY a.source_created_at ASC NULLS FIRST)
                       ELSE
                           pg_catalog.percent_rank() OVER (ORDER BY a.source_created_at DESC NULLS FIRST)
                   END::double precision AS temporal
            FROM anchored AS a
            WHERE intent IS NOT NULL
        ),
        signals AS (
            SELECT a.document_id, a.evidence_id, a.fulltext_rank, a.vector_rank, a.exact_rank, a.fusion_rank,
                   a.source_group, a.sequence_number,
                   (mix_fusion * COALESCE(a.fused_relevance, 0)
                    + mix_phrase * a.phrase
                    + mix_exact * a.exact_terms
                    + mix_content * a.content)
                   / (mix_fusion + mix_phrase + mix_exact + mix_content) AS relevance,
                   CASE
                       WHEN a.half_life IS NULL THEN 1.0
                       WHEN a.source_created_at IS NOT NULL THEN
                           -- LEAST(700, ...): exp() raises an underflow error below about e^-745,
                           -- which years-old conversation evidence reaches; e^-700 is already 0 here.
                           pg_catalog.exp(-LEAST(700.0, GREATEST(0, EXTRACT(EPOCH FROM clock - a.source_created_at) / 86400.0)
                                          / a.half_life))
                       ELSE
                           -- the team's newest sequence number: an uncorrelated
                           -- subquery, run only when a candidate has no created_at
                           pg_catalog.exp(-LEAST(700.0, GREATEST(0, COALESCE(
                               (SELECT pg_catalog.max(x.sequence_number) FROM dm_private.search_documents AS x
                                WHERE x.team_id = team AND x.subject_kind = 'evidence')
                               - a.sequence_number, 0))::double precision
                                          / a.half_life))
                   END::double precision AS recency,
                   LEAST(1.0, GREATEST(0.0, a.importance)) AS importance,
                   LEAST(1.0, (COALESCE(u.used_count, 0) + prior_used)
                              / (COALESCE(u.retrieved_count, 0) + GREATEST(prior_retrieved, prior_used, 1)))
                       ::double precision AS frequency,
                   CASE WHEN with_hops
                        THEN COALESCE(pg_catalog.power(0.5, (hops ->> a.evidence_id::text)::double precision), 0)
                        ELSE 0 END::double precision AS proximity,
                   LEAST(1.0, GREATEST(0.0, a.confidence)) AS confidence,
                   COALESCE(s.strength, 0) AS support,
                   a.phrase,
                   a.exact_terms,
                   COALESCE(t.temporal, 0.0) AS temporal,
                   a.body_bytes,
                   a.body_key
            FROM anchored AS a
            LEFT JOIN usage AS u ON u.evidence_id = a.evidence_id
            LEFT JOIN support AS s ON s.evidence_id = a.evidence_id
            LEFT JOIN temporal AS t ON t.document_id = a.document_id AND t.evidence_id = a.evidence_id
            -- OFFSET 0 keeps this a subquery of its own: pulled up into the
            -- levels above, each signal's expression was copied to every
            -- place that reads it (recency, with its numeric age arithmetic
            -- and the newest-sequence subquery, three times per row: the
            -- column, the score and the lifted score)
            OFFSET 0
        ),
        scored AS (
            SELECT s.*,
                   w_rel * s.relevance + w_rec * s.recency + w_imp * s.importance + w_frq * s.frequency
                   + w_prx * s.proximity + w_conf * s.confidence
                   + w_support * s.support * s.relevance
                   + w_temporal * s.temporal AS score
            FROM signals AS s
        ),
        lifted AS (
            -- sql/52's lift: the best relevance among the other candidates
            -- of the same source group written within `radius` sequence
            -- numbers (a window frame, not a self-join)
            SELECT s.*,
                   CASE WHEN lift_weight > 0 THEN
                       s.score + lift_weight * COALESCE(GREATEST(
                           CASE WHEN s.source_group IS NOT NULL AND s.sequence_number IS NOT NULL THEN
                               pg_catalog.max(s.relevance) OVER (
                                   PARTITION BY s.source_group, s.sequence_number IS NULL
                                   ORDER BY s.sequence_number
                                   RANGE BETWEEN radius PRECEDING AND radius FOLLOWING EXCLUDE CURRENT ROW)
                           END, 0), 0)
                   ELSE s.score END AS final_score
            FROM scored AS s
        )
        SELECT s.document_id, s.evidence_id, s.relevance::double precision, s.recency::double precision,
               s.importance::double precision, s.frequency::double precision, s.proximity::double precision,
               s.confidence::double precision, s.support::double precision, s.phrase::double precision,
               s.exact_terms::double precision, s.temporal::double precision, s.final_score::double precision,
               s.body_bytes::integer, s.body_key,
               s.fulltext_rank, s.vector_rank, s.exact_rank, s.fusion_rank,
               (pg_catalog.row_number() OVER (ORDER BY s.final_score DESC, s.evidence_id))::integer
        FROM lifted AS s
        ORDER BY s.final_score DESC, s.evidence_id;
END
$$;
COMMENT ON FUNCTION dm_private.recall_rerank(uuid, text, dm_private.recall_fused [], jsonb, jsonb, jsonb, boolean) IS
'Composite rerank (seed 002 §3): relevance (fusion, phrase, exact terms), recency with per-type half-lives against request.now (sequence fallback), importance, frequency from the usage snapshot, proximity, confidence, bounded support and temporal intent; drops candidates lacking a required anchor; ordered by score then evidence_id. with_context applies the neighbouring-turn lift of recall_context_lift in the same statement (what recall_memory runs). Runs as densemem_searcher.';
ALTER FUNCTION dm_private.recall_rerank(uuid, text, dm_private.recall_fused [], jsonb, jsonb, jsonb, boolean)
OWNER TO densemem_searcher;
REVOKE ALL ON FUNCTION dm_private.recall_rerank(uuid, text, dm_private.recall_fused [], jsonb, jsonb, jsonb, boolean)
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_rerank(uuid, text, dm_private.recall_fused [], jsonb, jsonb, jsonb, boolean)
TO densemem_app, densemem_analyst, densemem_operator;

-- The rerank stage alone (no context lift), as a DBA calls and EXPLAINs it:
-- the signature every caller of the first version used.
CREATE OR REPLACE FUNCTION dm_private.recall_rerank(team_id uuid, query text, fused dm_private.recall_fused [],
    req jsonb, settings jsonb, hops jsonb DEFAULT '{}')
RETURNS SETOF dm_private.recall_scored
LANGUAGE sql
STABLE
SET search_path = ''
AS $$
    SELECT r.* FROM dm_private.recall_rerank(team_id, query, fused, req, settings, hops, false) AS r
$$;
COMMENT ON FUNCTION dm_private.recall_rerank(uuid, text, dm_private.recall_fused [], jsonb, jsonb, jsonb) IS
'Composite rerank (seed 002 §3) without the context lift: dm_private.recall_rerank(..., with_context => false). Ordered by score then evidence_id.';
REVOKE ALL ON FUNCTION dm_private.recall_rerank(uuid, text, dm_private.recall_fused [], jsonb, jsonb, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_rerank(uuid, text, dm_private.recall_fused [], jsonb, jsonb, jsonb)
TO densemem_app, densemem_analyst, densemem_operator;
