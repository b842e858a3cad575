-- Recall stage 4b: neighbouring-turn context (optional; off unless the
-- ranking profile sets context.weight > 0).
--
-- Why: in a conversation the turn that holds the answer is often next to the
-- turn that matches the question best: the question quotes one speaker and
-- the answer is the reply, or a statement is split over two turns. The
-- branches score each turn alone, so the reply ranks far below the turn it
-- answers. This stage lifts a candidate by its strongest neighbour:
--
--   score' = score + context.weight * max(relevance of its neighbours)
--
-- where a neighbour is another candidate of the same source group
-- (conversation session, thread) written within context.radius sequence
-- numbers of it (write order). Only candidates lift each other, so the stage
-- adds no rows and reads nothing but one key lookup per candidate; the lift
-- is bounded by the weight. Sequence numbers are one identity for the whole
-- database, so rows other teams write in between widen the gap: the stage
-- then finds fewer neighbours, never a wrong one (a probe per candidate for
-- the truly adjacent rows cost 20 times more). Rows come back re-ordered by
-- the new score (ties by evidence_id) with score_rank renumbered, for MMR.
--
-- dm.recall_memory does not call this function: recall_rerank(...,
-- with_context => true) (sql/50) applies the same lift inside the rerank
-- statement, from the source group and sequence number it already reads (a
-- test checks that both give the same rows bit for bit). This function is the
-- stage on its own, for a DBA to run and EXPLAIN.
--
-- Runs as the caller, under row-level security (it compares only uuids,
-- bigints and text, so the policy costs no index use), with the team
-- predicate explicit as well; require_team checks the authenticated team.
CREATE OR REPLACE FUNCTION dm_private.recall_context_lift(team_id uuid, scored dm_private.recall_scored [],
    settings jsonb)
RETURNS SETOF dm_private.recall_scored
LANGUAGE plpgsql
STABLE
SET search_path = ''
AS $$
DECLARE
    team constant uuid := dm_private.require_team(recall_context_lift.team_id);
    weight double precision := COALESCE((settings #>> '{context,weight}')::double precision, 0);
    radius integer := LEAST(GREATEST(COALESCE((settings #>> '{context,radius}')::integer, 1), 1), 5);
BEGIN
    IF weight < 0 OR weight > 1 THEN
        RAISE EXCEPTION 'context.weight must be between 0 and 1, not %', weight USING ERRCODE = '22023';
    END IF;
    IF scored IS NULL OR pg_catalog.cardinality(scored) = 0 THEN
        RETURN;
    END IF;
    IF weight = 0 THEN
        RETURN QUERY SELECT s.* FROM pg_catalog.unnest(scored) AS s;
        RETURN;
    END IF;

    RETURN QUERY
        WITH candidate AS (
            SELECT s.evidence_id, s.relevance, d.source_group, d.sequence_number
            FROM pg_catalog.unnest(scored) AS s
            CROSS JOIN LATERAL (
                SELECT x.source_group, x.sequence_number
                FROM dm_private.search_documents AS x
                WHERE x.team_id = team AND x.subject_kind = 'evidence' AND x.subject_id = s.evidence_id
                OFFSET 0  -- one key lookup per candidate
            ) AS d
            WHERE d.source_group IS NOT NULL AND d.sequence_number IS NOT NULL
        ),
        lift AS (
            -- neighbours among the candidates only: same source group,
            -- written within `radius` sequence numbers (so at most radius - 1
            -- rows of the team lie between them)
            SELECT a.evidence_id, pg_catalog.max(b.relevance) AS best
            FROM candidate AS a
            JOIN candidate AS b
              ON b.source_group = a.source_group
             AND b.evidence_id <> a.evidence_id
             AND b.sequence_number BETWEEN a.sequence_number - radius AND a.sequence_number + radius
            GROUP BY a.evidence_id
        ),
        lifted AS (
            SELECT s.document_id, s.evidence_id, s.relevance, s.recency, s.importance, s.frequency, s.proximity,
                   s.confidence, s.support, s.phrase, s.exact_terms, s.temporal,
                   s.score + weight * COALESCE(GREATEST(l.best, 0), 0) AS score,
                   s.body_bytes, s.body_key, s.fulltext_rank, s.vector_rank, s.exact_rank, s.fusion_rank
            FROM pg_catalog.unnest(scored) AS s
            LEFT JOIN lift AS l ON l.evidence_id = s.evidence_id
        )
        SELECT l.document_id, l.evidence_id, l.relevance, l.recency, l.importance, l.frequency, l.proximity,
               l.confidence, l.support, l.phrase, l.exact_terms, l.temporal, l.score, l.body_bytes, l.body_key,
               l.fulltext_rank, l.vector_rank, l.exact_rank, l.fusion_rank,
               (pg_catalog.row_number() OVER (ORDER BY l.score DESC, l.evidence_id))::integer
        FROM lifted AS l
        ORDER BY l.score DESC, l.evidence_id;
END
$$;
COMMENT ON FUNCTION dm_private.recall_context_lift(uuid, dm_private.recall_scored [], jsonb) IS
'Optional recall stage after the composite rerank: lifts each candidate''s score by context.weight (0..1, default 0 = off) times the best relevance among the candidates of the same source group written within context.radius (1..5) sequence numbers of it, and re-orders by the new score. Adds no rows. Runs as the caller under RLS.';
REVOKE ALL ON FUNCTION dm_private.recall_context_lift(uuid, dm_private.recall_scored [], jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_context_lift(uuid, dm_private.recall_scored [], jsonb)
TO densemem_app, densemem_analyst, densemem_operator;
