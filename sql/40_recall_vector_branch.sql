-- Recall stage 2b: the vector branch.
--
-- Cosine distance on halfvec, over vectors of the active embedding contract
-- whose document_version and source_version equal the document's (a stale
-- vector never ranks). The access path is chosen by team size, so that the
-- branch returns what the exact oracle returns:
--
--   exact         a team without its own index: the team's vectors are read
--                 through the (team_id, ...) primary key and sorted exactly.
--                 Correct for every team; fast while the team is small.
--   hnsw_partial  a team registered in dm_private.team_vector_indexes has a
--                 partial HNSW index WHERE team_id = <team> AND contract_id =
--                 <contract> (dm.refresh_vector_indexes builds them). The
--                 query is built with those literals so the planner can match
--                 the partial predicate; iterative scans (relaxed order, then
--                 an exact re-sort) keep pulling when eligibility filters
--                 rows out. A shared HNSW index over all teams is avoided on
--                 purpose: filtering after the scan starves small teams.
--                 A filtered request whose filters keep few of the team's
--                 documents (one bounded index count, see below) ranks those
--                 documents exactly instead: the walk would read many rows
--                 for little, and miss some of the exact nearest.
--
-- Planner settings are attached to the function (SET clauses), never SET
-- LOCAL: they hold inside the call and are restored after it, with or
-- without an explicit transaction or a transaction-mode pooler.
--
-- plan_cache_mode = force_generic_plan: the exact path's statements are
-- otherwise planned again on every call (their custom plans, with the
-- eligibility NULLs folded, always look cheaper than the generic one), which
-- cost more CPU than running them for a small team (0.65 ms of 1.45 per call
-- on a 84-row team, bench DB). The generic plan is the same shape (the
-- team's primary-key range, a sort, a key join to the documents) and the
-- result is fully ordered by (distance, evidence_id), so the rows are the
-- same. The HNSW path needs the team as a constant (a custom plan of static
-- SQL for 384 dimensions, EXECUTE with literals otherwise): it sets
-- force_custom_plan around its statement. enable_seqscan = off: that
-- one plan serves every team of the session, and a generic estimate of a
-- team's share of the table (one over the number of teams) would, with few
-- teams, make scanning every team's vectors look cheaper than the team's
-- key range; a small team must never pay for a large one.

-- Session 17: every hit carries the heap address (ctid) at which its
-- statement read the hit's document (the walk's join, the eligible or prefix
-- rows): the ranking fetches the document there, without an index (migration
-- 0094).

-- Loads pgvector's library so that the hnsw.* settings below are known.
SELECT '[1]'::public.vector IS NOT NULL AS vector_loaded;

-- The access path the vector branch takes for a team and the active contract.
CREATE OR REPLACE FUNCTION dm_private.recall_vector_access_path(team_id uuid)
RETURNS TABLE (access_path text, index_name name, contract_id integer, dimensions integer)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = ''
AS $$
DECLARE
    team constant uuid := dm_private.require_team(recall_vector_access_path.team_id);
BEGIN
    RETURN QUERY
        SELECT CASE WHEN tvi.index_name IS NULL THEN 'exact' ELSE 'hnsw_partial' END,
               tvi.index_name, c.contract_id, c.dimensions
        FROM dm_private.embedding_contracts AS c
        LEFT JOIN dm_private.team_vector_indexes AS tvi
            ON tvi.team_id = team AND tvi.contract_id = c.contract_id
        WHERE c.is_active;
END
$$;
COMMENT ON FUNCTION dm_private.recall_vector_access_path(uuid) IS
'How the vector branch reaches this team''s vectors: exact (no own index) or hnsw_partial (the team''s partial HNSW index), with the active contract and its dimensions. No row when no contract is active.';
ALTER FUNCTION dm_private.recall_vector_access_path(uuid) OWNER TO densemem_searcher;
REVOKE ALL ON FUNCTION dm_private.recall_vector_access_path(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_vector_access_path(uuid)
TO densemem_app, densemem_analyst, densemem_operator;

-- The SQL text of the vector branch for one access path. Exposed so that a
-- DBA (and the EXPLAIN tests) can see and EXPLAIN exactly what runs.
-- Parameters: $1 query halfvec, $2 candidate cap, $3 valid_at, $4 known_at,
-- $5 scopes, $6 source groups (NULL: any), $7 memory types (NULL: any),
-- $8 created_after, $9 created_before, $10 has_window, $11 window_from,
-- $12 window_to, $13 known evidence ids, $14 disabled owner profiles,
-- $15 exact prefix (the nearest $15 vectors are checked first; NULL: all).
CREATE OR REPLACE FUNCTION dm_private.recall_vector_sql(team_id uuid, contract_id integer, dimensions integer,
    access_path text)
RETURNS text
LANGUAGE plpgsql
IMMUTABLE
SET search_path = ''
AS $$
DECLARE
    distance_expr text;
    eligibility constant text := $elig$
          AND d.subject_kind = 'evidence'
          AND d.is_recallable
          AND d.owner_profile_id <> ALL ($14)
          AND (d.valid_from IS NULL OR d.valid_from <= $3)
          AND (d.valid_to IS NULL OR d.valid_to > $3)
          AND (d.known_from IS NULL OR d.known_from <= $4)
          AND (d.known_to IS NULL OR d.known_to > $4)
          AND d.policy_labels <@ $5
          AND ($6 IS NULL OR d.source_group = ANY ($6))
          AND ($7 IS NULL OR d.memory_type::text = ANY ($7))
          AND ($8 IS NULL OR d.source_created_at >= $8)
          AND ($9 IS NULL OR d.source_created_at < $9)
          AND (NOT $10 OR (d.source_created_at IS NOT NULL
                           AND ($11 IS NULL OR d.source_created_at >= $11)
                           AND ($12 IS NULL OR d.source_created_at <= $12)))
          AND d.subject_id <> ALL ($13)
    $elig$;
BEGIN
    IF access_path = 'hnsw_partial' THEN
        distance_expr := pg_catalog.format('((e.embedding)::public.halfvec(%s) OPERATOR(public.<=>) $1)', dimensions);
        -- relaxed_order returns approximately ordered rows: take them in a
        -- materialised CTE, then sort exactly. The iterative scan keeps
        -- pulling index rows while the join and eligibility filter them out.
        -- The exact sort is on distance + 0 (session 13): PostgreSQL 17+
        -- carries the CTE's ORDER BY distance up to the outer query, which
        -- then sorted only within runs of equal distance (an Incremental
        -- Sort, presorted on distance), so a walk's hits were not always in
        -- distance order; an expression on the distance is a key the
        -- planner cannot take as presorted (pgvector's README does the same).
        RETURN pg_catalog.format($sql$
    WITH nearest AS MATERIALIZED (
        SELECT d.document_id, d.subject_id, d.ctid AS row_tid, %1$s AS distance
        FROM dm_private.document_embeddings AS e
        JOIN dm_private.search_documents AS d ON d.team_id = e.team_id AND d.document_id = e.document_id
        WHERE e.team_id = %2$L::uuid AND e.contract_id = %3$s AND d.team_id = %2$L::uuid
          AND d.document_version = e.document_version
          AND d.source_version = e.source_version
          %4$s
        ORDER BY %1$s
        LIMIT $2)
    SELECT 'vector'::text AS branch, n.document_id, n.subject_id AS evidence_id,
           (pg_catalog.row_number() OVER (ORDER BY n.distance OPERATOR(pg_catalog.+) 0, n.subject_id))::integer AS branch_rank,
           n.distance::double precision AS branch_score, n.row_tid
    FROM nearest AS n
    ORDER BY n.distance OPERATOR(pg_catalog.+) 0, n.subject_id$sql$, distance_expr, team_id, contract_id, eligibility);
    END IF;
    -- Exact: the team's nearest $15 vectors by distance alone (one range of
    -- the primary key), then the version match and eligibility on those.
    -- When that leaves fewer than $2, the caller runs it again with $15 NULL
    -- (every vector of the team), so the result is always the exact top $2.
    RETURN pg_catalog.format($sql$
    WITH nearest AS MATERIALIZED (
        SELECT e.document_id, e.document_version, e.source_version, e.embedding OPERATOR(public.<=>) $1 AS distance
        FROM dm_private.document_embeddings AS e
        WHERE e.team_id = %1$L::uuid AND e.contract_id = %2$s
        ORDER BY distance
        LIMIT $15),
    scored AS (
        SELECT d.document_id, d.subject_id, d.ctid AS row_tid, n.distance
        FROM nearest AS n
        JOIN dm_private.search_documents AS d ON d.team_id = %1$L::uuid AND d.document_id = n.document_id
        WHERE d.document_version = n.document_version
          AND d.source_version = n.source_version
          %3$s
        ORDER BY n.distance, d.subject_id
        LIMIT $2)
    SELECT 'vector'::text AS branch, s.document_id, s.subject_id AS evidence_id,
           (pg_catalog.row_number() OVER (ORDER BY s.distance, s.subject_id))::integer AS branch_rank,
           s.distance::double precision AS branch_score, s.row_tid
    FROM scored AS s
    ORDER BY s.distance, s.subject_id$sql$, team_id, contract_id, eligibility);
END
$$;
COMMENT ON FUNCTION dm_private.recall_vector_sql(uuid, integer, integer, text) IS
'The vector branch query for one team, contract and access path (exact or hnsw_partial), with the eligibility and version-match predicates. Parameters: $1 query halfvec, $2 cap, $3..$14 the typed eligibility values, $15 the exact prefix.';
REVOKE ALL ON FUNCTION dm_private.recall_vector_sql(uuid, integer, integer, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_vector_sql(uuid, integer, integer, text)
TO densemem_app, densemem_analyst, densemem_operator, densemem_searcher;

-- Vector hits of one team: nearest eligible evidence by cosine distance,
-- top candidates.vector, one per evidence, as the array recall_run holds
-- them (in branch_rank order). force_path 'exact' is the exact oracle the
-- benchmark and tests compare against. Raises DM503 when no contract is
-- active or the query vector has the wrong dimensions (recall_memory turns
-- that into a recorded degradation when the branch is optional).
-- Session 12: every path below already builds the hits as an array; the
-- function returns it, and recall_run assigns it (an expression). It used
-- to return a set (RETURN QUERY over the unnested array: a tuplestore of
-- the hits) that recall_run packed into an array again with a statement of
-- its own (ARRAY(SELECT ...): a function scan and a composite per hit).
-- recall_vector_candidates (below) is the set form for DBAs, tests and the
-- benchmark's oracle.
CREATE OR REPLACE FUNCTION dm_private.recall_vector_hits(team_id uuid, query_embedding public.vector, req jsonb,
    settings jsonb, force_path text DEFAULT NULL)
RETURNS dm_private.recall_branch_hit []
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = ''
SET hnsw.ef_search = 200
SET hnsw.iterative_scan = 'relaxed_order'
SET hnsw.max_scan_tuples = 20000
SET enable_sort = on
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
-- Index scans stay on for the statements every call runs (session 15: the
-- access-path statement's four one-row look-ups were planned as bitmap heap
-- scans, a bitmap and a TID bitmap each, under the former off here); the
-- exact path turns them off for its own statements (below).
SET enable_indexscan = on
SET enable_material = on
SET enable_hashjoin = on
SET enable_mergejoin = on
SET max_parallel_workers_per_gather = 0
AS $$
DECLARE
    team constant uuid := dm_private.require_team(recall_vector_hits.team_id);
    cap integer := COALESCE((settings #>> '{candidates,vector}')::integer, 100);
    chosen record;
    path text;
    statement text;
    setting text;
    q public.halfvec;
    hits dm_private.recall_branch_hit [];
    valid_at timestamptz;
    known_at timestamptz;
    created_after timestamptz;
    created_before timestamptz;
    has_window boolean;
    window_from timestamptz;
    window_to timestamptz;
    window_is_small boolean := false;
    window_lower timestamptz;
    window_upper timestamptz;
    filtered boolean;
    time_bounded boolean;
    created_lower timestamptz;
    created_upper timestamptz;
    type_values dm_private.memory_type [];
    few_enough boolean := false;
    prefix integer;
    prefix_last double precision;
    eligible_first_bound numeric;
    scopes text [];
    source_groups text [];
    memory_types text [];
    known_ids uuid [] := '{}';
    -- the team's profiles that are not active (read by the access-path
    -- statement below: one statement less per call)
    disabled uuid [];
BEGIN
    IF force_path IS NOT NULL AND force_path NOT IN ('exact', 'hnsw_partial') THEN
        RAISE EXCEPTION 'force_path must be exact or hnsw_partial' USING ERRCODE = '22023';
    END IF;
    -- dm_private.recall_vector_access_path's query, inline (one function
    -- call and its result set fewer per recall)
    SELECT CASE WHEN tvi.index_name IS NULL THEN 'exact' ELSE 'hnsw_partial' END AS access_path,
           tvi.index_name, tvi.vector_count, c.contract_id, c.dimensions, w.proname AS walk_function,
           ARRAY(SELECT p.profile_id FROM dm_private.profiles AS p
                 WHERE p.team_id = team AND p.state <> 'active') AS disabled
    INTO chosen
    FROM dm_private.embedding_contracts AS c
    LEFT JOIN dm_private.team_vector_indexes AS tvi ON tvi.team_id = team AND tvi.contract_id = c.contract_id
    -- the team's walk function (dm_private.recall_vector_define_walk), when defined
    LEFT JOIN pg_catalog.pg_proc AS w
        ON w.proname = tvi.index_name OPERATOR(pg_catalog.||) '_walk'
       AND w.pronamespace = 'dm_private'::regnamespace
    WHERE c.is_active;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no active embedding contract' USING ERRCODE = 'DM503';
    END IF;
    disabled := chosen.disabled;
    IF query_embedding IS NULL THEN
        RAISE EXCEPTION 'no query embedding' USING ERRCODE = 'DM503';
    END IF;
    IF public.vector_dims(query_embedding) <> chosen.dimensions THEN
        RAISE EXCEPTION 'query embedding has % dimensions; the active contract has %',
            public.vector_dims(query_embedding), chosen.dimensions
            USING ERRCODE = 'DM503', HINT = 'embed the query with the active embedding contract';
    END IF;
    path := COALESCE(force_path, chosen.access_path);
    IF path = 'hnsw_partial' AND chosen.index_name IS NULL THEN
        RAISE EXCEPTION 'this team has no partial HNSW index' USING ERRCODE = '22023';
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
    q := query_embedding::public.halfvec;
    valid_at := (req ->> 'valid_at')::timestamptz;
    known_at := (req ->> 'known_at')::timestamptz;
    created_after := (req ->> 'created_after')::timestamptz;
    created_before := (req ->> 'created_before')::timestamptz;
    has_window := COALESCE((req ->> 'has_window')::boolean, false);
    window_from := (req ->> 'window_from')::timestamptz;
    window_to := (req ->> 'window_to')::timestamptz;
    -- dm_private.authenticated_scopes()'s expression (an assignment, where
    -- the call ran that SQL function's statement through the executor)
    scopes := COALESCE(
        pg_catalog.array_remove(
            pg_catalog.string_to_array(
                pg_catalog.replace(COALESCE(pg_catalog.current_setting('densemem.scopes', true), ''), ' ', ''), ','),
            ''),
        '{}'::text []);
    filtered := source_groups IS NOT NULL OR memory_types IS NOT NULL
                OR created_after IS NOT NULL OR created_before IS NOT NULL OR has_window;
    -- A filtered request on a team with its own HNSW index (the default
    -- path only: force_path => 'hnsw_partial' always walks): when the
    -- documents its filters can keep are few, rank exactly those documents'
    -- vectors instead of walking the index. The walk drops every row a filter
    -- rejects, so a filter that keeps little makes it read up to
    -- max_scan_tuples index rows (120-450 ms on the 1M bench's 10k+ teams
    -- for a day's window or a source group that matches nothing, against
    -- 4-15 ms unfiltered) and still miss some of the exact nearest (recall
    -- 0.46-0.98). Decided by one bounded index-only count on
    -- search_documents_filter_idx (migration 0051) or, for a time bound
    -- alone, search_documents_created_at_idx (0026): M, the documents
    -- matching the memory types, source groups and creation bounds (an
    -- upper bound of the eligible set). The eligible-first statement costs
    -- about a x M, the walk about b x cap x N / M (it reads index rows until
    -- cap of them pass the filters, and a fraction M / N pass), N the team's
    -- vectors when its index was built (team_vector_indexes.vector_count; a
    -- team that grew since gets a lower bound, so more walks, never fewer).
    -- So: eligible first when M^2 < k x cap x N, k the search-index profile's
    -- index.hnsw.eligible_first_factor (default 3: on 252 filtered calls of
    -- the 1M bench's 10k+ teams it picked the faster statement in all but
    -- 2, and a fixed bound on M in 18 or more; docs/RECALL.md, vector branch
    -- session 7b). The eligible-first statement is the exact oracle's answer
    -- by construction (the same distance expression and order as force_path
    -- => 'exact'). Custom plans for both (the NULL filters fold away and
    -- what is left is an index range); index scans on (the SET clause) for
    -- the index-only count.
    IF path = 'hnsw_partial' AND force_path IS NULL AND filtered THEN
        -- (a negative factor counts as 0, always walk: the bounded count
        -- below takes its square root)
        eligible_first_bound := GREATEST(COALESCE((settings #>> '{index,hnsw,eligible_first_factor}')::numeric, 3), 0)
                                * cap * COALESCE(chosen.vector_count, 0);
        time_bounded := created_after IS NOT NULL OR created_before IS NOT NULL OR has_window;
        -- GREATEST and LEAST ignore NULLs: the tightest of the request's
        -- bounds, a superset of what the exact predicates below keep
        created_lower := COALESCE(GREATEST(created_after, CASE WHEN has_window THEN window_from END),
                                  '-infinity'::timestamptz);
        created_upper := COALESCE(LEAST(created_before, CASE WHEN has_window THEN window_to END),
                                  'infinity'::timestamptz);
        -- the requested types as enum values, so that the index can use them
        IF memory_types IS NOT NULL THEN
            type_values := ARRAY(SELECT v FROM pg_catalog.unnest(pg_catalog.enum_range(NULL::dm_private.memory_type)) AS v
                                 WHERE v::text = ANY (memory_types));
        END IF;
        setting := pg_catalog.set_config('plan_cache_mode', 'force_custom_plan', true);
        SELECT pg_catalog.count(*)::numeric ^ 2 < eligible_first_bound
        INTO few_enough
        FROM (SELECT 1 FROM dm_private.search_documents AS d
              WHERE d.team_id = team AND d.subject_kind = 'evidence'
                AND (type_values IS NULL OR d.memory_type = ANY (type_values))
                AND (source_groups IS NULL OR d.source_group = ANY (source_groups))
                AND (NOT time_bounded OR (d.source_created_at >= created_lower
                                          AND d.source_created_at <= created_upper))
              LIMIT pg_catalog.ceil(pg_catalog.sqrt(eligible_first_bound))::bigint) AS x;
        IF few_enough THEN
            -- the exact path's eligible-first statement, with the index
            -- conditions above added (implied by the exact predicates)
            WITH eligible AS MATERIALIZED (
                SELECT d.document_id, d.subject_id, d.document_version, d.source_version, d.ctid AS row_tid
                FROM dm_private.search_documents AS d
                WHERE d.team_id = team
                  AND d.subject_kind = 'evidence'
                  AND (type_values IS NULL OR d.memory_type = ANY (type_values))
                  AND (NOT time_bounded OR (d.source_created_at >= created_lower
                                            AND d.source_created_at <= created_upper))
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
                  AND d.subject_id <> ALL (known_ids)),
            scored AS (
                SELECT el.document_id, el.subject_id, el.row_tid, e.embedding OPERATOR(public.<=>) q AS distance
                FROM eligible AS el
                JOIN dm_private.document_embeddings AS e
                  ON e.team_id = team AND e.document_id = el.document_id AND e.contract_id = chosen.contract_id
                WHERE e.document_version = el.document_version
                  AND e.source_version = el.source_version
                ORDER BY distance, el.subject_id
                LIMIT cap)
            SELECT ARRAY(
                       SELECT ROW('vector', s.document_id, s.subject_id,
                                  (pg_catalog.row_number() OVER (ORDER BY s.distance, s.subject_id))::integer,
                                  s.distance::double precision, s.row_tid)::dm_private.recall_branch_hit
                       FROM scored AS s
                       ORDER BY s.distance, s.subject_id)
            INTO hits;
            path := 'eligible_first';
        END IF;
        setting := pg_catalog.set_config('plan_cache_mode', 'force_generic_plan', true);
    END IF;
    -- The index settings and the sort switch matter only to the HNSW walk
    -- (the exact path runs with the SET clauses' defaults). Assignments, not
    -- PERFORM: a simple expression, not a statement per setting.
    IF path = 'hnsw_partial' THEN
        -- The walk's candidate list: hnsw.ef_search_filtered when the
        -- request filters by source group, memory type, creation time or a
        -- time window (the walk must pass over the rows those filters reject,
        -- and its recall against the exact oracle drops with a shorter list:
        -- two memory types on the 1M bench's 10k+ teams 0.950 at 150 against
        -- 0.965 at 200), else hnsw.ef_search (search-index profile v2, 0050:
        -- 200 and 150; unfiltered recall@50 0.9999 at either on the bench; a
        -- profile without ef_search_filtered uses ef_search for both). Never
        -- below the cap. Known evidence ids are not a filter here: they remove at
        -- most 200 rows the walk passes anyway.
        setting := pg_catalog.set_config('hnsw.ef_search',
            GREATEST(COALESCE(CASE WHEN source_groups IS NOT NULL OR memory_types IS NOT NULL
                                        OR created_after IS NOT NULL OR created_before IS NOT NULL OR has_window
                                   THEN (settings #>> '{index,hnsw,ef_search_filtered}')::integer END,
                              (settings #>> '{index,hnsw,ef_search}')::integer, 200), cap)::text, true);
        setting := pg_catalog.set_config('hnsw.max_scan_tuples',
            COALESCE((settings #>> '{index,hnsw,max_scan_tuples}')::integer, 20000)::text, true);
        -- The planner switches below matter only where this function plans
        -- the walk itself (no walk function: the static 384-dimension
        -- statement or EXECUTE). A team's walk function carries the same
        -- five as SET clauses, and its one plan is made under them, so
        -- setting them here first changed nothing (session 14: five
        -- set_config calls fewer per recall on a team with its own index).
        IF chosen.walk_function IS NULL THEN
            -- A join and filters shrink the planner's row estimate until sorting the
            -- team's vectors looks cheaper than walking the index; for a team that
            -- has its own index the walk is the intended path (restored on exit by
            -- the SET clause above).
            setting := pg_catalog.set_config('enable_sort', 'off', true);
            -- The walk itself is an index scan. And the join to the documents
            -- probes the primary key once per walked vector: the planner's
            -- estimate of a team it holds no statistics for made it materialise
            -- the team's documents and test every pair instead (Nested Loop over
            -- Materialize: 200-350 ms instead of 3-20 ms for one 11,132-row team
            -- of the 1M bench); a hash or merge join would read the whole team
            -- too. Same rows in the same order: the walk's order decides.
            setting := pg_catalog.set_config('enable_material', 'off', true);
            setting := pg_catalog.set_config('enable_hashjoin', 'off', true);
            setting := pg_catalog.set_config('enable_mergejoin', 'off', true);
        END IF;
    END IF;
    IF path = 'exact' THEN
        -- No Materialize in the exact path's generic plans: since 0063 a
        -- generic plan's estimate of one team's vectors is the sum over the
        -- 16 hash partitions (about 16 times the team), and the prefix
        -- statement then joined its nearest rows to the team's documents in
        -- a Nested Loop over a Materialize of every eligible document
        -- (101-1k bucket of the 1M bench: +5 M instructions per recall);
        -- without it the join is hashed. Same rows, fully ordered.
        setting := pg_catalog.set_config('enable_material', 'off', true);
        -- The exact path reads a team's vectors through a bitmap of its
        -- primary-key range (pages in order, each read once) rather than an
        -- index scan (a heap fetch per vector): 1.4 ms less CPU per call for
        -- teams of 1,000-10,000 vectors on the 1M bench. Set before its
        -- statements are first planned, so their cached plans are made
        -- under it (as under the former SET clause).
        setting := pg_catalog.set_config('enable_indexscan', 'off', true);
        -- A time window that holds fewer than 4 x cap of the team's evidence
        -- documents (a parsed "in June", "last week": pass 1 of a recall)
        -- goes straight to the eligible-first statement below, which
        -- computes a distance for those documents only. The nearest-prefix
        -- statement would compute and sort the distance of every vector of
        -- the team and then keep few of them, and the eligible-first
        -- statement would run after it anyway. Both statements return the
        -- exact nearest eligible rows ordered by (distance, evidence id).
        -- The bounds are plain variables so that the count is one range of
        -- search_documents_created_at_idx (migration 0026).
        IF has_window THEN
            window_lower := COALESCE(window_from, '-infinity'::timestamptz);
            window_upper := COALESCE(window_to, 'infinity'::timestamptz);
            SELECT pg_catalog.count(*) < cap * 4 INTO window_is_small
            FROM (SELECT 1 FROM dm_private.search_documents AS d
                  WHERE d.team_id = team AND d.subject_kind = 'evidence'
                    AND d.source_created_at >= window_lower
                    AND d.source_created_at <= window_upper
                  LIMIT cap * 4) AS x;
        END IF;
        IF NOT window_is_small THEN
            -- Static SQL (a cached plan; no literal is needed since no partial
            -- index is involved). First the nearest prefix vectors by distance
            -- alone (4 x cap; the same statement recall_vector_sql shows). Only
            -- when eligibility left fewer than cap of them (a time window,
            -- filters, many known ids) and the prefix was full, the eligible
            -- documents first and the distance of their vectors only (below):
            -- the same rows in the same order as sorting every vector of the
            -- team, without computing and sorting the distances of documents
            -- the filters reject (a window that matches few turns costs a few
            -- distances, not the team's).
            --
            -- An unfiltered request (known ids aside) first takes a shorter
            -- prefix, cap + cap / 4 + (known ids) vectors: every vector of the
            -- team is still read and its distance computed, but the top-N sort
            -- keeps a smaller heap (callgrind on the HTTP bench's 2,760-vector
            -- LoCoMo team: docs/RECALL.md, vector branch session 8). Its answer
            -- is kept only when provably the exact one: the team has fewer
            -- vectors than the prefix (all were ranked), or cap rows survived
            -- and the cap-th is strictly nearer than the prefix's farthest
            -- vector (every vector at least as near as the cap-th is then in
            -- the prefix, so these are the exact top cap, the rows the 4 x cap
            -- prefix gives). Otherwise the statement runs again with 4 x cap.
            -- The prefix's last (farthest) distance comes from the same
            -- statement, NULL when the team has fewer vectors than the prefix
            -- (one more read of the materialised prefix; one statement, one
            -- plan for both sizes). It also replaces the separate count of
            -- the 4 x cap prefix the eligible-first condition used.
            --
            --
            -- Session 13: the short prefix (unfiltered requests) probes each
            -- prefix vector's document by key: a LATERAL subquery, kept apart
            -- by OFFSET 0, so the probes run in distance order and stop once
            -- cap rows are eligible (about 101 probes). As a plain join the
            -- generic plan (the team's documents estimated at one row) read
            -- every document of the team and hashed it to match the 125
            -- prefix rows: 1.45 M of a 3.68 M call on the 1M bench's 101-1k
            -- bucket. Its eligibility is the other statement's without the
            -- filter predicates, which an unfiltered request makes true. The
            -- 4 x cap prefix (filters, or the short prefix's answer not
            -- provably exact) keeps the hashed join: under a filter the probes
            -- would run up to 4 x cap times (a bitmap probe each, about 8 k
            -- instructions, since enable_indexscan is off here) and cost more
            -- than reading the team's documents once (one memory type +16 %,
            -- an unknown source group +33 % per call, measured). Same rows,
            -- same order either way.
            prefix := cap * 4;
            IF NOT filtered AND cap + cap / 4 + pg_catalog.cardinality(known_ids) < cap * 4 THEN
                prefix := cap + cap / 4 + pg_catalog.cardinality(known_ids);
            END IF;
            LOOP
                IF prefix < cap * 4 THEN
                    -- an unfiltered request's short prefix (no filter predicates to test)
                    WITH nearest AS MATERIALIZED (
                        SELECT e.document_id, e.document_version, e.source_version,
                               e.embedding OPERATOR(public.<=>) q AS distance
                        FROM dm_private.document_embeddings AS e
                        WHERE e.team_id = team AND e.contract_id = chosen.contract_id
                        ORDER BY distance
                        LIMIT prefix),
                    scored AS (
                        SELECT d.document_id, d.subject_id, d.row_tid, n.distance
                        FROM nearest AS n
                        CROSS JOIN LATERAL (
                            SELECT d.document_id, d.subject_id, d.ctid AS row_tid
                            FROM dm_private.search_documents AS d
                            WHERE d.team_id = team AND d.document_id = n.document_id
                              AND d.document_version = n.document_version
                              AND d.source_version = n.source_version
                              AND d.subject_kind = 'evidence'
                              AND d.is_recallable
                              AND d.owner_profile_id <> ALL (disabled)
                              AND (d.valid_from IS NULL OR d.valid_from <= valid_at)
                              AND (d.valid_to IS NULL OR d.valid_to > valid_at)
                              AND (d.known_from IS NULL OR d.known_from <= known_at)
                              AND (d.known_to IS NULL OR d.known_to > known_at)
                              AND d.policy_labels <@ scopes
                              AND d.subject_id <> ALL (known_ids)
                            OFFSET 0) AS d
                        ORDER BY n.distance, d.subject_id
                        LIMIT cap)
                    SELECT ARRAY(
                               SELECT ROW('vector', s.document_id, s.subject_id,
                                          (pg_catalog.row_number() OVER (ORDER BY s.distance, s.subject_id))::integer,
                                          s.distance::double precision, s.row_tid)::dm_private.recall_branch_hit
                               FROM scored AS s
                               ORDER BY s.distance, s.subject_id),
                           (SELECT n.distance FROM nearest AS n OFFSET prefix - 1 LIMIT 1)
                    INTO hits, prefix_last;
                ELSE
                    WITH nearest AS MATERIALIZED (
                        SELECT e.document_id, e.document_version, e.source_version,
                               e.embedding OPERATOR(public.<=>) q AS distance
                        FROM dm_private.document_embeddings AS e
                        WHERE e.team_id = team AND e.contract_id = chosen.contract_id
                        ORDER BY distance
                        LIMIT prefix),
                    scored AS (
                        SELECT d.document_id, d.subject_id, d.ctid AS row_tid, n.distance
                        FROM nearest AS n
                        JOIN dm_private.search_documents AS d ON d.team_id = team AND d.document_id = n.document_id
                        WHERE d.document_version = n.document_version
                          AND d.source_version = n.source_version
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
                        ORDER BY n.distance, d.subject_id
                        LIMIT cap)
                    SELECT ARRAY(
                               SELECT ROW('vector', s.document_id, s.subject_id,
                                          (pg_catalog.row_number() OVER (ORDER BY s.distance, s.subject_id))::integer,
                                          s.distance::double precision, s.row_tid)::dm_private.recall_branch_hit
                               FROM scored AS s
                               ORDER BY s.distance, s.subject_id),
                           (SELECT n.distance FROM nearest AS n OFFSET prefix - 1 LIMIT 1)
                    INTO hits, prefix_last;
                END IF;
                EXIT WHEN prefix = cap * 4;
                EXIT WHEN COALESCE(prefix_last IS NULL
                                   OR (pg_catalog.cardinality(hits) = cap AND (hits[cap]).branch_score < prefix_last),
                                   false);
                prefix := cap * 4;
            END LOOP;
        END IF;
        IF window_is_small OR (pg_catalog.cardinality(hits) < cap AND prefix_last IS NOT NULL) THEN
            WITH eligible AS MATERIALIZED (
                SELECT d.document_id, d.subject_id, d.document_version, d.source_version, d.ctid AS row_tid
                FROM dm_private.search_documents AS d
                WHERE d.team_id = team
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
                  AND d.subject_id <> ALL (known_ids)),
            scored AS (
                SELECT el.document_id, el.subject_id, el.row_tid, e.embedding OPERATOR(public.<=>) q AS distance
                FROM eligible AS el
                JOIN dm_private.document_embeddings AS e
                  ON e.team_id = team AND e.document_id = el.document_id AND e.contract_id = chosen.contract_id
                WHERE e.document_version = el.document_version
                  AND e.source_version = el.source_version
                ORDER BY distance, el.subject_id
                LIMIT cap)
            SELECT ARRAY(
                       SELECT ROW('vector', s.document_id, s.subject_id,
                                  (pg_catalog.row_number() OVER (ORDER BY s.distance, s.subject_id))::integer,
                                  s.distance::double precision, s.row_tid)::dm_private.recall_branch_hit
                       FROM scored AS s
                       ORDER BY s.distance, s.subject_id)
            INTO hits;
        END IF;
    ELSIF path = 'eligible_first' THEN
        NULL;  -- ranked above
    ELSIF chosen.walk_function IS NOT NULL THEN
        -- The team's own walk function: the statement below with the team
        -- and contract written in as literals, in a function of its own
        -- (LANGUAGE sql since session 11: nothing to compile on a team's
        -- first call) that keeps one generic plan per session (the literals match the
        -- partial index without a custom plan). Planning the statement on
        -- every call cost about 1.5 M instructions of a 6.6 M call on the 1M
        -- bench's 10k+ teams, growing with the number of partial indexes on
        -- document_embeddings (the planner tests every index's predicate).
        -- Same statement, same walk, same rows (docs/RECALL.md, vector branch
        -- session 8). Owned by densemem_searcher, executable by nobody else.
        EXECUTE pg_catalog.format('SELECT dm_private.%I($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)',
                                  chosen.walk_function)
            INTO hits
            USING q, cap, valid_at, known_at, scopes, source_groups, memory_types, created_after, created_before,
                  has_window, window_from, window_to, known_ids, disabled;
    ELSIF chosen.dimensions = 384 THEN
        -- The HNSW path for the 384-dimension contract (the index
        -- expression's typmod is part of the statement): recall_vector_sql's
        -- statement written out as static SQL and planned as a custom plan,
        -- where the team and contract are constants, so the planner matches
        -- the team's partial index as with EXECUTE's literals, without
        -- building, parsing and analysing the statement text on every call
        -- (about 0.7 M instructions of a 7.8 M call on the 1M bench's large
        -- teams). Same plan, same rows.
        setting := pg_catalog.set_config('plan_cache_mode', 'force_custom_plan', true);
        SELECT pg_catalog.array_agg(ROW(h.branch, h.document_id, h.evidence_id, h.branch_rank, h.branch_score,
                                        h.row_tid)::dm_private.recall_branch_hit ORDER BY h.branch_rank)
        INTO hits
        FROM (
            WITH nearest AS MATERIALIZED (
                SELECT d.document_id, d.subject_id, d.ctid AS row_tid,
                       ((e.embedding)::public.halfvec(384) OPERATOR(public.<=>) q) AS distance
                FROM dm_private.document_embeddings AS e
                JOIN dm_private.search_documents AS d ON d.team_id = e.team_id AND d.document_id = e.document_id
                WHERE e.team_id = team AND e.contract_id = chosen.contract_id AND d.team_id = team
                  AND d.document_version = e.document_version
                  AND d.source_version = e.source_version
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
                ORDER BY ((e.embedding)::public.halfvec(384) OPERATOR(public.<=>) q)
                LIMIT cap)
            SELECT 'vector'::text AS branch, n.document_id, n.subject_id AS evidence_id,
                   (pg_catalog.row_number() OVER (ORDER BY n.distance OPERATOR(pg_catalog.+) 0, n.subject_id))::integer AS branch_rank,
                   n.distance::double precision AS branch_score, n.row_tid
            FROM nearest AS n
            ORDER BY n.distance OPERATOR(pg_catalog.+) 0, n.subject_id) AS h;
        setting := pg_catalog.set_config('plan_cache_mode', 'force_generic_plan', true);
    ELSE
        statement := dm_private.recall_vector_sql(team, chosen.contract_id, chosen.dimensions, path);
        EXECUTE 'SELECT pg_catalog.array_agg(ROW(h.branch, h.document_id, h.evidence_id, h.branch_rank, h.branch_score, '
                'h.row_tid)'
                '::dm_private.recall_branch_hit ORDER BY h.branch_rank) FROM (' || statement || ') AS h'
            INTO hits
            USING q, cap, valid_at, known_at, scopes, source_groups, memory_types, created_after, created_before,
                  has_window, window_from, window_to, known_ids, disabled, NULL::bigint;
    END IF;
    RETURN COALESCE(hits, '{}');
END
$$;
COMMENT ON FUNCTION dm_private.recall_vector_hits(uuid, public.vector, jsonb, jsonb, text) IS
'Vector branch: nearest eligible evidence by cosine distance over version-matched vectors of the active contract, as an array in branch_rank order; exact scan or the team''s partial HNSW index (iterative scan). force_path => ''exact'' is the oracle. DM503 when no contract is active or dimensions differ. Runs as densemem_searcher.';
ALTER FUNCTION dm_private.recall_vector_hits(uuid, public.vector, jsonb, jsonb, text) OWNER TO densemem_searcher;
REVOKE ALL ON FUNCTION dm_private.recall_vector_hits(uuid, public.vector, jsonb, jsonb, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_vector_hits(uuid, public.vector, jsonb, jsonb, text)
TO densemem_app, densemem_analyst, densemem_operator;

-- The vector branch as a set (one row per hit, in branch_rank order): what
-- a DBA, the tests and the benchmark's exact oracle query. The same hits as
-- dm_private.recall_vector_hits, which checks the team and runs as
-- densemem_searcher; this wrapper runs as its caller and adds nothing.
CREATE OR REPLACE FUNCTION dm_private.recall_vector_candidates(team_id uuid, query_embedding public.vector, req jsonb,
    settings jsonb, force_path text DEFAULT NULL)
RETURNS SETOF dm_private.recall_branch_hit
LANGUAGE sql
STABLE
SET search_path = ''
AS $$
    SELECT h.*
    FROM pg_catalog.unnest(dm_private.recall_vector_hits(team_id, query_embedding, req, settings, force_path)) AS h
$$;
COMMENT ON FUNCTION dm_private.recall_vector_candidates(uuid, public.vector, jsonb, jsonb, text) IS
'Vector branch as a set: the hits of dm_private.recall_vector_hits (nearest eligible evidence by cosine distance, exact or the team''s partial HNSW index), one row each in branch_rank order. force_path => ''exact'' is the oracle.';
-- (owned by the schema owner: densemem_searcher owns SECURITY DEFINER
-- functions only, and a database upgraded from the definer version would
-- otherwise keep the searcher as this wrapper's owner)
ALTER FUNCTION dm_private.recall_vector_candidates(uuid, public.vector, jsonb, jsonb, text) OWNER TO densemem_owner;
REVOKE ALL ON FUNCTION dm_private.recall_vector_candidates(uuid, public.vector, jsonb, jsonb, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_vector_candidates(uuid, public.vector, jsonb, jsonb, text)
TO densemem_app, densemem_analyst, densemem_operator;

-- Defines (or redefines) a team's walk function: the HNSW statement of
-- recall_vector_candidates with the team and contract written in as
-- literals, so that a generic plan matches the team's partial index and is
-- kept for the session (plan_cache_mode = force_generic_plan), instead of a
-- custom plan made on every call. Called by dm.refresh_vector_indexes for
-- every registered index, and at the end of this file (so that every walk
-- function follows this file's statement after each migrate). The planner
-- settings the walk needs are SET clauses of the function, so its one plan
-- is made under them whoever calls first. Owned by densemem_searcher, which
-- alone can execute it (recall_vector_hits runs as that role).
CREATE OR REPLACE FUNCTION dm_private.recall_vector_define_walk(team_id uuid, contract_id integer, dimensions integer,
    index_name name)
RETURNS name
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
DECLARE
    walk name := index_name OPERATOR(pg_catalog.||) '_walk';
    signature text;
BEGIN
    IF pg_catalog.length(walk) > 63 THEN
        RAISE EXCEPTION 'walk function name % is too long', walk USING ERRCODE = '22023';
    END IF;
    signature := pg_catalog.format('dm_private.%I(public.halfvec, integer, timestamptz, timestamptz, text[], text[], '
                                   'text[], timestamptz, timestamptz, boolean, timestamptz, timestamptz, uuid[], uuid[])',
                                   walk);
    -- Session 11: a team's first call on a connection paid for its walk
    -- function as much as for its walk (1M bench, callgrind: PL/pgSQL
    -- compile 0.41 M, parse and analysis 0.85 M, the generic plan 2.2 M,
    -- against 3.9 M for the walk statement). Two things cut that, with the
    -- same plan shape and the same rows:
    -- - LANGUAGE sql, not plpgsql: PostgreSQL 18 keeps a SQL function's
    --   parsed statement and its plan for the session (the plan cache, under
    --   the SET clauses below), as PL/pgSQL did, without compiling a
    --   PL/pgSQL body around the one statement;
    -- - the eligibility predicates on the document are one CASE expression,
    --   a single qual the planner does not take apart: none of them can be
    --   an index condition of this plan (the walk's order comes from the
    --   HNSW index, and each walked vector's document is one primary-key
    --   probe), yet as 16 separate quals each was tested against the
    --   predicates of search_documents' ten partial indexes, given a
    --   selectivity, and its ORs tried as bitmap paths. They are evaluated
    --   on the same rows with the same result (a NULL condition fails the
    --   CASE as it fails the WHERE clause).
    -- Session 13: the walk sorts its hits fully and builds the array in one
    -- pass. The walk's rows come in relaxed (approximate) order, and the
    -- statement used to re-sort them by (distance, evidence id) over a
    -- materialised CTE whose ORDER BY distance PostgreSQL 17+ carries up:
    -- the planner then sorted only within runs of equal distance
    -- (Incremental Sort, presorted on distance) and 110 of 1,940 captured
    -- walks on the 1M bench had hits out of distance order (branch ranks
    -- as walked, not by distance). Sorting on distance + 0, an expression
    -- the planner cannot take as presorted, sorts fully; the walk stays a
    -- LIMIT subquery (the LIMIT applies to the walk, not to a sorted
    -- list), without a CTE's tuplestore, and ARRAY(... ORDER BY the window's
    -- order) takes the window's output as it comes, where array_agg(...
    -- ORDER BY branch_rank) sorted the 100 rows a second time. -0.3 M
    -- instructions per call on the 1k-10k and 10k+ buckets; the same rows,
    -- and the same hits wherever they were already in order.
    -- The parameters stay unnamed, as in the PL/pgSQL version (whose ALIAS
    -- names are the ones below): CREATE OR REPLACE may add names to a
    -- function but never remove or change them, so a named version could not
    -- be replaced by an older sql/40 again. $1 query halfvec, $2 cap,
    -- $3 valid_at, $4 known_at, $5 scopes, $6 source groups, $7 memory
    -- types, $8 created_after, $9 created_before, $10 has_window,
    -- $11 window_from, $12 window_to, $13 known evidence ids, $14 disabled
    -- owner profiles (recall_vector_sql's numbering).
    EXECUTE pg_catalog.format($ddl$
CREATE OR REPLACE FUNCTION %1$s
RETURNS dm_private.recall_branch_hit []
LANGUAGE sql
STABLE
SET search_path = ''
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET enable_indexscan = on
SET enable_sort = off
SET enable_material = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET max_parallel_workers_per_gather = 0
AS $walk$
    SELECT ARRAY(
        SELECT ROW('vector', n.document_id, n.subject_id,
                   (pg_catalog.row_number() OVER (ORDER BY n.distance OPERATOR(pg_catalog.+) 0, n.subject_id))::integer,
                   n.distance, n.row_tid)::dm_private.recall_branch_hit
        FROM (
            SELECT d.document_id, d.subject_id, d.ctid AS row_tid,
                   ((e.embedding)::public.halfvec(%2$s) OPERATOR(public.<=>) $1) AS distance
            FROM dm_private.document_embeddings AS e
            JOIN dm_private.search_documents AS d ON d.team_id = e.team_id AND d.document_id = e.document_id
            WHERE e.team_id = %3$L::uuid AND e.contract_id = %4$s AND d.team_id = %3$L::uuid
              AND d.document_version = e.document_version
              AND d.source_version = e.source_version
              AND CASE WHEN d.subject_kind = 'evidence'
                            AND d.is_recallable
                            AND d.owner_profile_id <> ALL ($14)
                            AND (d.valid_from IS NULL OR d.valid_from <= $3)
                            AND (d.valid_to IS NULL OR d.valid_to > $3)
                            AND (d.known_from IS NULL OR d.known_from <= $4)
                            AND (d.known_to IS NULL OR d.known_to > $4)
                            AND d.policy_labels <@ $5
                            AND ($6 IS NULL OR d.source_group = ANY ($6))
                            AND ($7 IS NULL OR d.memory_type::text = ANY ($7))
                            AND ($8 IS NULL OR d.source_created_at >= $8)
                            AND ($9 IS NULL OR d.source_created_at < $9)
                            AND (NOT $10 OR (d.source_created_at IS NOT NULL
                                             AND ($11 IS NULL OR d.source_created_at >= $11)
                                             AND ($12 IS NULL OR d.source_created_at <= $12)))
                            AND d.subject_id <> ALL ($13)
                       THEN true ELSE false END
            ORDER BY ((e.embedding)::public.halfvec(%2$s) OPERATOR(public.<=>) $1)
            LIMIT $2) AS n
        ORDER BY n.distance OPERATOR(pg_catalog.+) 0, n.subject_id)
$walk$
$ddl$, signature, dimensions, team_id, contract_id);
    EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', signature,
        pg_catalog.format('Vector branch walk of team %s, contract %s (partial index %s): recall_vector_candidates'' HNSW statement with the team as a literal, one generic plan per session. Generated by dm_private.recall_vector_define_walk.',
                          team_id, contract_id, index_name));
    EXECUTE pg_catalog.format('ALTER FUNCTION %s OWNER TO densemem_searcher', signature);
    EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', signature);
    RETURN walk;
END
$$;
COMMENT ON FUNCTION dm_private.recall_vector_define_walk(uuid, integer, integer, name) IS
'Administrator: (re)defines the walk function of one registered partial HNSW index: the vector branch''s HNSW statement with the team and contract as literals, one generic plan per session. Returns its name.';
REVOKE ALL ON FUNCTION dm_private.recall_vector_define_walk(uuid, integer, integer, name) FROM PUBLIC;

-- The partition of dm_private.document_embeddings (hash partitioned by
-- team_id, migration 0063) that holds a team's rows: a team's partial HNSW
-- index is built on it, so that only plans and inserts of that partition
-- see the index. Computed from the partition bounds, not from the rows.
CREATE OR REPLACE FUNCTION dm_private.document_embeddings_partition(team_id uuid)
RETURNS regclass
LANGUAGE sql
STABLE
SET search_path = ''
AS $$
    SELECT inh.inhrelid::regclass
    FROM pg_catalog.pg_inherits AS inh
    JOIN pg_catalog.pg_class AS c ON c.oid = inh.inhrelid
    CROSS JOIN LATERAL pg_catalog.regexp_match(pg_catalog.pg_get_expr(c.relpartbound, c.oid),
                                               'modulus (\d+), remainder (\d+)') AS m (b)
    WHERE inh.inhparent = 'dm_private.document_embeddings'::regclass
      AND pg_catalog.satisfies_hash_partition('dm_private.document_embeddings'::regclass,
                                              m.b[1]::integer, m.b[2]::integer, document_embeddings_partition.team_id)
$$;
COMMENT ON FUNCTION dm_private.document_embeddings_partition(uuid) IS
'Administrator: the hash partition of dm_private.document_embeddings that holds the team''s rows (where dm.refresh_vector_indexes builds its partial HNSW index).';
REVOKE ALL ON FUNCTION dm_private.document_embeddings_partition(uuid) FROM PUBLIC;

-- Administrator: gives every team with at least partial_index_min_rows
-- vectors of the active contract its own partial HNSW index (on the team's
-- partition of document_embeddings), and registers
-- it so the vector branch switches to it. Run after bulk loads or
-- periodically (`densemem bench recall` runs it); it never drops an index.
CREATE OR REPLACE FUNCTION dm.refresh_vector_indexes(min_rows integer DEFAULT NULL)
RETURNS TABLE (team_id uuid, index_name name, vector_count bigint)
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
DECLARE
    contract record;
    profile record;
    threshold integer;
    new_name name;
    teams uuid [];
    counts bigint [];
    part regclass;
    i integer;
BEGIN
    SELECT c.contract_id, c.dimensions INTO contract FROM dm_private.embedding_contracts AS c WHERE c.is_active;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT sip.version, sip.settings INTO profile FROM dm_private.search_index_profiles AS sip WHERE sip.is_active;
    threshold := COALESCE(min_rows, (profile.settings ->> 'partial_index_min_rows')::integer, 10000);
    -- Collected first: an open cursor on the table would forbid CREATE INDEX.
    SELECT pg_catalog.array_agg(x.team_id ORDER BY x.team_id), pg_catalog.array_agg(x.n ORDER BY x.team_id)
    INTO teams, counts
    FROM (SELECT e.team_id, pg_catalog.count(*) AS n
          FROM dm_private.document_embeddings AS e
          WHERE e.contract_id = contract.contract_id
          GROUP BY e.team_id
          HAVING pg_catalog.count(*) >= threshold) AS x;
    FOR i IN 1..COALESCE(pg_catalog.cardinality(teams), 0) LOOP
        CONTINUE WHEN EXISTS (SELECT 1 FROM dm_private.team_vector_indexes AS t
                              WHERE t.team_id = teams[i] AND t.contract_id = contract.contract_id);
        new_name := 'dm_vec_' || pg_catalog.replace(teams[i]::text, '-', '') || '_c' || contract.contract_id;
        -- On the team's own partition only: other teams' plans and inserts
        -- never open it.
        part := dm_private.document_embeddings_partition(teams[i]);
        IF part IS NULL THEN
            RAISE EXCEPTION 'no partition of dm_private.document_embeddings for team %', teams[i];
        END IF;
        EXECUTE pg_catalog.format(
            'CREATE INDEX IF NOT EXISTS %I ON %s '
            'USING hnsw (((embedding)::public.halfvec(%s)) public.halfvec_cosine_ops) '
            'WITH (m = %s, ef_construction = %s) WHERE team_id = %L::uuid AND contract_id = %s',
            new_name, part, contract.dimensions,
            COALESCE((profile.settings #>> '{hnsw,m}')::integer, 16),
            COALESCE((profile.settings #>> '{hnsw,ef_construction}')::integer, 64),
            teams[i], contract.contract_id);
        INSERT INTO dm_private.team_vector_indexes
            (team_id, contract_id, index_name, dimensions, search_index_profile_version, vector_count)
        VALUES (teams[i], contract.contract_id, new_name, contract.dimensions, profile.version, counts[i]);
        PERFORM dm_private.recall_vector_define_walk(teams[i], contract.contract_id, contract.dimensions, new_name);
        team_id := teams[i];
        index_name := new_name;
        vector_count := counts[i];
        RETURN NEXT;
    END LOOP;
END
$$;
COMMENT ON FUNCTION dm.refresh_vector_indexes(integer) IS
'Administrator: builds a partial HNSW index (halfvec cosine) for every team with at least min_rows (default: the search-index profile''s partial_index_min_rows) vectors of the active contract and registers it for the vector branch. Returns the indexes it built.';
REVOKE ALL ON FUNCTION dm.refresh_vector_indexes(integer) FROM PUBLIC;

-- Every registered index's walk function follows this file's statement:
-- redefined whenever this file is applied (densemem migrate applies it when
-- its checksum changes).
-- Migrate runs this file as densemem_owner, for whom row-level security
-- (forced on team_vector_indexes) shows no team's rows: the registered
-- indexes, all teams (an administrative listing, no team predicate on
-- purpose), are read as densemem_searcher (BYPASSRLS; the owner is a member),
-- and the functions defined in the role this file runs as.
DO $$
DECLARE
    previous text := pg_catalog.current_setting('role');
    teams uuid [];
    contracts integer [];
    dims integer [];
    names name [];
    setting text;
    i integer;
BEGIN
    setting := pg_catalog.set_config('role', 'densemem_searcher', true);
    SELECT pg_catalog.array_agg(tvi.team_id ORDER BY tvi.team_id, tvi.contract_id),
           pg_catalog.array_agg(tvi.contract_id ORDER BY tvi.team_id, tvi.contract_id),
           pg_catalog.array_agg(c.dimensions ORDER BY tvi.team_id, tvi.contract_id),
           pg_catalog.array_agg(tvi.index_name ORDER BY tvi.team_id, tvi.contract_id)
    INTO teams, contracts, dims, names
    FROM dm_private.team_vector_indexes AS tvi
    JOIN dm_private.embedding_contracts AS c ON c.contract_id = tvi.contract_id;
    setting := pg_catalog.set_config('role', previous, true);
    FOR i IN 1..COALESCE(pg_catalog.cardinality(teams), 0) LOOP
        PERFORM dm_private.recall_vector_define_walk(teams[i], contracts[i], dims[i], names[i]);
    END LOOP;
END
$$;
