-- Stage 70: embedding contracts.
--
-- A contract says how vectors are made: provider, model, dimensions,
-- normalization and a version an administrator bumps when anything else about
-- the vectors changes (text preparation, truncation). Exactly one contract is
-- active; recall uses only its vectors, and the worker embeds only for it.
--
-- Activation and the worker's store serialise on one transaction-level
-- advisory lock (key 7146553400112070): activation takes it exclusively,
-- every store shared. A store that committed before the switch is marked
-- pending again by the activation; a store that starts after the switch sees
-- the old contract inactive and writes nothing.

-- The embedder must hold CREATE on a schema for the moment it is given a
-- function there; it holds it only while this file runs (revoked at the end).
GRANT CREATE ON SCHEMA dm, dm_private TO densemem_embedder;

-- What the service, analysts and workers need to know to embed a query or a
-- document for the active contract. SECURITY DEFINER (owned by
-- densemem_embedder) so the worker role needs no table privilege.
CREATE OR REPLACE FUNCTION dm.active_embedding_contract()
RETURNS TABLE (
    contract_id integer,
    provider text,
    model text,
    dimensions integer,
    normalization text,
    version integer
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = ''
AS $$
    SELECT c.contract_id, c.provider, c.model, c.dimensions, c.normalization, c.version
    FROM dm_private.embedding_contracts AS c
    WHERE c.is_active
$$;
ALTER FUNCTION dm.active_embedding_contract() OWNER TO densemem_embedder;
COMMENT ON FUNCTION dm.active_embedding_contract() IS
'The active embedding contract (provider, model, dimensions, normalization, version): one row, or none before any is active.';
REVOKE ALL ON FUNCTION dm.active_embedding_contract() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm.active_embedding_contract() TO
densemem_app, densemem_analyst, densemem_operator, densemem_searcher, densemem_worker;

-- Switching model (or provider, dimensions, version) must not leave recall
-- mixing two vector spaces: the new contract becomes the only active one and
-- every document of every team becomes pending, except documents that
-- already hold a version-matched vector of the new contract (switching back
-- to a previous contract reuses its vectors). Old vectors stay until an
-- administrator deletes them (dm.delete_inactive_embeddings). Administrator
-- only: invoker rights, no grant to any Dense-Mem role, so only a superuser
-- (who bypasses row-level security) reaches every team.
CREATE OR REPLACE FUNCTION dm.activate_embedding_contract(
    provider text,
    model text,
    dimensions integer,
    normalization text DEFAULT 'l2',
    version integer DEFAULT 1
)
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
DECLARE
    chosen integer;
    chosen_active boolean;
BEGIN
    IF provider IS NULL OR pg_catalog.btrim(provider) = '' OR pg_catalog.length(provider) > 100 THEN
        RAISE EXCEPTION 'provider must be 1 to 100 characters' USING ERRCODE = '22023';
    END IF;
    IF model IS NULL OR pg_catalog.btrim(model) = '' OR pg_catalog.length(model) > 200 THEN
        RAISE EXCEPTION 'model must be 1 to 200 characters' USING ERRCODE = '22023';
    END IF;
    IF dimensions IS NULL OR dimensions NOT BETWEEN 1 AND 4000 THEN
        RAISE EXCEPTION 'dimensions must be between 1 and 4000 (the HNSW limit for halfvec)'
            USING ERRCODE = '22023';
    END IF;
    IF normalization IS NULL OR normalization NOT IN ('l2', 'none') THEN
        RAISE EXCEPTION 'normalization must be l2 or none' USING ERRCODE = '22023';
    END IF;
    IF version IS NULL OR version < 1 THEN
        RAISE EXCEPTION 'version must be a positive integer' USING ERRCODE = '22023';
    END IF;

    -- Wait for in-flight stores; block new ones until this commits.
    PERFORM pg_catalog.pg_advisory_xact_lock(7146553400112070);

    SELECT c.contract_id, c.is_active INTO chosen, chosen_active
    FROM dm_private.embedding_contracts AS c
    WHERE c.provider = activate_embedding_contract.provider
      AND c.model = activate_embedding_contract.model
      AND c.dimensions = activate_embedding_contract.dimensions
      AND c.normalization = activate_embedding_contract.normalization
      AND c.version = activate_embedding_contract.version;
    IF chosen_active THEN
        RETURN chosen;
    END IF;
    IF chosen IS NULL THEN
        INSERT INTO dm_private.embedding_contracts (provider, model, dimensions, normalization, version, is_active)
        VALUES (activate_embedding_contract.provider, activate_embedding_contract.model,
                activate_embedding_contract.dimensions, activate_embedding_contract.normalization,
                activate_embedding_contract.version, false)
        RETURNING embedding_contracts.contract_id INTO chosen;
    END IF;

    UPDATE dm_private.embedding_contracts AS c SET is_active = false WHERE c.is_active;
    UPDATE dm_private.embedding_contracts AS c SET is_active = true WHERE c.contract_id = chosen;

    UPDATE dm_private.search_documents AS d
    SET search_state = CASE WHEN e.document_id IS NULL THEN 'pending' ELSE 'ready' END::dm_private.search_state,
        pending_since = CASE WHEN e.document_id IS NULL THEN pg_catalog.now() END,
        embed_attempts = 0,
        last_error = NULL,
        claimed_until = NULL,
        updated_at = pg_catalog.now()
    FROM dm_private.search_documents AS s
    LEFT JOIN dm_private.document_embeddings AS e
        ON e.team_id = s.team_id
       AND e.document_id = s.document_id
       AND e.contract_id = chosen
       AND e.document_version = s.document_version
       AND e.source_version = s.source_version
    WHERE d.team_id = s.team_id AND d.document_id = s.document_id;
    RETURN chosen;
END
$$;
COMMENT ON FUNCTION dm.activate_embedding_contract(text, text, integer, text, integer) IS
'Administrator: makes this contract (created if new) the only active one and marks every document of every team pending, unless it already holds a version-matched vector of that contract. Returns the contract_id.';
REVOKE ALL ON FUNCTION dm.activate_embedding_contract(text, text, integer, text, integer) FROM PUBLIC;

-- Vectors of inactive contracts are kept after a switch so that switching
-- back is free; this reclaims their space once the switch is final.
-- Administrator only.
CREATE OR REPLACE FUNCTION dm.delete_inactive_embeddings()
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
DECLARE
    removed bigint;
BEGIN
    DELETE FROM dm_private.document_embeddings AS e
    USING dm_private.embedding_contracts AS c
    WHERE c.contract_id = e.contract_id AND NOT c.is_active;
    GET DIAGNOSTICS removed = ROW_COUNT;
    RETURN removed;
END
$$;
COMMENT ON FUNCTION dm.delete_inactive_embeddings() IS
'Administrator: deletes the vectors of every inactive embedding contract, in every team; returns how many.';
REVOKE ALL ON FUNCTION dm.delete_inactive_embeddings() FROM PUBLIC;

REVOKE CREATE ON SCHEMA dm, dm_private FROM densemem_embedder;
