-- Stage 72: search freshness.
--
-- Committed evidence is searchable by full text at once; its vector follows.
-- Operators (and recall telemetry) need to see how far behind the vectors
-- are: how many documents wait for a vector, how many failed, and how long
-- the oldest has waited. Freshness never decides what is true or eligible.

GRANT CREATE ON SCHEMA dm TO densemem_embedder;

-- One team's freshness, read under row-level security. Both counts use the
-- partial indexes on pending (0002) and failed (0015) documents.
CREATE OR REPLACE FUNCTION dm.search_freshness(team_id uuid)
RETURNS TABLE (
    pending_document_count bigint,
    failed_document_count bigint,
    oldest_pending_age_seconds double precision
)
LANGUAGE plpgsql
STABLE
SET search_path = ''
AS $$
BEGIN
    PERFORM dm_private.require_team(search_freshness.team_id);
    RETURN QUERY
    SELECT pending.document_count,
           (SELECT pg_catalog.count(*)
            FROM dm_private.search_documents AS f
            WHERE f.team_id = search_freshness.team_id AND f.search_state = 'failed'),
           CASE WHEN pending.oldest IS NOT NULL
               THEN GREATEST(0, pg_catalog.date_part('epoch', pg_catalog.now() - pending.oldest))::double precision END
    FROM (
        SELECT pg_catalog.count(*) AS document_count, pg_catalog.min(p.pending_since) AS oldest
        FROM dm_private.search_documents AS p
        WHERE p.team_id = search_freshness.team_id AND p.search_state = 'pending'
    ) AS pending;
END
$$;
COMMENT ON FUNCTION dm.search_freshness(uuid) IS
'Search freshness of the authenticated team: documents waiting for a vector of the active contract, documents whose embedding failed, and the age in seconds of the oldest pending one (NULL when none).';
REVOKE ALL ON FUNCTION dm.search_freshness(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm.search_freshness(uuid) TO densemem_app, densemem_analyst, densemem_operator;

-- The same totals over every team, for /metrics and the worker's status
-- line. SECURITY DEFINER (owned by densemem_embedder, which reaches every
-- team's documents): it returns three numbers and no team data.
CREATE OR REPLACE FUNCTION dm.search_freshness_overall()
RETURNS TABLE (
    pending_document_count bigint,
    failed_document_count bigint,
    oldest_pending_age_seconds double precision
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = ''
AS $$
    SELECT pending.document_count,
           (SELECT pg_catalog.count(*) FROM dm_private.search_documents AS f WHERE f.search_state = 'failed'),
           CASE WHEN pending.oldest IS NOT NULL
               THEN GREATEST(0, pg_catalog.date_part('epoch', pg_catalog.now() - pending.oldest))::double precision END
    FROM (
        SELECT pg_catalog.count(*) AS document_count, pg_catalog.min(p.pending_since) AS oldest
        FROM dm_private.search_documents AS p
        WHERE p.search_state = 'pending'
    ) AS pending
$$;
ALTER FUNCTION dm.search_freshness_overall() OWNER TO densemem_embedder;
COMMENT ON FUNCTION dm.search_freshness_overall() IS
'Search freshness over all teams (totals only): pending and failed document counts and the age in seconds of the oldest pending document (NULL when none).';
REVOKE ALL ON FUNCTION dm.search_freshness_overall() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm.search_freshness_overall() TO densemem_app, densemem_operator, densemem_worker;

REVOKE CREATE ON SCHEMA dm FROM densemem_embedder;
