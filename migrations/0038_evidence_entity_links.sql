-- 0038: evidence -> eligible relationship links, kept by the write path.
--
-- Recall's proximity signal (dm_private.entity_proximity) and discovery's
-- seeds from the returned evidence go from evidence IDs to the endpoints of
-- the eligible relationships each evidence row supports. With 0036 that is
-- one index range of relationship_evidence_accepted_by_evidence_idx per
-- evidence plus one probe of relationships_eligible_endpoints_idx per link:
-- ~100 + ~500 btree descents for 100 candidates. This table holds, per
-- accepted link whose relationship is eligible by status and tier (active,
-- validated_claim or fact), the endpoints, owner and recorded end of the
-- relationship, keyed (team, evidence, relationship) and covered by its
-- primary key: one index range per evidence, in relationship_id order.
--
-- Statement triggers on relationship_evidence and relationships (functions
-- in sql/12_graph.sql, copied here because the triggers need them now) keep
-- it exact in the transaction of every write. They are ENABLE ALWAYS, so a
-- bulk loader running with session_replication_role = replica cannot leave
-- it stale. No foreign key: the rows are derived from relationship_evidence
-- (whose own keys hold) and a delete removes them through the trigger, also
-- in replica mode, where a cascading key would not fire.

SET LOCAL ROLE densemem_owner;

CREATE TABLE dm_private.evidence_entity_links (
    team_id uuid NOT NULL,
    evidence_id uuid NOT NULL,
    relationship_id uuid NOT NULL,
    subject_entity_id uuid NOT NULL,
    object_entity_id uuid,
    owner_profile_id uuid NOT NULL,
    known_to timestamptz,
    CONSTRAINT evidence_entity_links_pkey PRIMARY KEY (team_id, evidence_id, relationship_id)
    INCLUDE (subject_entity_id, object_entity_id, owner_profile_id, known_to)
);
CREATE INDEX evidence_entity_links_relationship_idx ON dm_private.evidence_entity_links (team_id, relationship_id);
COMMENT ON TABLE dm_private.evidence_entity_links IS
'Derived, kept by triggers: one row per accepted relationship_evidence link whose relationship is active and validated_claim or fact, with that relationship''s endpoints, owner and recorded end. Proximity and discovery seeds read an evidence row''s eligible endpoints in one index range.';
COMMENT ON INDEX dm_private.evidence_entity_links_relationship_idx IS
'The links of one relationship: the relationship trigger rebuilds them when its status, tier, endpoints, owner or recorded end change.';

ALTER TABLE dm_private.evidence_entity_links ENABLE ROW LEVEL SECURITY;
ALTER TABLE dm_private.evidence_entity_links FORCE ROW LEVEL SECURITY;
CREATE POLICY "the service works inside the authenticated team" ON dm_private.evidence_entity_links
AS PERMISSIVE FOR ALL TO densemem_app
USING (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid))
WITH CHECK (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid));
CREATE POLICY "analysts and operators read only their granted team" ON dm_private.evidence_entity_links
AS PERMISSIVE FOR SELECT TO densemem_analyst, densemem_operator
USING (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid)
       AND (pg_catalog.pg_has_role(session_user, 'densemem_app', 'MEMBER') OR EXISTS (
           SELECT 1 FROM dm_private.team_role_grants AS g
           WHERE g.team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid)
             AND g.role_name = session_user)));
CREATE POLICY "the owner works inside the authenticated team" ON dm_private.evidence_entity_links
AS PERMISSIVE FOR ALL TO densemem_owner
USING (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid))
WITH CHECK (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid));

REVOKE ALL ON dm_private.evidence_entity_links FROM PUBLIC;
-- The write path (invoker functions as densemem_app) changes links through
-- the triggers; RLS keeps them inside the team.
GRANT SELECT, INSERT, DELETE ON dm_private.evidence_entity_links TO densemem_app;
GRANT SELECT ON dm_private.evidence_entity_links TO densemem_analyst, densemem_operator, densemem_searcher;

-- ---------------------------------------------------------------- trigger functions (current definition: sql/12)

-- Evidence -> eligible relationship links (migration 0038): a row per
-- accepted relationship_evidence link whose relationship is eligible by
-- status and tier (active, validated_claim or fact), with the endpoints,
-- owner and recorded end copied, so that recall's proximity signal and
-- discovery's seeds go from an evidence row to its entities in one index
-- range. These statement triggers keep it exact in the transaction of every
-- write (assert, verification, lifecycle moves, erasure, direct SQL).
-- After INSERT on relationship_evidence: links of the new accepted rows
-- whose relationship is eligible.
CREATE OR REPLACE FUNCTION dm_private.evidence_links_inserted()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
    INSERT INTO dm_private.evidence_entity_links AS l (team_id, evidence_id, relationship_id, subject_entity_id,
                                                       object_entity_id, owner_profile_id, known_to)
    SELECT n.team_id, n.evidence_id, n.relationship_id, r.subject_entity_id, r.object_entity_id, r.owner_profile_id,
           r.known_to
    FROM new_rows AS n
    JOIN dm_private.relationships AS r ON r.team_id = n.team_id AND r.relationship_id = n.relationship_id
    WHERE n.accepted
      AND r.status = 'active' AND r.tier IN ('validated_claim', 'fact')
    ON CONFLICT ON CONSTRAINT evidence_entity_links_pkey DO NOTHING;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.evidence_links_inserted() IS
'Trigger (statement, after INSERT on relationship_evidence): adds the evidence_entity_links rows of new accepted links to eligible relationships.';

-- After UPDATE on relationship_evidence: a link whose key or accepted flag
-- changed is removed and re-added from its new row (span-only updates, as
-- erasure makes, change nothing).
CREATE OR REPLACE FUNCTION dm_private.evidence_links_updated()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
    DELETE FROM dm_private.evidence_entity_links AS l
    USING old_rows AS o
    WHERE l.team_id = o.team_id AND l.evidence_id = o.evidence_id AND l.relationship_id = o.relationship_id
      AND NOT EXISTS (SELECT 1 FROM new_rows AS n
                      WHERE n.team_id = o.team_id AND n.evidence_id = o.evidence_id
                        AND n.relationship_id = o.relationship_id AND n.accepted = o.accepted);
    INSERT INTO dm_private.evidence_entity_links AS l (team_id, evidence_id, relationship_id, subject_entity_id,
                                                       object_entity_id, owner_profile_id, known_to)
    SELECT n.team_id, n.evidence_id, n.relationship_id, r.subject_entity_id, r.object_entity_id, r.owner_profile_id,
           r.known_to
    FROM new_rows AS n
    JOIN dm_private.relationships AS r ON r.team_id = n.team_id AND r.relationship_id = n.relationship_id
    WHERE n.accepted
      AND r.status = 'active' AND r.tier IN ('validated_claim', 'fact')
      AND NOT EXISTS (SELECT 1 FROM old_rows AS o
                      WHERE o.team_id = n.team_id AND o.evidence_id = n.evidence_id
                        AND o.relationship_id = n.relationship_id AND o.accepted = n.accepted)
    ON CONFLICT ON CONSTRAINT evidence_entity_links_pkey DO NOTHING;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.evidence_links_updated() IS
'Trigger (statement, after UPDATE on relationship_evidence): a link whose key or accepted flag changed leaves evidence_entity_links and comes back from its new row when accepted and eligible.';

-- After DELETE on relationship_evidence: the links go with it.
CREATE OR REPLACE FUNCTION dm_private.evidence_links_deleted()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
    DELETE FROM dm_private.evidence_entity_links AS l
    USING old_rows AS o
    WHERE l.team_id = o.team_id AND l.evidence_id = o.evidence_id AND l.relationship_id = o.relationship_id;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.evidence_links_deleted() IS
'Trigger (statement, after DELETE on relationship_evidence): removes the matching evidence_entity_links rows.';

-- After UPDATE on relationships: a relationship whose status, tier,
-- endpoints, owner or recorded end changed gets its links rebuilt from its
-- accepted relationship_evidence rows (none when it is no longer eligible).
CREATE OR REPLACE FUNCTION dm_private.relationship_links_updated()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
DECLARE
    changed_teams uuid [];
    changed_ids uuid [];
BEGIN
    SELECT pg_catalog.array_agg(n.team_id), pg_catalog.array_agg(n.relationship_id)
    INTO changed_teams, changed_ids
    FROM new_rows AS n
    JOIN old_rows AS o ON o.team_id = n.team_id AND o.relationship_id = n.relationship_id
    WHERE (o.status, o.tier, o.subject_entity_id, o.object_entity_id, o.owner_profile_id, o.known_to)
          IS DISTINCT FROM (n.status, n.tier, n.subject_entity_id, n.object_entity_id, n.owner_profile_id, n.known_to);
    IF changed_ids IS NULL THEN
        RETURN NULL;
    END IF;
    DELETE FROM dm_private.evidence_entity_links AS l
    USING ROWS FROM (pg_catalog.unnest(changed_teams), pg_catalog.unnest(changed_ids)) AS c (team_id, relationship_id)
    WHERE l.team_id = c.team_id AND l.relationship_id = c.relationship_id;
    INSERT INTO dm_private.evidence_entity_links AS l (team_id, evidence_id, relationship_id, subject_entity_id,
                                                       object_entity_id, owner_profile_id, known_to)
    SELECT re.team_id, re.evidence_id, re.relationship_id, n.subject_entity_id, n.object_entity_id,
           n.owner_profile_id, n.known_to
    FROM ROWS FROM (pg_catalog.unnest(changed_teams), pg_catalog.unnest(changed_ids)) AS c (team_id, relationship_id)
    JOIN new_rows AS n ON n.team_id = c.team_id AND n.relationship_id = c.relationship_id
    JOIN dm_private.relationship_evidence AS re
      ON re.team_id = c.team_id AND re.relationship_id = c.relationship_id
    WHERE re.accepted
      AND n.status = 'active' AND n.tier IN ('validated_claim', 'fact')
    ON CONFLICT ON CONSTRAINT evidence_entity_links_pkey DO NOTHING;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.relationship_links_updated() IS
'Trigger (statement, after UPDATE on relationships): rebuilds the evidence_entity_links rows of relationships whose status, tier, endpoints, owner or recorded end changed.';

-- TRUNCATE has no transition table: the links are emptied with it.
CREATE OR REPLACE FUNCTION dm_private.evidence_links_truncated()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
    TRUNCATE dm_private.evidence_entity_links;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.evidence_links_truncated() IS
'Trigger (statement, after TRUNCATE on relationship_evidence or relationships): empties evidence_entity_links.';

REVOKE ALL ON FUNCTION dm_private.evidence_links_inserted() FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.evidence_links_updated() FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.evidence_links_deleted() FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.relationship_links_updated() FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.evidence_links_truncated() FROM PUBLIC;

-- Lock out writers while the triggers are created and the backfill reads the
-- tables, so that no change falls between the backfill and the triggers.
LOCK TABLE dm_private.relationships, dm_private.relationship_evidence IN SHARE ROW EXCLUSIVE MODE;

CREATE TRIGGER relationship_evidence_links_inserted
AFTER INSERT ON dm_private.relationship_evidence
REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION dm_private.evidence_links_inserted();
CREATE TRIGGER relationship_evidence_links_updated
AFTER UPDATE ON dm_private.relationship_evidence
REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION dm_private.evidence_links_updated();
CREATE TRIGGER relationship_evidence_links_deleted
AFTER DELETE ON dm_private.relationship_evidence
REFERENCING OLD TABLE AS old_rows
FOR EACH STATEMENT EXECUTE FUNCTION dm_private.evidence_links_deleted();
CREATE TRIGGER relationship_evidence_links_truncated
AFTER TRUNCATE ON dm_private.relationship_evidence
FOR EACH STATEMENT EXECUTE FUNCTION dm_private.evidence_links_truncated();
CREATE TRIGGER relationships_links_updated
AFTER UPDATE ON dm_private.relationships
REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION dm_private.relationship_links_updated();
ALTER TABLE dm_private.relationship_evidence ENABLE ALWAYS TRIGGER relationship_evidence_links_inserted;
ALTER TABLE dm_private.relationship_evidence ENABLE ALWAYS TRIGGER relationship_evidence_links_updated;
ALTER TABLE dm_private.relationship_evidence ENABLE ALWAYS TRIGGER relationship_evidence_links_deleted;
ALTER TABLE dm_private.relationship_evidence ENABLE ALWAYS TRIGGER relationship_evidence_links_truncated;
ALTER TABLE dm_private.relationships ENABLE ALWAYS TRIGGER relationships_links_updated;
COMMENT ON TRIGGER relationship_evidence_links_inserted ON dm_private.relationship_evidence IS
'Keeps evidence_entity_links: new accepted links to eligible relationships.';
COMMENT ON TRIGGER relationship_evidence_links_updated ON dm_private.relationship_evidence IS
'Keeps evidence_entity_links: links whose key or accepted flag changed.';
COMMENT ON TRIGGER relationship_evidence_links_deleted ON dm_private.relationship_evidence IS
'Keeps evidence_entity_links: deleted links.';
COMMENT ON TRIGGER relationship_evidence_links_truncated ON dm_private.relationship_evidence IS
'Keeps evidence_entity_links: empties it with relationship_evidence.';
COMMENT ON TRIGGER relationships_links_updated ON dm_private.relationships IS
'Keeps evidence_entity_links: relationships whose status, tier, endpoints, owner or recorded end changed.';

-- ---------------------------------------------------------------- backfill (all teams: superuser)

RESET ROLE;
INSERT INTO dm_private.evidence_entity_links (team_id, evidence_id, relationship_id, subject_entity_id,
                                              object_entity_id, owner_profile_id, known_to)
SELECT
    re.team_id, re.evidence_id, re.relationship_id, r.subject_entity_id, r.object_entity_id, r.owner_profile_id,
    r.known_to
FROM dm_private.relationship_evidence AS re
JOIN dm_private.relationships AS r ON r.team_id = re.team_id AND r.relationship_id = re.relationship_id
WHERE
    re.accepted
    AND r.status = 'active' AND r.tier IN ('validated_claim', 'fact');
