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

-- The scoring of recall_rank's plain statements without a temporal intent
-- (no usage snapshot, no supporting relationship in the team): one row per
-- candidate kept, with its score before the neighbouring-turn lift. Written
-- once here and used by the two statements of recall_rank that differ only
-- in the lift (below).
--
-- Why an SQL function (session 13): recall_rank's statement read these rows
-- twice (the rows without a source group and sequence number, and the
-- grouped ones through the lift's window), so the planner materialized them
-- in a CTE: every row was copied into a tuplestore and out again (two
-- tuple formations of ten columns per candidate, the body among them), and
-- the window's branch scanned all of them to keep none, in every team,
-- conversations or not: about 0.5 M instructions of the 2.6 M of the
-- bench's scoring statement. A team without grouped evidence needs no
-- window, so recall_rank runs a statement that reads these rows once; the
-- rows themselves are defined only here. The planner inlines the function
-- into either statement (an SQL function returning a set, STABLE, one
-- SELECT, no SET clause: that is why it has no `SET search_path`; every
-- name in it is schema-qualified and only recall_rank, running as the
-- searcher, may execute it), so each statement's plan is the one the
-- inline text gave: the same expressions, the same values, the same
-- generic plan (tests/python/test_recall_rank_scores_inlined.py checks
-- that it is inlined). The arguments are recall_rank's per-call constants.
-- Session 14: only the hot path runs these statements (no scored rows:
-- explain and recall_rerank take the full statement below, which gives the
-- same values), so the rows carry no explain-only column (branch ranks,
-- body size and md5 key, the shown signals) and the statement that reads
-- them also reads the pool's vectors (MMR's, below).
DROP FUNCTION IF EXISTS dm_private.recall_rank_scores(
    uuid, dm_private.recall_fused [], double precision, double precision, boolean, text [],
    timestamp with time zone, jsonb, double precision, double precision, double precision, double precision,
    double precision, text [], tsquery, double precision, double precision, double precision, double precision,
    double precision, double precision, double precision, boolean, jsonb, double precision, double precision,
    double precision, double precision, double precision, double precision, double precision, double precision);
CREATE OR REPLACE FUNCTION dm_private.recall_rank_scores(
    team uuid, fused dm_private.recall_fused [], fused_best double precision, fused_worst double precision,
    scopes text [], clock timestamp with time zone, half_lives jsonb,
    hl_conversation double precision, hl_workflow double precision, hl_episodic double precision,
    hl_semantic double precision, hl_organizational double precision, scan_phrases text [], exact_q tsquery,
    mix_fusion double precision, mix_phrase double precision, mix_exact double precision,
    mix_content double precision, mix_total double precision, content_pivot double precision,
    plain_frequency double precision, with_hops boolean, hops jsonb, w_rel double precision,
    w_rec double precision, w_imp double precision, w_frq double precision, w_prx double precision,
    w_conf double precision, support_none double precision, temporal_none double precision)
RETURNS TABLE (document_id uuid, evidence_id uuid, source_group text, sequence_number bigint,
    document_version integer, source_version integer, body text, relevance double precision,
    score double precision)
LANGUAGE sql
STABLE
AS $$
    -- the sorts below carry narrow rows: what the lift, the order and
    -- MMR read
    SELECT s.document_id, s.evidence_id, s.source_group, s.sequence_number,
           s.document_version, s.source_version, s.body, s.relevance,
           w_rel * s.relevance + w_rec * s.recency + w_imp * s.importance + w_frq * s.frequency
           + w_prx * s.proximity + w_conf * s.confidence
           + support_none * s.relevance
           + temporal_none AS score
    FROM (
        SELECT a.document_id, a.evidence_id,
               a.source_group, a.sequence_number, a.document_version, a.source_version,
               (mix_fusion * COALESCE(a.fused_relevance, 0)
                + mix_phrase * a.phrase
                + mix_exact * a.exact_terms
                + mix_content * a.content)
               / mix_total AS relevance,
               CASE
                   WHEN a.half_life IS NULL THEN 1.0
                   -- LEAST(700, ...): exp() raises an underflow error below about e^-745,
                   -- which years-old conversation evidence reaches; e^-700 is already 0 here.
                   -- One exp and one division for both ages (session 15): the half-life is
                   -- a CASE over the memory type, and each mention of it is evaluated (and
                   -- set up on every call) again; the same operations on the same values.
                   ELSE pg_catalog.exp(-LEAST(700.0,
                       CASE WHEN a.source_created_at IS NOT NULL THEN
                           -- The age in days in double precision (session 14): date_part, not
                           -- EXTRACT, whose numeric result was divided in numeric and converted to
                           -- double through its decimal text (about 0.45 microseconds a candidate,
                           -- 5 % of a ranking call). The two differ in the last bit of some ages
                           -- (the numeric quotient was rounded to 16 digits before the binary
                           -- rounding); every statement here computes it this way, so explain and
                           -- recall score alike. docs/RECALL.md, session 14.
                           GREATEST(0, pg_catalog.date_part('epoch', clock - a.source_created_at) / 86400.0)
                       ELSE
                           -- the team's newest sequence number: an uncorrelated
                           -- subquery, run only when a candidate has no created_at
                           GREATEST(0, COALESCE(
                               (SELECT pg_catalog.max(x.sequence_number) FROM dm_private.search_documents AS x
                                WHERE x.team_id = team AND x.subject_kind = 'evidence')
                               - a.sequence_number, 0))::double precision
                       END / a.half_life))
               END::double precision AS recency,
               LEAST(1.0, GREATEST(0.0, a.importance)) AS importance,
               plain_frequency AS frequency,
               CASE WHEN with_hops
                    THEN COALESCE(pg_catalog.power(0.5, (hops ->> a.evidence_id::text)::double precision), 0)
                    ELSE 0 END::double precision AS proximity,
               LEAST(1.0, GREATEST(0.0, a.confidence)) AS confidence,
               a.body
        FROM (
            -- the fused candidates joined with their documents by primary key
            -- (team_id, document_id): without the temporal CTE nothing else
            -- reads the documents, so they are neither collected by one
            -- array-key scan nor materialized and hashed for the join.
            -- Every expression is the full statement's (features, anchored).
            SELECT u.document_id, u.evidence_id,
                   COALESCE(u.relevance,
                            CASE WHEN fused_best = fused_worst THEN 1.0
                                 ELSE (u.fused_score - fused_worst) / (fused_best - fused_worst) END)
                       AS fused_relevance,
                   x.memory_type, x.source_created_at, x.sequence_number, x.source_group,
                   x.document_version, x.source_version,
                   COALESCE(x.importance, 0.5)::double precision AS importance,
                   COALESCE(x.confidence, 1.0)::double precision AS confidence,
                   CASE x.memory_type
                       WHEN 'conversation' THEN hl_conversation
                       WHEN 'workflow' THEN hl_workflow
                       WHEN 'episodic' THEN hl_episodic
                       WHEN 'semantic' THEN hl_semantic
                       WHEN 'organizational' THEN hl_organizational
                       ELSE (half_lives ->> x.memory_type::text)::double precision
                   END AS half_life,
                   CASE WHEN pg_catalog.cardinality(scan_phrases) = 0 THEN 0 ELSE
                       (SELECT pg_catalog.count(*) FROM pg_catalog.unnest(scan_phrases) AS p (phrase)
                        WHERE pg_catalog.strpos(pg_catalog.lower(x.body), p.phrase) > 0)::double precision
                       / pg_catalog.cardinality(scan_phrases) END AS phrase,
                   CASE WHEN exact_q IS NOT NULL AND x.search_vector @@ exact_q THEN 1 ELSE 0 END AS exact_terms,
                   CASE WHEN mix_content > 0
                        THEN LEAST(1.0, pg_catalog.length(x.search_vector) / content_pivot) ELSE 0 END AS content,
                   x.body  -- hashed after the pool's cut (below)
            -- the fused composites as columns of a function scan (session 13):
            -- each composite is split once into the tuplestore's row, where
            -- unnest in a select list (session 10) left a field selection per
            -- use, each deforming the composite again (0.1 M instructions per
            -- bench call; the function scan costs 0.06 M of that back)
            FROM pg_catalog.unnest(fused) AS u
            -- Each candidate's document (session 17): the row at the heap
            -- address where the branch read it (recall_fused.row_tid,
            -- migration 0094), by a Tid Scan of a page the branch has just
            -- read, when that row is visible to this statement and is the
            -- candidate's document in the team; a snapshot sees one version
            -- of a row, so it is the row the document's id finds. Otherwise
            -- (no address, or the document changed since the branch read
            -- it) by the document's id: the hash index of migration 0072
            -- (one bucket page per candidate instead of a B-tree descent
            -- comparing two uuids per step, session 11). The address spares
            -- the index probe, whose bucket pages were cold in the CPU caches
            -- on every call at 1M (nothing else reads that index):
            -- docs/RECALL.md, "Ranking (session 17)" and "(session 18)".
            -- Session 18: the row at the address in a lateral subquery of its
            -- own (OFFSET 0: not pulled up into a join the planner could run
            -- as a hash join over a scan of the team's rows, which it chose
            -- for a small team: the subquery's only path is a Tid Scan with
            -- the candidate's address as its parameter), and the probe by id
            -- in another whose only condition on the first is a one-time
            -- filter (t.found IS NULL: no row at the address), so it runs only
            -- for a candidate the address did not find; each column is the
            -- address row's or, without one, the probed row's (y's columns
            -- are all NULL when t has a row: the filter returns no row).
            -- Session 17's LIMIT 1 over a UNION ALL of the two cost a Limit,
            -- an Append and their rescans per candidate.
            LEFT JOIN LATERAL (
                SELECT t.memory_type, t.source_created_at, t.sequence_number, t.source_group,
                       t.document_version, t.source_version, t.importance, t.confidence, t.body,
                       t.search_vector, t.subject_id, t.subject_kind, t.policy_labels, true AS found
                FROM dm_private.search_documents AS t
                WHERE t.ctid = u.row_tid AND t.team_id = team AND t.document_id = u.document_id
                OFFSET 0
            ) AS t ON true
            LEFT JOIN LATERAL (
                SELECT y.memory_type, y.source_created_at, y.sequence_number, y.source_group,
                       y.document_version, y.source_version, y.importance, y.confidence, y.body,
                       y.search_vector, y.subject_id, y.subject_kind, y.policy_labels
                FROM dm_private.search_documents AS y
                WHERE t.found IS NULL AND y.team_id = team AND y.document_id = u.document_id
                OFFSET 0
            ) AS y ON true
            CROSS JOIN LATERAL (
                SELECT COALESCE(t.memory_type, y.memory_type) AS memory_type,
                       COALESCE(t.source_created_at, y.source_created_at) AS source_created_at,
                       COALESCE(t.sequence_number, y.sequence_number) AS sequence_number,
                       COALESCE(t.source_group, y.source_group) AS source_group,
                       COALESCE(t.document_version, y.document_version) AS document_version,
                       COALESCE(t.source_version, y.source_version) AS source_version,
                       COALESCE(t.importance, y.importance) AS importance,
                       COALESCE(t.confidence, y.confidence) AS confidence,
                       COALESCE(t.body, y.body) AS body,
                       COALESCE(t.search_vector, y.search_vector) AS search_vector,
                       COALESCE(t.subject_id, y.subject_id) AS subject_id,
                       COALESCE(t.subject_kind, y.subject_kind) AS subject_kind,
                       COALESCE(t.policy_labels, y.policy_labels) AS policy_labels
            ) AS x
            -- (the subject test, IS TRUE, as on the joined row before)
            WHERE (x.subject_id = u.evidence_id) IS TRUE
              AND x.subject_kind = 'evidence'
              AND x.policy_labels <@ scopes
        ) AS a
        -- OFFSET 0 keeps this a subquery of its own: pulled up, each
        -- signal's expression was copied to every place that reads it
        OFFSET 0
    ) AS s
$$;
COMMENT ON FUNCTION dm_private.recall_rank_scores(
    uuid, dm_private.recall_fused [], double precision, double precision, text [],
    timestamp with time zone, jsonb, double precision, double precision, double precision, double precision,
    double precision, text [], tsquery, double precision, double precision, double precision, double precision,
    double precision, double precision, double precision, boolean, jsonb, double precision, double precision,
    double precision, double precision, double precision, double precision, double precision, double precision) IS
'The candidates of dm_private.recall_rank''s plain statements without a temporal intent, scored before the neighbouring-turn lift: the one definition both of its statements (with and without the lift''s window) inline. Only recall_rank (the searcher) executes it.';
ALTER FUNCTION dm_private.recall_rank_scores(
    uuid, dm_private.recall_fused [], double precision, double precision, text [],
    timestamp with time zone, jsonb, double precision, double precision, double precision, double precision,
    double precision, text [], tsquery, double precision, double precision, double precision, double precision,
    double precision, double precision, double precision, boolean, jsonb, double precision, double precision,
    double precision, double precision, double precision, double precision, double precision, double precision)
OWNER TO densemem_owner;
REVOKE ALL ON FUNCTION dm_private.recall_rank_scores(
    uuid, dm_private.recall_fused [], double precision, double precision, text [],
    timestamp with time zone, jsonb, double precision, double precision, double precision, double precision,
    double precision, text [], tsquery, double precision, double precision, double precision, double precision,
    double precision, double precision, double precision, boolean, jsonb, double precision, double precision,
    double precision, double precision, double precision, double precision, double precision, double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_rank_scores(
    uuid, dm_private.recall_fused [], double precision, double precision, text [],
    timestamp with time zone, jsonb, double precision, double precision, double precision, double precision,
    double precision, text [], tsquery, double precision, double precision, double precision, double precision,
    double precision, double precision, double precision, boolean, jsonb, double precision, double precision,
    double precision, double precision, double precision, double precision, double precision, double precision) TO densemem_searcher;

-- What recall_run calls: the composite rerank, the context lift and MMR in
-- one function, sharing one read of the settings and working on arrays.
--
-- Why (session 5, "ranking 100 candidates p95 <= 1 ms"): the rerank stage
-- returned a set that the caller packed into a recall_scored [] of 100
-- twenty-field composites, which recall_mmr sliced, unpacked into four
-- arrays, handed to recall_pool_vectors (another SECURITY DEFINER call that
-- read the pool's documents again) and unpacked once more for its answer;
-- the rerank statement carried every body and tsvector through a
-- materialized CTE; and every MMR step recomputed similarities the collapse
-- had already computed. Here:
--   * one statement scores the candidates (the expressions of the rerank
--     are unchanged: same values bit for bit) and returns, in score order,
--     only what MMR reads: evidence and document ids, final scores, the
--     duplicate keys and the current document/source versions, cut to the
--     MMR pool unless the caller explains (then it also returns the scored
--     rows, with score_rank, as recall_rerank did);
--   * the documents' texts are read once, in the primary-key scan, where the
--     text signals, byte size and duplicate key are computed: the
--     materialized rows hold no body and no tsvector;
--   * the pool's vectors are read by primary key with the versions the
--     scoring statement already read (no second read of search_documents;
--     on the hot path by the scoring statement itself, session 14);
--   * the similarity of every pair of pool members (the expression of
--     recall_similarity_matrix and recall_mmr) is computed once, in one
--     statement, together with the list of duplicate pairs; the collapse
--     walks only those pairs and each greedy step reads the cached values.
-- Exact duplicates are found by hashtextextended(body, 0), where recall_mmr
-- hashes md5(body) (the body_key column): both are "the same text" up to a
-- 64-bit hash collision; the md5 is computed only for the scored rows.
-- The answer equals recall_mmr(team, recall_rerank(..., with_context),
-- settings, want) (tests/python/test_recall_rank.py checks it, and
-- explain_recall's output was compared byte for byte before and after).
--
-- want: the MMR picks; NULL skips MMR (recall_rerank's use: the scored rows
-- only). with_explain: also return every scored row (recall_scored, in score
-- order) and the MMR rows as recall_run's explain shows them (jsonb array of
-- {evidence_id, document_id, mmr_rank, mmr_value, max_similarity,
-- collapsed_into}, as recall_mmr returns them).
-- Runs as densemem_searcher (reads documents, usage, support, vectors of
-- candidates already chosen by the branches, inside the team).
-- fused_best, fused_worst (session 13): the fusion core's best and worst
-- kept scores (dm_private.recall_fuse_ordered). A candidate without a fused
-- relevance (the core leaves RRF relevance out) reads it from them, as
-- dm_private.recall_fuse_normalised computes it; a candidate with one keeps
-- it. They are taken from the array recall_run fused, before the anchor
-- filter below removes candidates, so they are the kept list's ends as
-- fusion saw them. NULL (the default): relevance as given.
DROP FUNCTION IF EXISTS dm_private.recall_rank(uuid, text, dm_private.recall_fused [], jsonb, jsonb, jsonb, boolean,
    integer, boolean);
CREATE OR REPLACE FUNCTION dm_private.recall_rank(team_id uuid, query text, fused dm_private.recall_fused [],
    req jsonb, settings jsonb, hops jsonb, with_context boolean, want integer, with_explain boolean,
    fused_best double precision DEFAULT NULL, fused_worst double precision DEFAULT NULL,
    OUT ordered_ids uuid [], OUT scored dm_private.recall_scored [], OUT mmr_rows jsonb)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = ''
-- every statement here has one good plan whatever the values: a custom plan
-- per call only costs planning (the pair-similarity statement's estimate
-- depends on the pool size, so it was planned anew on every call)
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    team constant uuid := dm_private.require_team(recall_rank.team_id);
    config regconfig := COALESCE(settings #>> '{fulltext,config}', 'english')::regconfig;
    all_q tsquery;
    clock timestamptz := COALESCE((req ->> 'now')::timestamptz, pg_catalog.now());
    anchors text [] := '{}';
    anchor_patterns text [] := '{}';
    phrases text [] := '{}';
    -- the phrases and the all-terms query the scoring statement evaluates:
    -- none when their signal is only weighted by 0 and not shown (below)
    scan_phrases text [] := '{}';
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
    -- each memory type's half-life read once, not once per candidate
    hl_conversation double precision := (half_lives ->> 'conversation')::double precision;
    hl_workflow double precision := (half_lives ->> 'workflow')::double precision;
    hl_episodic double precision := (half_lives ->> 'episodic')::double precision;
    hl_semantic double precision := (half_lives ->> 'semantic')::double precision;
    hl_organizational double precision := (half_lives ->> 'organizational')::double precision;
    -- dm_private.authenticated_scopes()'s expression written out (an SQL
    -- function with its own search_path is a call with a GUC save and
    -- restore, not inlined; session 8): the same setting, the same array
    scopes text [] := COALESCE(
        pg_catalog.array_remove(
            pg_catalog.string_to_array(
                pg_catalog.replace(COALESCE(pg_catalog.current_setting('densemem.scopes', true), ''), ' ', ''),
                ','),
            ''),
        '{}'::text []);
    lift_weight double precision := 0;
    radius bigint := 1;
    -- no hops (no discovery, no query entities): proximity is 0 for every
    -- candidate without a jsonb look-up of its id
    with_hops boolean := COALESCE(hops <> '{}'::jsonb, false);
    -- the scored rows are returned when explaining and without MMR
    -- (recall_rerank)
    with_rows constant boolean := with_explain OR want IS NULL;
    -- MMR (recall_mmr's settings and pool)
    lambda double precision := COALESCE((settings #>> '{mmr,lambda}')::double precision, 0.7);
    duplicate_at double precision := COALESCE((settings #>> '{mmr,duplicate_similarity}')::double precision, 0.97);
    pool_size integer := COALESCE((settings #>> '{mmr,pool}')::integer, 30);
    pool_n integer;
    -- the scoring statement without the usage, support and temporal joins
    plain boolean;
    -- the lift's window can lift a candidate (a grouped evidence in the team)
    regroup boolean;
    -- the plain statements without a temporal intent read the pool's vectors
    -- themselves (session 14)
    pool_read boolean := false;
    n integer;
    ids uuid [];
    doc_ids uuid [];
    scores double precision [];
    keys bigint [];
    doc_versions integer [];
    source_versions integer [];
    emb public.halfvec [];
    heads text [];
    complete boolean;
    sims double precision [];
    row_offset integer;
    any_collapsed boolean := false;
    -- how many distinct keys (text hashes) the pool has
    distinct_keys bigint;
    best_score double precision;
    live boolean [];
    collapsed uuid [];
    max_sim double precision [];
    rank_of integer [];
    value_of double precision [];
    picked_count integer := 0;
    target integer;
    i integer;
    j integer;
    s double precision;
    best integer := NULL;
    previous integer := NULL;
    previous_offset integer;
    best_value double precision;
    cand integer [];
    rel double precision [];
    -- per-call constants of the scoring statements, computed once here with
    -- the statements' own expressions (the same operations on the same
    -- values: the same bits), instead of once per candidate row; each
    -- operator left in a statement also costs its executor start-up a
    -- function look-up and an EXECUTE permission check (session 10)
    mix_total double precision;
    lifting boolean;
    lift_none double precision;
    lift_added double precision;
    plain_frequency double precision;
    support_none double precision;
    temporal_none double precision;
    keep double precision;
BEGIN
    ordered_ids := '{}';
    IF with_rows THEN
        scored := '{}';
    END IF;
    IF fused IS NULL OR pg_catalog.cardinality(fused) = 0 THEN
        RETURN;
    END IF;
    IF req -> 'anchors' IS NOT NULL AND req -> 'anchors' <> '[]'::jsonb THEN
        anchors := ARRAY(SELECT pg_catalog.lower(a) FROM pg_catalog.jsonb_array_elements_text(req -> 'anchors') AS a);
        -- each anchor's regular expression, built once per call (below)
        anchor_patterns := ARRAY(SELECT dm_private.recall_anchor_pattern(a.anchor)
                                 FROM pg_catalog.unnest(anchors) WITH ORDINALITY AS a (anchor, o)
                                 ORDER BY a.o);
    END IF;
    IF req -> 'phrases' IS NOT NULL AND req -> 'phrases' <> '[]'::jsonb THEN
        phrases := ARRAY(SELECT pg_catalog.lower(p) FROM pg_catalog.jsonb_array_elements_text(req -> 'phrases') AS p);
    END IF;
    -- the all-terms query of the full-text branch (dm_private.recall_tsqueries'
    -- all_terms), computed here directly: one function call less per recall
    -- (session 7) Not parsed when nothing reads it: without the scored rows
    -- and with an exact-terms weight of +0, the query is only tested for
    -- being empty, which sets that weight to 0, which it already is (a -0
    -- weight would become +0: then it is parsed as before)
    IF with_rows OR mix_exact <> 0 OR mix_exact::text <> '0' THEN
        all_q := pg_catalog.websearch_to_tsquery(config, COALESCE(query, ''));
        IF pg_catalog.numnode(all_q) = 0 THEN
            all_q := NULL;
        END IF;
    END IF;
    IF pg_catalog.cardinality(phrases) = 0 THEN mix_phrase := 0; END IF;
    IF all_q IS NULL THEN mix_exact := 0; END IF;
    IF mix_content < 0 THEN mix_content := 0; END IF;
    IF mix_fusion + mix_phrase + mix_exact + mix_content <= 0 THEN mix_fusion := 1; END IF;
    mix_total := mix_fusion + mix_phrase + mix_exact + mix_content;
    -- a signal weighted by 0 in the relevance mix adds 0 * signal = 0 (+0,
    -- or -0 for a weight of -0, whatever the signal in [0, 1]) to the
    -- relevance: without explain (which shows it) it is not computed (the
    -- tsvector match and the phrase scan of each text were about a tenth of
    -- a ranking call; the default profile weighs neither)
    IF with_rows OR mix_phrase <> 0 THEN
        scan_phrases := phrases;
    END IF;
    IF with_rows OR mix_exact <> 0 THEN
        exact_q := all_q;
    END IF;
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
    lifting := lift_weight > 0;
    -- the lift of an empty frame (a candidate without group or sequence)
    lift_none := lift_weight * COALESCE(GREATEST(NULL::double precision, 0), 0);
    -- what the statement without the lift's window adds to each score: the
    -- lift of an empty frame, or without a lift -0, which IEEE addition
    -- leaves every value unchanged by (x + -0 = x, -0 and NaN included):
    -- one expression of the score instead of a CASE holding it twice (below)
    lift_added := CASE WHEN lifting THEN lift_none ELSE '-0'::double precision END;
    -- (the EXISTS only when a snapshot is named: an expression with a
    -- subquery is a statement of its own, run even when snapshot IS NULL)
    IF snapshot IS NOT NULL THEN
        IF NOT EXISTS (SELECT 1 FROM dm_private.usage_snapshots AS s
                       WHERE s.team_id = team AND s.usage_snapshot_id = snapshot) THEN
            RAISE EXCEPTION 'usage snapshot % does not exist in this team', snapshot USING ERRCODE = '22023';
        END IF;
    END IF;
    IF pg_catalog.cardinality(anchors) > 0 THEN
        -- the hard anchors (dm_private.recall_has_anchors' test, inline with
        -- each anchor's pattern built once per call): the candidates whose
        -- document lacks one leave the fused list before scoring, in its
        -- order. The scoring statements keep no anchor test (a subquery test
        -- there cost every call, anchors or not, its start-up); what they
        -- drop for other reasons (no such document, another subject, policy)
        -- they still drop, and every signal is a function of a candidate's
        -- own document or of the candidates kept (the temporal rank, the
        -- context lift): the same rows and values as the anchor test in their
        -- WHERE clause gave (session 7; calling recall_has_anchors, an SQL
        -- function, per candidate built every pattern again per candidate:
        -- 23.5 M instructions per ranking call with one anchor and one phrase)
        -- (per candidate, a scalar subquery on the primary key: as NOT EXISTS
        -- in WHERE, the planner made it an anti-join that tested every
        -- document of the team)
        fused := ARRAY(
            SELECT c.f
            FROM (SELECT fused[o.o] AS f, o.o,
                         (SELECT NOT EXISTS (
                                     SELECT 1
                                     FROM (SELECT pg_catalog.lower(COALESCE(x.body, '')) AS text OFFSET 0) AS b
                                     CROSS JOIN ROWS FROM (pg_catalog.unnest(anchors),
                                                           pg_catalog.unnest(anchor_patterns)) AS a (anchor, pattern)
                                     WHERE NOT (pg_catalog.strpos(b.text, pg_catalog.lower(a.anchor)) > 0
                                                AND b.text OPERATOR(pg_catalog.~) a.pattern))
                          FROM dm_private.search_documents AS x
                          WHERE x.team_id = team AND x.document_id = (fused[o.o]).document_id) AS anchored
                  FROM pg_catalog.generate_subscripts(fused, 1) AS o (o)) AS c
            -- no such document (NULL): kept here, dropped by the scoring join
            WHERE c.anchored IS NOT FALSE
            ORDER BY c.o);
    END IF;
    -- candidates beyond twice the picks never win an MMR step against the
    -- top of the list (recall_mmr's pool): without explain, only these rows
    -- leave the scoring statement
    pool_n := GREATEST(LEAST(pool_size, 2 * want), want + 10);
    -- usage and support signals at their defaults: no usage snapshot in the
    -- team (none requested: one requested was checked to exist above), no
    -- relationship evidence in the team. Then the usage and support CTEs
    -- would be empty, and the statements without them return the same values
    -- (session 5: these CTEs, the temporal one and their left joins cost
    -- about a sixth of a ranking call, and with a temporal intent the
    -- temporal join doubled it).
    -- In the same statement (session 13): whether the neighbouring-turn lift
    -- can apply, i.e. a lift is asked and some evidence of the team has both
    -- a source group and a sequence number (one descent of migration 0082's
    -- partial index; no entry for a team without conversations). Without it
    -- the plain statement needs no window (below).
    SELECT snapshot IS NULL
           AND NOT EXISTS (SELECT 1 FROM dm_private.usage_snapshots AS s WHERE s.team_id = team)
           AND NOT EXISTS (SELECT 1 FROM dm_private.relationship_evidence AS re WHERE re.team_id = team),
           lifting AND EXISTS (SELECT 1 FROM dm_private.search_documents AS x
                               WHERE x.team_id = team AND x.subject_kind = 'evidence'
                                 AND x.source_group IS NOT NULL AND x.sequence_number IS NOT NULL)
    INTO plain, regroup;

    -- The scored rows (explain, recall_rerank) without a temporal intent are
    -- the full statement's (its usage, support and temporal terms are the
    -- plain statements' constants over no rows: the same values; the
    -- captured explain and rerank outputs are identical), so the plain
    -- statements below serve only the hot path (session 14): they carry no
    -- explain-only column (dm_private.recall_rank_scores) and return the
    -- MMR pool with its vectors.
    IF plain AND NOT (with_rows AND intent IS NULL) THEN
        -- the plain statements' constant signals and terms (their former
        -- per-row expressions: no usage counts, no support, and without a
        -- temporal intent no temporal signal)
        plain_frequency := LEAST(1.0, (COALESCE(NULL::bigint, 0) + prior_used)
                                      / (COALESCE(NULL::bigint, 0) + GREATEST(prior_retrieved, prior_used, 1)))
                           ::double precision;
        support_none := w_support * COALESCE(NULL::double precision, 0);
        temporal_none := w_temporal * COALESCE(NULL::double precision, 0.0);
        -- no usage snapshot and no supporting relationship in the team: the
        -- statements below have no usage and support CTEs and no joins
        -- (the signals they feed are the same expressions over NULLs: the
        -- same values); without a temporal intent no temporal signal either
        IF intent IS NULL THEN
            -- (the statements below read the pool's vectors too)
            pool_read := true;
            IF NOT regroup THEN
                -- no evidence of the team has both a source group and a sequence
                -- number (or no lift is asked): every candidate gets the lift of
                -- an empty frame, as the first branch of the statement below gives
                -- it; the scored rows are read once, not materialized for a window
                -- that would read none of them (session 13)
                WITH lifted AS (
                    -- (lift_added, not CASE WHEN lifting THEN s.score +
                    -- lift_none ELSE s.score END: the function is inlined, so
                    -- s.score is its expression, and the CASE held it twice:
                    -- fifteen more operators to set up on every call)
                    SELECT s.*, s.score + lift_added AS final_score
                    FROM dm_private.recall_rank_scores(
                           team, fused, fused_best, fused_worst, scopes, clock, half_lives, hl_conversation,
                           hl_workflow, hl_episodic, hl_semantic, hl_organizational, scan_phrases, exact_q, mix_fusion,
                           mix_phrase, mix_exact, mix_content, mix_total, content_pivot, plain_frequency, with_hops,
                           hops, w_rel, w_rec, w_imp, w_frq, w_prx, w_conf, support_none, temporal_none) AS s
                )
                -- the duplicate key MMR compares, hashtextextended(body, 0), of
                -- the rows leaving the sort only (without the scored rows, the
                -- pool: MMR reads no other; session 9: hashed in the probe, all
                -- 100 bodies were hashed for the 20 or 30 MMR reads)
                -- (not the versions: only the vectors statement, which these
                -- statements replace, reads them)
                SELECT pg_catalog.array_agg(o.evidence_id), pg_catalog.array_agg(o.document_id),
                       pg_catalog.array_agg(o.final_score::double precision),
                       pg_catalog.array_agg(pg_catalog.hashtextextended(o.body, 0)),
                       pg_catalog.array_agg(v.embedding), pg_catalog.bool_and(v.embedding IS NOT NULL)
                INTO ids, doc_ids, scores, keys, emb, complete
                FROM (
                    -- in score order (ties by evidence_id); an aggregate over an ordered
                    -- subquery with nothing between keeps that order. Without the scored
                    -- rows, only the pool leaves the sort (a bounded sort).
                    SELECT l.evidence_id, l.document_id, l.final_score, l.body, l.document_version,
                           l.source_version
                    FROM lifted AS l
                    ORDER BY l.final_score DESC, l.evidence_id
                    LIMIT pool_n
                ) AS o
                -- the pool's current vectors (MMR's, below; recall_pool_vectors'
                -- rule: of the active contract and of the document and source
                -- versions this statement read), by primary key, for the rows
                -- leaving the bounded sort, which are the pool (session 14:
                -- the separate statement that read them paid its own start-up,
                -- a ROWS FROM tuplestore of the pool's ids and versions and the
                -- copy of its result out of SPI, about 0.25 M instructions of
                -- its 0.53 M; the probes stay)
                LEFT JOIN LATERAL (
                    SELECT e.embedding
                    FROM dm_private.document_embeddings AS e
                    WHERE e.team_id = team AND e.document_id = o.document_id
                      AND e.contract_id = (SELECT c.contract_id FROM dm_private.embedding_contracts AS c
                                           WHERE c.is_active)
                      AND e.document_version = o.document_version AND e.source_version = o.source_version
                    -- a probe per pool row, in the pool's order (the aggregates
                    -- read the rows as the nested loop returns them)
                    OFFSET 0
                ) AS v ON true;
            ELSE
                WITH scored_rows AS (
                    SELECT s.*
                    FROM dm_private.recall_rank_scores(
                           team, fused, fused_best, fused_worst, scopes, clock, half_lives, hl_conversation,
                           hl_workflow, hl_episodic, hl_semantic, hl_organizational, scan_phrases, exact_q, mix_fusion,
                           mix_phrase, mix_exact, mix_content, mix_total, content_pivot, plain_frequency, with_hops,
                           hops, w_rel, w_rec, w_imp, w_frq, w_prx, w_conf, support_none, temporal_none) AS s
                ),
                lifted AS (
                    -- sql/52's lift: the best relevance among the other candidates of
                    -- the same source group written within `radius` sequence numbers
                    -- (a window frame, not a self-join). Only candidates with a source
                    -- group and a sequence number can be lifted or lift another, so only
                    -- they go through the window's sort and frames; the others get the
                    -- lift of an empty frame (NULL: + weight * 0) without them (bench
                    -- documents have no source group: the window was a tenth of a
                    -- ranking call for nothing). The partitions are compared byte-wise
                    -- (COLLATE "C"): the same groups as the database collation's equality
                    -- (deterministic), without locale-aware comparisons in the sort; the
                    -- order of partitions changes nothing.
                    SELECT s.*,
                           CASE WHEN lifting THEN
                               s.score + lift_none
                           ELSE s.score END AS final_score
                    FROM scored_rows AS s
                    WHERE s.source_group IS NULL OR s.sequence_number IS NULL
                    UNION ALL
                    SELECT s.*,
                           CASE WHEN lifting THEN
                               s.score + lift_weight * COALESCE(GREATEST(
                                   pg_catalog.max(s.relevance) OVER (
                                       PARTITION BY s.source_group COLLATE "C"
                                       ORDER BY s.sequence_number
                                       RANGE BETWEEN radius PRECEDING AND radius FOLLOWING EXCLUDE CURRENT ROW), 0), 0)
                           ELSE s.score END AS final_score
                    FROM scored_rows AS s
                    WHERE s.source_group IS NOT NULL AND s.sequence_number IS NOT NULL
                )
                -- the duplicate key MMR compares, hashtextextended(body, 0), of
                -- the rows leaving the sort only (without the scored rows, the
                -- pool: MMR reads no other; session 9: hashed in the probe, all
                -- 100 bodies were hashed for the 20 or 30 MMR reads)
                -- (not the versions: only the vectors statement, which these
                -- statements replace, reads them)
                SELECT pg_catalog.array_agg(o.evidence_id), pg_catalog.array_agg(o.document_id),
                       pg_catalog.array_agg(o.final_score::double precision),
                       pg_catalog.array_agg(pg_catalog.hashtextextended(o.body, 0)),
                       pg_catalog.array_agg(v.embedding), pg_catalog.bool_and(v.embedding IS NOT NULL)
                INTO ids, doc_ids, scores, keys, emb, complete
                FROM (
                    -- in score order (ties by evidence_id); an aggregate over an ordered
                    -- subquery with nothing between keeps that order. Without the scored
                    -- rows, only the pool leaves the sort (a bounded sort).
                    SELECT l.evidence_id, l.document_id, l.final_score, l.body, l.document_version,
                           l.source_version
                    FROM lifted AS l
                    ORDER BY l.final_score DESC, l.evidence_id
                    LIMIT pool_n
                ) AS o
                -- the pool's current vectors (MMR's, below; recall_pool_vectors'
                -- rule: of the active contract and of the document and source
                -- versions this statement read), by primary key, for the rows
                -- leaving the bounded sort, which are the pool (session 14:
                -- the separate statement that read them paid its own start-up,
                -- a ROWS FROM tuplestore of the pool's ids and versions and the
                -- copy of its result out of SPI, about 0.25 M instructions of
                -- its 0.53 M; the probes stay)
                LEFT JOIN LATERAL (
                    SELECT e.embedding
                    FROM dm_private.document_embeddings AS e
                    WHERE e.team_id = team AND e.document_id = o.document_id
                      AND e.contract_id = (SELECT c.contract_id FROM dm_private.embedding_contracts AS c
                                           WHERE c.is_active)
                      AND e.document_version = o.document_version AND e.source_version = o.source_version
                    -- a probe per pool row, in the pool's order (the aggregates
                    -- read the rows as the nested loop returns them)
                    OFFSET 0
                ) AS v ON true;
            END IF;
        ELSE
            -- a temporal intent: the temporal signal is a window over the
            -- candidates (one row per candidate), in the signals, as in the
            -- full statement below (which until session 6 computed it in a
            -- CTE over the documents and joined it back by a nested loop
            -- that rescanned the CTE per candidate: 16.3 M instructions per
            -- call against 7.2 M without an intent)
            WITH anchored AS (
                -- the fused candidates joined with their documents by primary key
                -- (team_id, document_id): without the temporal CTE nothing else
                -- reads the documents, so they are neither collected by one
                -- array-key scan nor materialized and hashed for the join.
                -- Every expression is the full statement's (features, anchored).
                SELECT (u.f).document_id, (u.f).evidence_id,
                       COALESCE((u.f).relevance,
                                CASE WHEN fused_best = fused_worst THEN 1.0
                                     ELSE ((u.f).fused_score - fused_worst) / (fused_best - fused_worst) END)
                           AS fused_relevance,
                       -- the branch ranks, shown only in the scored rows
                       CASE WHEN with_rows THEN (u.f).fulltext_rank END AS fulltext_rank,
                       CASE WHEN with_rows THEN (u.f).vector_rank END AS vector_rank,
                       CASE WHEN with_rows THEN (u.f).exact_rank END AS exact_rank,
                       CASE WHEN with_rows THEN (u.f).fusion_rank END AS fusion_rank,
                       x.memory_type, x.source_created_at, x.sequence_number, x.source_group,
                       x.document_version, x.source_version,
                       COALESCE(x.importance, 0.5)::double precision AS importance,
                       COALESCE(x.confidence, 1.0)::double precision AS confidence,
                       CASE x.memory_type
                           WHEN 'conversation' THEN hl_conversation
                           WHEN 'workflow' THEN hl_workflow
                           WHEN 'episodic' THEN hl_episodic
                           WHEN 'semantic' THEN hl_semantic
                           WHEN 'organizational' THEN hl_organizational
                           ELSE (half_lives ->> x.memory_type::text)::double precision
                       END AS half_life,
                       CASE WHEN pg_catalog.cardinality(scan_phrases) = 0 THEN 0 ELSE
                           (SELECT pg_catalog.count(*) FROM pg_catalog.unnest(scan_phrases) AS p (phrase)
                            WHERE pg_catalog.strpos(pg_catalog.lower(x.body), p.phrase) > 0)::double precision
                           / pg_catalog.cardinality(scan_phrases) END AS phrase,
                       CASE WHEN exact_q IS NOT NULL AND x.search_vector @@ exact_q THEN 1 ELSE 0 END AS exact_terms,
                       CASE WHEN mix_content > 0
                            THEN LEAST(1.0, pg_catalog.length(x.search_vector) / content_pivot) ELSE 0 END AS content,
                       pg_catalog.octet_length(x.body) AS body_bytes,
                       x.body,  -- hashed after the pool's cut (below)
                       CASE WHEN with_rows THEN pg_catalog.md5(x.body) END AS body_key
                -- unnest in a select list (a ProjectSet): the fused composites one
                -- by one, in the array's order, where a function scan stored every
                -- row, split into its eight columns, in a tuplestore first
                -- (session 10)
                FROM (SELECT pg_catalog.unnest(fused) AS f) AS u
                JOIN dm_private.search_documents AS x
                  -- by the document's id: the hash index of migration 0072 (one
                  -- bucket page per candidate instead of a B-tree descent comparing
                  -- two uuids per step: 0.7 M instructions less per ranking call,
                  -- session 11), the team test on the row it returns. Not the
                  -- subject key's uuid, enum and uuid (the subject test, IS TRUE,
                  -- is a filter: not an index condition)
                  ON x.team_id = team AND x.document_id = (u.f).document_id
                 AND (x.subject_id = (u.f).evidence_id) IS TRUE
                WHERE x.subject_kind = 'evidence'
                  AND x.policy_labels <@ scopes
            ),
            signals AS (
                SELECT a.document_id, a.evidence_id, a.fulltext_rank, a.vector_rank, a.exact_rank, a.fusion_rank,
                       a.source_group, a.sequence_number, a.document_version, a.source_version,
                       (mix_fusion * COALESCE(a.fused_relevance, 0)
                        + mix_phrase * a.phrase
                        + mix_exact * a.exact_terms
                        + mix_content * a.content)
                       / mix_total AS relevance,
                       CASE
                           WHEN a.half_life IS NULL THEN 1.0
                           WHEN a.source_created_at IS NOT NULL THEN
                               -- LEAST(700, ...): exp() raises an underflow error below about e^-745,
                               -- which years-old conversation evidence reaches; e^-700 is already 0 here.
                               pg_catalog.exp(-LEAST(700.0, GREATEST(0, pg_catalog.date_part('epoch', clock - a.source_created_at) / 86400.0)
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
                       plain_frequency AS frequency,
                       CASE WHEN with_hops
                            THEN COALESCE(pg_catalog.power(0.5, (hops ->> a.evidence_id::text)::double precision), 0)
                            ELSE 0 END::double precision AS proximity,
                       LEAST(1.0, GREATEST(0.0, a.confidence)) AS confidence,
                       COALESCE(NULL::double precision, 0) AS support,
                       -- shown only in the scored rows: without them, not
                       -- evaluated a second time (anchored is inlined here, so
                       -- a.phrase and a.exact_terms are their expressions, and
                       -- relevance above already evaluated them once)
                       CASE WHEN with_rows THEN a.phrase END AS phrase,
                       CASE WHEN with_rows THEN a.exact_terms END AS exact_terms,
                       COALESCE(CASE
                           WHEN a.source_created_at IS NULL THEN 0.0
                           -- one window for both intents: 'latest' orders by the first key
                           -- (created_at ascending, the second all NULL: peers), any other
                           -- by the second (descending): the ranks of the window each used to
                           -- have, with one sort instead of two
                           ELSE
                               pg_catalog.percent_rank() OVER (
                                   ORDER BY CASE WHEN intent = 'latest' THEN a.source_created_at END ASC NULLS FIRST,
                                            CASE WHEN intent = 'latest' THEN NULL ELSE a.source_created_at END DESC NULLS FIRST)
                       END::double precision, 0.0) AS temporal,
                       a.body_bytes,
                       a.body,
                       a.body_key
                FROM anchored AS a
                -- OFFSET 0 keeps this a subquery of its own: pulled up, each
                -- signal's expression was copied to every place that reads it
                OFFSET 0
            ),
            scored_rows AS (
                -- the sorts below carry narrow rows: what the lift, the order and
                -- MMR read, and the other signals packed in one value, only when the
                -- scored rows are returned (score and score_rank are set afterwards)
                SELECT s.document_id, s.evidence_id, s.source_group, s.sequence_number,
                       s.document_version, s.source_version, s.body, s.relevance,
                       w_rel * s.relevance + w_rec * s.recency + w_imp * s.importance + w_frq * s.frequency
                       + w_prx * s.proximity + w_conf * s.confidence
                       + support_none * s.relevance
                       + w_temporal * s.temporal AS score,
                       CASE WHEN with_rows THEN
                           ROW(s.document_id, s.evidence_id, s.relevance::double precision, s.recency::double precision,
                               s.importance::double precision, s.frequency::double precision,
                               s.proximity::double precision, s.confidence::double precision,
                               s.support::double precision, s.phrase::double precision,
                               s.exact_terms::double precision, s.temporal::double precision, NULL::double precision,
                               s.body_bytes::integer, s.body_key, s.fulltext_rank, s.vector_rank, s.exact_rank,
                               s.fusion_rank, NULL::integer)::dm_private.recall_scored
                       END AS detail
                FROM signals AS s
            ),
            lifted AS (
                -- sql/52's lift: the best relevance among the other candidates of
                -- the same source group written within `radius` sequence numbers
                -- (a window frame, not a self-join). Only candidates with a source
                -- group and a sequence number can be lifted or lift another, so only
                -- they go through the window's sort and frames; the others get the
                -- lift of an empty frame (NULL: + weight * 0) without them (bench
                -- documents have no source group: the window was a tenth of a
                -- ranking call for nothing). The partitions are compared byte-wise
                -- (COLLATE "C"): the same groups as the database collation's equality
                -- (deterministic), without locale-aware comparisons in the sort; the
                -- order of partitions changes nothing.
                SELECT s.*,
                       CASE WHEN lifting THEN
                           s.score + lift_none
                       ELSE s.score END AS final_score
                FROM scored_rows AS s
                WHERE s.source_group IS NULL OR s.sequence_number IS NULL
                UNION ALL
                SELECT s.*,
                       CASE WHEN lifting THEN
                           s.score + lift_weight * COALESCE(GREATEST(
                               pg_catalog.max(s.relevance) OVER (
                                   PARTITION BY s.source_group COLLATE "C"
                                   ORDER BY s.sequence_number
                                   RANGE BETWEEN radius PRECEDING AND radius FOLLOWING EXCLUDE CURRENT ROW), 0), 0)
                       ELSE s.score END AS final_score
                FROM scored_rows AS s
                WHERE s.source_group IS NOT NULL AND s.sequence_number IS NOT NULL
            )
            -- the duplicate key MMR compares, hashtextextended(body, 0), of
            -- the rows leaving the sort only (without the scored rows, the
            -- pool: MMR reads no other; session 9: hashed in the probe, all
            -- 100 bodies were hashed for the 20 or 30 MMR reads)
            SELECT pg_catalog.array_agg(o.evidence_id), pg_catalog.array_agg(o.document_id),
                   pg_catalog.array_agg(o.final_score::double precision),
                   pg_catalog.array_agg(pg_catalog.hashtextextended(o.body, 0)),
                   pg_catalog.array_agg(o.document_version), pg_catalog.array_agg(o.source_version),
                   pg_catalog.array_agg(o.detail) FILTER (WHERE with_rows)
            INTO ids, doc_ids, scores, keys, doc_versions, source_versions, scored
            FROM (
                -- in score order (ties by evidence_id); an aggregate over an ordered
                -- subquery with nothing between keeps that order. Without the scored
                -- rows, only the pool leaves the sort (a bounded sort).
                SELECT l.evidence_id, l.document_id, l.final_score, l.body, l.document_version,
                       l.source_version, l.detail
                FROM lifted AS l
                ORDER BY l.final_score DESC, l.evidence_id
                LIMIT CASE WHEN with_rows THEN NULL ELSE pool_n END
            ) AS o;
        END IF;
    ELSE
        WITH features AS MATERIALIZED (
            -- the candidates' documents in one scan of the primary key
            -- (team_id, document_id = ANY): no plan can range-scan the team.
            -- Everything that needs the text is computed here, once per
            -- document, so no later node copies a body or a tsvector.
            SELECT x.document_id, x.subject_id, x.memory_type, x.source_created_at,
                   x.sequence_number, x.source_group, x.importance, x.confidence,
                   x.document_version, x.source_version,
                   CASE WHEN pg_catalog.cardinality(scan_phrases) = 0 THEN 0 ELSE
                       (SELECT pg_catalog.count(*) FROM pg_catalog.unnest(scan_phrases) AS p (phrase)
                        WHERE pg_catalog.strpos(pg_catalog.lower(x.body), p.phrase) > 0)::double precision
                       / pg_catalog.cardinality(scan_phrases) END AS phrase,
                   CASE WHEN exact_q IS NOT NULL AND x.search_vector @@ exact_q THEN 1 ELSE 0 END AS exact_terms,
                   CASE WHEN mix_content > 0
                        THEN LEAST(1.0, pg_catalog.length(x.search_vector) / content_pivot) ELSE 0 END AS content,
                   pg_catalog.octet_length(x.body) AS body_bytes,
                   -- the duplicate key MMR compares; the md5 text (recall_scored's
                   -- body_key) only when the scored rows are returned
                   pg_catalog.hashtextextended(x.body, 0) AS body_hash,
                   CASE WHEN with_rows THEN pg_catalog.md5(x.body) END AS body_key
            FROM dm_private.search_documents AS x
            WHERE x.team_id = team AND x.subject_kind = 'evidence'
              AND x.document_id = ANY (ARRAY(SELECT f.document_id FROM pg_catalog.unnest(fused) AS f))
              AND x.policy_labels <@ scopes
        ),
        anchored AS (
            SELECT f.document_id, f.evidence_id,
                   COALESCE(f.relevance,
                            CASE WHEN fused_best = fused_worst THEN 1.0
                                 ELSE (f.fused_score - fused_worst) / (fused_best - fused_worst) END) AS fused_relevance,
                   f.fulltext_rank, f.vector_rank, f.exact_rank, f.fusion_rank,
                   d.memory_type, d.source_created_at, d.sequence_number, d.source_group,
                   d.document_version, d.source_version,
                   COALESCE(d.importance, 0.5)::double precision AS importance,
                   COALESCE(d.confidence, 1.0)::double precision AS confidence,
                   CASE d.memory_type
                       WHEN 'conversation' THEN hl_conversation
                       WHEN 'workflow' THEN hl_workflow
                       WHEN 'episodic' THEN hl_episodic
                       WHEN 'semantic' THEN hl_semantic
                       WHEN 'organizational' THEN hl_organizational
                       ELSE (half_lives ->> d.memory_type::text)::double precision
                   END AS half_life,
                   d.phrase, d.exact_terms, d.content, d.body_bytes, d.body_hash, d.body_key
            FROM pg_catalog.unnest(fused) AS f
            JOIN features AS d ON d.document_id = f.document_id AND d.subject_id = f.evidence_id
        ),
        -- usage and support are MATERIALIZED: each runs once and is joined by
        -- hash (inlined, a generic plan rescans them per candidate)
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
        signals AS (
            SELECT a.document_id, a.evidence_id, a.fulltext_rank, a.vector_rank, a.exact_rank, a.fusion_rank,
                   a.source_group, a.sequence_number, a.document_version, a.source_version,
                   (mix_fusion * COALESCE(a.fused_relevance, 0)
                    + mix_phrase * a.phrase
                    + mix_exact * a.exact_terms
                    + mix_content * a.content)
                   / mix_total AS relevance,
                   CASE
                       WHEN a.half_life IS NULL THEN 1.0
                       WHEN a.source_created_at IS NOT NULL THEN
                           -- LEAST(700, ...): exp() raises an underflow error below about e^-745,
                           -- which years-old conversation evidence reaches; e^-700 is already 0 here.
                           pg_catalog.exp(-LEAST(700.0, GREATEST(0, pg_catalog.date_part('epoch', clock - a.source_created_at) / 86400.0)
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
                   -- the share of candidates written before (latest) or after
                   -- (earliest) each one, over the candidates (one row per
                   -- fused candidate: the rows the temporal CTE over `features`
                   -- had), as the statements above compute it. The CTE was
                   -- joined back by a nested loop that rescanned it per
                   -- candidate (16.3 M instructions per call with an intent,
                   -- against 8.6 M for the statement above). Without an intent
                   -- both keys are NULL (one pass over sorted input) and the
                   -- signal is the CTE's missing row: COALESCE(NULL, 0.0).
                   CASE WHEN intent IS NULL THEN COALESCE(NULL::double precision, 0.0)
                   ELSE COALESCE(CASE
                       WHEN a.source_created_at IS NULL THEN 0.0
                       ELSE
                           pg_catalog.percent_rank() OVER (
                               ORDER BY CASE WHEN intent = 'latest' THEN a.source_created_at END ASC NULLS FIRST,
                                        CASE WHEN intent = 'latest' OR intent IS NULL THEN NULL
                                             ELSE a.source_created_at END DESC NULLS FIRST)
                   END::double precision, 0.0) END AS temporal,
                   a.body_bytes,
                   a.body_hash,
                   a.body_key
            FROM anchored AS a
            LEFT JOIN usage AS u ON u.evidence_id = a.evidence_id
            LEFT JOIN support AS s ON s.evidence_id = a.evidence_id
            -- OFFSET 0 keeps this a subquery of its own: pulled up, each
            -- signal's expression was copied to every place that reads it
            OFFSET 0
        ),
        scored_rows AS (
            -- the sorts below carry narrow rows: what the lift, the order and
            -- MMR read, and the other signals packed in one value, only when the
            -- scored rows are returned (score and score_rank are set afterwards)
            SELECT s.document_id, s.evidence_id, s.source_group, s.sequence_number,
                   s.document_version, s.source_version, s.body_hash, s.relevance,
                   w_rel * s.relevance + w_rec * s.recency + w_imp * s.importance + w_frq * s.frequency
                   + w_prx * s.proximity + w_conf * s.confidence
                   + w_support * s.support * s.relevance
                   + w_temporal * s.temporal AS score,
                   CASE WHEN with_rows THEN
                       ROW(s.document_id, s.evidence_id, s.relevance::double precision, s.recency::double precision,
                           s.importance::double precision, s.frequency::double precision,
                           s.proximity::double precision, s.confidence::double precision,
                           s.support::double precision, s.phrase::double precision,
                           s.exact_terms::double precision, s.temporal::double precision, NULL::double precision,
                           s.body_bytes::integer, s.body_key, s.fulltext_rank, s.vector_rank, s.exact_rank,
                           s.fusion_rank, NULL::integer)::dm_private.recall_scored
                   END AS detail
            FROM signals AS s
        ),
        lifted AS (
            -- sql/52's lift: the best relevance among the other candidates of
            -- the same source group written within `radius` sequence numbers
            -- (a window frame, not a self-join). Only candidates with a source
            -- group and a sequence number can be lifted or lift another, so only
            -- they go through the window's sort and frames; the others get the
            -- lift of an empty frame (NULL: + weight * 0) without them (bench
            -- documents have no source group: the window was a tenth of a
            -- ranking call for nothing). The partitions are compared byte-wise
            -- (COLLATE "C"): the same groups as the database collation's equality
            -- (deterministic), without locale-aware comparisons in the sort; the
            -- order of partitions changes nothing.
            SELECT s.*,
                   CASE WHEN lifting THEN
                       s.score + lift_none
                   ELSE s.score END AS final_score
            FROM scored_rows AS s
            WHERE s.source_group IS NULL OR s.sequence_number IS NULL
            UNION ALL
            SELECT s.*,
                   CASE WHEN lifting THEN
                       s.score + lift_weight * COALESCE(GREATEST(
                           pg_catalog.max(s.relevance) OVER (
                               PARTITION BY s.source_group COLLATE "C"
                               ORDER BY s.sequence_number
                               RANGE BETWEEN radius PRECEDING AND radius FOLLOWING EXCLUDE CURRENT ROW), 0), 0)
                   ELSE s.score END AS final_score
            FROM scored_rows AS s
            WHERE s.source_group IS NOT NULL AND s.sequence_number IS NOT NULL
        )
        SELECT pg_catalog.array_agg(o.evidence_id), pg_catalog.array_agg(o.document_id),
               pg_catalog.array_agg(o.final_score::double precision), pg_catalog.array_agg(o.body_hash),
               pg_catalog.array_agg(o.document_version), pg_catalog.array_agg(o.source_version),
               pg_catalog.array_agg(o.detail) FILTER (WHERE with_rows)
        INTO ids, doc_ids, scores, keys, doc_versions, source_versions, scored
        FROM (
            -- in score order (ties by evidence_id); an aggregate over an ordered
            -- subquery with nothing between keeps that order. Without the scored
            -- rows, only the pool leaves the sort (a bounded sort).
            SELECT l.evidence_id, l.document_id, l.final_score, l.body_hash, l.document_version,
                   l.source_version, l.detail
            FROM lifted AS l
            ORDER BY l.final_score DESC, l.evidence_id
            LIMIT CASE WHEN with_rows THEN NULL ELSE pool_n END
        ) AS o;
    END IF;
    IF with_rows THEN
        -- the scored rows as recall_rerank returns them: the final score and
        -- the rank by it
        scored := ARRAY(
            SELECT ROW(x.document_id, x.evidence_id, x.relevance, x.recency, x.importance, x.frequency,
                       x.proximity, x.confidence, x.support, x.phrase, x.exact_terms, x.temporal, x.final_score,
                       x.body_bytes, x.body_key, x.fulltext_rank, x.vector_rank, x.exact_rank, x.fusion_rank,
                       x.ord::integer)::dm_private.recall_scored
            FROM ROWS FROM (pg_catalog.unnest(scored), pg_catalog.unnest(scores)) WITH ORDINALITY
                AS x (document_id, evidence_id, relevance, recency, importance, frequency, proximity, confidence,
                      support, phrase, exact_terms, temporal, unset_score, body_bytes, body_key, fulltext_rank,
                      vector_rank, exact_rank, fusion_rank, unset_rank, final_score, ord)
            ORDER BY x.ord);
    END IF;

    IF want IS NULL THEN
        RETURN;
    END IF;

    -- MMR over the pool: the top pool_n by score (recall_mmr's algorithm)
    n := LEAST(COALESCE(pg_catalog.cardinality(ids), 0), pool_n);
    IF n = 0 THEN
        RETURN;
    END IF;
    -- the pool's current vectors (recall_pool_vectors' rule: of the active
    -- contract and of the document's current document and source versions,
    -- as the scoring statement read them), by primary key; in the same
    -- statement, each member's relevance term lambda * score / best_score
    -- (recall_mmr's expression, the same operations: the same value) and the
    -- pool's positions 1..n (the candidates standing before the collapse):
    -- two statements fewer per call
    best_score := GREATEST(scores[1], 1e-9);
    IF pool_read THEN
        -- the scoring statement read the vectors (its rows are the pool:
        -- it returns pool_n rows at most, so n is their count); each
        -- member's relevance term with the expression of the statement
        -- below (the same operations: the same value), the positions 1..n
        -- as an expression (array_positions of n trues), not a statement
        FOR i IN 1 .. n LOOP
            rel[i] := lambda * scores[i] / best_score;
        END LOOP;
        cand := pg_catalog.array_positions(pg_catalog.array_fill(true, ARRAY[n]), true);
    ELSE
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
    END IF;
    IF NOT complete THEN
        SELECT pg_catalog.array_agg(pg_catalog.left(d.body, 500) ORDER BY p.ord)
        INTO heads
        FROM pg_catalog.unnest(doc_ids[1:n]) WITH ORDINALITY AS p (document_id, ord)
        LEFT JOIN dm_private.search_documents AS d ON d.team_id = team AND d.document_id = p.document_id;
    END IF;
    -- every pair's similarity once, the pair (i, j) of i > j stored at
    -- (i - 1) * (i - 2) / 2 + j: cosine similarity of the two
    -- vectors when both exist (always, when `complete`), else trigram
    -- similarity of the heads, NULL as 0 (recall_similarity_matrix's
    -- expression). The series fixes the order: i ascending, then j
    -- ascending. (Session 7: one series over the pair positions k, with
    -- i = ceil((1 + sqrt(1 + 8k)) / 2) and j from k, gives the same pairs
    -- without a function scan per pool member, but its per-pair arithmetic
    -- cost more: 6.35 M against 6.22 M instructions per ranking call.)
    -- Session 15: the statement only computes and collects the
    -- similarities. It also collected, with a FILTER per pair, the pairs
    -- that are duplicates, which kept each similarity in a subquery of its
    -- own (OFFSET 0, so that the FILTER did not compute it again): a
    -- subquery scan, a projection and a filter per pair for pairs that are
    -- almost never duplicates. The collapse below finds them by row.
    IF n > 1 THEN
        SELECT pg_catalog.array_agg(
                   CASE WHEN complete THEN 1.0 - (ij.a OPERATOR(public.<=>) emb[ij.j])
                   ELSE COALESCE(CASE WHEN ij.a IS NOT NULL AND emb[ij.j] IS NOT NULL
                                      THEN 1.0 - (ij.a OPERATOR(public.<=>) emb[ij.j])
                                      ELSE public.similarity(heads[ij.i], heads[ij.j]) END, 0)
                   END::double precision),
               -- whether two members share a key: an init-plan, so the collapse
               -- below searches no row when no pair is a duplicate. Only the
               -- pool's keys: with the scored rows (explain) `keys` holds every
               -- candidate, and a count over all of them missed a pool's pair
               -- whenever the candidates had n or more distinct keys (session 16)
               (SELECT pg_catalog.count(DISTINCT k.k) FROM pg_catalog.unnest(keys[1:n]) AS k (k))
        INTO sims, distinct_keys
        -- the pairs from a set-returning function in a select list (1..n
        -- are emb's subscripts: it has the n pool members): a ProjectSet
        -- emits each row's series in order, without the tuplestore a
        -- function scan fills per pool member (the same pairs in the same
        -- order as the lateral generate_subscripts x generate_series it
        -- replaces, session 9). Row i's vector is read once per row, in
        -- a subquery of its own (OFFSET 0: pulled up, emb[i] was read
        -- again for every pair; session 15).
        FROM (SELECT p.i, p.a, pg_catalog.generate_series(1, p.i - 1) AS j
              FROM (SELECT g.i, emb[g.i] AS a FROM pg_catalog.generate_series(1, n) AS g (i) OFFSET 0) AS p) AS ij;
    END IF;
    live := pg_catalog.array_fill(true, ARRAY[n]);
    collapsed := pg_catalog.array_fill(NULL::uuid, ARRAY[n]);
    max_sim := pg_catalog.array_fill(0::double precision, ARRAY[n]);
    IF with_explain THEN
        rank_of := pg_catalog.array_fill(NULL::integer, ARRAY[n]);
        value_of := pg_catalog.array_fill(NULL::double precision, ARRAY[n]);
    END IF;

    -- collapse exact and near duplicates into the better-scored candidate:
    -- a row collapses into the first earlier row still standing that it
    -- duplicates (same key, or a similarity at or above duplicate_at, as
    -- float8 compares: NaN above all). Rows in order, so every earlier row
    -- is settled. The pool is searched only when it has a duplicate pair,
    -- which one test of all the similarities and the count of distinct keys
    -- (with the similarities) tell; a row is then searched pair by pair only when one of its pairs is a
    -- duplicate, which two array tests of the row's earlier keys and of its
    -- similarities tell (sims holds row i's pairs contiguously).
    IF n > 1 AND (distinct_keys < n OR duplicate_at <= ANY (sims)) THEN
        FOR i IN 2 .. n LOOP
            row_offset := (i - 1) * (i - 2) / 2;
            IF keys[i] = ANY (keys[1:i - 1]) OR duplicate_at <= ANY (sims[row_offset + 1:row_offset + i - 1]) THEN
                FOR j IN 1 .. i - 1 LOOP
                    IF live[j] AND (keys[i] = keys[j] OR sims[row_offset + j] >= duplicate_at) THEN
                        live[i] := false;
                        collapsed[i] := ids[j];
                        any_collapsed := true;
                        EXIT;
                    END IF;
                END LOOP;
            END IF;
        END LOOP;
    END IF;

    -- the candidates still standing, in pool order (a pass visits only
    -- these: no test per collapsed or picked row); without a duplicate, all
    -- of the pool (the positions read with the vectors)
    IF any_collapsed THEN
        cand := ARRAY(SELECT o.o FROM pg_catalog.generate_series(1, n) AS o (o) WHERE live[o.o] ORDER BY o.o);
    END IF;
    keep := 1 - lambda;
    -- greedy MMR: each pass first raises every remaining candidate's max_sim
    -- by its similarity to the previous pick, then scores it (live: neither
    -- collapsed nor picked)
    -- (GREATEST(max_sim, s) is recall_mmr's "IF s > max_sim THEN max_sim :=
    -- s" in one statement: both compare as float8 does, NaN above all; the
    -- value is recomputed only for a new best: fewer statements per step)
    --
    -- (session 7: a pass that stops at the first candidate whose relevance
    -- term is not above the best value so far, the others catching up on the
    -- picks they missed when a later pass reaches them, gives the same picks
    -- and bits when 0 <= lambda <= 1 and nothing is NaN, but cost more on
    -- the bench's inputs, about +0.1 M instructions per ranking call: the
    -- passes stopped late, and each visit ran three more statements)
    --
    -- (session 9: every pass picks one candidate while any stands, the first
    -- of a pass being taken when best is NULL, so the picks are exactly
    -- LEAST(want, standing candidates): a FOR loop of that many passes, no
    -- pick counter, WHILE test or EXIT test per pass; `live` is read after
    -- the collapse only by explain's last pass, so only explain marks the
    -- picks in it; the pass after the last pick is never started. Same
    -- picks in the same order, same values.)
    target := LEAST(want, pg_catalog.cardinality(cand));
    IF target > 0 THEN
        -- the first pass: every max_sim is still 0, so each value is its
        -- rel (rel - keep * 0, keep finite), and rel never rises along the
        -- pool (the scores are in descending order, NaN first, and x ->
        -- lambda * x / best_score, rounded, never falls with x for a finite
        -- lambda > 0 and best_score > 0, or is NaN for every x when
        -- best_score is): the first standing candidate is the pass's first
        -- best, without a visit of the others. Any other lambda: the pass.
        IF lambda > 0 AND lambda < 'Infinity'::double precision THEN
            best := cand[1];
            best_value := rel[best] - keep * max_sim[best];
        ELSE
            FOREACH i IN ARRAY cand LOOP
                IF best IS NULL OR rel[i] - keep * max_sim[i] > best_value THEN
                    best := i;
                    best_value := rel[i] - keep * max_sim[i];
                END IF;
            END LOOP;
        END IF;
        FOR step IN 1 .. target LOOP
            cand := pg_catalog.array_remove(cand, best);
            ordered_ids := ordered_ids || ids[best];
            IF with_explain THEN
                live[best] := false;
                rank_of[best] := step;
                value_of[best] := best_value;
            END IF;
            EXIT WHEN step = target;
            previous := best;
            previous_offset := (previous - 1) * (previous - 2) / 2;
            best := NULL;
            FOREACH i IN ARRAY cand LOOP
                max_sim[i] := GREATEST(max_sim[i], sims[CASE WHEN i > previous THEN (i - 1) * (i - 2) / 2 + previous
                                                        ELSE previous_offset + i END]);
                IF best IS NULL OR rel[i] - keep * max_sim[i] > best_value THEN
                    best := i;
                    best_value := rel[i] - keep * max_sim[i];
                END IF;
            END LOOP;
        END LOOP;
    END IF;
    -- the rest of the pool, by score: the candidates still standing (cand
    -- holds them, in pool order)
    IF NOT with_explain THEN
        FOREACH i IN ARRAY cand LOOP
            ordered_ids := ordered_ids || ids[i];
        END LOOP;
        RETURN;
    END IF;
    picked_count := GREATEST(target, 0);
    FOREACH i IN ARRAY cand LOOP
        ordered_ids := ordered_ids || ids[i];
        picked_count := picked_count + 1;
        rank_of[i] := picked_count;
    END LOOP;
    -- explain shows max_similarity: the last pick's similarities (when the
    -- loop stopped at `want`, no pass read them)
    IF best IS NOT NULL THEN
        FOR i IN 1..n LOOP
            CONTINUE WHEN NOT live[i];
            s := sims[CASE WHEN i > best THEN (i - 1) * (i - 2) / 2 + best ELSE (best - 1) * (best - 2) / 2 + i END];
            IF s > max_sim[i] THEN
                max_sim[i] := s;
            END IF;
        END LOOP;
    END IF;
    -- recall_mmr's rows (picked in MMR order, the rest by score, the
    -- collapsed last), fed to the aggregate in the order recall_mmr returned them
    SELECT pg_catalog.jsonb_agg(pg_catalog.to_jsonb(m) ORDER BY m.mmr_rank NULLS LAST)
    INTO mmr_rows
    FROM (SELECT ids[o.o] AS evidence_id, doc_ids[o.o] AS document_id, rank_of[o.o] AS mmr_rank,
                 value_of[o.o] AS mmr_value, max_sim[o.o] AS max_similarity, collapsed[o.o] AS collapsed_into
          FROM pg_catalog.generate_series(1, n) AS o (o)
          ORDER BY rank_of[o.o] NULLS LAST, o.o) AS m;
END
$$;
COMMENT ON FUNCTION dm_private.recall_rank(uuid, text, dm_private.recall_fused [], jsonb, jsonb, jsonb, boolean, integer,
    boolean, double precision, double precision) IS
'What recall_run calls: the composite rerank (seed 002 §3, with the neighbouring-turn lift when with_context), duplicate collapse and greedy MMR (seed 002 §7) in one function on arrays. ordered_ids equals the order of recall_mmr(team, recall_rerank(..., with_context), settings, want); with_explain also returns the scored rows (recall_rerank''s) and recall_mmr''s rows as jsonb; want NULL skips MMR. Runs as densemem_searcher.';
ALTER FUNCTION dm_private.recall_rank(uuid, text, dm_private.recall_fused [], jsonb, jsonb, jsonb, boolean, integer, boolean,
    double precision, double precision)
OWNER TO densemem_searcher;
REVOKE ALL ON FUNCTION dm_private.recall_rank(uuid, text, dm_private.recall_fused [], jsonb, jsonb, jsonb, boolean, integer,
    boolean, double precision, double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_rank(uuid, text, dm_private.recall_fused [], jsonb, jsonb, jsonb, boolean, integer,
    boolean, double precision, double precision) TO densemem_app, densemem_analyst, densemem_operator;

-- The composite rerank as a stage of its own (DBAs, tests): recall_rank's
-- scoring without MMR (want NULL), its scored rows as a set in score order.
-- with_context applies the neighbouring-turn lift of recall_context_lift
-- (sql/52) in the same statement; the result equals
-- recall_context_lift(team, rerank(...), settings) bit for bit (a test
-- checks it).
CREATE OR REPLACE FUNCTION dm_private.recall_rerank(team_id uuid, query text, fused dm_private.recall_fused [],
    req jsonb, settings jsonb, hops jsonb, with_context boolean)
RETURNS SETOF dm_private.recall_scored
LANGUAGE sql
STABLE
SET search_path = ''
AS $$
    -- (a function scan of the array: its rows come in the array's order)
    SELECT s.*
    FROM pg_catalog.unnest((dm_private.recall_rank(team_id, query, fused, req, settings, hops, with_context,
                                                   NULL, true)).scored) AS s
$$;
COMMENT ON FUNCTION dm_private.recall_rerank(uuid, text, dm_private.recall_fused [], jsonb, jsonb, jsonb, boolean) IS
'Composite rerank (seed 002 §3): relevance (fusion, phrase, exact terms), recency with per-type half-lives against request.now (sequence fallback), importance, frequency from the usage snapshot, proximity, confidence, bounded support and temporal intent; drops candidates lacking a required anchor; ordered by score then evidence_id. with_context applies the neighbouring-turn lift of recall_context_lift in the same statement. The scoring of dm_private.recall_rank (what recall_memory runs), without MMR.';
-- an invoker function (recall_rank is the SECURITY DEFINER): owned like
-- every other, not by the searcher (this one was the searcher's before)
ALTER FUNCTION dm_private.recall_rerank(uuid, text, dm_private.recall_fused [], jsonb, jsonb, jsonb, boolean)
OWNER TO densemem_owner;
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
