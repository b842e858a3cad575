-- Recall stage 4: the deterministic composite rerank (seed 002 §3-§6,
-- seed 000 "final selection").
--
-- Every signal is normalised to [0, 1] before weighting:
--   relevance   fusion relevance mixed with the phrase signal (share of the
--               request's phrases the text contains) and the exact-term
--               signal (the text matches every query term), by
--               relevance_mix; a part with nothing to measure drops out of
--               the mix;
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
CREATE OR REPLACE FUNCTION dm_private.recall_rerank(team_id uuid, query text, fused dm_private.recall_fused [],
    req jsonb, settings jsonb, hops jsonb DEFAULT '{}')
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
    anchors text [] := ARRAY(SELECT pg_catalog.lower(a) FROM pg_catalog.jsonb_array_elements_text(req -> 'anchors') AS a);
    phrases text [] := ARRAY(SELECT pg_catalog.lower(p) FROM pg_catalog.jsonb_array_elements_text(req -> 'phrases') AS p);
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
    prior_used double precision := COALESCE((settings #>> '{frequency_prior,used}')::double precision, 1);
    prior_retrieved double precision := COALESCE((settings #>> '{frequency_prior,retrieved}')::double precision, 2);
    half_lives jsonb := COALESCE(settings -> 'half_life_days', '{}'::jsonb);
    ids uuid [] := ARRAY(SELECT f.document_id FROM pg_catalog.unnest(fused) AS f);
    evidence_ids uuid [] := ARRAY(SELECT f.evidence_id FROM pg_catalog.unnest(fused) AS f);
    scopes text [] := dm_private.authenticated_scopes();
    needs_lower boolean;
BEGIN
    needs_lower := pg_catalog.cardinality(anchors) > 0 OR pg_catalog.cardinality(phrases) > 0;
    IF pg_catalog.cardinality(ids) = 0 THEN
        RETURN;
    END IF;
    -- the all-terms query of the full-text branch (dm_private.recall_tsqueries'
    -- all_terms), computed here directly: one function call less per recall
    all_q := pg_catalog.websearch_to_tsquery(config, COALESCE(query, ''));
    IF pg_catalog.numnode(all_q) = 0 THEN
        all_q := NULL;
    END IF;
    IF pg_catalog.cardinality(phrases) = 0 THEN mix_phrase := 0; END IF;
    IF all_q IS NULL THEN mix_exact := 0; END IF;
    IF mix_fusion + mix_phrase + mix_exact <= 0 THEN mix_fusion := 1; END IF;
    IF snapshot IS NULL THEN
        SELECT pg_catalog.max(s.usage_snapshot_id) INTO snapshot
        FROM dm_private.usage_snapshots AS s WHERE s.team_id = team;
    ELSIF NOT EXISTS (SELECT 1 FROM dm_private.usage_snapshots AS s
                      WHERE s.team_id = team AND s.usage_snapshot_id = snapshot) THEN
        RAISE EXCEPTION 'usage snapshot % does not exist in this team', snapshot USING ERRCODE = '22023';
    END IF;

    RETURN QUERY
        WITH features AS MATERIALIZED (
            -- the candidates' documents in one scan of the primary key
            -- (team_id, document_id = ANY): no plan can range-scan the team
            SELECT x.document_id, x.subject_id, x.body, x.search_vector, x.memory_type, x.source_created_at,
                   x.sequence_number, x.importance, x.confidence, x.policy_labels
            FROM dm_private.search_documents AS x
            WHERE x.team_id = team AND x.document_id = ANY (ids) AND x.subject_kind = 'evidence'
        ),
        candidate AS (
            SELECT f.*, d.body, d.search_vector, d.memory_type, d.source_created_at, d.sequence_number,
                   COALESCE(d.importance, 0.5)::double precision AS importance,
                   COALESCE(d.confidence, 1.0)::double precision AS confidence,
                   CASE WHEN needs_lower THEN pg_catalog.lower(d.body) END AS lower_body
            FROM pg_catalog.unnest(fused) AS f
            JOIN features AS d ON d.document_id = f.document_id AND d.subject_id = f.evidence_id
            WHERE d.policy_labels <@ scopes
        ),
        anchored AS (
            SELECT c.*
            FROM candidate AS c
            WHERE pg_catalog.cardinality(anchors) = 0 OR dm_private.recall_has_anchors(c.body, anchors)
        ),
        usage AS (
            SELECT u.evidence_id, u.retrieved_count, u.used_count
            FROM dm_private.usage_snapshot_counts AS u
            WHERE u.team_id = team AND u.usage_snapshot_id = snapshot AND u.evidence_id = ANY (evidence_ids)
        ),
        support AS (
            SELECT re.evidence_id,
                   pg_catalog.max(CASE r.tier WHEN 'fact' THEN 1.0 WHEN 'validated_claim' THEN 0.7 ELSE 0.0 END)
                       ::double precision AS strength
            FROM dm_private.relationship_evidence AS re
            JOIN dm_private.relationships AS r ON r.team_id = re.team_id AND r.relationship_id = re.relationship_id
            WHERE re.team_id = team AND re.evidence_id = ANY (evidence_ids) AND re.accepted
              AND r.status = 'active' AND r.tier IN ('validated_claim', 'fact')
            GROUP BY re.evidence_id
        ),
        signals AS (
            SELECT a.document_id, a.evidence_id, a.fulltext_rank, a.vector_rank, a.exact_rank, a.fusion_rank,
                   (mix_fusion * COALESCE(a.relevance, 0)
                    + mix_phrase * CASE WHEN pg_catalog.cardinality(phrases) = 0 THEN 0 ELSE
                          (SELECT pg_catalog.count(*) FROM pg_catalog.unnest(phrases) AS p (phrase)
                           WHERE pg_catalog.strpos(a.lower_body, p.phrase) > 0)::double precision
                          / pg_catalog.cardinality(phrases) END
                    + mix_exact * CASE WHEN all_q IS NOT NULL AND a.search_vector @@ all_q THEN 1 ELSE 0 END)
                   / (mix_fusion + mix_phrase + mix_exact) AS relevance,
                   CASE
                       WHEN half_lives ->> a.memory_type::text IS NULL THEN 1.0
                       WHEN a.source_created_at IS NOT NULL THEN
                           -- LEAST(700, ...): exp() raises an underflow error below about e^-745,
                           -- which years-old conversation evidence reaches; e^-700 is already 0 here.
                           pg_catalog.exp(-LEAST(700.0, GREATEST(0, EXTRACT(EPOCH FROM clock - a.source_created_at) / 86400.0)
                                          / (half_lives ->> a.memory_type::text)::double precision))
                       ELSE
                           -- the team's newest sequence number: an uncorrelated
                           -- subquery, run only when a candidate has no created_at
                           pg_catalog.exp(-LEAST(700.0, GREATEST(0, COALESCE(
                               (SELECT pg_catalog.max(x.sequence_number) FROM dm_private.search_documents AS x
                                WHERE x.team_id = team AND x.subject_kind = 'evidence')
                               - a.sequence_number, 0))::double precision
                                          / (half_lives ->> a.memory_type::text)::double precision))
                   END::double precision AS recency,
                   LEAST(1.0, GREATEST(0.0, a.importance)) AS importance,
                   LEAST(1.0, (COALESCE(u.used_count, 0) + prior_used)
                              / (COALESCE(u.retrieved_count, 0) + GREATEST(prior_retrieved, prior_used, 1)))
                       ::double precision AS frequency,
                   COALESCE(pg_catalog.power(0.5, (hops ->> a.evidence_id::text)::double precision), 0)::double precision
                       AS proximity,
                   LEAST(1.0, GREATEST(0.0, a.confidence)) AS confidence,
                   COALESCE(s.strength, 0) AS support,
                   CASE WHEN pg_catalog.cardinality(phrases) = 0 THEN 0 ELSE
                       (SELECT pg_catalog.count(*) FROM pg_catalog.unnest(phrases) AS p (phrase)
                        WHERE pg_catalog.strpos(a.lower_body, p.phrase) > 0)::double precision
                       / pg_catalog.cardinality(phrases) END AS phrase,
                   CASE WHEN all_q IS NOT NULL AND a.search_vector @@ all_q THEN 1.0 ELSE 0.0 END AS exact_terms,
                   CASE
                       WHEN intent IS NULL THEN 0.0
                       WHEN a.source_created_at IS NULL THEN 0.0
                       WHEN intent = 'latest' THEN
                           pg_catalog.percent_rank() OVER (ORDER BY a.source_created_at ASC NULLS FIRST)
                       ELSE
                           pg_catalog.percent_rank() OVER (ORDER BY a.source_created_at DESC NULLS FIRST)
                   END::double precision AS temporal,
                   pg_catalog.octet_length(a.body) AS body_bytes,
                   pg_catalog.md5(a.body) AS body_key
            FROM anchored AS a
            LEFT JOIN usage AS u ON u.evidence_id = a.evidence_id
            LEFT JOIN support AS s ON s.evidence_id = a.evidence_id
        ),
        scored AS (
            SELECT s.*,
                   w_rel * s.relevance + w_rec * s.recency + w_imp * s.importance + w_frq * s.frequency
                   + w_prx * s.proximity + w_conf * s.confidence
                   + w_support * s.support * s.relevance
                   + w_temporal * s.temporal AS score
            FROM signals AS s
        )
        SELECT s.document_id, s.evidence_id, s.relevance::double precision, s.recency::double precision,
               s.importance::double precision, s.frequency::double precision, s.proximity::double precision,
               s.confidence::double precision, s.support::double precision, s.phrase::double precision,
               s.exact_terms::double precision, s.temporal::double precision, s.score::double precision,
               s.body_bytes::integer, s.body_key,
               s.fulltext_rank, s.vector_rank, s.exact_rank, s.fusion_rank,
               (pg_catalog.row_number() OVER (ORDER BY s.score DESC, s.evidence_id))::integer
        FROM scored AS s
        ORDER BY s.score DESC, s.evidence_id;
END
$$;
COMMENT ON FUNCTION dm_private.recall_rerank(uuid, text, dm_private.recall_fused [], jsonb, jsonb, jsonb) IS
'Composite rerank (seed 002 §3): relevance (fusion, phrase, exact terms), recency with per-type half-lives against request.now (sequence fallback), importance, frequency from the usage snapshot, proximity, confidence, bounded support and temporal intent; drops candidates lacking a required anchor; ordered by score then evidence_id. Runs as densemem_searcher.';
ALTER FUNCTION dm_private.recall_rerank(uuid, text, dm_private.recall_fused [], jsonb, jsonb, jsonb) OWNER TO densemem_searcher;
REVOKE ALL ON FUNCTION dm_private.recall_rerank(uuid, text, dm_private.recall_fused [], jsonb, jsonb, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_rerank(uuid, text, dm_private.recall_fused [], jsonb, jsonb, jsonb)
TO densemem_app, densemem_analyst, densemem_operator;
