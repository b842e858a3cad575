-- Composition: the internal telemetry row of every recall (seed 000
-- "Internal telemetry").
--
-- Written by a SECURITY DEFINER function owned by densemem_owner so that
-- analysts and operators (who may not insert) still leave a row; the owner's
-- own policy keeps the row inside the authenticated team. Search freshness
-- is counted with a cap (10,000) so that a large backlog never makes recall
-- slow. On a read-only transaction (a streaming replica) nothing is written
-- and recall still answers.
-- Session 14: the row's embedding contract is read here, in the freshness
-- statement, when the vector branch ran (recall_run read it with a
-- statement of its own after the branch), and the row is described as JSON
-- only when asked (explain shows it; a recall built it and dropped it).
-- Session 20: the row has no foreign key to teams (migration 0095: its check
-- locked the team's row on every recall, a multixact whenever recalls of one
-- team overlapped); the freshness statement reads the team's row instead,
-- without a lock, and a team without one is refused as the key refused it.
DROP FUNCTION IF EXISTS dm_private.write_recall_telemetry(uuid, uuid, text, text, text [], text, integer,
    double precision);
CREATE OR REPLACE FUNCTION dm_private.write_recall_telemetry(team_id uuid, recall_id uuid, ranking_profile_version text,
    search_index_profile_version text, degraded_branches text [], vector_branch_ran boolean, result_count integer,
    duration_ms double precision, described boolean)
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
    query_embedding_contract_version text;
    team_known boolean;
    row_written boolean := false;
BEGIN
    -- the three freshness figures and the active embedding contract (the
    -- query embedding's, when the vector branch ran) in one statement (one
    -- executor start, not four)
    -- The pending count and the oldest pending document from one read of
    -- search_documents_pending_idx (team_id, pending_since) (session 14, one
    -- subplan fewer to start): its first 10,000 entries in pending_since
    -- order are counted (the cap) and hold the oldest of all.
    SELECT p.pending_count,
           (SELECT pg_catalog.count(*)
            FROM (SELECT 1 FROM dm_private.search_documents AS d
                  WHERE d.team_id = team AND d.search_state = 'failed' LIMIT 10000) AS x),
           EXTRACT(EPOCH FROM pg_catalog.now() - p.oldest_since)::double precision,
           (SELECT c.provider || '/' || c.model || '/' || c.dimensions || '/' || c.normalization || '/v' || c.version
            FROM dm_private.embedding_contracts AS c
            WHERE c.is_active AND vector_branch_ran),
           -- the team's row, read without a lock (migration 0095: the
           -- foreign key that checked it took FOR KEY SHARE on every recall)
           EXISTS (SELECT 1 FROM dm_private.teams AS t WHERE t.team_id = team)
    INTO pending, failed, oldest, query_embedding_contract_version, team_known
    FROM (SELECT pg_catalog.count(*) AS pending_count, pg_catalog.min(x.pending_since) AS oldest_since
          FROM (SELECT d.pending_since FROM dm_private.search_documents AS d
                WHERE d.team_id = team AND d.search_state = 'pending'
                ORDER BY d.pending_since
                LIMIT 10000) AS x) AS p;
    IF pg_catalog.current_setting('transaction_read_only') = 'off' THEN
        -- what the row's foreign key refused (the same SQLSTATE): a row for a
        -- team that does not exist
        IF NOT team_known THEN
            RAISE EXCEPTION 'team % does not exist', team
                USING ERRCODE = '23503', HINT = 'teams are created with dm.ensure_team';
        END IF;
        INSERT INTO dm_private.recall_telemetry (
            team_id, recall_id, ranking_profile_version, search_index_profile_version, degraded_branches,
            query_embedding_contract_version, pending_document_count, failed_document_count,
            oldest_pending_age_seconds, result_count, duration_ms)
        VALUES (team, recall_id, ranking_profile_version, search_index_profile_version,
                COALESCE(degraded_branches, '{}'), query_embedding_contract_version, pending, failed, oldest,
                result_count, duration_ms);
        row_written := true;
    END IF;
    IF NOT described THEN
        RETURN NULL;
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
COMMENT ON FUNCTION dm_private.write_recall_telemetry(uuid, uuid, text, text, text [], boolean, integer, double precision, boolean) IS
'Writes the internal telemetry row of one recall (profile versions, degraded branches, the active embedding contract when the vector branch ran, search freshness counted up to 10,000) and, when described, returns it as JSON (NULL otherwise); writes nothing in a read-only transaction. Refuses a team without a teams row (23503) and locks no teams row (migration 0095).';
REVOKE ALL ON FUNCTION dm_private.write_recall_telemetry(uuid, uuid, text, text, text [], boolean, integer, double precision,
    boolean)
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.write_recall_telemetry(uuid, uuid, text, text, text [], boolean, integer, double precision,
    boolean)
TO densemem_app, densemem_analyst, densemem_operator;
