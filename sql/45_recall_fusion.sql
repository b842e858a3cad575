-- Recall stage 3: fusion.
--
-- The fusion unit is (branch, evidence_id): a branch contributes an evidence
-- once, at its best rank, however many times it produced it. The ranking
-- profile picks the method:
--
--   rrf       score = sum over branches of weight_b / (rrf_k + rank_b);
--             relevance = score / the best score possible with the branches
--             that ran (every ran branch at rank 1), so in [0, 1].
--   priority  branches in fusion.branch_priority order: an evidence found by
--             an earlier branch precedes every evidence found only by later
--             ones, then by rank; relevance falls linearly from 1 by position.
--
-- Pure function of its input: a DBA can call it on hand-made hits.
CREATE OR REPLACE FUNCTION dm_private.recall_fuse(hits dm_private.recall_branch_hit [], settings jsonb)
RETURNS SETOF dm_private.recall_fused
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
SET search_path = ''
AS $$
    WITH params AS (
        SELECT COALESCE((settings #>> '{fusion,rrf_k}')::double precision, 60) AS k,
               COALESCE(settings #>> '{fusion,method}', 'rrf') AS method,
               COALESCE((settings #>> '{candidates,fused}')::integer, 100) AS cap
    ),
    unit AS (
        -- (branch, evidence_id) once, at its best rank
        SELECT DISTINCT ON (h.branch, h.evidence_id) h.branch, h.evidence_id, h.document_id, h.branch_rank
        FROM pg_catalog.unnest(hits) AS h
        WHERE h.evidence_id IS NOT NULL
        ORDER BY h.branch, h.evidence_id, h.branch_rank
    ),
    weighted AS (
        SELECT u.*,
               COALESCE((settings #>> ARRAY['fusion', 'branch_weights', u.branch])::double precision, 1.0) AS weight,
               COALESCE((SELECT p.ord FROM pg_catalog.jsonb_array_elements_text(settings #> '{fusion,branch_priority}')
                             WITH ORDINALITY AS p (branch, ord)
                         WHERE p.branch = u.branch), 1000) AS priority
        FROM unit AS u
    ),
    best_possible AS (
        SELECT pg_catalog.sum(b.weight / ((SELECT k FROM params) + 1)) AS score
        FROM (SELECT DISTINCT w.branch, w.weight FROM weighted AS w) AS b
    ),
    per_evidence AS (
        SELECT w.evidence_id,
               (pg_catalog.array_agg(w.document_id))[1] AS document_id,
               pg_catalog.sum(w.weight / ((SELECT k FROM params) + w.branch_rank)) AS rrf,
               pg_catalog.min(w.priority * 1000000 + w.branch_rank) AS priority_key,
               pg_catalog.min(w.branch_rank) FILTER (WHERE w.branch = 'fulltext') AS fulltext_rank,
               pg_catalog.min(w.branch_rank) FILTER (WHERE w.branch = 'vector') AS vector_rank,
               pg_catalog.min(w.branch_rank) FILTER (WHERE w.branch = 'exact') AS exact_rank
        FROM weighted AS w
        GROUP BY w.evidence_id
    ),
    ordered AS (
        SELECT e.*,
               pg_catalog.row_number() OVER (
                   ORDER BY CASE WHEN (SELECT method FROM params) = 'priority' THEN e.priority_key::double precision
                                 ELSE -e.rrf END,
                            e.evidence_id) AS position,
               pg_catalog.count(*) OVER () AS total
        FROM per_evidence AS e
    )
    SELECT o.document_id, o.evidence_id,
           CASE WHEN (SELECT method FROM params) = 'priority' THEN (o.total - o.position + 1)::double precision / o.total
                ELSE o.rrf END,
           CASE WHEN (SELECT method FROM params) = 'priority' THEN (o.total - o.position + 1)::double precision / o.total
                ELSE LEAST(1.0, o.rrf / NULLIF((SELECT b.score FROM best_possible AS b), 0)) END,
           o.fulltext_rank::integer, o.vector_rank::integer, o.exact_rank::integer, o.position::integer
    FROM ordered AS o
    WHERE o.position <= (SELECT cap FROM params)
    ORDER BY o.position
$$;
COMMENT ON FUNCTION dm_private.recall_fuse(dm_private.recall_branch_hit [], jsonb) IS
'Fuses branch hits by (branch, evidence_id): RRF with the profile''s rrf_k and branch weights (relevance = score / best possible) or explicit branch priority; keeps the top candidates.fused with each branch rank.';
REVOKE ALL ON FUNCTION dm_private.recall_fuse(dm_private.recall_branch_hit [], jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_fuse(dm_private.recall_branch_hit [], jsonb)
TO densemem_app, densemem_analyst, densemem_operator;
