-- 0088: the settings object of each ranking profile, resolved once.
--
-- Every recall starts from dm_private.recall_settings: the profile's
-- settings with its identity (profile_name, profile_version) and the active
-- search-index profile (index_version, index) laid over them. That
-- concatenation took the profile's whole settings object (about 1.4 kB, some
-- ninety keys and values) apart and built it again on every recall: ~0.16 M
-- instructions of the ~0.23 M recall_settings cost (callgrind, 1M bench,
-- session 14), for a value that changes only when a profile does.
--
-- This table holds that value per ranking profile, with the search-index
-- profile it was resolved against. Statement triggers on ranking_profiles and
-- search_index_profiles (function in sql/30_recall_eligibility.sql, copied
-- here because the triggers need it now) rebuild it in the transaction of
-- every change, whatever wrote it (a migration's new profile version, a
-- truncate); they are ENABLE ALWAYS, so a loader in
-- session_replication_role = replica cannot leave it stale. recall_settings
-- uses a row only when its search-index profile is the active one, and
-- resolves as before otherwise (and for a team with its own overrides). No
-- foreign key: the rows are derived. Holds profile settings, no team data.

SET LOCAL ROLE densemem_owner;

CREATE TABLE dm_private.recall_settings_resolved (
    ranking_profile_id integer NOT NULL,
    -- the active search-index profile the row was resolved against (NULL:
    -- none was active)
    search_index_profile_id integer,
    settings jsonb NOT NULL,
    CONSTRAINT recall_settings_resolved_pkey PRIMARY KEY (ranking_profile_id)
)
-- Inline and uncompressed, as ranking_profiles' rows (0052): a resolved
-- object (~2.1 kB) is over the 2 kB threshold at which a row's long values
-- are compressed, and a compressed settings value is decompressed again by
-- every stage that reads a key of it (+1.75 M instructions per recall,
-- measured with the default threshold).
WITH (toast_tuple_target = 8160);
COMMENT ON TABLE dm_private.recall_settings_resolved IS
'Derived: each ranking profile''s settings with its identity and the active search-index profile laid over them (what dm_private.recall_settings returns without team overrides), rebuilt by triggers on ranking_profiles and search_index_profiles.';
ALTER TABLE dm_private.recall_settings_resolved ENABLE ROW LEVEL SECURITY;
ALTER TABLE dm_private.recall_settings_resolved FORCE ROW LEVEL SECURITY;
CREATE POLICY "every dense-mem role reads resolved ranking settings" ON dm_private.recall_settings_resolved
FOR SELECT
TO densemem_analyst, densemem_app, densemem_operator, densemem_owner, densemem_searcher
USING (true);
CREATE POLICY "the owner rebuilds resolved ranking settings" ON dm_private.recall_settings_resolved
FOR ALL
TO densemem_owner
USING (true)
WITH CHECK (true);
REVOKE ALL ON dm_private.recall_settings_resolved FROM PUBLIC;
GRANT SELECT ON dm_private.recall_settings_resolved
TO densemem_analyst, densemem_app, densemem_operator, densemem_searcher;

CREATE OR REPLACE FUNCTION dm_private.recall_settings_resolve()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
    DELETE FROM dm_private.recall_settings_resolved;
    INSERT INTO dm_private.recall_settings_resolved (ranking_profile_id, search_index_profile_id, settings)
    SELECT r.ranking_profile_id, sip.search_index_profile_id,
           r.settings || pg_catalog.jsonb_build_object(
               'profile_name', r.name,
               'profile_version', r.version,
               'index_version', sip.version,
               'index', COALESCE(sip.settings, '{}'::jsonb))
    FROM dm_private.ranking_profiles AS r
    LEFT JOIN dm_private.search_index_profiles AS sip ON sip.is_active;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.recall_settings_resolve() IS
'Trigger (statement, after any change to ranking_profiles or search_index_profiles): rebuilds recall_settings_resolved.';
REVOKE ALL ON FUNCTION dm_private.recall_settings_resolve() FROM PUBLIC;

-- Lock out writers of the profiles while the triggers are created and the
-- table is filled, so that no change falls between the two.
LOCK TABLE dm_private.ranking_profiles, dm_private.search_index_profiles IN SHARE ROW EXCLUSIVE MODE;

CREATE TRIGGER ranking_profiles_settings_resolved
AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON dm_private.ranking_profiles
FOR EACH STATEMENT EXECUTE FUNCTION dm_private.recall_settings_resolve();
CREATE TRIGGER search_index_profiles_settings_resolved
AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON dm_private.search_index_profiles
FOR EACH STATEMENT EXECUTE FUNCTION dm_private.recall_settings_resolve();
ALTER TABLE dm_private.ranking_profiles ENABLE ALWAYS TRIGGER ranking_profiles_settings_resolved;
ALTER TABLE dm_private.search_index_profiles ENABLE ALWAYS TRIGGER search_index_profiles_settings_resolved;

-- The first fill: a statement trigger fires for an UPDATE of no row too.
UPDATE dm_private.ranking_profiles SET settings = settings WHERE false;
