-- 0070: relationships that may carry discovery context, kept by the write
-- path (insert-only, a superset).
--
-- Discovery decorates a pool of ~15 edges per call with conflict references
-- and cross-author corroboration (dm_private.discovery_edge_context), and
-- starts that plan only when some pool edge has a recorded conflict (either
-- side) or an equivalent relationship of another author (same semantic
-- group, or same subject, predicate, object and polarity); otherwise both
-- are empty by definition. Deciding that took four index probes per pool
-- edge on every call (conflicts both ways, relationships_semantic_group_idx
-- and the endpoint range of relationships_outgoing_idx, ~4 pages each on a
-- 1M-row table): ~0.6 M instructions of a ~8 M call. A mark per such
-- relationship answers it with one probe of a small index per edge.
--
-- One row per relationship that has (or once had) a recorded conflict or an
-- equivalent of another author. Nothing is updated or deleted: a conflict
-- row or an equivalent that goes away leaves the mark, and a superset only
-- starts discovery_edge_context for nothing, which then finds nothing (the
-- answer is the same). The key ends in a random key_id, so no writer waits
-- on another, and a race leaves a duplicate, which readers absorb (EXISTS).
-- Statement triggers (transition tables) add marks for inserted conflicts
-- and for inserted relationships and their equivalents, and for updates of
-- relationships that change what makes two equivalent; all ENABLE ALWAYS,
-- so a bulk loader in session_replication_role = replica cannot leave one
-- out. Holds identifiers only, no text.

SET LOCAL ROLE densemem_owner;

CREATE TABLE dm_private.discovery_context_marks (
    team_id uuid NOT NULL,
    relationship_id uuid NOT NULL,
    -- A random last key column: the key is unique without making a writer
    -- wait on another that marks the same relationship at the same time.
    key_id uuid NOT NULL DEFAULT pg_catalog.gen_random_uuid(),
    CONSTRAINT discovery_context_marks_pkey PRIMARY KEY (team_id, relationship_id, key_id)
);
COMMENT ON TABLE dm_private.discovery_context_marks IS
'Derived, kept by triggers, insert-only: relationships that have (or had) a recorded conflict or an equivalent relationship of another author (a superset; a race may leave a duplicate). Discovery starts conflict / corroboration decoration only when a pool edge is marked.';
COMMENT ON INDEX dm_private.discovery_context_marks_pkey IS
'Is this relationship marked: one probe. key_id (random) keeps writers from waiting on each other, so a mark may repeat.';

ALTER TABLE dm_private.discovery_context_marks ENABLE ROW LEVEL SECURITY;
ALTER TABLE dm_private.discovery_context_marks FORCE ROW LEVEL SECURITY;
CREATE POLICY "the service works inside the authenticated team" ON dm_private.discovery_context_marks
AS PERMISSIVE FOR ALL TO densemem_app
USING (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid))
WITH CHECK (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid));
CREATE POLICY "analysts and operators read only their granted team" ON dm_private.discovery_context_marks
AS PERMISSIVE FOR SELECT TO densemem_analyst, densemem_operator
USING (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid)
       AND (pg_catalog.pg_has_role(session_user, 'densemem_app', 'MEMBER') OR EXISTS (
           SELECT 1 FROM dm_private.team_role_grants AS g
           WHERE g.team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid)
             AND g.role_name = session_user)));
CREATE POLICY "the owner works inside the authenticated team" ON dm_private.discovery_context_marks
AS PERMISSIVE FOR ALL TO densemem_owner
USING (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid))
WITH CHECK (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid));

REVOKE ALL ON dm_private.discovery_context_marks FROM PUBLIC;
-- The write path (invoker functions as densemem_app) adds rows through the
-- triggers; RLS keeps them inside the team. The searcher reads them in
-- discovery_candidate_paths (security definer, explicit team predicate).
GRANT SELECT, INSERT ON dm_private.discovery_context_marks TO densemem_app;
GRANT SELECT ON dm_private.discovery_context_marks TO densemem_analyst, densemem_operator, densemem_searcher;

-- ---------------------------------------------------------------- trigger functions (current definition: sql/60)

-- After INSERT on conflicts (statement): both sides of every new conflict.
CREATE OR REPLACE FUNCTION dm_private.context_marks_conflicts_inserted()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
    INSERT INTO dm_private.discovery_context_marks (team_id, relationship_id)
    SELECT DISTINCT s.team_id, s.relationship_id
    FROM new_rows AS n
    CROSS JOIN LATERAL (VALUES (n.team_id, n.relationship_id), (n.team_id, n.conflicting_relationship_id))
        AS s (team_id, relationship_id)
    WHERE NOT EXISTS (SELECT 1 FROM dm_private.discovery_context_marks AS m
                      WHERE m.team_id = s.team_id AND m.relationship_id = s.relationship_id);
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION dm_private.context_marks_conflicts_inserted() FROM PUBLIC;

-- After INSERT or UPDATE on relationships (statement): the written rows and
-- their equivalents, when the two have different authors. An update that
-- changes none of the columns deciding equivalence (status, tier,
-- verification, lifecycle: every update the service makes) reads nothing
-- but the transition tables.
CREATE OR REPLACE FUNCTION dm_private.context_marks_relationships_written()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF NOT EXISTS (
            SELECT 1
            FROM new_rows AS n
            JOIN old_rows AS o ON o.team_id = n.team_id AND o.relationship_id = n.relationship_id
            WHERE (n.semantic_group, n.subject_entity_id, n.predicate, n.object_entity_id, n.polarity,
                   n.owner_profile_id)
                  IS DISTINCT FROM (o.semantic_group, o.subject_entity_id, o.predicate, o.object_entity_id,
                                    o.polarity, o.owner_profile_id)) THEN
            RETURN NULL;
        END IF;
    END IF;
    -- Equivalent relationships form groups (same semantic group; same
    -- subject, predicate, object and polarity). A group with two or more
    -- authors has every member marked: each has an equivalent of another
    -- author. A group has two authors exactly when some member's owner
    -- differs from a new row's owner: one probe per new row (the probe
    -- discovery made per pool edge on every call before), and the members
    -- are read only for such groups. A member-wise "other author exists"
    -- probe would read a single-author group of n to its end for each member.
    INSERT INTO dm_private.discovery_context_marks (team_id, relationship_id)
    SELECT DISTINCT x.team_id, x.relationship_id
    FROM (SELECT DISTINCT n.team_id, n.semantic_group
          FROM new_rows AS n
          WHERE n.semantic_group IS NOT NULL
            AND EXISTS (SELECT 1 FROM dm_private.relationships AS y
                        WHERE y.team_id = n.team_id AND y.semantic_group = n.semantic_group
                          AND y.owner_profile_id <> n.owner_profile_id)) AS g
    JOIN dm_private.relationships AS x ON x.team_id = g.team_id AND x.semantic_group = g.semantic_group
    WHERE NOT EXISTS (SELECT 1 FROM dm_private.discovery_context_marks AS m
                      WHERE m.team_id = x.team_id AND m.relationship_id = x.relationship_id);
    INSERT INTO dm_private.discovery_context_marks (team_id, relationship_id)
    SELECT DISTINCT x.team_id, x.relationship_id
    FROM (SELECT DISTINCT n.team_id, n.subject_entity_id, n.predicate, n.object_entity_id, n.polarity
          FROM new_rows AS n
          WHERE n.object_entity_id IS NOT NULL
            AND EXISTS (SELECT 1 FROM dm_private.relationships AS y
                        WHERE y.team_id = n.team_id AND y.subject_entity_id = n.subject_entity_id
                          AND y.predicate = n.predicate AND y.object_entity_id = n.object_entity_id
                          AND y.polarity = n.polarity AND y.owner_profile_id <> n.owner_profile_id)) AS g
    JOIN dm_private.relationships AS x
      ON x.team_id = g.team_id AND x.subject_entity_id = g.subject_entity_id AND x.predicate = g.predicate
     AND x.object_entity_id = g.object_entity_id AND x.polarity = g.polarity
    WHERE NOT EXISTS (SELECT 1 FROM dm_private.discovery_context_marks AS m
                      WHERE m.team_id = x.team_id AND m.relationship_id = x.relationship_id);
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION dm_private.context_marks_relationships_written() FROM PUBLIC;

-- Lock out writers while the triggers are created and the backfill reads the
-- tables, so that no change falls between the backfill and the triggers.
LOCK TABLE dm_private.relationships, dm_private.conflicts IN SHARE ROW EXCLUSIVE MODE;

CREATE TRIGGER conflicts_context_marks_inserted AFTER INSERT ON dm_private.conflicts
REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION dm_private.context_marks_conflicts_inserted();
CREATE TRIGGER conflicts_context_marks_updated AFTER UPDATE ON dm_private.conflicts
REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION dm_private.context_marks_conflicts_inserted();
CREATE TRIGGER relationships_context_marks_inserted AFTER INSERT ON dm_private.relationships
REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION dm_private.context_marks_relationships_written();
CREATE TRIGGER relationships_context_marks_updated AFTER UPDATE ON dm_private.relationships
REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION dm_private.context_marks_relationships_written();
ALTER TABLE dm_private.conflicts ENABLE ALWAYS TRIGGER conflicts_context_marks_inserted;
ALTER TABLE dm_private.conflicts ENABLE ALWAYS TRIGGER conflicts_context_marks_updated;
ALTER TABLE dm_private.relationships ENABLE ALWAYS TRIGGER relationships_context_marks_inserted;
ALTER TABLE dm_private.relationships ENABLE ALWAYS TRIGGER relationships_context_marks_updated;
COMMENT ON TRIGGER conflicts_context_marks_inserted ON dm_private.conflicts IS
'Keeps discovery_context_marks: both sides of new conflicts.';
COMMENT ON TRIGGER conflicts_context_marks_updated ON dm_private.conflicts IS
'Keeps discovery_context_marks: both sides of updated conflicts.';
COMMENT ON TRIGGER relationships_context_marks_inserted ON dm_private.relationships IS
'Keeps discovery_context_marks: new relationships and their equivalents of other authors.';
COMMENT ON TRIGGER relationships_context_marks_updated ON dm_private.relationships IS
'Keeps discovery_context_marks: updated relationships (group, endpoints, predicate, polarity or owner may have changed) and their equivalents of other authors.';

-- ---------------------------------------------------------------- backfill (all teams: superuser)

RESET ROLE;
INSERT INTO dm_private.discovery_context_marks (team_id, relationship_id)
SELECT
    c.team_id,
    c.relationship_id
FROM dm_private.conflicts AS c
UNION
SELECT
    c.team_id,
    c.conflicting_relationship_id
FROM dm_private.conflicts AS c
-- Groups of equivalent relationships with two or more authors: all their
-- members (one sort of the table, not a probe per row).
UNION
SELECT
    x.team_id,
    x.relationship_id
FROM dm_private.relationships AS x
INNER JOIN (
    SELECT
        r.team_id,
        r.semantic_group
    FROM dm_private.relationships AS r
    WHERE r.semantic_group IS NOT NULL
    GROUP BY r.team_id, r.semantic_group
    HAVING count(DISTINCT r.owner_profile_id) > 1
) AS g ON x.team_id = g.team_id AND x.semantic_group = g.semantic_group
UNION
SELECT
    x.team_id,
    x.relationship_id
FROM dm_private.relationships AS x
INNER JOIN (
    SELECT
        r.team_id,
        r.subject_entity_id,
        r.predicate,
        r.object_entity_id,
        r.polarity
    FROM dm_private.relationships AS r
    WHERE r.object_entity_id IS NOT NULL
    GROUP BY r.team_id, r.subject_entity_id, r.predicate, r.object_entity_id, r.polarity
    HAVING count(DISTINCT r.owner_profile_id) > 1
) AS g
    ON
        x.team_id = g.team_id AND x.subject_entity_id = g.subject_entity_id
        AND x.predicate = g.predicate AND x.object_entity_id = g.object_entity_id
        AND x.polarity = g.polarity;
ANALYZE dm_private.discovery_context_marks;
