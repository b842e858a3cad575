-- 0031: predicate cardinality, so that conflicts mean something.
--
-- The write path records a disagreement whenever two live relationships share
-- subject and predicate but differ in object or polarity. For a multi-valued
-- predicate (a person uses many tools, works on many projects, knows many
-- people) two different objects are not a disagreement at all, so discovery
-- and trace read recorded conflicts through the predicate's cardinality:
--
--   * opposite polarity on the same (subject, predicate, object) always conflicts;
--   * different objects conflict only when the predicate is single-valued
--     (lives_in, works_at, status, owner, prefers, ...) and both sides are
--     positive ("lives in Berlin" vs "does not live in Paris" agree).
--
-- Two tables, like the predicate synonyms of 0010 (global configuration and
-- team data kept apart):
--
--   dm_private.predicate_cardinality_defaults  the global defaults; readable by
--       every Dense-Mem role, written by migrations and administrators.
--   dm_private.predicate_cardinalities         a team's own setting per
--       predicate; team_id leads the key, RLS enabled and forced with the
--       three team policies of 0003. A team row overrides the default.
--
-- A predicate with neither a team row nor a default row is multi-valued: a
-- graph's open-ended predicates (mentions, related_to, ...) are multi-valued,
-- and a false conflict costs a reader more than a missed one costs the
-- writer, who can declare the predicate single-valued.
--
-- Conflict rows are never rewritten: changing a cardinality changes what
-- discovery and trace show from the next call on, and the recorded history
-- stays intact.

SET LOCAL ROLE densemem_owner;

CREATE TABLE dm_private.predicate_cardinality_defaults (
    predicate text NOT NULL,
    cardinality text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT predicate_cardinality_defaults_pkey PRIMARY KEY (predicate),
    CONSTRAINT predicate_cardinality_defaults_predicate_shape CHECK (predicate ~ '^[a-z][a-z0-9_]{0,99}$'),
    CONSTRAINT predicate_cardinality_defaults_cardinality_known CHECK (cardinality IN ('single', 'multi'))
);
COMMENT ON TABLE dm_private.predicate_cardinality_defaults IS
'Global default cardinality of relationship predicates: single (one object at a time per subject, e.g. lives_in, works_at, status) or multi (many, e.g. uses, works_on, knows). Different objects conflict only for single-valued predicates. Unlisted predicates are multi-valued; a team row in dm_private.predicate_cardinalities overrides.';

CREATE TABLE dm_private.predicate_cardinalities (
    team_id uuid NOT NULL,
    predicate text NOT NULL,
    cardinality text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    updated_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT predicate_cardinalities_pkey PRIMARY KEY (team_id, predicate),
    CONSTRAINT predicate_cardinalities_team_fkey FOREIGN KEY (team_id) REFERENCES dm_private.teams (team_id),
    CONSTRAINT predicate_cardinalities_predicate_shape CHECK (predicate ~ '^[a-z][a-z0-9_]{0,99}$'),
    CONSTRAINT predicate_cardinalities_cardinality_known CHECK (cardinality IN ('single', 'multi'))
);
COMMENT ON TABLE dm_private.predicate_cardinalities IS
'A team''s own predicate cardinality (single or multi); a row overrides dm_private.predicate_cardinality_defaults for that predicate. Read by discovery and trace when they decide which recorded conflicts are disagreements.';
COMMENT ON COLUMN dm_private.predicate_cardinalities.cardinality IS
'single: a subject has one object at a time, so different objects conflict; multi: different objects coexist, only opposite polarity on the same object conflicts.';

-- ---------------------------------------------------------------- row-level security

ALTER TABLE dm_private.predicate_cardinalities ENABLE ROW LEVEL SECURITY;
ALTER TABLE dm_private.predicate_cardinalities FORCE ROW LEVEL SECURITY;
CREATE POLICY "the service works inside the authenticated team" ON dm_private.predicate_cardinalities
AS PERMISSIVE FOR ALL TO densemem_app
USING (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid))
WITH CHECK (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid));
CREATE POLICY "analysts and operators read only their granted team" ON dm_private.predicate_cardinalities
AS PERMISSIVE FOR SELECT TO densemem_analyst, densemem_operator
USING (
    team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid)
    AND (
        pg_catalog.pg_has_role(session_user, 'densemem_app', 'MEMBER')
        OR EXISTS (
            SELECT 1 FROM dm_private.team_role_grants AS g
            WHERE
                g.team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid)
                AND g.role_name = session_user
        )
    )
);
CREATE POLICY "the owner works inside the authenticated team" ON dm_private.predicate_cardinalities
AS PERMISSIVE FOR ALL TO densemem_owner
USING (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid))
WITH CHECK (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid));

ALTER TABLE dm_private.predicate_cardinality_defaults ENABLE ROW LEVEL SECURITY;
ALTER TABLE dm_private.predicate_cardinality_defaults FORCE ROW LEVEL SECURITY;
CREATE POLICY "every dense-mem role reads predicate cardinality defaults"
ON dm_private.predicate_cardinality_defaults
AS PERMISSIVE FOR SELECT TO densemem_app, densemem_analyst, densemem_operator, densemem_owner, densemem_searcher
USING (true);

-- ---------------------------------------------------------------- grants

REVOKE ALL ON dm_private.predicate_cardinalities, dm_private.predicate_cardinality_defaults FROM PUBLIC;
-- A team's cardinalities are configuration, not history: the service may change them.
GRANT SELECT, INSERT, UPDATE, DELETE ON dm_private.predicate_cardinalities TO densemem_app;
GRANT SELECT ON dm_private.predicate_cardinalities TO densemem_analyst, densemem_operator;
GRANT SELECT ON dm_private.predicate_cardinality_defaults TO
densemem_app, densemem_analyst, densemem_operator, densemem_searcher;

-- ---------------------------------------------------------------- seed: the defaults

RESET ROLE;

INSERT INTO dm_private.predicate_cardinality_defaults (predicate, cardinality)
SELECT
    d.predicate,
    d.cardinality
FROM (
    VALUES
    -- Single-valued: one object at a time per subject (within overlapping valid time).
    ('lives_in', 'single'), ('works_at', 'single'), ('located_in', 'single'), ('based_in', 'single'),
    ('headquartered_in', 'single'), ('born_in', 'single'), ('born_on', 'single'), ('died_on', 'single'),
    ('status', 'single'), ('state', 'single'), ('owner', 'single'), ('owned_by', 'single'),
    ('prefers', 'single'), ('reports_to', 'single'), ('managed_by', 'single'), ('married_to', 'single'),
    ('employer', 'single'), ('job_title', 'single'), ('title', 'single'), ('role', 'single'),
    ('age', 'single'), ('nationality', 'single'), ('timezone', 'single'), ('email', 'single'),
    ('phone', 'single'), ('priority', 'single'), ('due_date', 'single'), ('version', 'single'),
    ('assigned_to', 'single'), ('superseded_by', 'single'),
    -- Multi-valued (also the rule for any unlisted predicate), listed so the
    -- common ones are visible and a team override reads naturally.
    ('uses', 'multi'), ('works_on', 'multi'), ('knows', 'multi'), ('likes', 'multi'), ('dislikes', 'multi'),
    ('maintains', 'multi'), ('owns', 'multi'), ('manages', 'multi'), ('member_of', 'multi'),
    ('depends_on', 'multi'), ('created', 'multi'), ('friend_of', 'multi'), ('partner_of', 'multi'),
    ('attended', 'multi'), ('visited', 'multi'), ('studies', 'multi'), ('researches', 'multi'),
    ('plays', 'multi'), ('supersedes', 'multi'), ('deployed_to', 'multi'), ('runs_on', 'multi'),
    ('lived_in', 'multi'), ('mentions', 'multi'), ('related_to', 'multi')
) AS d (predicate, cardinality);
