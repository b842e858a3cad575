-- 0057: the predicates a team's relationships have ever used, kept by the
-- write path (insert-only, a superset).
--
-- Discovery turns query words into predicate hints from the own predicates
-- of the (at most two) entities the query names: the first 30 distinct
-- predicates per direction of each, read by a loose index scan of
-- relationships_outgoing_idx / relationships_incoming_idx. On a hub every
-- step of that scan reads the rest of a leaf page (~50 k instructions a
-- step, ~42 steps for a hub of ~20 predicates per direction: ~2 M of a
-- ~10.6 M call). When the team has used at most 30 predicates in all, no
-- entity can have more than 30 per direction, so the hint is exactly the
-- team's predicates that match the query and that the entity has: one
-- probe per matching predicate instead of the scan
-- (dm_private.discovery_for_recall_embedded, sql/64).
--
-- One row per (team, predicate) first seen; no counter, nothing updated,
-- nothing deleted: a statement trigger adds the predicates of inserted rows
-- that are not there yet (INSERT ... WHERE NOT EXISTS; the key ends in a
-- random key_id, so no writer ever waits on another, and a race leaves a
-- duplicate, which the reader's DISTINCT absorbs). A row trigger adds the
-- new predicate of an UPDATE that changes one (UPDATE OF predicate: other
-- updates do not fire it). Predicates that are no longer used stay: readers
-- probe relationships for existence, so a superset answers exactly. Both
-- triggers are ENABLE ALWAYS, so a bulk loader in
-- session_replication_role = replica cannot leave it incomplete. Holds
-- predicate names only (the relationships' own validated labels), no text
-- of any evidence.

SET LOCAL ROLE densemem_owner;

CREATE TABLE dm_private.team_predicates (
    team_id uuid NOT NULL,
    predicate text NOT NULL,
    -- A random last key column: the key is unique without making a writer
    -- wait on another that adds the same predicate at the same time.
    key_id uuid NOT NULL DEFAULT pg_catalog.gen_random_uuid(),
    CONSTRAINT team_predicates_pkey PRIMARY KEY (team_id, predicate, key_id)
);
COMMENT ON TABLE dm_private.team_predicates IS
'Derived, kept by triggers, insert-only: every predicate a relationship of the team has had (a superset; a race may leave a duplicate). Discovery''s predicate hints probe only the matching ones when a team has used at most 30.';
COMMENT ON INDEX dm_private.team_predicates_pkey IS
'The team''s predicates in order; key_id (random) keeps writers from waiting on each other, so a predicate may repeat.';

ALTER TABLE dm_private.team_predicates ENABLE ROW LEVEL SECURITY;
ALTER TABLE dm_private.team_predicates FORCE ROW LEVEL SECURITY;
CREATE POLICY "the service works inside the authenticated team" ON dm_private.team_predicates
AS PERMISSIVE FOR ALL TO densemem_app
USING (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid))
WITH CHECK (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid));
CREATE POLICY "analysts and operators read only their granted team" ON dm_private.team_predicates
AS PERMISSIVE FOR SELECT TO densemem_analyst, densemem_operator
USING (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid)
       AND (pg_catalog.pg_has_role(session_user, 'densemem_app', 'MEMBER') OR EXISTS (
           SELECT 1 FROM dm_private.team_role_grants AS g
           WHERE g.team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid)
             AND g.role_name = session_user)));
CREATE POLICY "the owner works inside the authenticated team" ON dm_private.team_predicates
AS PERMISSIVE FOR ALL TO densemem_owner
USING (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid))
WITH CHECK (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid));

REVOKE ALL ON dm_private.team_predicates FROM PUBLIC;
-- The write path (invoker functions as densemem_app) adds rows through the
-- triggers; RLS keeps them inside the team.
GRANT SELECT, INSERT ON dm_private.team_predicates TO densemem_app;
GRANT SELECT ON dm_private.team_predicates TO densemem_analyst, densemem_operator, densemem_searcher;

-- ---------------------------------------------------------------- trigger functions (current definition: sql/60)

-- After INSERT on relationships (statement): the predicates of the new rows
-- the team has not used before.
CREATE OR REPLACE FUNCTION dm_private.team_predicates_inserted()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
    INSERT INTO dm_private.team_predicates (team_id, predicate)
    SELECT DISTINCT n.team_id, n.predicate
    FROM new_rows AS n
    WHERE NOT EXISTS (SELECT 1 FROM dm_private.team_predicates AS t
                      WHERE t.team_id = n.team_id AND t.predicate = n.predicate);
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.team_predicates_inserted() IS
'Trigger (statement, after INSERT on relationships): adds the predicates of the new rows that team_predicates does not hold yet.';
REVOKE ALL ON FUNCTION dm_private.team_predicates_inserted() FROM PUBLIC;

-- After UPDATE OF predicate on relationships (row, only when it changes):
-- the new predicate, when the team has not used it before.
CREATE OR REPLACE FUNCTION dm_private.team_predicates_updated()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
    INSERT INTO dm_private.team_predicates (team_id, predicate)
    SELECT NEW.team_id, NEW.predicate
    WHERE NOT EXISTS (SELECT 1 FROM dm_private.team_predicates AS t
                      WHERE t.team_id = NEW.team_id AND t.predicate = NEW.predicate);
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.team_predicates_updated() IS
'Trigger (row, after UPDATE OF predicate on relationships when it changes): adds the new predicate when team_predicates does not hold it yet.';
REVOKE ALL ON FUNCTION dm_private.team_predicates_updated() FROM PUBLIC;

CREATE TRIGGER relationships_team_predicates_inserted AFTER INSERT ON dm_private.relationships
REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION dm_private.team_predicates_inserted();
CREATE TRIGGER relationships_team_predicates_updated AFTER UPDATE OF predicate ON dm_private.relationships
FOR EACH ROW WHEN (old.predicate IS DISTINCT FROM new.predicate)
EXECUTE FUNCTION dm_private.team_predicates_updated();
ALTER TABLE dm_private.relationships ENABLE ALWAYS TRIGGER relationships_team_predicates_inserted;
ALTER TABLE dm_private.relationships ENABLE ALWAYS TRIGGER relationships_team_predicates_updated;
COMMENT ON TRIGGER relationships_team_predicates_inserted ON dm_private.relationships IS
'Keeps team_predicates: predicates of inserted relationships.';
COMMENT ON TRIGGER relationships_team_predicates_updated ON dm_private.relationships IS
'Keeps team_predicates: a predicate changed by an update.';

-- ---------------------------------------------------------------- backfill (all teams: superuser)

RESET ROLE;
INSERT INTO dm_private.team_predicates (team_id, predicate)
SELECT DISTINCT r.team_id, r.predicate
FROM dm_private.relationships AS r;
ANALYZE dm_private.team_predicates;
