-- Composition: the internal telemetry row of every recall (seed 000
-- "Internal telemetry").
--
-- Written by a SECURITY DEFINER function owned by densemem_owner so that
-- analysts and operators (who may not insert) still leave a row; the owner's
-- own policy keeps the row inside the authenticated team. Search freshness
-- is counted with a cap (10,000) so that a large backlog never makes recall
-- slow. On a read-only transaction (a streaming replica) nothing is written
-- and recall still answers.
CREATE OR REPLACE FUNCTION dm_private.write_recall_telemetry(team_id uuid, recall_id uuid, ranking_profile_version text,
    search_index_profile_version text, degraded_branches text [], query_embedding_contract_version text,
    result_count integer, duration_ms double precision)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = ''
-- One plan for every team: with custom plans the freshness statement (three
-- partial-index reads, 0.03 ms) was planned again on every recall, ~0.4 ms
-- of planning against search_documents' indexes each time.
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    team constant uuid := dm_private.require_team(write_recall_telemetry.team_id);
    pending bigint;
    failed bigint;
    oldest double precision;
    row_written boolean := false;
BEGIN
    -- the three freshness figures in one statement (one executor start, not three)
    SELECT (SELECT pg_catalog.count(*)
            FROM (SELECT 1 FROM dm_private.search_documents AS d
                  WHERE d.team_id = team AND d.search_state = 'pending' LIMIT 10000) AS x),
           (SELECT pg_catalog.count(*)
            FROM (SELECT 1 FROM dm_private.search_documents AS d
                  WHERE d.team_id = team AND d.search_state = 'failed' LIMIT 10000) AS x),
           (SELECT EXTRACT(EPOCH FROM pg_catalog.now() - pg_catalog.min(d.pending_since))::double precision
            FROM dm_private.search_documents AS d
            WHERE d.team_id = team AND d.search_state = 'pending')
    INTO pending, failed, oldest;
    IF pg_catalog.current_setting('transaction_read_only') = 'off' THEN
        INSERT INTO dm_private.recall_telemetry (
            team_id, recall_id, ranking_profile_version, search_index_profile_version, degraded_branches,
            query_embedding_contract_version, pending_document_count, failed_document_count,
            oldest_pending_age_seconds, result_count, duration_ms)
        VALUES (team, recall_id, ranking_profile_version, search_index_profile_version,
                COALESCE(degraded_branches, '{}'), query_embedding_contract_version, pending, failed, oldest,
                result_count, duration_ms);
        row_written := true;
    END IF;
    RETURN pg_catalog.jsonb_build_object(
        'recall_id', recall_id,
        'written', row_written,
        'ranking_profile_version', ranking_profile_version,
        'search_index_profile_version', search_index_profile_version,
        'degraded_branches', pg_catalog.to_jsonb(COALESCE(degraded_branches, '{}')),
        'query_embedding_contract_version', query_embedding_contract_version,
        'search_freshness', pg_catalog.jsonb_build_object(
            'pending_document_count', pending,
            'failed_document_count', failed,
            'oldest_pending_age_seconds', oldest));
END
$$;
COMMENT ON FUNCTION dm_private.write_recall_telemetry(uuid, uuid, text, text, text [], text, integer, double precision) IS
'Writes the internal telemetry row of one recall (profile versions, degraded branches, query embedding contract, search freshness counted up to 10,000) and returns it as JSON; writes nothing in a read-only transaction.';
REVOKE ALL ON FUNCTION dm_private.write_recall_telemetry(uuid, uuid, text, text, text [], text, integer, double precision)
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.write_recall_telemetry(uuid, uuid, text, text, text [], text, integer, double precision)
TO densemem_app, densemem_analyst, densemem_operator;
