-- Recall stage 5: duplicate collapsing and MMR (seed 002 §7).
--
-- The pool is the top mmr.pool candidates by composite score. Similarity of
-- two candidates is the cosine similarity of their stored vectors (current
-- versions of the active contract) when both have one, else trigram
-- similarity of the first 500 characters of their texts. First, exact
-- duplicates (same normalised text) and near duplicates (similarity at or
-- above mmr.duplicate_similarity) collapse into the better-scored one. Then
-- greedy MMR picks, at each step, the candidate maximising
--     lambda * score / best_score - (1 - lambda) * max similarity to picked,
-- ties to the better composite rank, until `want` are picked; the rest of
-- the pool follows in score order (for the budget and for explain).

-- Pairwise similarity of a pool of documents, as a flattened n x n matrix in
-- the order given. Runs as the searcher: reads vectors and texts of
-- candidates already chosen by the branches, inside the team. recall_mmr no
-- longer calls it (since session 4 it computes the pairs it reads from
-- recall_pool_vectors, with this expression); it stays the similarity a DBA
-- can inspect, and tests/python/test_recall_mmr_reference.py runs the
-- previous MMR on it to check recall_mmr bit for bit.
CREATE OR REPLACE FUNCTION dm_private.recall_similarity_matrix(team_id uuid, document_ids uuid [])
RETURNS double precision []
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = ''
AS $$
DECLARE
    team constant uuid := dm_private.require_team(recall_similarity_matrix.team_id);
    n integer := COALESCE(pg_catalog.cardinality(document_ids), 0);
    matrix double precision [];
BEGIN
    IF n = 0 THEN
        RETURN '{}';
    END IF;
    WITH docs AS MATERIALIZED (
        -- the pool's documents and current vectors, each in one scan of a
        -- primary key (team_id, document_id = ANY): never a range of the team
        SELECT x.document_id, pg_catalog.left(x.body, 500) AS head, x.document_version, x.source_version
        FROM dm_private.search_documents AS x
        WHERE x.team_id = team AND x.document_id = ANY (document_ids)
    ),
    vectors AS MATERIALIZED (
        SELECT e.document_id, e.embedding, e.document_version, e.source_version
        FROM dm_private.document_embeddings AS e
        WHERE e.team_id = team AND e.document_id = ANY (document_ids)
          -- the active contract: an init-plan, not a statement of its own
          AND e.contract_id = (SELECT c.contract_id FROM dm_private.embedding_contracts AS c WHERE c.is_active)
    ),
    pool AS MATERIALIZED (
        SELECT p.ord::integer AS ord, d.head, v.embedding
        FROM pg_catalog.unnest(document_ids) WITH ORDINALITY AS p (document_id, ord)
        LEFT JOIN docs AS d ON d.document_id = p.document_id
        LEFT JOIN vectors AS v ON v.document_id = p.document_id
                              AND v.document_version = d.document_version AND v.source_version = d.source_version
    ),
    upper AS MATERIALIZED (
        -- each unordered pair once (similarity is symmetric)
        SELECT a.ord AS i, b.ord AS j,
               COALESCE(CASE WHEN a.embedding IS NOT NULL AND b.embedding IS NOT NULL
                             THEN 1.0 - (a.embedding OPERATOR(public.<=>) b.embedding)
                             ELSE public.similarity(a.head, b.head) END, 0)::double precision AS sim
        FROM pool AS a
        JOIN pool AS b ON b.ord > a.ord
    ),
    pairs AS (
        SELECT u.i, u.j, u.sim FROM upper AS u
        UNION ALL
        SELECT u.j, u.i, u.sim FROM upper AS u
        UNION ALL
        SELECT p.ord, p.ord, 1.0::double precision FROM pool AS p
    )
    SELECT pg_catalog.array_agg(m.sim ORDER BY m.i, m.j) INTO matrix FROM pairs AS m;
    RETURN matrix;
END
$$;
COMMENT ON FUNCTION dm_private.recall_similarity_matrix(uuid, uuid []) IS
'Pairwise similarity (flattened n x n, order as given) of candidate documents: cosine similarity of current vectors of the active contract, else trigram similarity of the first 500 characters. Runs as densemem_searcher.';
ALTER FUNCTION dm_private.recall_similarity_matrix(uuid, uuid []) OWNER TO densemem_searcher;
REVOKE ALL ON FUNCTION dm_private.recall_similarity_matrix(uuid, uuid []) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_similarity_matrix(uuid, uuid [])
TO densemem_app, densemem_analyst, densemem_operator;

-- The pool's current vectors (and, only when one is missing, the first 500
-- characters of every pool text), in the order given: what recall_mmr needs
-- to compute the similarities it uses, read in one statement as the searcher
-- (two when a vector is missing). recall_similarity_matrix builds all n x n
-- pairs, mirrored and sorted, through four materialized sets; MMR reads
-- fewer pairs than that (the collapse stops at a row's first duplicate) and
-- computes each from these arrays with the same expression, so the values
-- are the matrix's bit for bit.
CREATE OR REPLACE FUNCTION dm_private.recall_pool_vectors(team_id uuid, document_ids uuid [],
    OUT embeddings public.halfvec [], OUT heads text [])
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = ''
AS $$
DECLARE
    team constant uuid := dm_private.require_team(recall_pool_vectors.team_id);
    complete boolean;
BEGIN
    IF COALESCE(pg_catalog.cardinality(document_ids), 0) = 0 THEN
        embeddings := '{}';
        heads := '{}';
        RETURN;
    END IF;
    -- as recall_similarity_matrix: a vector counts only when it is of the
    -- active contract and of the document's current document and source
    -- versions
    SELECT pg_catalog.array_agg(e.embedding ORDER BY p.ord), pg_catalog.bool_and(e.embedding IS NOT NULL)
    INTO embeddings, complete
    FROM pg_catalog.unnest(document_ids) WITH ORDINALITY AS p (document_id, ord)
    LEFT JOIN dm_private.search_documents AS d ON d.team_id = team AND d.document_id = p.document_id
    LEFT JOIN dm_private.document_embeddings AS e
           ON e.team_id = team AND e.document_id = p.document_id
          AND e.contract_id = (SELECT c.contract_id FROM dm_private.embedding_contracts AS c WHERE c.is_active)
          AND e.document_version = d.document_version AND e.source_version = d.source_version;
    IF NOT complete THEN
        SELECT pg_catalog.array_agg(pg_catalog.left(d.body, 500) ORDER BY p.ord)
        INTO heads
        FROM pg_catalog.unnest(document_ids) WITH ORDINALITY AS p (document_id, ord)
        LEFT JOIN dm_private.search_documents AS d ON d.team_id = team AND d.document_id = p.document_id;
    END IF;
END
$$;
COMMENT ON FUNCTION dm_private.recall_pool_vectors(uuid, uuid []) IS
'The current vectors (active contract, current document and source versions; NULL when none) of the given documents in the order given, and, only when one is missing, the first 500 characters of each text: the inputs of recall_mmr''s similarities. Runs as densemem_searcher.';
ALTER FUNCTION dm_private.recall_pool_vectors(uuid, uuid []) OWNER TO densemem_searcher;
REVOKE ALL ON FUNCTION dm_private.recall_pool_vectors(uuid, uuid []) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_pool_vectors(uuid, uuid [])
TO densemem_app, densemem_analyst, densemem_operator;

-- Greedy MMR over the scored candidates (ordered by score). Returns every
-- pool candidate once: the picked ones in MMR order (mmr_rank 1..), then the
-- rest by score; collapsed duplicates are returned with collapsed_into set
-- and no rank.
--
-- Cost notes (ranking 100 candidates is budgeted at 1 ms): the similarity of
-- two pool members is computed where it is used, from the pool's vectors
-- (recall_pool_vectors), by the expression recall_similarity_matrix uses;
-- the collapse reads a pair only while the row is not yet collapsed, and each
-- greedy step reads the similarities to the previous pick in the same pass
-- that finds the next one (one pass over the pool per pick, not two).
CREATE OR REPLACE FUNCTION dm_private.recall_mmr(team_id uuid, scored dm_private.recall_scored [], settings jsonb,
    want integer)
RETURNS TABLE (evidence_id uuid, document_id uuid, mmr_rank integer, mmr_value double precision,
    max_similarity double precision, collapsed_into uuid)
LANGUAGE plpgsql
STABLE
SET search_path = ''
AS $$
DECLARE
    lambda double precision := COALESCE((settings #>> '{mmr,lambda}')::double precision, 0.7);
    duplicate_at double precision := COALESCE((settings #>> '{mmr,duplicate_similarity}')::double precision, 0.97);
    pool_size integer := COALESCE((settings #>> '{mmr,pool}')::integer, 30);
    pool dm_private.recall_scored [];
    n integer;
    emb public.halfvec [];
    heads text [];
    complete boolean;
    scores double precision [];
    keys bigint [];
    ids uuid [];
    doc_ids uuid [];
    best_score double precision;
    alive boolean [];
    picked boolean [];
    collapsed uuid [];
    max_sim double precision [];
    rank_of integer [];
    value_of double precision [];
    picked_count integer := 0;
    i integer;
    j integer;
    s double precision;
    best integer := NULL;
    previous integer := NULL;
    best_value double precision;
    candidate_value double precision;
BEGIN
    -- candidates beyond twice the picks never win an MMR step against the
    -- top of the list: they are not worth comparing. The profile's pool caps
    -- that, but never below picks + 10, or a large limit would come back short.
    pool := scored[1:GREATEST(LEAST(pool_size, 2 * want), want + 10)];
    n := COALESCE(pg_catalog.cardinality(pool), 0);
    IF n = 0 THEN
        RETURN;
    END IF;
    -- Fixed-width copies in one pass: an element of a composite array is
    -- found by walking the array, a double or bigint element by its offset.
    SELECT pg_catalog.array_agg(p.score), pg_catalog.array_agg(pg_catalog.hashtextextended(p.body_key, 0)),
           pg_catalog.array_agg(p.evidence_id), pg_catalog.array_agg(p.document_id)
    INTO scores, keys, ids, doc_ids
    FROM pg_catalog.unnest(pool) AS p;
    SELECT v.embeddings, v.heads INTO emb, heads FROM dm_private.recall_pool_vectors(recall_mmr.team_id, doc_ids) AS v;
    complete := heads IS NULL;
    best_score := GREATEST(scores[1], 1e-9);
    alive := pg_catalog.array_fill(true, ARRAY[n]);
    picked := pg_catalog.array_fill(false, ARRAY[n]);
    collapsed := pg_catalog.array_fill(NULL::uuid, ARRAY[n]);
    max_sim := pg_catalog.array_fill(0::double precision, ARRAY[n]);
    rank_of := pg_catalog.array_fill(NULL::integer, ARRAY[n]);
    value_of := pg_catalog.array_fill(NULL::double precision, ARRAY[n]);

    -- collapse exact and near duplicates into the better-scored candidate;
    -- the similarity is recall_similarity_matrix's: cosine similarity of the
    -- two vectors when both exist (always, when `complete`), else trigram
    -- similarity of the heads, NULL as 0
    FOR i IN 2..n LOOP
        FOR j IN 1..i - 1 LOOP
            IF alive[j] AND (keys[i] = keys[j]
                             OR CASE WHEN complete THEN 1.0 - (emb[i] OPERATOR(public.<=>) emb[j])
                                ELSE COALESCE(CASE WHEN emb[i] IS NOT NULL AND emb[j] IS NOT NULL
                                                   THEN 1.0 - (emb[i] OPERATOR(public.<=>) emb[j])
                                                   ELSE public.similarity(heads[i], heads[j]) END, 0)
                                END::double precision >= duplicate_at) THEN
                alive[i] := false;
                collapsed[i] := ids[j];
                EXIT;
            END IF;
        END LOOP;
    END LOOP;

    -- greedy MMR: each pass first raises every remaining candidate's
    -- max_sim by its similarity to the previous pick, then scores it
    WHILE picked_count < LEAST(want, n) LOOP
        best := NULL;
        FOR i IN 1..n LOOP
            CONTINUE WHEN NOT alive[i] OR picked[i];
            IF previous IS NOT NULL THEN
                s := CASE WHEN complete THEN 1.0 - (emb[i] OPERATOR(public.<=>) emb[previous])
                     ELSE COALESCE(CASE WHEN emb[i] IS NOT NULL AND emb[previous] IS NOT NULL
                                        THEN 1.0 - (emb[i] OPERATOR(public.<=>) emb[previous])
                                        ELSE public.similarity(heads[i], heads[previous]) END, 0)
                     END::double precision;
                IF s > max_sim[i] THEN
                    max_sim[i] := s;
                END IF;
            END IF;
            candidate_value := lambda * scores[i] / best_score - (1 - lambda) * max_sim[i];
            IF best IS NULL OR candidate_value > best_value THEN
                best := i;
                best_value := candidate_value;
            END IF;
        END LOOP;
        EXIT WHEN best IS NULL;
        picked[best] := true;
        picked_count := picked_count + 1;
        rank_of[best] := picked_count;
        value_of[best] := best_value;
        previous := best;
    END LOOP;
    -- the last pick's similarities (when the loop stopped at `want`, no pass
    -- read them): max_sim is returned
    IF best IS NOT NULL THEN
        FOR i IN 1..n LOOP
            CONTINUE WHEN NOT alive[i] OR picked[i];
            s := CASE WHEN complete THEN 1.0 - (emb[i] OPERATOR(public.<=>) emb[best])
                 ELSE COALESCE(CASE WHEN emb[i] IS NOT NULL AND emb[best] IS NOT NULL
                                    THEN 1.0 - (emb[i] OPERATOR(public.<=>) emb[best])
                                    ELSE public.similarity(heads[i], heads[best]) END, 0)
                 END::double precision;
            IF s > max_sim[i] THEN
                max_sim[i] := s;
            END IF;
        END LOOP;
    END IF;
    -- the rest of the pool, by score
    FOR i IN 1..n LOOP
        IF alive[i] AND NOT picked[i] THEN
            picked_count := picked_count + 1;
            rank_of[i] := picked_count;
        END IF;
    END LOOP;

    RETURN QUERY
        SELECT p.evidence_id, p.document_id, rank_of[p.ordinality::integer], value_of[p.ordinality::integer],
               max_sim[p.ordinality::integer], collapsed[p.ordinality::integer]
        FROM pg_catalog.unnest(pool) WITH ORDINALITY AS p
        ORDER BY rank_of[p.ordinality::integer] NULLS LAST, p.ordinality;
END
$$;
COMMENT ON FUNCTION dm_private.recall_mmr(uuid, dm_private.recall_scored [], jsonb, integer) IS
'Collapses exact and near duplicates, then orders the top mmr.pool candidates by greedy MMR (lambda from the profile) for `want` picks, the rest by score; similarity from stored vectors, else text.';
REVOKE ALL ON FUNCTION dm_private.recall_mmr(uuid, dm_private.recall_scored [], jsonb, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_mmr(uuid, dm_private.recall_scored [], jsonb, integer)
TO densemem_app, densemem_analyst, densemem_operator;
