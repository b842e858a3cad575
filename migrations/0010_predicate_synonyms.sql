-- 0010: predicate synonyms for query understanding.
--
-- dm.parse_query maps phrases of a query ("works on", "maintains") to
-- relationship predicates (works_on, maintains) so that discovery can prefer
-- matching edges. Two tables, because one holds global configuration and the
-- other team data:
--
--   dm_private.predicate_synonym_defaults  the global default mapping, keyed by
--       its own columns like the other global configuration (ranking profiles,
--       embedding contracts); readable by every Dense-Mem role, written only by
--       migrations and administrators. Under Citus it is a reference table.
--   dm_private.predicate_synonyms          a team's own mapping; team_id leads
--       the key and every index, RLS enabled and forced with the three team
--       policies of 0003.
--
-- Override rule (dm_private.predicate_hints): when a team has at least one
-- row for a phrase, the team's rows decide that phrase entirely and the
-- defaults for that phrase are ignored; rows with enabled = false map the
-- phrase to nothing, so a team can silence a default. Phrases without team
-- rows use the defaults. Phrases are stored normalized: lower case, words
-- separated by single spaces, 1 to 4 words (the n-gram lengths the parser
-- produces).

SET LOCAL ROLE densemem_owner;

CREATE TABLE dm_private.predicate_synonym_defaults (
    phrase text NOT NULL,
    predicate text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT predicate_synonym_defaults_pkey PRIMARY KEY (phrase, predicate),
    CONSTRAINT predicate_synonym_defaults_phrase_normalized CHECK (
        phrase = pg_catalog.lower(phrase)
        AND phrase ~ '^[^[:space:]]+( [^[:space:]]+){0,3}$'
        AND pg_catalog.length(phrase) <= 100
    ),
    CONSTRAINT predicate_synonym_defaults_predicate_shape CHECK (predicate ~ '^[a-z][a-z0-9_]{0,99}$')
);
COMMENT ON TABLE dm_private.predicate_synonym_defaults IS
'Global default mapping from query phrases (normalized: lower case, single spaces, 1-4 words) to relationship predicates, used by dm.parse_query for every team that has no own row for the phrase in dm_private.predicate_synonyms.';

CREATE TABLE dm_private.predicate_synonyms (
    team_id uuid NOT NULL,
    phrase text NOT NULL,
    predicate text NOT NULL,
    enabled boolean NOT NULL DEFAULT true,
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT predicate_synonyms_pkey PRIMARY KEY (team_id, phrase, predicate),
    CONSTRAINT predicate_synonyms_team_fkey FOREIGN KEY (team_id) REFERENCES dm_private.teams (team_id),
    CONSTRAINT predicate_synonyms_phrase_normalized CHECK (
        phrase = pg_catalog.lower(phrase)
        AND phrase ~ '^[^[:space:]]+( [^[:space:]]+){0,3}$'
        AND pg_catalog.length(phrase) <= 100
    ),
    CONSTRAINT predicate_synonyms_predicate_shape CHECK (predicate ~ '^[a-z][a-z0-9_]{0,99}$')
);
COMMENT ON TABLE dm_private.predicate_synonyms IS
'A team''s own phrase-to-predicate mapping. Any row for a phrase replaces the defaults of that phrase for this team; enabled = false rows map the phrase to nothing (silence a default).';
COMMENT ON COLUMN dm_private.predicate_synonyms.enabled IS
'false: this row only suppresses the default mapping of its phrase; it yields no predicate.';

-- ---------------------------------------------------------------- row-level security

ALTER TABLE dm_private.predicate_synonyms ENABLE ROW LEVEL SECURITY;
ALTER TABLE dm_private.predicate_synonyms FORCE ROW LEVEL SECURITY;
CREATE POLICY "the service works inside the authenticated team" ON dm_private.predicate_synonyms
AS PERMISSIVE FOR ALL TO densemem_app
USING (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid))
WITH CHECK (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid));
CREATE POLICY "analysts and operators read only their granted team" ON dm_private.predicate_synonyms
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
CREATE POLICY "the owner works inside the authenticated team" ON dm_private.predicate_synonyms
AS PERMISSIVE FOR ALL TO densemem_owner
USING (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid))
WITH CHECK (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid));

ALTER TABLE dm_private.predicate_synonym_defaults ENABLE ROW LEVEL SECURITY;
ALTER TABLE dm_private.predicate_synonym_defaults FORCE ROW LEVEL SECURITY;
CREATE POLICY "every dense-mem role reads predicate synonym defaults" ON dm_private.predicate_synonym_defaults
AS PERMISSIVE FOR SELECT TO densemem_app, densemem_analyst, densemem_operator, densemem_owner, densemem_searcher
USING (true);

-- ---------------------------------------------------------------- grants

REVOKE ALL ON dm_private.predicate_synonyms, dm_private.predicate_synonym_defaults FROM PUBLIC;
-- A team's synonyms are configuration, not history: the service may change them.
GRANT SELECT, INSERT, UPDATE, DELETE ON dm_private.predicate_synonyms TO densemem_app;
GRANT SELECT ON dm_private.predicate_synonyms TO densemem_analyst, densemem_operator;
GRANT SELECT ON dm_private.predicate_synonym_defaults TO
densemem_app, densemem_analyst, densemem_operator, densemem_searcher;

-- ---------------------------------------------------------------- seed: the default mapping

RESET ROLE;

INSERT INTO dm_private.predicate_synonym_defaults (phrase, predicate)
SELECT
    s.phrase,
    s.predicate
FROM (
    VALUES
    ('works on', 'works_on'), ('working on', 'works_on'), ('worked on', 'works_on'), ('work on', 'works_on'),
    ('contributes to', 'works_on'), ('contributed to', 'works_on'),
    ('uses', 'uses'), ('using', 'uses'), ('used', 'uses'), ('relies on', 'uses'), ('built with', 'uses'),
    ('maintains', 'maintains'), ('maintained', 'maintains'), ('maintaining', 'maintains'),
    ('maintainer', 'maintains'), ('maintainers', 'maintains'),
    ('owns', 'owns'), ('owned', 'owns'), ('owner', 'owns'), ('owners', 'owns'), ('ownership', 'owns'),
    ('responsible for', 'owns'),
    ('manages', 'manages'), ('managed', 'manages'), ('manager', 'manages'), ('leads', 'manages'),
    ('led', 'manages'),
    ('reports to', 'reports_to'), ('reported to', 'reports_to'),
    ('member of', 'member_of'), ('belongs to', 'member_of'), ('part of', 'member_of'), ('joined', 'member_of'),
    ('depends on', 'depends_on'), ('dependency', 'depends_on'), ('dependencies', 'depends_on'),
    ('requires', 'depends_on'),
    ('created', 'created'), ('creates', 'created'), ('wrote', 'created'), ('written by', 'created'),
    ('authored', 'created'), ('built', 'created'), ('made', 'created'), ('painted', 'created'),
    ('lives in', 'lives_in'), ('lived in', 'lives_in'), ('moved to', 'lives_in'), ('moved from', 'lived_in'),
    ('based in', 'located_in'), ('located in', 'located_in'),
    ('works at', 'works_at'), ('worked at', 'works_at'), ('works for', 'works_at'), ('employed by', 'works_at'),
    ('likes', 'likes'), ('loves', 'likes'), ('enjoys', 'likes'), ('favorite', 'likes'), ('favourite', 'likes'),
    ('dislikes', 'dislikes'), ('hates', 'dislikes'),
    ('married to', 'married_to'), ('partner', 'partner_of'), ('friend', 'friend_of'), ('friends', 'friend_of'),
    ('attended', 'attended'), ('went to', 'attended'), ('visited', 'visited'),
    ('studies', 'studies'), ('studied', 'studies'), ('researched', 'researches'), ('research', 'researches'),
    ('plays', 'plays'), ('played', 'plays'),
    ('replaced by', 'superseded_by'), ('replaces', 'supersedes'), ('deployed to', 'deployed_to'),
    ('runs on', 'runs_on'), ('hosted on', 'runs_on'), ('assigned to', 'assigned_to')
) AS s (phrase, predicate);

-- dm_private.match_query_entities runs as densemem_searcher and checks the
-- caller with dm_private.require_team, which reads the analyst grants.
GRANT SELECT ON dm_private.team_role_grants TO densemem_searcher;
