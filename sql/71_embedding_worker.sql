-- Stage 71: the embedding worker's claims, stores, failures and retries.
--
-- The worker is cross-team infrastructure. Its login is a member of
-- densemem_worker, which may only EXECUTE these functions; they run as
-- densemem_embedder (SECURITY DEFINER, search_path ''), which reaches every
-- team's search documents through its own policies (migration 0015) and may
-- update only their embedding bookkeeping.
--
-- A claim is a lease, not a lock held while embedding: claim_embedding_batch
-- sets claimed_until in a short transaction (FOR UPDATE SKIP LOCKED keeps
-- concurrent claimers apart) and returns it as the claim token. A worker
-- killed mid-batch loses nothing: its documents stay pending and become
-- claimable again when the lease ends. Every later call names the token, so
-- a worker whose lease ended (or whose document changed version, which drops
-- the claim, or whose contract was replaced, which drops every claim) changes
-- nothing.

GRANT CREATE ON SCHEMA dm, dm_private TO densemem_embedder;

-- Hands the oldest pending, unclaimed documents of the active contract to a
-- worker, across teams, with a lease of claim_seconds.
CREATE OR REPLACE FUNCTION dm_private.claim_embedding_batch(
    contract_id integer,
    batch_size integer,
    claim_seconds double precision
)
RETURNS TABLE (
    team_id uuid,
    document_id uuid,
    document_version integer,
    source_version integer,
    body text,
    embed_attempts integer,
    claim_token timestamptz
)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = ''
AS $$
DECLARE
    lease_end timestamptz;
BEGIN
    IF batch_size IS NULL OR batch_size NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'batch_size must be between 1 and 1000' USING ERRCODE = '22023';
    END IF;
    IF claim_seconds IS NULL OR claim_seconds NOT BETWEEN 1 AND 86400 THEN
        RAISE EXCEPTION 'claim_seconds must be between 1 and 86400' USING ERRCODE = '22023';
    END IF;
    IF NOT EXISTS (
        SELECT 1 FROM dm_private.embedding_contracts AS c
        WHERE c.contract_id = claim_embedding_batch.contract_id AND c.is_active) THEN
        RAISE EXCEPTION 'embedding contract % is not the active contract', claim_embedding_batch.contract_id
            USING ERRCODE = '55000',
                  HINT = 'read dm.active_embedding_contract() and embed with its provider and model';
    END IF;
    lease_end := pg_catalog.clock_timestamp() + pg_catalog.make_interval(secs => claim_seconds);
    RETURN QUERY
    WITH picked AS (
        SELECT d.team_id, d.document_id
        FROM dm_private.search_documents AS d
        WHERE d.search_state = 'pending'
          AND (d.claimed_until IS NULL OR d.claimed_until <= pg_catalog.clock_timestamp())
        ORDER BY d.pending_since
        LIMIT batch_size
        FOR UPDATE SKIP LOCKED
    )
    UPDATE dm_private.search_documents AS d
    SET claimed_until = lease_end
    FROM picked AS p
    WHERE d.team_id = p.team_id AND d.document_id = p.document_id
    RETURNING d.team_id, d.document_id, d.document_version, d.source_version, d.body, d.embed_attempts,
              d.claimed_until;
END
$$;
ALTER FUNCTION dm_private.claim_embedding_batch(integer, integer, double precision) OWNER TO densemem_embedder;
COMMENT ON FUNCTION dm_private.claim_embedding_batch(integer, integer, double precision) IS
'Worker: leases up to batch_size pending, unclaimed documents (oldest first, any team) for claim_seconds; returns their text, versions and the claim token. SQLSTATE 55000 when contract_id is not active.';
REVOKE ALL ON FUNCTION dm_private.claim_embedding_batch(integer, integer, double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.claim_embedding_batch(integer, integer, double precision) TO densemem_worker;

-- Writes the vectors of a claimed batch. A vector lands only when its
-- document still has the version it was made from, is still pending under
-- this worker's claim, and the contract is still active: a stale vector never
-- lands, and the document stays pending for its new version. A NULL vector
-- is accepted only for an empty body (an erased document has nothing to
-- embed): the document becomes ready with no vector of this contract.
CREATE OR REPLACE FUNCTION dm_private.store_document_embeddings(
    contract_id integer,
    team_ids uuid[],
    document_ids uuid[],
    document_versions integer[],
    source_versions integer[],
    claim_tokens timestamptz[],
    embeddings public.halfvec[]
)
RETURNS TABLE (team_id uuid, document_id uuid, stored boolean)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = ''
AS $$
DECLARE
    item_count integer := COALESCE(pg_catalog.cardinality(document_ids), 0);
    contract_dimensions integer;
    contract_normalization text;
    contract_active boolean;
BEGIN
    IF item_count > 1000 THEN
        RAISE EXCEPTION 'at most 1000 vectors per call' USING ERRCODE = 'DM413';
    END IF;
    IF COALESCE(pg_catalog.cardinality(team_ids), 0) <> item_count
       OR COALESCE(pg_catalog.cardinality(document_versions), 0) <> item_count
       OR COALESCE(pg_catalog.cardinality(source_versions), 0) <> item_count
       OR COALESCE(pg_catalog.cardinality(claim_tokens), 0) <> item_count
       OR COALESCE(pg_catalog.cardinality(embeddings), 0) <> item_count THEN
        RAISE EXCEPTION 'the arrays must have one entry per document' USING ERRCODE = '22023';
    END IF;

    -- Serialise with contract activation (see sql/70).
    PERFORM pg_catalog.pg_advisory_xact_lock_shared(7146553400112070);
    SELECT c.dimensions, c.normalization, c.is_active
    INTO contract_dimensions, contract_normalization, contract_active
    FROM dm_private.embedding_contracts AS c
    WHERE c.contract_id = store_document_embeddings.contract_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no embedding contract %', store_document_embeddings.contract_id USING ERRCODE = '22023';
    END IF;
    IF EXISTS (
        SELECT 1 FROM pg_catalog.unnest(embeddings) AS v (embedding)
        WHERE v.embedding IS NOT NULL AND public.vector_dims(v.embedding) <> contract_dimensions) THEN
        RAISE EXCEPTION 'a vector does not have the contract''s % dimensions', contract_dimensions
            USING ERRCODE = '22023';
    END IF;
    IF contract_normalization = 'l2' AND EXISTS (
        SELECT 1 FROM pg_catalog.unnest(embeddings) AS v (embedding)
        WHERE v.embedding IS NOT NULL AND pg_catalog.abs(public.l2_norm(v.embedding) - 1) > 0.01) THEN
        RAISE EXCEPTION 'a vector is not unit length, as the contract''s l2 normalization requires'
            USING ERRCODE = '22023';
    END IF;

    IF NOT contract_active THEN
        -- The contract was replaced while this batch was embedded: write
        -- nothing and give the documents back at once.
        UPDATE dm_private.search_documents AS d
        SET claimed_until = NULL
        FROM ROWS FROM (pg_catalog.unnest(team_ids), pg_catalog.unnest(document_ids), pg_catalog.unnest(claim_tokens)) AS i (team_id, document_id, claim_token)
        WHERE d.team_id = i.team_id AND d.document_id = i.document_id AND d.claimed_until = i.claim_token;
        RETURN QUERY
        SELECT i.team_id, i.document_id, false
        FROM ROWS FROM (pg_catalog.unnest(team_ids), pg_catalog.unnest(document_ids)) AS i (team_id, document_id);
        RETURN;
    END IF;

    RETURN QUERY
    WITH input AS (
        SELECT i.*
        FROM ROWS FROM (pg_catalog.unnest(team_ids), pg_catalog.unnest(document_ids), pg_catalog.unnest(document_versions), pg_catalog.unnest(source_versions), pg_catalog.unnest(claim_tokens), pg_catalog.unnest(embeddings))
            AS i (team_id, document_id, document_version, source_version, claim_token, embedding)
    ),
    accepted AS (
        UPDATE dm_private.search_documents AS d
        SET search_state = 'ready',
            pending_since = NULL,
            claimed_until = NULL,
            last_error = NULL,
            updated_at = pg_catalog.now()
        FROM input AS i
        WHERE d.team_id = i.team_id
          AND d.document_id = i.document_id
          AND d.document_version = i.document_version
          AND d.source_version = i.source_version
          AND d.search_state = 'pending'
          AND d.claimed_until = i.claim_token
          AND (i.embedding IS NOT NULL OR d.body = '')
        RETURNING d.team_id, d.document_id, i.document_version, i.source_version, i.embedding
    ),
    written AS (
        INSERT INTO dm_private.document_embeddings AS e
            (team_id, document_id, contract_id, document_version, source_version, embedding)
        SELECT a.team_id, a.document_id, store_document_embeddings.contract_id, a.document_version,
               a.source_version, a.embedding
        FROM accepted AS a
        WHERE a.embedding IS NOT NULL
        ON CONFLICT ON CONSTRAINT document_embeddings_pkey DO UPDATE
        SET document_version = excluded.document_version,
            source_version = excluded.source_version,
            embedding = excluded.embedding,
            created_at = pg_catalog.now()
        RETURNING e.team_id, e.document_id
    ),
    removed AS (
        DELETE FROM dm_private.document_embeddings AS e
        USING accepted AS a
        WHERE e.team_id = a.team_id
          AND e.document_id = a.document_id
          AND e.contract_id = store_document_embeddings.contract_id
          AND a.embedding IS NULL
        RETURNING e.team_id, e.document_id
    )
    SELECT i.team_id, i.document_id, a.document_id IS NOT NULL
    FROM input AS i
    LEFT JOIN accepted AS a ON a.team_id = i.team_id AND a.document_id = i.document_id;
END
$$;
ALTER FUNCTION dm_private.store_document_embeddings(
    integer, uuid[], uuid[], integer[], integer[], timestamptz[], public.halfvec[]
) OWNER TO densemem_embedder;
COMMENT ON FUNCTION dm_private.store_document_embeddings(
    integer, uuid[], uuid[], integer[], integer[], timestamptz[], public.halfvec[]
) IS
'Worker: writes the vectors of a claimed batch; each lands only if its document still has that document and source version, is pending under this claim token and the contract is active. Returns stored per document; a rejected (stale) document stays pending.';
REVOKE ALL ON FUNCTION dm_private.store_document_embeddings(
    integer, uuid[], uuid[], integer[], integer[], timestamptz[], public.halfvec[]
) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.store_document_embeddings(
    integer, uuid[], uuid[], integer[], integer[], timestamptz[], public.halfvec[]
) TO densemem_worker;

-- The provider rejected these documents (or their batch): count one attempt
-- each and keep the error; after max_attempts the document is failed (no
-- longer pending, out of the worker's way, counted by freshness) until an
-- operator retries it. Before that it waits retry_after_seconds.
CREATE OR REPLACE FUNCTION dm_private.fail_embedding_claims(
    team_ids uuid[],
    document_ids uuid[],
    claim_tokens timestamptz[],
    error_message text,
    max_attempts integer,
    retry_after_seconds double precision
)
RETURNS TABLE (team_id uuid, document_id uuid, search_state text, embed_attempts integer)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = ''
AS $$
BEGIN
    IF max_attempts IS NULL OR max_attempts NOT BETWEEN 1 AND 100 THEN
        RAISE EXCEPTION 'max_attempts must be between 1 and 100' USING ERRCODE = '22023';
    END IF;
    IF retry_after_seconds IS NULL OR retry_after_seconds NOT BETWEEN 0 AND 86400 THEN
        RAISE EXCEPTION 'retry_after_seconds must be between 0 and 86400' USING ERRCODE = '22023';
    END IF;
    RETURN QUERY
    UPDATE dm_private.search_documents AS d
    SET embed_attempts = d.embed_attempts + 1,
        last_error = pg_catalog.left(COALESCE(error_message, 'unknown error'), 2000),
        search_state = CASE WHEN d.embed_attempts + 1 >= max_attempts
                            THEN 'failed' ELSE 'pending' END::dm_private.search_state,
        pending_since = CASE WHEN d.embed_attempts + 1 >= max_attempts THEN NULL ELSE d.pending_since END,
        claimed_until = CASE
            WHEN d.embed_attempts + 1 >= max_attempts OR retry_after_seconds = 0 THEN NULL
            ELSE pg_catalog.clock_timestamp() + pg_catalog.make_interval(secs => retry_after_seconds) END,
        updated_at = pg_catalog.now()
    FROM ROWS FROM (pg_catalog.unnest(team_ids), pg_catalog.unnest(document_ids), pg_catalog.unnest(claim_tokens)) AS i (team_id, document_id, claim_token)
    WHERE d.team_id = i.team_id
      AND d.document_id = i.document_id
      AND d.search_state = 'pending'
      AND d.claimed_until = i.claim_token
    RETURNING d.team_id, d.document_id, d.search_state::text, d.embed_attempts;
END
$$;
ALTER FUNCTION dm_private.fail_embedding_claims(uuid[], uuid[], timestamptz[], text, integer, double precision)
OWNER TO densemem_embedder;
COMMENT ON FUNCTION dm_private.fail_embedding_claims(uuid[], uuid[], timestamptz[], text, integer, double precision) IS
'Worker: counts a failed embedding attempt for each claimed document and keeps the error; at max_attempts the document is failed, otherwise it waits retry_after_seconds.';
REVOKE ALL ON FUNCTION dm_private.fail_embedding_claims(
    uuid[], uuid[], timestamptz[], text, integer, double precision
) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.fail_embedding_claims(
    uuid[], uuid[], timestamptz[], text, integer, double precision
) TO densemem_worker;

-- The provider is unavailable (down, rate limited, timing out): that says
-- nothing about the documents, so no attempt is counted. They stay pending
-- with the error visible and wait retry_after_seconds (0: claimable now).
CREATE OR REPLACE FUNCTION dm_private.release_embedding_claims(
    team_ids uuid[],
    document_ids uuid[],
    claim_tokens timestamptz[],
    error_message text,
    retry_after_seconds double precision
)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = ''
AS $$
DECLARE
    released bigint;
BEGIN
    IF retry_after_seconds IS NULL OR retry_after_seconds NOT BETWEEN 0 AND 86400 THEN
        RAISE EXCEPTION 'retry_after_seconds must be between 0 and 86400' USING ERRCODE = '22023';
    END IF;
    UPDATE dm_private.search_documents AS d
    SET last_error = COALESCE(pg_catalog.left(error_message, 2000), d.last_error),
        claimed_until = CASE WHEN retry_after_seconds = 0 THEN NULL
            ELSE pg_catalog.clock_timestamp() + pg_catalog.make_interval(secs => retry_after_seconds) END,
        updated_at = pg_catalog.now()
    FROM ROWS FROM (pg_catalog.unnest(team_ids), pg_catalog.unnest(document_ids), pg_catalog.unnest(claim_tokens)) AS i (team_id, document_id, claim_token)
    WHERE d.team_id = i.team_id
      AND d.document_id = i.document_id
      AND d.search_state = 'pending'
      AND d.claimed_until = i.claim_token;
    GET DIAGNOSTICS released = ROW_COUNT;
    RETURN released;
END
$$;
ALTER FUNCTION dm_private.release_embedding_claims(uuid[], uuid[], timestamptz[], text, double precision)
OWNER TO densemem_embedder;
COMMENT ON FUNCTION dm_private.release_embedding_claims(uuid[], uuid[], timestamptz[], text, double precision) IS
'Worker: gives claimed documents back without counting an attempt (provider unavailable); keeps the error, claimable again after retry_after_seconds.';
REVOKE ALL ON FUNCTION dm_private.release_embedding_claims(
    uuid[], uuid[], timestamptz[], text, double precision
) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.release_embedding_claims(
    uuid[], uuid[], timestamptz[], text, double precision
) TO densemem_worker;

-- What the worker needs to decide whether to keep going and how long to
-- sleep: documents claimable now, and when the next lease or retry delay
-- ends. Totals only, no team data.
CREATE OR REPLACE FUNCTION dm_private.embedding_queue_state()
RETURNS TABLE (claimable_document_count bigint, next_claimable_at timestamptz)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = ''
AS $$
    SELECT pg_catalog.count(*) FILTER (
               WHERE d.claimed_until IS NULL OR d.claimed_until <= pg_catalog.clock_timestamp()),
           pg_catalog.min(d.claimed_until) FILTER (WHERE d.claimed_until > pg_catalog.clock_timestamp())
    FROM dm_private.search_documents AS d
    WHERE d.search_state = 'pending'
$$;
ALTER FUNCTION dm_private.embedding_queue_state() OWNER TO densemem_embedder;
COMMENT ON FUNCTION dm_private.embedding_queue_state() IS
'Worker: how many pending documents are claimable now and when the earliest lease or retry delay ends (all teams, totals only).';
REVOKE ALL ON FUNCTION dm_private.embedding_queue_state() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.embedding_queue_state() TO densemem_worker;

-- Failed documents stay failed until someone decides the cause is gone
-- (a fixed provider, a raised limit). The service calls this for its team;
-- the document starts over with no attempts and a fresh pending_since.
CREATE OR REPLACE FUNCTION dm.retry_failed_documents(team_id uuid)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
DECLARE
    retried bigint;
BEGIN
    PERFORM dm_private.require_active_profile(retry_failed_documents.team_id);
    UPDATE dm_private.search_documents AS d
    SET search_state = 'pending',
        pending_since = pg_catalog.now(),
        embed_attempts = 0,
        claimed_until = NULL,
        updated_at = pg_catalog.now()
    WHERE d.team_id = retry_failed_documents.team_id AND d.search_state = 'failed';
    GET DIAGNOSTICS retried = ROW_COUNT;
    RETURN retried;
END
$$;
COMMENT ON FUNCTION dm.retry_failed_documents(uuid) IS
'Makes every failed search document of the team pending again with no attempts (its last error is kept until it succeeds); returns how many.';
REVOKE ALL ON FUNCTION dm.retry_failed_documents(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm.retry_failed_documents(uuid) TO densemem_app;

-- The same for the operator of the worker (`densemem embed retry-failed`),
-- across teams or for one team; no team data is returned.
CREATE OR REPLACE FUNCTION dm_private.retry_failed_embeddings(only_team_id uuid DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = ''
AS $$
DECLARE
    retried bigint;
BEGIN
    UPDATE dm_private.search_documents AS d
    SET search_state = 'pending',
        pending_since = pg_catalog.now(),
        embed_attempts = 0,
        claimed_until = NULL,
        updated_at = pg_catalog.now()
    WHERE d.search_state = 'failed' AND (only_team_id IS NULL OR d.team_id = only_team_id);
    GET DIAGNOSTICS retried = ROW_COUNT;
    RETURN retried;
END
$$;
ALTER FUNCTION dm_private.retry_failed_embeddings(uuid) OWNER TO densemem_embedder;
COMMENT ON FUNCTION dm_private.retry_failed_embeddings(uuid) IS
'Worker operator: makes failed search documents pending again (all teams, or one); returns how many.';
REVOKE ALL ON FUNCTION dm_private.retry_failed_embeddings(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.retry_failed_embeddings(uuid) TO densemem_worker;

REVOKE CREATE ON SCHEMA dm, dm_private FROM densemem_embedder;
