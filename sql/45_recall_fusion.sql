-- Recall stage 3: fusion.
--
-- The fusion unit is (branch, evidence_id): a branch contributes an evidence
-- once, at its best rank, however many times it produced it. The ranking
-- profile picks the method:
--
--   rrf       score = sum over branches of weight_b / (rrf_k + rank_b);
--             relevance = min-max of the score over the kept candidates
--             (best 1, worst 0), so that relevance separates candidates as
--             much as the other [0, 1] signals do (RRF scores of ranks 1
--             and 30 differ by a third only).
--   priority  branches in fusion.branch_priority order: an evidence found by
--             an earlier branch precedes every evidence found only by later
--             ones, then by rank; relevance falls linearly from 1 by position.
--
-- Pure function of its input: a DBA can call it on hand-made hits (of the
-- branches fulltext, vector and exact; any other branch name is 22023).
--
-- Fusion in two parts (session 13): dm_private.recall_fuse_ordered groups,
-- orders and cuts (the one definition of fusion), and
-- dm_private.recall_fuse_normalised fills in the RRF relevance and position
-- (the one definition of the min-max). recall_fuse_array, the DBA / explain
-- form, is the two together. recall_run calls the core alone when it does
-- not explain (through recall_fuse_branches since session 15, which joins
-- the branches' lists when that gives the core's answer) and hands the
-- core's best and worst kept scores to
-- dm_private.recall_rank, which reads relevance from them: the window pass
-- that filled the two fields in every recall (a sort-ordered spool of the
-- kept rows for row_number, max and min) cost about a quarter of fusion
-- (callgrind, session 12: 1.99 M -> 1.51 M instructions per call).

-- The fusion itself, as an array in fusion order: what recall_run calls (an
-- expression, no statement around it). One statement: the unknown-branch
-- check is an aggregate of the same grouping (raised after it, before any
-- row is returned), the fused rows are aggregated in fusion order.
-- Returning a set cost recall_run a tuplestore, a whole-row value per
-- candidate and an ARRAY(SELECT ...) to pack them again, and the check a
-- second pass over the hits.
--
-- RRF rows leave with relevance and fusion_rank NULL; best_score and
-- worst_score are the max and the min of the kept fused scores (the values
-- the min-max reads), computed by plain aggregates of the packing
-- aggregate, so they are the window's max and min over the same rows
-- whatever the scores (NaN, infinities, negative weights). Branch-priority
-- rows leave complete (their relevance needs the total, their statement
-- keeps its window) and both scores NULL.
CREATE OR REPLACE FUNCTION dm_private.recall_fuse_ordered(hits dm_private.recall_branch_hit [], settings jsonb,
    OUT fused dm_private.recall_fused [], OUT best_score double precision, OUT worst_score double precision)
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SET search_path = ''
AS $$
DECLARE
    -- The profile's fusion settings, read once: a jsonb path evaluated per
    -- row (and per branch lookup) cost more than the whole fusion.
    k constant double precision := COALESCE((settings #>> '{fusion,rrf_k}')::double precision, 60);
    by_priority constant boolean := COALESCE(settings #>> '{fusion,method}', 'rrf') = 'priority';
    cap constant integer := COALESCE((settings #>> '{candidates,fused}')::integer, 100);
    weights constant jsonb := COALESCE(settings #> '{fusion,branch_weights}', '{}'::jsonb);
    w_fulltext constant double precision := COALESCE((weights ->> 'fulltext')::double precision, 1.0);
    w_vector constant double precision := COALESCE((weights ->> 'vector')::double precision, 1.0);
    w_exact constant double precision := COALESCE((weights ->> 'exact')::double precision, 1.0);
    p_fulltext bigint := 1000;
    p_vector bigint := 1000;
    p_exact bigint := 1000;
    priority text [];
    unknown_branch boolean;
BEGIN
    -- the priority list only matters (and is read, a statement) for the
    -- priority method; the rrf order never looks at priority_key
    IF by_priority THEN
        priority := ARRAY(
            SELECT pg_catalog.jsonb_array_elements_text(
                CASE WHEN pg_catalog.jsonb_typeof(settings #> '{fusion,branch_priority}') = 'array'
                     THEN settings #> '{fusion,branch_priority}' ELSE '[]'::jsonb END));
        p_fulltext := COALESCE(pg_catalog.array_position(priority, 'fulltext'), 1000);
        p_vector := COALESCE(pg_catalog.array_position(priority, 'vector'), 1000);
        p_exact := COALESCE(pg_catalog.array_position(priority, 'exact'), 1000);
    END IF;
    IF by_priority THEN
        -- Branch priority: one grouping by evidence (a branch's best rank is
        -- the min over its hits: a repeated hit counts once), ordered by the
        -- priority key, then evidence_id; fusion relevance is the position
        -- from the top, (total - position + 1) / total, so this statement
        -- needs the total (every group) and no RRF score. The array is built
        -- in the window's order without an ORDER BY in the aggregate:
        -- `ordered` is sorted by the window's order (the window's output
        -- already is, so the planner adds no sort) and the aggregate reads
        -- that sorted subquery as it comes (the input order PostgreSQL's
        -- documentation gives for ordered aggregates; session 8).
        -- tests/python/test_recall_fusion*.py check it against the
        -- reference. A group with a hit of an unknown branch is counted and
        -- reported whatever its position.
        WITH per_evidence AS (
            SELECT h.evidence_id, pg_catalog.any_value(h.document_id) AS document_id,
                   pg_catalog.any_value(h.row_tid) AS row_tid,
                   pg_catalog.min(h.branch_rank) FILTER (WHERE h.branch = 'fulltext') AS fulltext_rank,
                   pg_catalog.min(h.branch_rank) FILTER (WHERE h.branch = 'vector') AS vector_rank,
                   pg_catalog.min(h.branch_rank) FILTER (WHERE h.branch = 'exact') AS exact_rank,
                   pg_catalog.bool_or(h.branch IS DISTINCT FROM 'fulltext' AND h.branch IS DISTINCT FROM 'vector'
                                      AND h.branch IS DISTINCT FROM 'exact') AS unknown_branch,
                   LEAST(p_fulltext * 1000000 + pg_catalog.min(h.branch_rank) FILTER (WHERE h.branch = 'fulltext'),
                         p_vector * 1000000 + pg_catalog.min(h.branch_rank) FILTER (WHERE h.branch = 'vector'),
                         p_exact * 1000000 + pg_catalog.min(h.branch_rank) FILTER (WHERE h.branch = 'exact'))
                       ::double precision AS sort_key
            FROM pg_catalog.unnest(hits) AS h
            WHERE h.evidence_id IS NOT NULL
            GROUP BY h.evidence_id
        ),
        ordered AS (
            SELECT e.*,
                   pg_catalog.row_number() OVER whole AS position,
                   pg_catalog.count(*) OVER whole AS total
            FROM per_evidence AS e
            WINDOW whole AS (ORDER BY e.sort_key, e.evidence_id
                             ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
            -- the window's own order (no second sort: its output is sorted so)
            ORDER BY e.sort_key, e.evidence_id
        )
        SELECT pg_catalog.array_agg(ROW(
                   o.document_id, o.evidence_id,
                   (o.total - o.position + 1)::double precision / o.total,
                   (o.total - o.position + 1)::double precision / o.total,
                   o.fulltext_rank::integer, o.vector_rank::integer, o.exact_rank::integer, o.position::integer,
                   o.row_tid
               )::dm_private.recall_fused) FILTER (WHERE o.position <= cap),
               pg_catalog.bool_or(o.unknown_branch)
        INTO fused, unknown_branch
        FROM ordered AS o;
    ELSE
        -- RRF (the default method; session 9): the grouped rows are cut to
        -- the top `cap` by a bounded sort (ORDER BY ... LIMIT: a top-N heap)
        -- and aggregated as they leave it (an aggregate over an ordered
        -- subquery with nothing between reads it in that order). No window:
        -- the position is the subscript and relevance the min-max between
        -- best_score and worst_score (recall_fuse_normalised, or
        -- recall_rank's reading of them). A group with a hit of an unknown
        -- branch has no sort key and sorts first (NULLS FIRST), so the check
        -- below still sees it whatever the LIMIT cuts; with none, the order
        -- is the RRF order. (A leading boolean key, equal on every row, sent
        -- each comparison to the sort's tie-break: +0.4 M.)
        SELECT pg_catalog.array_agg(ROW(
                   o.document_id, o.evidence_id, o.rrf, NULL::double precision,
                   o.fulltext_rank::integer, o.vector_rank::integer, o.exact_rank::integer, NULL::integer,
                   o.row_tid
               )::dm_private.recall_fused),
               pg_catalog.bool_or(o.unknown_branch), pg_catalog.max(o.rrf), pg_catalog.min(o.rrf)
        INTO fused, unknown_branch, best_score, worst_score
        FROM (
            SELECT h.evidence_id, pg_catalog.any_value(h.document_id) AS document_id,
                   pg_catalog.any_value(h.row_tid) AS row_tid,
                   pg_catalog.min(h.branch_rank) FILTER (WHERE h.branch = 'fulltext') AS fulltext_rank,
                   pg_catalog.min(h.branch_rank) FILTER (WHERE h.branch = 'vector') AS vector_rank,
                   pg_catalog.min(h.branch_rank) FILTER (WHERE h.branch = 'exact') AS exact_rank,
                   pg_catalog.bool_or(h.branch IS DISTINCT FROM 'fulltext' AND h.branch IS DISTINCT FROM 'vector'
                                      AND h.branch IS DISTINCT FROM 'exact') AS unknown_branch,
                   COALESCE(w_fulltext / (k + pg_catalog.min(h.branch_rank) FILTER (WHERE h.branch = 'fulltext')), 0)
                   + COALESCE(w_exact / (k + pg_catalog.min(h.branch_rank) FILTER (WHERE h.branch = 'exact')), 0)
                   + COALESCE(w_vector / (k + pg_catalog.min(h.branch_rank) FILTER (WHERE h.branch = 'vector')), 0) AS rrf,
                   -- NULL (sorted first) for a group with a hit of an
                   -- unknown branch
                   CASE WHEN NOT pg_catalog.bool_or(h.branch IS DISTINCT FROM 'fulltext' AND h.branch IS DISTINCT FROM 'vector'
                                                    AND h.branch IS DISTINCT FROM 'exact')
                        THEN -(COALESCE(w_fulltext / (k + pg_catalog.min(h.branch_rank) FILTER (WHERE h.branch = 'fulltext')), 0)
                               + COALESCE(w_exact / (k + pg_catalog.min(h.branch_rank) FILTER (WHERE h.branch = 'exact')), 0)
                               + COALESCE(w_vector / (k + pg_catalog.min(h.branch_rank) FILTER (WHERE h.branch = 'vector')), 0))
                   END AS sort_key
            FROM pg_catalog.unnest(hits) AS h
            WHERE h.evidence_id IS NOT NULL
            GROUP BY h.evidence_id
            ORDER BY sort_key NULLS FIRST, h.evidence_id
            -- (at least one row, so that the check sees an unknown branch
            -- when cap is 0; no row is kept then: below)
            LIMIT GREATEST(cap, 1)
        ) AS o;
        IF cap < 1 THEN
            fused := NULL;
        END IF;
    END IF;
    -- The branches are the three recall runs; a hit of any other branch is
    -- refused rather than weighted by a guess.
    IF unknown_branch THEN
        RAISE EXCEPTION 'a branch hit names a branch fusion does not know'
            USING ERRCODE = '22023', HINT = 'branches are fulltext, vector and exact';
    END IF;
    fused := COALESCE(fused, '{}');
END
$$;
COMMENT ON FUNCTION dm_private.recall_fuse_ordered(dm_private.recall_branch_hit [], jsonb) IS
'The fusion core (what recall_run calls without explain): RRF or branch priority by (branch, evidence_id), top candidates.fused in fusion order. RRF rows leave relevance and fusion_rank NULL and best_score / worst_score give the max and min kept score (dm_private.recall_fuse_normalised fills both fields); priority rows are complete. 22023 for a hit of an unknown branch.';
REVOKE ALL ON FUNCTION dm_private.recall_fuse_ordered(dm_private.recall_branch_hit [], jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_fuse_ordered(dm_private.recall_branch_hit [], jsonb)
TO densemem_app, densemem_analyst, densemem_operator;

-- What recall_run calls (session 15): the fusion of the three branches'
-- own arrays, equal to recall_fuse_ordered(fulltext_hits || exact_hits ||
-- vector_hits, settings) for the rows the branches return.
-- recall_fuse_ordered takes the hits apart by their branch column and
-- groups them by evidence: six FILTERed aggregates and three text compares
-- per hit, a hash table, the grouped rows sorted. Here each array is its
-- branch's (recall_run keeps them apart), and a branch returns an evidence
-- at most once (the contract of dm_private.recall_branch_hit: a branch
-- returns a document once, and search_documents_subject_key gives an
-- evidence one document), so with no exact hit (no anchor or phrase, the
-- common recall) fusion is a full join of the full-text and vector lists
-- by evidence_id: one row per evidence with both ranks, its RRF score, the
-- same top-N sort and packing (callgrind, the fusion inputs of 20 bench
-- recalls of 1k-10k teams: 1.62 M -> 1.03 M instructions per call). The
-- score is the core's sum in the core's order (full-text, exact, vector;
-- the exact term is 0, as the core's COALESCE gives it), so the bits are
-- the same; document_id is the first branch's, as the core's any_value
-- reads the concatenation in that order. Branch priority, and a recall
-- with exact hits, run the core on the concatenation, as before.
CREATE OR REPLACE FUNCTION dm_private.recall_fuse_branches(fulltext_hits dm_private.recall_branch_hit [],
    exact_hits dm_private.recall_branch_hit [], vector_hits dm_private.recall_branch_hit [], settings jsonb,
    OUT fused dm_private.recall_fused [], OUT best_score double precision, OUT worst_score double precision)
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SET search_path = ''
AS $$
DECLARE
    k double precision;
    cap integer;
    w_fulltext double precision;
    w_vector double precision;
BEGIN
    -- the core's settings reads, the same defaults (the exact weight is
    -- not read: with no exact hit the core's exact term is its COALESCE's
    -- 0, added here as there)
    k := COALESCE((settings #>> '{fusion,rrf_k}')::double precision, 60);
    cap := COALESCE((settings #>> '{candidates,fused}')::integer, 100);
    w_fulltext := COALESCE((settings #>> '{fusion,branch_weights,fulltext}')::double precision, 1.0);
    w_vector := COALESCE((settings #>> '{fusion,branch_weights,vector}')::double precision, 1.0);
    -- The join sorts by the score descending where the core sorts by its
    -- negation ascending: the same order for finite scores (and finite
    -- settings give finite scores or an error: float division and sum
    -- raise on overflow), not for NaN, which sorts last in both
    -- directions. A non-finite setting therefore runs the core.
    IF COALESCE(settings #>> '{fusion,method}', 'rrf') = 'priority'
       OR COALESCE(pg_catalog.cardinality(exact_hits), 0) > 0
       OR k IN ('NaN', 'Infinity', '-Infinity') OR w_fulltext IN ('NaN', 'Infinity', '-Infinity')
       OR w_vector IN ('NaN', 'Infinity', '-Infinity') THEN
        SELECT c.fused, c.best_score, c.worst_score INTO fused, best_score, worst_score
        FROM dm_private.recall_fuse_ordered(fulltext_hits || exact_hits || vector_hits, settings) AS c;
        RETURN;
    END IF;
    SELECT pg_catalog.array_agg(ROW(
               o.document_id, o.evidence_id, o.rrf, NULL::double precision,
               o.fulltext_rank, o.vector_rank, NULL::integer, NULL::integer, o.row_tid
           )::dm_private.recall_fused),
           pg_catalog.max(o.rrf), pg_catalog.min(o.rrf)
    INTO fused, best_score, worst_score
    FROM (
        SELECT COALESCE(f.evidence_id, v.evidence_id) AS evidence_id,
               COALESCE(f.document_id, v.document_id) AS document_id,
               f.branch_rank AS fulltext_rank, v.branch_rank AS vector_rank,
               -- the first branch's address that is set, as the core's
               -- any_value reads the concatenation (a hint the ranking checks)
               COALESCE(f.row_tid, v.row_tid) AS row_tid,
               COALESCE(w_fulltext / (k + f.branch_rank), 0) + 0::double precision
               + COALESCE(w_vector / (k + v.branch_rank), 0) AS rrf
        FROM (SELECT h.evidence_id, h.document_id, h.branch_rank, h.row_tid FROM pg_catalog.unnest(fulltext_hits) AS h
              WHERE h.evidence_id IS NOT NULL) AS f
        FULL JOIN (SELECT h.evidence_id, h.document_id, h.branch_rank, h.row_tid
                   FROM pg_catalog.unnest(vector_hits) AS h
                   WHERE h.evidence_id IS NOT NULL) AS v ON v.evidence_id = f.evidence_id
        -- the core's order (score descending, then evidence_id) by the
        -- output columns: the score is computed once per row, not again as
        -- a sort key (0.09 M instructions per call)
        ORDER BY 6 DESC, 1
        -- (the core's cut: with cap below 1 it keeps one row for its
        -- scores and returns no candidate)
        LIMIT GREATEST(cap, 1)
    ) AS o;
    IF cap < 1 THEN
        fused := NULL;
    END IF;
    fused := COALESCE(fused, '{}');
END
$$;
COMMENT ON FUNCTION dm_private.recall_fuse_branches(dm_private.recall_branch_hit [], dm_private.recall_branch_hit [],
    dm_private.recall_branch_hit [], jsonb) IS
'recall_run''s fusion: dm_private.recall_fuse_ordered of the three branches'' hits (full-text, exact, vector, each array its branch''s rows, an evidence at most once per branch), without regrouping them when there is no exact hit and the method is RRF.';
REVOKE ALL ON FUNCTION dm_private.recall_fuse_branches(dm_private.recall_branch_hit [], dm_private.recall_branch_hit [],
    dm_private.recall_branch_hit [], jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_fuse_branches(dm_private.recall_branch_hit [], dm_private.recall_branch_hit [],
    dm_private.recall_branch_hit [], jsonb)
TO densemem_app, densemem_analyst, densemem_operator;

-- The RRF relevance and position the core leaves out: relevance is the
-- min-max of the fused score over the kept candidates (best 1, worst 0; all
-- 1 when best = worst), the position the subscript. Rows that have them
-- (branch priority) keep theirs. dm_private.recall_rank reads relevance the
-- same way from the same two values in its hot path (one expression per
-- scoring statement, the same operations: the same bits;
-- tests/python/test_recall_fusion_core.py holds them equal).
CREATE OR REPLACE FUNCTION dm_private.recall_fuse_normalised(fused dm_private.recall_fused [],
    best_score double precision, worst_score double precision)
RETURNS dm_private.recall_fused []
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
SET search_path = ''
AS $$
    SELECT COALESCE(pg_catalog.array_agg(ROW(
               f.document_id, f.evidence_id, f.fused_score,
               COALESCE(f.relevance,
                        CASE WHEN best_score = worst_score THEN 1.0
                             ELSE (f.fused_score - worst_score) / (best_score - worst_score) END),
               f.fulltext_rank, f.vector_rank, f.exact_rank, COALESCE(f.fusion_rank, f.position::integer), f.row_tid
           )::dm_private.recall_fused ORDER BY f.position), '{}')
    FROM pg_catalog.unnest(fused) WITH ORDINALITY
        AS f (document_id, evidence_id, fused_score, relevance, fulltext_rank, vector_rank, exact_rank, fusion_rank,
              row_tid, position)
$$;
COMMENT ON FUNCTION dm_private.recall_fuse_normalised(dm_private.recall_fused [], double precision, double precision) IS
'The fusion core''s rows completed: relevance missing = min-max of fused_score between best_score and worst_score (1 when equal), fusion_rank missing = position in the array.';
REVOKE ALL ON FUNCTION dm_private.recall_fuse_normalised(dm_private.recall_fused [], double precision, double precision)
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_fuse_normalised(dm_private.recall_fused [], double precision, double precision)
TO densemem_app, densemem_analyst, densemem_operator;

-- Fusion with every field filled in (DBAs, tests, explain): the core, then
-- the normalisation.
CREATE OR REPLACE FUNCTION dm_private.recall_fuse_array(hits dm_private.recall_branch_hit [], settings jsonb)
RETURNS dm_private.recall_fused []
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
SET search_path = ''
AS $$
    SELECT dm_private.recall_fuse_normalised(c.fused, c.best_score, c.worst_score)
    FROM dm_private.recall_fuse_ordered(hits, settings) AS c
$$;
COMMENT ON FUNCTION dm_private.recall_fuse_array(dm_private.recall_branch_hit [], jsonb) IS
'Fusion as an array in fusion order (dm_private.recall_fuse returns the same rows as a set): RRF or branch priority by (branch, evidence_id), top candidates.fused, relevance min-max over the kept ones. dm_private.recall_fuse_ordered then dm_private.recall_fuse_normalised. 22023 for a hit of an unknown branch.';
REVOKE ALL ON FUNCTION dm_private.recall_fuse_array(dm_private.recall_branch_hit [], jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_fuse_array(dm_private.recall_branch_hit [], jsonb)
TO densemem_app, densemem_analyst, densemem_operator;

CREATE OR REPLACE FUNCTION dm_private.recall_fuse(hits dm_private.recall_branch_hit [], settings jsonb)
RETURNS SETOF dm_private.recall_fused
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SET search_path = ''
AS $$
BEGIN
    -- the rows of recall_fuse_array (one definition of fusion), in fusion order
    RETURN QUERY
    SELECT f.* FROM pg_catalog.unnest(dm_private.recall_fuse_array(hits, settings)) AS f;
END
$$;
COMMENT ON FUNCTION dm_private.recall_fuse(dm_private.recall_branch_hit [], jsonb) IS
'Fuses branch hits by (branch, evidence_id): RRF with the profile''s rrf_k and branch weights (relevance = min-max of the RRF score over the kept candidates) or explicit branch priority; keeps the top candidates.fused with each branch rank.';
REVOKE ALL ON FUNCTION dm_private.recall_fuse(dm_private.recall_branch_hit [], jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_fuse(dm_private.recall_branch_hit [], jsonb)
TO densemem_app, densemem_analyst, densemem_operator;
