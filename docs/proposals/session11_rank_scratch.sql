-- Session 11, measurement only: the scratch recall_rank variants of docs/proposals/session11_rank_findings.md
-- (schema s11r2 on a bench database; covers only the bench's path and raises on anything else). Not applied.
DROP SCHEMA IF EXISTS s11r2 CASCADE;
CREATE SCHEMA s11r2;
GRANT USAGE ON SCHEMA s11r2 TO PUBLIC;
-- a fused candidate with the document fields ranking reads (what the branches would carry)
CREATE TYPE s11r2.cand AS (document_id uuid, evidence_id uuid, fused_score double precision, relevance double precision,
  fulltext_rank integer, vector_rank integer, exact_rank integer, fusion_rank integer,
  memory_type dm_private.memory_type, source_created_at timestamptz, sequence_number bigint, source_group text,
  document_version integer, source_version integer, importance real, confidence real,
  body_bytes integer, body_hash bigint, exact_match boolean, lexemes integer);
CREATE TABLE s11r2.input_a AS
SELECT s.i, s.team, s.query, s.req, s.settings, s.fused,
  ARRAY(SELECT ROW(f.document_id, f.evidence_id, f.fused_score, f.relevance, f.fulltext_rank, f.vector_rank, f.exact_rank, f.fusion_rank,
     x.memory_type, x.source_created_at, x.sequence_number, x.source_group, x.document_version, x.source_version,
     x.importance, x.confidence, octet_length(x.body), hashtextextended(x.body, 0),
     x.search_vector @@ websearch_to_tsquery('english', coalesce(s.query, '')), length(x.search_vector))::s11r2.cand
   FROM unnest(s.fused) WITH ORDINALITY AS f(document_id, evidence_id, fused_score, relevance, fulltext_rank, vector_rank, exact_rank, fusion_rank, o)
   JOIN dm_private.search_documents x ON x.team_id = s.team AND x.document_id = f.document_id
   ORDER BY f.o) AS cands
FROM public.s11_input s;
ALTER TABLE s11r2.input_a ALTER req SET STORAGE PLAIN, ALTER settings SET STORAGE PLAIN;
GRANT SELECT ON s11r2.input_a TO PUBLIC;
SELECT count(*), sum(cardinality(fused)), sum(cardinality(cands)) FROM s11r2.input_a;
SELECT count(*) FROM s11r2.input_a s, unnest(s.cands) c WHERE c.source_group IS NOT NULL AND c.sequence_number IS NOT NULL;

DROP FUNCTION IF EXISTS s11r2.rank(uuid, text, dm_private.recall_fused [], s11r2.cand [], jsonb, jsonb, integer, boolean, boolean, boolean);
CREATE OR REPLACE FUNCTION s11r2.rank(team_id uuid, query text, fused dm_private.recall_fused [], cands s11r2.cand [],
    req jsonb, settings jsonb, want integer, carry boolean, one boolean, lazy boolean, fscan boolean DEFAULT false)
RETURNS uuid []
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    team constant uuid := dm_private.require_team(rank.team_id);
    config regconfig := COALESCE(settings #>> '{fulltext,config}', 'english')::regconfig;
    all_q tsquery;
    clock timestamptz := COALESCE((req ->> 'now')::timestamptz, pg_catalog.now());
    phrases text [] := '{}';
    exact_q tsquery;
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
    hl_conversation double precision := (half_lives ->> 'conversation')::double precision;
    hl_workflow double precision := (half_lives ->> 'workflow')::double precision;
    hl_episodic double precision := (half_lives ->> 'episodic')::double precision;
    hl_semantic double precision := (half_lives ->> 'semantic')::double precision;
    hl_organizational double precision := (half_lives ->> 'organizational')::double precision;
    scopes text [] := COALESCE(pg_catalog.array_remove(pg_catalog.string_to_array(
                pg_catalog.replace(COALESCE(pg_catalog.current_setting('densemem.scopes', true), ''), ' ', ''), ','), ''), '{}'::text []);
    lift_weight double precision := 0;
    radius bigint := 1;
    lambda double precision := COALESCE((settings #>> '{mmr,lambda}')::double precision, 0.7);
    duplicate_at double precision := COALESCE((settings #>> '{mmr,duplicate_similarity}')::double precision, 0.97);
    pool_size integer := COALESCE((settings #>> '{mmr,pool}')::integer, 30);
    pool_n integer;
    plain boolean;
    n integer;
    ids uuid [];
    doc_ids uuid [];
    scores double precision [];
    keys bigint [];
    doc_versions integer [];
    source_versions integer [];
    emb public.halfvec [];
    complete boolean;
    sims double precision [];
    duplicates bigint [];
    pair bigint;
    best_score double precision;
    live boolean [];
    max_sim double precision [];
    target integer;
    i integer;
    j integer;
    best integer := NULL;
    previous integer := NULL;
    previous_offset integer;
    best_value double precision;
    cand integer [];
    rel double precision [];
    mix_total double precision;
    lifting boolean;
    lift_none double precision;
    plain_frequency double precision;
    support_none double precision;
    temporal_none double precision;
    keep double precision;
    ordered_ids uuid [] := '{}';
BEGIN
    IF req -> 'anchors' <> '[]'::jsonb OR req -> 'phrases' <> '[]'::jsonb OR want IS NULL THEN
        RAISE EXCEPTION 'scratch: unsupported input';
    END IF;
    IF mix_exact <> 0 OR mix_exact::text <> '0' THEN
        all_q := pg_catalog.websearch_to_tsquery(config, COALESCE(query, ''));
        IF pg_catalog.numnode(all_q) = 0 THEN all_q := NULL; END IF;
    END IF;
    IF pg_catalog.cardinality(phrases) = 0 THEN mix_phrase := 0; END IF;
    IF all_q IS NULL THEN mix_exact := 0; END IF;
    IF mix_content < 0 THEN mix_content := 0; END IF;
    IF mix_fusion + mix_phrase + mix_exact + mix_content <= 0 THEN mix_fusion := 1; END IF;
    mix_total := mix_fusion + mix_phrase + mix_exact + mix_content;
    IF mix_exact <> 0 THEN exact_q := all_q; END IF;
    lift_weight := COALESCE((settings #>> '{context,weight}')::double precision, 0);
    IF lift_weight > 1 THEN RAISE EXCEPTION 'context.weight'; END IF;
    lift_weight := GREATEST(lift_weight, 0);
    radius := LEAST(GREATEST(COALESCE((settings #>> '{context,radius}')::integer, 1), 1), 5);
    lifting := lift_weight > 0;
    lift_none := lift_weight * COALESCE(GREATEST(NULL::double precision, 0), 0);
    pool_n := GREATEST(LEAST(pool_size, 2 * want), want + 10);
    plain := snapshot IS NULL
        AND NOT EXISTS (SELECT 1 FROM dm_private.usage_snapshots AS s WHERE s.team_id = team)
        AND NOT EXISTS (SELECT 1 FROM dm_private.relationship_evidence AS re WHERE re.team_id = team);
    IF NOT plain OR intent IS NOT NULL THEN
        RAISE EXCEPTION 'scratch: unsupported input';
    END IF;
    plain_frequency := LEAST(1.0, (COALESCE(NULL::bigint, 0) + prior_used)
                                  / (COALESCE(NULL::bigint, 0) + GREATEST(prior_retrieved, prior_used, 1)))::double precision;
    support_none := w_support * COALESCE(NULL::double precision, 0);
    temporal_none := w_temporal * COALESCE(NULL::double precision, 0.0);

    IF NOT one AND NOT carry THEN
        -- (0) the current statement (probe, CTE chain)
        WITH anchored AS (
            SELECT (u.f).document_id, (u.f).evidence_id, (u.f).relevance AS fused_relevance,
                   x.memory_type, x.source_created_at, x.sequence_number, x.source_group,
                   x.document_version, x.source_version,
                   COALESCE(x.importance, 0.5)::double precision AS importance,
                   COALESCE(x.confidence, 1.0)::double precision AS confidence,
                   CASE x.memory_type WHEN 'conversation' THEN hl_conversation WHEN 'workflow' THEN hl_workflow
                       WHEN 'episodic' THEN hl_episodic WHEN 'semantic' THEN hl_semantic
                       WHEN 'organizational' THEN hl_organizational
                       ELSE (half_lives ->> x.memory_type::text)::double precision END AS half_life,
                   CASE WHEN exact_q IS NOT NULL AND x.search_vector @@ exact_q THEN 1 ELSE 0 END AS exact_terms,
                   CASE WHEN mix_content > 0 THEN LEAST(1.0, pg_catalog.length(x.search_vector) / content_pivot) ELSE 0 END AS content,
                   x.body
            FROM (SELECT pg_catalog.unnest(fused) AS f) AS u
            JOIN dm_private.search_documents AS x
              ON x.team_id = team AND x.document_id = (u.f).document_id AND (x.subject_id = (u.f).evidence_id) IS TRUE
            WHERE x.subject_kind = 'evidence' AND x.policy_labels <@ scopes
        ),
        signals AS (
            SELECT a.document_id, a.evidence_id, a.source_group, a.sequence_number, a.document_version, a.source_version,
                   (mix_fusion * COALESCE(a.fused_relevance, 0) + mix_phrase * 0 + mix_exact * a.exact_terms
                    + mix_content * a.content) / mix_total AS relevance,
                   CASE WHEN a.half_life IS NULL THEN 1.0
                        WHEN a.source_created_at IS NOT NULL THEN
                            pg_catalog.exp(-LEAST(700.0, GREATEST(0, EXTRACT(EPOCH FROM clock - a.source_created_at) / 86400.0) / a.half_life))
                        ELSE pg_catalog.exp(-LEAST(700.0, GREATEST(0, COALESCE(
                               (SELECT pg_catalog.max(x.sequence_number) FROM dm_private.search_documents AS x
                                WHERE x.team_id = team AND x.subject_kind = 'evidence') - a.sequence_number, 0))::double precision / a.half_life))
                   END::double precision AS recency,
                   LEAST(1.0, GREATEST(0.0, a.importance)) AS importance,
                   plain_frequency AS frequency, 0::double precision AS proximity,
                   LEAST(1.0, GREATEST(0.0, a.confidence)) AS confidence,
                   a.body
            FROM anchored AS a OFFSET 0
        ),
        scored_rows AS (
            SELECT s.document_id, s.evidence_id, s.source_group, s.sequence_number, s.document_version, s.source_version,
                   s.body, s.relevance,
                   w_rel * s.relevance + w_rec * s.recency + w_imp * s.importance + w_frq * s.frequency
                   + w_prx * s.proximity + w_conf * s.confidence + support_none * s.relevance + temporal_none AS score
            FROM signals AS s
        ),
        lifted AS (
            SELECT s.*, CASE WHEN lifting THEN s.score + lift_none ELSE s.score END AS final_score
            FROM scored_rows AS s WHERE s.source_group IS NULL OR s.sequence_number IS NULL
            UNION ALL
            SELECT s.*, CASE WHEN lifting THEN s.score + lift_weight * COALESCE(GREATEST(pg_catalog.max(s.relevance) OVER (
                               PARTITION BY s.source_group COLLATE "C" ORDER BY s.sequence_number
                               RANGE BETWEEN radius PRECEDING AND radius FOLLOWING EXCLUDE CURRENT ROW), 0), 0)
                        ELSE s.score END AS final_score
            FROM scored_rows AS s WHERE s.source_group IS NOT NULL AND s.sequence_number IS NOT NULL
        )
        SELECT pg_catalog.array_agg(o.evidence_id), pg_catalog.array_agg(o.document_id),
               pg_catalog.array_agg(o.final_score::double precision), pg_catalog.array_agg(pg_catalog.hashtextextended(o.body, 0)),
               pg_catalog.array_agg(o.document_version), pg_catalog.array_agg(o.source_version)
        INTO ids, doc_ids, scores, keys, doc_versions, source_versions
        FROM (SELECT l.evidence_id, l.document_id, l.final_score, l.body, l.document_version, l.source_version
              FROM lifted AS l ORDER BY l.final_score DESC, l.evidence_id LIMIT pool_n) AS o;
    ELSIF NOT one AND carry THEN
        -- (a) the document fields carried in the input: same CTE chain, no probe
        WITH anchored AS (
            SELECT (u.c).document_id, (u.c).evidence_id, (u.c).relevance AS fused_relevance,
                   (u.c).memory_type, (u.c).source_created_at, (u.c).sequence_number, (u.c).source_group,
                   (u.c).document_version, (u.c).source_version,
                   COALESCE((u.c).importance, 0.5)::double precision AS importance,
                   COALESCE((u.c).confidence, 1.0)::double precision AS confidence,
                   CASE (u.c).memory_type WHEN 'conversation' THEN hl_conversation WHEN 'workflow' THEN hl_workflow
                       WHEN 'episodic' THEN hl_episodic WHEN 'semantic' THEN hl_semantic
                       WHEN 'organizational' THEN hl_organizational
                       ELSE (half_lives ->> (u.c).memory_type::text)::double precision END AS half_life,
                   CASE WHEN exact_q IS NOT NULL AND (u.c).exact_match THEN 1 ELSE 0 END AS exact_terms,
                   CASE WHEN mix_content > 0 THEN LEAST(1.0, (u.c).lexemes / content_pivot) ELSE 0 END AS content,
                   (u.c).body_hash
            FROM (SELECT pg_catalog.unnest(cands) AS c) AS u
        ),
        signals AS (
            SELECT a.document_id, a.evidence_id, a.source_group, a.sequence_number, a.document_version, a.source_version,
                   (mix_fusion * COALESCE(a.fused_relevance, 0) + mix_phrase * 0 + mix_exact * a.exact_terms
                    + mix_content * a.content) / mix_total AS relevance,
                   CASE WHEN a.half_life IS NULL THEN 1.0
                        WHEN a.source_created_at IS NOT NULL THEN
                            pg_catalog.exp(-LEAST(700.0, GREATEST(0, EXTRACT(EPOCH FROM clock - a.source_created_at) / 86400.0) / a.half_life))
                        ELSE pg_catalog.exp(-LEAST(700.0, GREATEST(0, COALESCE(
                               (SELECT pg_catalog.max(x.sequence_number) FROM dm_private.search_documents AS x
                                WHERE x.team_id = team AND x.subject_kind = 'evidence') - a.sequence_number, 0))::double precision / a.half_life))
                   END::double precision AS recency,
                   LEAST(1.0, GREATEST(0.0, a.importance)) AS importance,
                   plain_frequency AS frequency, 0::double precision AS proximity,
                   LEAST(1.0, GREATEST(0.0, a.confidence)) AS confidence,
                   a.body_hash
            FROM anchored AS a OFFSET 0
        ),
        scored_rows AS (
            SELECT s.document_id, s.evidence_id, s.source_group, s.sequence_number, s.document_version, s.source_version,
                   s.body_hash, s.relevance,
                   w_rel * s.relevance + w_rec * s.recency + w_imp * s.importance + w_frq * s.frequency
                   + w_prx * s.proximity + w_conf * s.confidence + support_none * s.relevance + temporal_none AS score
            FROM signals AS s
        ),
        lifted AS (
            SELECT s.*, CASE WHEN lifting THEN s.score + lift_none ELSE s.score END AS final_score
            FROM scored_rows AS s WHERE s.source_group IS NULL OR s.sequence_number IS NULL
            UNION ALL
            SELECT s.*, CASE WHEN lifting THEN s.score + lift_weight * COALESCE(GREATEST(pg_catalog.max(s.relevance) OVER (
                               PARTITION BY s.source_group COLLATE "C" ORDER BY s.sequence_number
                               RANGE BETWEEN radius PRECEDING AND radius FOLLOWING EXCLUDE CURRENT ROW), 0), 0)
                        ELSE s.score END AS final_score
            FROM scored_rows AS s WHERE s.source_group IS NOT NULL AND s.sequence_number IS NOT NULL
        )
        SELECT pg_catalog.array_agg(o.evidence_id), pg_catalog.array_agg(o.document_id),
               pg_catalog.array_agg(o.final_score::double precision), pg_catalog.array_agg(o.body_hash),
               pg_catalog.array_agg(o.document_version), pg_catalog.array_agg(o.source_version)
        INTO ids, doc_ids, scores, keys, doc_versions, source_versions
        FROM (SELECT l.evidence_id, l.document_id, l.final_score, l.body_hash, l.document_version, l.source_version
              FROM lifted AS l ORDER BY l.final_score DESC, l.evidence_id LIMIT pool_n) AS o;
    ELSIF one AND NOT carry THEN
        -- (b) one statement: signals in one subquery, score + lift (no group: lift_none) in the
        -- sort's input, the body hashed after the pool's cut; no CTE, no UNION ALL
        SELECT pg_catalog.array_agg(o.evidence_id), pg_catalog.array_agg(o.document_id),
               pg_catalog.array_agg(o.final_score), pg_catalog.array_agg(pg_catalog.hashtextextended(o.body, 0)),
               pg_catalog.array_agg(o.document_version), pg_catalog.array_agg(o.source_version)
        INTO ids, doc_ids, scores, keys, doc_versions, source_versions
        FROM (
            SELECT s.evidence_id, s.document_id, s.document_version, s.source_version, s.body,
                   (CASE WHEN s.source_group IS NULL OR s.sequence_number IS NULL THEN
                        (CASE WHEN lifting THEN
                            (w_rel * s.relevance + w_rec * s.recency + w_imp * s.importance + w_frq * s.frequency
                             + w_prx * s.proximity + w_conf * s.confidence + support_none * s.relevance + temporal_none) + lift_none
                         ELSE
                            (w_rel * s.relevance + w_rec * s.recency + w_imp * s.importance + w_frq * s.frequency
                             + w_prx * s.proximity + w_conf * s.confidence + support_none * s.relevance + temporal_none) END)
                    END)::double precision AS final_score
            FROM (
                SELECT (u.f).document_id, (u.f).evidence_id, x.source_group, x.sequence_number, x.document_version, x.source_version,
                       x.body,
                       (mix_fusion * COALESCE((u.f).relevance, 0) + mix_phrase * 0
                        + mix_exact * CASE WHEN exact_q IS NOT NULL AND x.search_vector @@ exact_q THEN 1 ELSE 0 END
                        + mix_content * CASE WHEN mix_content > 0 THEN LEAST(1.0, pg_catalog.length(x.search_vector) / content_pivot) ELSE 0 END)
                       / mix_total AS relevance,
                       (CASE WHEN hl.half_life IS NULL THEN 1.0
                            WHEN x.source_created_at IS NOT NULL THEN
                                pg_catalog.exp(-LEAST(700.0, GREATEST(0, EXTRACT(EPOCH FROM clock - x.source_created_at) / 86400.0) / hl.half_life))
                            ELSE pg_catalog.exp(-LEAST(700.0, GREATEST(0, COALESCE(
                                   (SELECT pg_catalog.max(y.sequence_number) FROM dm_private.search_documents AS y
                                    WHERE y.team_id = team AND y.subject_kind = 'evidence') - x.sequence_number, 0))::double precision / hl.half_life))
                       END)::double precision AS recency,
                       LEAST(1.0, GREATEST(0.0, COALESCE(x.importance, 0.5)::double precision)) AS importance,
                       plain_frequency AS frequency, 0::double precision AS proximity,
                       LEAST(1.0, GREATEST(0.0, COALESCE(x.confidence, 1.0)::double precision)) AS confidence
                FROM (SELECT pg_catalog.unnest(fused) AS f) AS u
                JOIN dm_private.search_documents AS x
                  ON x.team_id = team AND x.document_id = (u.f).document_id AND (x.subject_id = (u.f).evidence_id) IS TRUE
                CROSS JOIN LATERAL (SELECT CASE x.memory_type WHEN 'conversation' THEN hl_conversation WHEN 'workflow' THEN hl_workflow
                       WHEN 'episodic' THEN hl_episodic WHEN 'semantic' THEN hl_semantic
                       WHEN 'organizational' THEN hl_organizational
                       ELSE (half_lives ->> x.memory_type::text)::double precision END AS half_life) AS hl
                WHERE x.subject_kind = 'evidence' AND x.policy_labels <@ scopes
                OFFSET 0) AS s
            ORDER BY 6 DESC, s.evidence_id LIMIT pool_n) AS o;
    ELSIF one AND carry AND fscan THEN
        -- (a)+(b), the carried composites expanded once by a function scan (no FieldSelect per field)
        SELECT pg_catalog.array_agg(o.evidence_id), pg_catalog.array_agg(o.document_id),
               pg_catalog.array_agg(o.final_score), pg_catalog.array_agg(o.body_hash),
               pg_catalog.array_agg(o.document_version), pg_catalog.array_agg(o.source_version)
        INTO ids, doc_ids, scores, keys, doc_versions, source_versions
        FROM (
            SELECT s.evidence_id, s.document_id, s.document_version, s.source_version, s.body_hash,
                   (CASE WHEN s.source_group IS NULL OR s.sequence_number IS NULL THEN
                        (CASE WHEN lifting THEN
                            (w_rel * s.relevance + w_rec * s.recency + w_imp * s.importance + w_frq * s.frequency
                             + w_prx * s.proximity + w_conf * s.confidence + support_none * s.relevance + temporal_none) + lift_none
                         ELSE
                            (w_rel * s.relevance + w_rec * s.recency + w_imp * s.importance + w_frq * s.frequency
                             + w_prx * s.proximity + w_conf * s.confidence + support_none * s.relevance + temporal_none) END)
                    END)::double precision AS final_score
            FROM (
                SELECT u.document_id, u.evidence_id, u.source_group, u.sequence_number,
                       u.document_version, u.source_version, u.body_hash,
                       (mix_fusion * COALESCE(u.relevance, 0) + mix_phrase * 0
                        + mix_exact * CASE WHEN exact_q IS NOT NULL AND u.exact_match THEN 1 ELSE 0 END
                        + mix_content * CASE WHEN mix_content > 0 THEN LEAST(1.0, u.lexemes / content_pivot) ELSE 0 END)
                       / mix_total AS relevance,
                       (CASE WHEN hl.half_life IS NULL THEN 1.0
                            WHEN u.source_created_at IS NOT NULL THEN
                                pg_catalog.exp(-LEAST(700.0, GREATEST(0, EXTRACT(EPOCH FROM clock - u.source_created_at) / 86400.0) / hl.half_life))
                            ELSE pg_catalog.exp(-LEAST(700.0, GREATEST(0, COALESCE(
                                   (SELECT pg_catalog.max(y.sequence_number) FROM dm_private.search_documents AS y
                                    WHERE y.team_id = team AND y.subject_kind = 'evidence') - u.sequence_number, 0))::double precision / hl.half_life))
                       END)::double precision AS recency,
                       LEAST(1.0, GREATEST(0.0, COALESCE(u.importance, 0.5)::double precision)) AS importance,
                       plain_frequency AS frequency, 0::double precision AS proximity,
                       LEAST(1.0, GREATEST(0.0, COALESCE(u.confidence, 1.0)::double precision)) AS confidence
                FROM pg_catalog.unnest(cands) AS u
                CROSS JOIN LATERAL (SELECT CASE u.memory_type WHEN 'conversation' THEN hl_conversation WHEN 'workflow' THEN hl_workflow
                       WHEN 'episodic' THEN hl_episodic WHEN 'semantic' THEN hl_semantic
                       WHEN 'organizational' THEN hl_organizational
                       ELSE (half_lives ->> u.memory_type::text)::double precision END AS half_life) AS hl
                OFFSET 0) AS s
            ORDER BY 6 DESC, s.evidence_id LIMIT pool_n) AS o;
    ELSE
        -- (a)+(b): carried fields, one statement
        SELECT pg_catalog.array_agg(o.evidence_id), pg_catalog.array_agg(o.document_id),
               pg_catalog.array_agg(o.final_score), pg_catalog.array_agg(o.body_hash),
               pg_catalog.array_agg(o.document_version), pg_catalog.array_agg(o.source_version)
        INTO ids, doc_ids, scores, keys, doc_versions, source_versions
        FROM (
            SELECT s.evidence_id, s.document_id, s.document_version, s.source_version, s.body_hash,
                   (CASE WHEN s.source_group IS NULL OR s.sequence_number IS NULL THEN
                        (CASE WHEN lifting THEN
                            (w_rel * s.relevance + w_rec * s.recency + w_imp * s.importance + w_frq * s.frequency
                             + w_prx * s.proximity + w_conf * s.confidence + support_none * s.relevance + temporal_none) + lift_none
                         ELSE
                            (w_rel * s.relevance + w_rec * s.recency + w_imp * s.importance + w_frq * s.frequency
                             + w_prx * s.proximity + w_conf * s.confidence + support_none * s.relevance + temporal_none) END)
                    END)::double precision AS final_score
            FROM (
                SELECT (u.c).document_id, (u.c).evidence_id, (u.c).source_group, (u.c).sequence_number,
                       (u.c).document_version, (u.c).source_version, (u.c).body_hash,
                       (mix_fusion * COALESCE((u.c).relevance, 0) + mix_phrase * 0
                        + mix_exact * CASE WHEN exact_q IS NOT NULL AND (u.c).exact_match THEN 1 ELSE 0 END
                        + mix_content * CASE WHEN mix_content > 0 THEN LEAST(1.0, (u.c).lexemes / content_pivot) ELSE 0 END)
                       / mix_total AS relevance,
                       (CASE WHEN hl.half_life IS NULL THEN 1.0
                            WHEN (u.c).source_created_at IS NOT NULL THEN
                                pg_catalog.exp(-LEAST(700.0, GREATEST(0, EXTRACT(EPOCH FROM clock - (u.c).source_created_at) / 86400.0) / hl.half_life))
                            ELSE pg_catalog.exp(-LEAST(700.0, GREATEST(0, COALESCE(
                                   (SELECT pg_catalog.max(y.sequence_number) FROM dm_private.search_documents AS y
                                    WHERE y.team_id = team AND y.subject_kind = 'evidence') - (u.c).sequence_number, 0))::double precision / hl.half_life))
                       END)::double precision AS recency,
                       LEAST(1.0, GREATEST(0.0, COALESCE((u.c).importance, 0.5)::double precision)) AS importance,
                       plain_frequency AS frequency, 0::double precision AS proximity,
                       LEAST(1.0, GREATEST(0.0, COALESCE((u.c).confidence, 1.0)::double precision)) AS confidence
                FROM (SELECT pg_catalog.unnest(cands) AS c) AS u
                CROSS JOIN LATERAL (SELECT CASE (u.c).memory_type WHEN 'conversation' THEN hl_conversation WHEN 'workflow' THEN hl_workflow
                       WHEN 'episodic' THEN hl_episodic WHEN 'semantic' THEN hl_semantic
                       WHEN 'organizational' THEN hl_organizational
                       ELSE (half_lives ->> (u.c).memory_type::text)::double precision END AS half_life) AS hl
                OFFSET 0) AS s
            ORDER BY 6 DESC, s.evidence_id LIMIT pool_n) AS o;
    END IF;
    IF one AND pg_catalog.array_position(scores, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'scratch: a candidate with a source group (the one-statement variant has no window)';
    END IF;

    n := LEAST(COALESCE(pg_catalog.cardinality(ids), 0), pool_n);
    IF n = 0 THEN RETURN ordered_ids; END IF;
    best_score := GREATEST(scores[1], 1e-9);
    SELECT pg_catalog.array_agg(e.embedding ORDER BY p.ord), pg_catalog.bool_and(e.embedding IS NOT NULL),
           pg_catalog.array_agg(lambda * p.score / best_score ORDER BY p.ord),
           pg_catalog.array_agg(p.ord::integer ORDER BY p.ord)
    INTO emb, complete, rel, cand
    FROM ROWS FROM (pg_catalog.unnest(doc_ids[1:n]), pg_catalog.unnest(doc_versions[1:n]),
                    pg_catalog.unnest(source_versions[1:n]), pg_catalog.unnest(scores[1:n]))
             WITH ORDINALITY AS p (document_id, document_version, source_version, score, ord)
    LEFT JOIN dm_private.document_embeddings AS e
           ON e.team_id = team AND e.document_id = p.document_id
          AND e.contract_id = (SELECT c.contract_id FROM dm_private.embedding_contracts AS c WHERE c.is_active)
          AND e.document_version = p.document_version AND e.source_version = p.source_version;
    IF NOT complete THEN
        RAISE EXCEPTION 'scratch: incomplete vectors';
    END IF;
    live := pg_catalog.array_fill(true, ARRAY[n]);
    max_sim := pg_catalog.array_fill(0::double precision, ARRAY[n]);
    IF NOT lazy THEN
        IF n > 1 THEN
            SELECT pg_catalog.array_agg(q.sim),
                   pg_catalog.array_agg(q.i::bigint * 4294967296 + q.j) FILTER (WHERE keys[q.i] = keys[q.j] OR q.sim >= duplicate_at)
            INTO sims, duplicates
            FROM (SELECT ij.i, ij.j, (1.0 - (emb[ij.i] OPERATOR(public.<=>) emb[ij.j]))::double precision AS sim
                  FROM (SELECT p.i, pg_catalog.generate_series(1, p.i - 1) AS j
                        FROM (SELECT pg_catalog.generate_series(1, n) AS i) AS p) AS ij
                  OFFSET 0) AS q;
        END IF;
        IF duplicates IS NOT NULL THEN
            FOREACH pair IN ARRAY duplicates LOOP
                i := (pair / 4294967296)::integer;
                j := (pair % 4294967296)::integer;
                IF live[i] AND live[j] THEN live[i] := false; END IF;
            END LOOP;
            cand := ARRAY(SELECT o.o FROM pg_catalog.generate_series(1, n) AS o (o) WHERE live[o.o] ORDER BY o.o);
        END IF;
    ELSE
        -- (c) no pair statement: the collapse by the duplicate key only (NOT the
        -- near-duplicate similarity: not the same semantics), similarities computed
        -- per greedy step between the previous pick and the standing candidates
        IF pg_catalog.cardinality(ARRAY(SELECT DISTINCT k FROM pg_catalog.unnest(keys[1:n]) AS k)) < n THEN
            cand := ARRAY(SELECT o.o FROM pg_catalog.generate_series(1, n) AS o (o)
                          WHERE pg_catalog.array_position(keys, keys[o.o]) = o.o ORDER BY o.o);
        END IF;
    END IF;
    keep := 1 - lambda;
    target := LEAST(want, pg_catalog.cardinality(cand));
    IF target > 0 THEN
        FOREACH i IN ARRAY cand LOOP
            IF best IS NULL OR rel[i] - keep * max_sim[i] > best_value THEN
                best := i;
                best_value := rel[i] - keep * max_sim[i];
            END IF;
        END LOOP;
        FOR step IN 1 .. target LOOP
            cand := pg_catalog.array_remove(cand, best);
            ordered_ids := ordered_ids || ids[best];
            EXIT WHEN step = target;
            previous := best;
            previous_offset := (previous - 1) * (previous - 2) / 2;
            best := NULL;
            IF lazy THEN
                FOREACH i IN ARRAY cand LOOP
                    max_sim[i] := GREATEST(max_sim[i], CASE WHEN i > previous
                        THEN (1.0 - (emb[i] OPERATOR(public.<=>) emb[previous]))::double precision
                        ELSE (1.0 - (emb[previous] OPERATOR(public.<=>) emb[i]))::double precision END);
                    IF best IS NULL OR rel[i] - keep * max_sim[i] > best_value THEN
                        best := i;
                        best_value := rel[i] - keep * max_sim[i];
                    END IF;
                END LOOP;
            ELSE
                FOREACH i IN ARRAY cand LOOP
                    max_sim[i] := GREATEST(max_sim[i], sims[CASE WHEN i > previous THEN (i - 1) * (i - 2) / 2 + previous
                                                            ELSE previous_offset + i END]);
                    IF best IS NULL OR rel[i] - keep * max_sim[i] > best_value THEN
                        best := i;
                        best_value := rel[i] - keep * max_sim[i];
                    END IF;
                END LOOP;
            END IF;
        END LOOP;
    END IF;
    FOREACH i IN ARRAY cand LOOP
        ordered_ids := ordered_ids || ids[i];
    END LOOP;
    RETURN ordered_ids;
END
$$;
ALTER FUNCTION s11r2.rank(uuid, text, dm_private.recall_fused [], s11r2.cand [], jsonb, jsonb, integer, boolean, boolean, boolean, boolean) OWNER TO densemem_searcher;
GRANT EXECUTE ON FUNCTION s11r2.rank(uuid, text, dm_private.recall_fused [], s11r2.cand [], jsonb, jsonb, integer, boolean, boolean, boolean, boolean) TO PUBLIC;
GRANT USAGE ON SCHEMA s11r2 TO densemem_searcher;

CREATE OR REPLACE FUNCTION s11r2.loop(passes integer, variant text)
RETURNS bigint LANGUAGE plpgsql AS $f$
DECLARE
    r record;
    fused dm_private.recall_fused [];
    cands s11r2.cand [];
    got uuid [];
    total bigint := 0;
BEGIN
    FOR p IN 1 .. passes LOOP
        FOR r IN SELECT * FROM s11r2.input_a ORDER BY i LOOP
            PERFORM pg_catalog.set_config('densemem.team_id', r.team::text, true);
            fused := ARRAY(SELECT f FROM pg_catalog.unnest(r.fused) AS f);
            cands := ARRAY(SELECT c FROM pg_catalog.unnest(r.cands) AS c);
            IF variant = 'orig' THEN
                SELECT x.ordered_ids INTO got
                FROM dm_private.recall_rank(r.team, r.query, fused, r.req, r.settings, '{}', true, 10, false) AS x;
            ELSE
                got := s11r2.rank(r.team, r.query, fused, cands, r.req, r.settings, 10,
                                  variant LIKE '%a%', variant LIKE '%b%', variant LIKE '%c%', variant LIKE '%f%');
            END IF;
            total := total + pg_catalog.cardinality(got);
        END LOOP;
    END LOOP;
    RETURN total;
END
$f$;
GRANT EXECUTE ON FUNCTION s11r2.loop(integer, text) TO PUBLIC;

-- identity: every variant's ordered_ids against recall_rank's, on the 200 inputs
CREATE OR REPLACE FUNCTION s11r2.check(variant text)
RETURNS TABLE (compared integer, identical integer) LANGUAGE plpgsql AS $f$
DECLARE r record; a uuid []; b uuid [];
BEGIN
    compared := 0; identical := 0;
    FOR r IN SELECT * FROM s11r2.input_a ORDER BY i LOOP
        PERFORM pg_catalog.set_config('densemem.team_id', r.team::text, true);
        SELECT x.ordered_ids INTO a FROM dm_private.recall_rank(r.team, r.query, r.fused, r.req, r.settings, '{}', true, 10, false) AS x;
        b := s11r2.rank(r.team, r.query, r.fused, r.cands, r.req, r.settings, 10,
                        variant LIKE '%a%', variant LIKE '%b%', variant LIKE '%c%', variant LIKE '%f%');
        compared := compared + 1;
        IF a::text = b::text THEN identical := identical + 1; END IF;
    END LOOP;
    RETURN NEXT;
END
$f$;
GRANT EXECUTE ON FUNCTION s11r2.check(text) TO PUBLIC;
