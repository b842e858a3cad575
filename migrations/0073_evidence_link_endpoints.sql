-- 0073: evidence -> the endpoints of its eligible links, one row per
-- evidence, kept by the write path.
--
-- Recall's proximity signal (dm_private.entity_proximity) reads, for each of
-- ~100 candidate evidence rows, the endpoints of the eligible relationships
-- it supports. Through evidence_entity_links (0038) that is a B-tree range
-- per candidate and a row per link carried through the statement: ~3.5 M of
-- a ~6.9 M instruction call on the 1M-relationship discovery bench (session
-- 12). This table holds one row per evidence with the sorted distinct
-- endpoints of its links, the link count, the distinct owners and the
-- earliest recorded end: one hash probe per candidate (by evidence_id), and
-- when the count is within the profile's fan-out, no link has ended and no
-- owner is inactive, the endpoints are exactly what the links would give.
-- Any other evidence is still read link by link (entity_proximity).
--
-- Statement triggers on evidence_entity_links (functions in
-- sql/12_graph.sql, copied here because the triggers need them now) keep it
-- exact in the transaction of every write that changes a link, whatever
-- wrote it (relationship_evidence and relationships triggers, erasure, a
-- truncate). They are ENABLE ALWAYS, like the links' own triggers, so a bulk
-- loader in session_replication_role = replica cannot leave it stale. No
-- foreign key: the rows are derived. Holds identifiers and a timestamp, no
-- text.

SET LOCAL ROLE densemem_owner;

CREATE TABLE dm_private.evidence_link_endpoints (
    team_id uuid NOT NULL,
    evidence_id uuid NOT NULL,
    entity_ids uuid [] NOT NULL,
    link_count integer NOT NULL,
    owner_ids uuid [] NOT NULL,
    earliest_known_to timestamptz,
    CONSTRAINT evidence_link_endpoints_pkey PRIMARY KEY (team_id, evidence_id)
);
-- A hash index (one key column, as 0072): a three-level B-tree descent
-- comparing two uuids per step costs ~7.6 k instructions more per probe
-- than a bucket page (callgrind, the bench's 24 proximity calls: 5.48 M per
-- call through the key, 4.72 M through this index). Every reader keeps its
-- explicit team_id predicate; listed in tests/pgtap/test_schema_team_id_leads.sql.
CREATE INDEX evidence_link_endpoints_evidence_hash_idx ON dm_private.evidence_link_endpoints USING hash (evidence_id);
COMMENT ON TABLE dm_private.evidence_link_endpoints IS
'Derived, kept by triggers on evidence_entity_links: per evidence, the sorted distinct endpoints of its eligible links, their count, distinct owners and earliest recorded end (a row with count 0 once all its links are gone). Proximity reads one row per candidate.';
COMMENT ON INDEX dm_private.evidence_link_endpoints_evidence_hash_idx IS
'An evidence row''s summary by its id, by hash (one bucket page instead of a B-tree descent): proximity''s probe of each candidate. Every reader keeps its team_id predicate.';

ALTER TABLE dm_private.evidence_link_endpoints ENABLE ROW LEVEL SECURITY;
ALTER TABLE dm_private.evidence_link_endpoints FORCE ROW LEVEL SECURITY;
CREATE POLICY "the service works inside the authenticated team" ON dm_private.evidence_link_endpoints
AS PERMISSIVE FOR ALL TO densemem_app
USING (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid))
WITH CHECK (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid));
CREATE POLICY "analysts and operators read only their granted team" ON dm_private.evidence_link_endpoints
AS PERMISSIVE FOR SELECT TO densemem_analyst, densemem_operator
USING (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid)
       AND (pg_catalog.pg_has_role(session_user, 'densemem_app', 'MEMBER') OR EXISTS (
           SELECT 1 FROM dm_private.team_role_grants AS g
           WHERE g.team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid)
             AND g.role_name = session_user)));
CREATE POLICY "the owner works inside the authenticated team" ON dm_private.evidence_link_endpoints
AS PERMISSIVE FOR ALL TO densemem_owner
USING (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid))
WITH CHECK (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid));

REVOKE ALL ON dm_private.evidence_link_endpoints FROM PUBLIC;
-- The write path (invoker functions as densemem_app) changes rows through
-- the triggers (UPDATE also for the row lock); RLS keeps them inside the
-- team. Analysts and operators may call entity_proximity (invoker).
GRANT SELECT, INSERT, UPDATE ON dm_private.evidence_link_endpoints TO densemem_app;
GRANT SELECT ON dm_private.evidence_link_endpoints TO densemem_analyst, densemem_operator;

-- ---------------------------------------------------------------- trigger functions (current definition: sql/12)

-- Evidence -> the endpoints of its eligible links, one row per evidence
-- (migration 0073): recall's proximity (dm_private.entity_proximity) reads
-- one row per candidate (a hash probe by evidence_id) instead of a range of
-- evidence_entity_links per candidate and a row per link (about a third of
-- a proximity call, session 12). The row carries what the read needs to
-- know the distinct endpoints are exactly its answer: the link count (at
-- most the profile's fan-out: every link is inside the per-evidence cap),
-- the earliest recorded end (none, or later than now: every link is
-- current) and the owners (none inactive). Any other evidence is read from
-- evidence_entity_links as before. Derived from evidence_entity_links, by
-- statement triggers on that table, so every write that changes a link
-- (relationship_evidence, relationships, erasure, replica-mode loads, the
-- links' own truncate) changes the row in the same transaction.
--
-- Concurrency: a row is a count over many links, so two transactions
-- changing links of the same evidence must not both write a count from
-- their own snapshot. Evidence seen for the first time is inserted with
-- ON CONFLICT DO NOTHING (a concurrent first insert makes this one wait,
-- then fall to the second path). Rows that exist are locked in key order,
-- which waits for any other writer of the same evidence to commit; the
-- following statement takes a new snapshot (READ COMMITTED) that sees that
-- writer's links, and recounts. Under REPEATABLE READ the lock raises a
-- serialization failure instead. A row whose links are all gone stays, with
-- a count of 0 and empty arrays, so that a waiting writer always finds the
-- row it locks (rows go only with TRUNCATE).
CREATE OR REPLACE FUNCTION dm_private.evidence_link_endpoints_refresh(team_ids uuid [], evidence_ids uuid [])
RETURNS void
LANGUAGE plpgsql
SET search_path = ''
AS $$
DECLARE
    fresh_teams uuid [];
    fresh_evidence uuid [];
    held_teams uuid [];
    held_evidence uuid [];
BEGIN
    -- Evidence with no row yet (a bulk load: all of it) is counted once and
    -- inserted; evidence with a row is only locked and recounted below.
    SELECT pg_catalog.array_agg(t.team_id), pg_catalog.array_agg(t.evidence_id)
    INTO fresh_teams, fresh_evidence
    FROM (SELECT DISTINCT k.team_id, k.evidence_id
          FROM ROWS FROM (pg_catalog.unnest(team_ids), pg_catalog.unnest(evidence_ids)) AS k (team_id, evidence_id)) AS t
    WHERE NOT EXISTS (SELECT 1 FROM dm_private.evidence_link_endpoints AS s
                      WHERE s.team_id = t.team_id AND s.evidence_id = t.evidence_id);
    WITH inserted AS (
        INSERT INTO dm_private.evidence_link_endpoints AS s (team_id, evidence_id, entity_ids, link_count,
                                                            owner_ids, earliest_known_to)
        SELECT c.team_id, c.evidence_id, c.entity_ids, c.link_count, c.owner_ids, c.earliest_known_to
        FROM dm_private.evidence_link_endpoints_count(fresh_teams, fresh_evidence) AS c
        WHERE c.link_count > 0
        ON CONFLICT ON CONSTRAINT evidence_link_endpoints_pkey DO NOTHING
        RETURNING s.team_id, s.evidence_id
    )
    SELECT pg_catalog.array_agg(t.team_id ORDER BY t.team_id, t.evidence_id),
           pg_catalog.array_agg(t.evidence_id ORDER BY t.team_id, t.evidence_id)
    INTO held_teams, held_evidence
    FROM (SELECT DISTINCT k.team_id, k.evidence_id
          FROM ROWS FROM (pg_catalog.unnest(team_ids), pg_catalog.unnest(evidence_ids)) AS k (team_id, evidence_id)) AS t
    WHERE NOT EXISTS (SELECT 1 FROM inserted AS i WHERE i.team_id = t.team_id AND i.evidence_id = t.evidence_id);
    IF held_teams IS NULL THEN
        RETURN;
    END IF;
    PERFORM 1
    FROM dm_private.evidence_link_endpoints AS s
    JOIN ROWS FROM (pg_catalog.unnest(held_teams), pg_catalog.unnest(held_evidence)) AS k (team_id, evidence_id)
      ON s.team_id = k.team_id AND s.evidence_id = k.evidence_id
    ORDER BY s.team_id, s.evidence_id
    FOR UPDATE OF s;
    UPDATE dm_private.evidence_link_endpoints AS s
    SET entity_ids = c.entity_ids, link_count = c.link_count, owner_ids = c.owner_ids,
        earliest_known_to = c.earliest_known_to
    FROM dm_private.evidence_link_endpoints_count(held_teams, held_evidence) AS c
    WHERE s.team_id = c.team_id AND s.evidence_id = c.evidence_id;
END
$$;
COMMENT ON FUNCTION dm_private.evidence_link_endpoints_refresh(uuid [], uuid []) IS
'Recounts the evidence_link_endpoints rows of the given (team, evidence) pairs from evidence_entity_links: evidence without a row counted and inserted, existing rows locked (a concurrent writer of the same evidence commits first) and recounted.';

-- The evidence_link_endpoints rows of the given (team, evidence) pairs, as
-- counted from evidence_entity_links now: sorted distinct endpoints
-- (subjects and entity objects), link count, sorted distinct owners and
-- earliest recorded end; a pair with no link gives a count of 0 and empty
-- arrays. Set-based: one call per trigger statement, however many rows.
CREATE OR REPLACE FUNCTION dm_private.evidence_link_endpoints_count(team_ids uuid [], evidence_ids uuid [])
RETURNS TABLE (team_id uuid, evidence_id uuid, entity_ids uuid [], link_count integer, owner_ids uuid [],
               earliest_known_to timestamptz)
LANGUAGE sql
STABLE
SET search_path = ''
AS $$
    SELECT k.team_id, k.evidence_id,
           COALESCE(pg_catalog.array_agg(DISTINCT e.entity_id) FILTER (WHERE e.entity_id IS NOT NULL), '{}'),
           pg_catalog.count(DISTINCT l.relationship_id)::integer,
           COALESCE(pg_catalog.array_agg(DISTINCT l.owner_profile_id) FILTER (WHERE l.owner_profile_id IS NOT NULL),
                    '{}'),
           pg_catalog.min(l.known_to)
    FROM (SELECT DISTINCT u.team_id, u.evidence_id
          FROM ROWS FROM (pg_catalog.unnest(team_ids), pg_catalog.unnest(evidence_ids)) AS u (team_id, evidence_id)) AS k
    LEFT JOIN dm_private.evidence_entity_links AS l
      ON l.team_id = k.team_id AND l.evidence_id = k.evidence_id
    LEFT JOIN LATERAL (VALUES (l.subject_entity_id), (l.object_entity_id)) AS e (entity_id) ON true
    GROUP BY k.team_id, k.evidence_id
$$;
COMMENT ON FUNCTION dm_private.evidence_link_endpoints_count(uuid [], uuid []) IS
'The evidence_link_endpoints rows of the given (team, evidence) pairs, counted from evidence_entity_links: sorted distinct endpoints, link count, sorted distinct owners, earliest recorded end (count 0 and empty arrays without links).';

-- After INSERT, UPDATE or DELETE on evidence_entity_links (statement): the
-- evidence rows whose links changed are recounted.
CREATE OR REPLACE FUNCTION dm_private.link_endpoints_links_changed()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM dm_private.evidence_link_endpoints_refresh(pg_catalog.array_agg(n.team_id),
                                                           pg_catalog.array_agg(n.evidence_id))
        FROM new_rows AS n;
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM dm_private.evidence_link_endpoints_refresh(pg_catalog.array_agg(o.team_id),
                                                           pg_catalog.array_agg(o.evidence_id))
        FROM old_rows AS o;
    ELSE
        PERFORM dm_private.evidence_link_endpoints_refresh(pg_catalog.array_agg(x.team_id),
                                                           pg_catalog.array_agg(x.evidence_id))
        FROM (SELECT n.team_id, n.evidence_id FROM new_rows AS n
              UNION
              SELECT o.team_id, o.evidence_id FROM old_rows AS o) AS x;
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.link_endpoints_links_changed() IS
'Trigger (statement, after INSERT, UPDATE or DELETE on evidence_entity_links): recounts the evidence_link_endpoints rows of the evidence whose links changed.';

-- TRUNCATE has no transition table: the summaries go with the links.
CREATE OR REPLACE FUNCTION dm_private.link_endpoints_links_truncated()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
    TRUNCATE dm_private.evidence_link_endpoints;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.link_endpoints_links_truncated() IS
'Trigger (statement, after TRUNCATE on evidence_entity_links): empties evidence_link_endpoints.';

REVOKE ALL ON FUNCTION dm_private.evidence_link_endpoints_refresh(uuid [], uuid []) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.evidence_link_endpoints_count(uuid [], uuid []) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.link_endpoints_links_changed() FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.link_endpoints_links_truncated() FROM PUBLIC;
-- The write path (invoker, as densemem_app) reaches them through the triggers.
GRANT EXECUTE ON FUNCTION dm_private.evidence_link_endpoints_refresh(uuid [], uuid []) TO densemem_app;
GRANT EXECUTE ON FUNCTION dm_private.evidence_link_endpoints_count(uuid [], uuid []) TO densemem_app;

-- Lock out writers of the links while the triggers are created and the
-- backfill reads them, so that no change falls between the two.
LOCK TABLE dm_private.evidence_entity_links IN SHARE ROW EXCLUSIVE MODE;

CREATE TRIGGER evidence_entity_links_endpoints_inserted
AFTER INSERT ON dm_private.evidence_entity_links
REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION dm_private.link_endpoints_links_changed();
CREATE TRIGGER evidence_entity_links_endpoints_updated
AFTER UPDATE ON dm_private.evidence_entity_links
REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION dm_private.link_endpoints_links_changed();
CREATE TRIGGER evidence_entity_links_endpoints_deleted
AFTER DELETE ON dm_private.evidence_entity_links
REFERENCING OLD TABLE AS old_rows
FOR EACH STATEMENT EXECUTE FUNCTION dm_private.link_endpoints_links_changed();
CREATE TRIGGER evidence_entity_links_endpoints_truncated
AFTER TRUNCATE ON dm_private.evidence_entity_links
FOR EACH STATEMENT EXECUTE FUNCTION dm_private.link_endpoints_links_truncated();
ALTER TABLE dm_private.evidence_entity_links ENABLE ALWAYS TRIGGER evidence_entity_links_endpoints_inserted;
ALTER TABLE dm_private.evidence_entity_links ENABLE ALWAYS TRIGGER evidence_entity_links_endpoints_updated;
ALTER TABLE dm_private.evidence_entity_links ENABLE ALWAYS TRIGGER evidence_entity_links_endpoints_deleted;
ALTER TABLE dm_private.evidence_entity_links ENABLE ALWAYS TRIGGER evidence_entity_links_endpoints_truncated;
COMMENT ON TRIGGER evidence_entity_links_endpoints_inserted ON dm_private.evidence_entity_links IS
'Keeps evidence_link_endpoints: evidence that gained links.';
COMMENT ON TRIGGER evidence_entity_links_endpoints_updated ON dm_private.evidence_entity_links IS
'Keeps evidence_link_endpoints: evidence whose links changed.';
COMMENT ON TRIGGER evidence_entity_links_endpoints_deleted ON dm_private.evidence_entity_links IS
'Keeps evidence_link_endpoints: evidence that lost links.';
COMMENT ON TRIGGER evidence_entity_links_endpoints_truncated ON dm_private.evidence_entity_links IS
'Keeps evidence_link_endpoints: empties it with evidence_entity_links.';

-- ---------------------------------------------------------------- backfill (all teams: superuser)

RESET ROLE;
INSERT INTO dm_private.evidence_link_endpoints (team_id, evidence_id, entity_ids, link_count, owner_ids,
                                                earliest_known_to)
SELECT c.team_id, c.evidence_id, c.entity_ids, c.link_count, c.owner_ids, c.earliest_known_to
FROM (SELECT pg_catalog.array_agg(k.team_id) AS team_ids, pg_catalog.array_agg(k.evidence_id) AS evidence_ids
      FROM (SELECT DISTINCT l.team_id, l.evidence_id FROM dm_private.evidence_entity_links AS l) AS k) AS a
CROSS JOIN LATERAL dm_private.evidence_link_endpoints_count(a.team_ids, a.evidence_ids) AS c;
ANALYZE dm_private.evidence_link_endpoints;
