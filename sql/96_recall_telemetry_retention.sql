-- Composition: retention of the recall telemetry (session 16).
--
-- Every recall adds one dm_private.recall_telemetry row (sql/95) and nothing
-- else ever removes one: at 100 recalls a second that is 8.6 million rows a
-- day, forever. Old telemetry answers no question recall or an operator asks
-- (the rows describe past profile versions and past freshness), so the
-- administrator prunes it on a schedule (docs/RECALL.md, "Telemetry
-- retention": keep 30 days).
--
-- Administrator only, like sql/05: pruning crosses every team, and every
-- Dense-Mem role (the service, analysts, operators, the searcher) is scoped
-- to one team by row-level security, so no Dense-Mem role is granted
-- EXECUTE. It runs with the caller's rights (the migrating superuser or a
-- role the DBA grants it to explicitly): a SECURITY DEFINER owner would
-- need a policy letting it delete every team's rows, a wider power than
-- this one statement needs.

-- Deletes at most batch_size rows created before now() - older_than and
-- returns how many it deleted; the caller repeats it, each call in its own
-- transaction, until it returns 0 (`densemem telemetry prune` does).
--
-- Why one bounded batch per call: a function runs inside its caller's
-- transaction and cannot COMMIT, so a function that looped to the end would
-- delete millions of rows in one transaction, holding their row locks, one
-- snapshot and an unbounded WAL burst until it ends, and leaving vacuum
-- nothing to reclaim before then. One batch per call keeps each
-- transaction to batch_size rows; dead rows of earlier batches are
-- reclaimable as soon as their transaction commits.
--
-- How the rows are found and deleted: "created_at < cutoff" has no team,
-- and the only time index is (team_id, created_at); PostgreSQL 18's B-tree
-- skip scan reads it one team at a time (one index descent per team), so
-- the old rows come straight from the index, oldest first per team, and the
-- scan stops when the batch is full. The DELETE then takes the locked rows
-- by their ctid (a TID scan of exactly those heap tuples; they are locked by
-- this transaction, so their ctid cannot change under it). Measured on 1 M
-- rows over 20 teams, 10,000 old rows per batch, as the superuser, generic
-- plan (docs/RECALL.md): 17 ms and 33 k buffers per batch; over 1,000
-- teams 48 ms, and 11 ms (4 k buffers) for a call that finds nothing. Joining the batch
-- back by primary key instead (DELETE ... USING) made the planner hash-join
-- against a sequential scan of the whole table, 130-164 ms and 15 k heap
-- pages per batch whatever the batch size; an explicit loop over teams
-- (LATERAL per team) read the same index entries as the skip scan. So
-- neither a new index nor a team loop is needed.
--
-- SKIP LOCKED: two pruners started at once (a cron overlap) take disjoint
-- rows instead of the second waiting on the first's locks and then deleting
-- nothing (its 0 would end its loop while old rows remain). Recalls only
-- insert new rows, so they never contend with a prune.
CREATE OR REPLACE FUNCTION dm.prune_recall_telemetry(older_than interval, batch_size integer DEFAULT 10000)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
DECLARE
    cutoff timestamptz;
    deleted bigint;
BEGIN
    -- A NULL or negative age would otherwise compare as "nothing is older"
    -- (a silent no-op) or reach into the future; a batch beyond 100,000 is
    -- the one huge transaction batching exists to avoid.
    IF older_than IS NULL OR older_than < interval '0' THEN
        RAISE EXCEPTION 'older_than must be a non-negative interval, not %', COALESCE(older_than::text, 'NULL')
            USING ERRCODE = '22023',
                  HINT = 'e.g. dm.prune_recall_telemetry(interval ''30 days'') keeps the last 30 days';
    END IF;
    IF batch_size IS NULL OR batch_size < 1 OR batch_size > 100000 THEN
        RAISE EXCEPTION 'batch_size must be between 1 and 100000, not %', COALESCE(batch_size::text, 'NULL')
            USING ERRCODE = '22023',
                  HINT = 'call the function again until it returns 0 instead of raising the batch';
    END IF;
    cutoff := pg_catalog.now() - older_than;
    DELETE FROM dm_private.recall_telemetry AS t
    WHERE t.ctid = ANY (ARRAY(
        SELECT o.ctid
        FROM dm_private.recall_telemetry AS o
        WHERE o.created_at < cutoff
        LIMIT batch_size
        FOR UPDATE SKIP LOCKED));
    GET DIAGNOSTICS deleted = ROW_COUNT;
    RETURN deleted;
END
$$;
COMMENT ON FUNCTION dm.prune_recall_telemetry(interval, integer) IS
'Administrator: deletes at most batch_size (1..100000, default 10000) recall telemetry rows created before now() - older_than, over every team, and returns how many; call it in separate transactions until it returns 0. SQLSTATE 22023 for a NULL or negative interval or a batch size out of range.';
REVOKE ALL ON FUNCTION dm.prune_recall_telemetry(interval, integer) FROM PUBLIC;
