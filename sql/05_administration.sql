-- Stage 0b: administration. Teams, profiles, API keys and analyst grants.
--
-- These run as an administrator (the migrating superuser, `densemem keys`),
-- never as the service: no Dense-Mem role is granted EXECUTE on them.

-- Creates a team by name, or returns the existing one.
CREATE OR REPLACE FUNCTION dm.ensure_team(team_name text)
RETURNS uuid
LANGUAGE plpgsql
SET search_path = ''
AS $$
DECLARE
    found_team uuid;
BEGIN
    IF team_name IS NULL OR pg_catalog.btrim(team_name) = '' OR pg_catalog.length(team_name) > 200 THEN
        RAISE EXCEPTION 'team name must be 1 to 200 characters' USING ERRCODE = '22023';
    END IF;
    INSERT INTO dm_private.teams (team_id, name)
    VALUES (pg_catalog.gen_random_uuid(), team_name)
    ON CONFLICT (name) DO NOTHING
    RETURNING team_id INTO found_team;
    IF found_team IS NULL THEN
        SELECT t.team_id INTO found_team FROM dm_private.teams AS t WHERE t.name = team_name;
    END IF;
    RETURN found_team;
END
$$;
COMMENT ON FUNCTION dm.ensure_team(text) IS 'Administrator: creates the team of this name if missing; returns its team_id.';

-- Creates an active profile in a team, or returns the existing one.
CREATE OR REPLACE FUNCTION dm.ensure_profile(team_id uuid, profile_name text)
RETURNS uuid
LANGUAGE plpgsql
SET search_path = ''
AS $$
DECLARE
    found_profile uuid;
BEGIN
    IF profile_name IS NULL OR pg_catalog.btrim(profile_name) = '' OR pg_catalog.length(profile_name) > 200 THEN
        RAISE EXCEPTION 'profile name must be 1 to 200 characters' USING ERRCODE = '22023';
    END IF;
    INSERT INTO dm_private.profiles (team_id, profile_id, name)
    VALUES (ensure_profile.team_id, pg_catalog.gen_random_uuid(), profile_name)
    ON CONFLICT ON CONSTRAINT profiles_team_name_key DO NOTHING
    RETURNING profiles.profile_id INTO found_profile;
    IF found_profile IS NULL THEN
        SELECT p.profile_id INTO found_profile
        FROM dm_private.profiles AS p
        WHERE p.team_id = ensure_profile.team_id AND p.name = profile_name;
    END IF;
    RETURN found_profile;
END
$$;
COMMENT ON FUNCTION dm.ensure_profile(uuid, text) IS 'Administrator: creates the active profile of this name in the team if missing; returns its profile_id.';

-- Enables or disables a profile. A disabled profile's evidence leaves default recall.
CREATE OR REPLACE FUNCTION dm.set_profile_state(team_id uuid, profile_id uuid, state text)
RETURNS void
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
    IF state NOT IN ('active', 'disabled') THEN
        RAISE EXCEPTION 'profile state must be active or disabled, not %', state USING ERRCODE = '22023';
    END IF;
    UPDATE dm_private.profiles AS p
    SET state = set_profile_state.state::dm_private.profile_state
    WHERE p.team_id = set_profile_state.team_id AND p.profile_id = set_profile_state.profile_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no such profile' USING ERRCODE = 'DM404';
    END IF;
END
$$;
COMMENT ON FUNCTION dm.set_profile_state(uuid, uuid, text) IS 'Administrator: sets a profile active or disabled.';

-- Issues an API key and returns it; only its SHA-256 is stored.
CREATE OR REPLACE FUNCTION dm.issue_api_key(team_id uuid, profile_id uuid, scopes text[] DEFAULT '{}')
RETURNS text
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
DECLARE
    new_key_id uuid := pg_catalog.gen_random_uuid();
    secret text := pg_catalog.replace(pg_catalog.gen_random_uuid()::text, '-', '')
                   || pg_catalog.replace(pg_catalog.gen_random_uuid()::text, '-', '');
    api_key text;
BEGIN
    IF EXISTS (SELECT 1 FROM pg_catalog.unnest(scopes) AS s (scope) WHERE s.scope !~ '^[a-z][a-z0-9_]{0,39}$') THEN
        RAISE EXCEPTION 'scopes are lower-case words' USING ERRCODE = '22023';
    END IF;
    api_key := 'dm_' || pg_catalog.replace(issue_api_key.team_id::text, '-', '') || '_'
               || pg_catalog.replace(new_key_id::text, '-', '') || '_' || secret;
    INSERT INTO dm_private.api_keys (team_id, api_key_id, profile_id, key_hash, scopes)
    VALUES (issue_api_key.team_id, new_key_id, issue_api_key.profile_id,
            pg_catalog.sha256(pg_catalog.convert_to(api_key, 'UTF8')), scopes);
    RETURN api_key;
END
$$;
COMMENT ON FUNCTION dm.issue_api_key(uuid, uuid, text[]) IS
'Administrator: creates an API key for a profile with the given scopes and returns it once. Format dm_<team hex>_<key hex>_<secret>.';

-- Revokes a key by its text; returns false when no live key matched.
CREATE OR REPLACE FUNCTION dm.revoke_api_key(api_key text)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
    UPDATE dm_private.api_keys AS k
    SET revoked_at = pg_catalog.now()
    WHERE k.key_hash = pg_catalog.sha256(pg_catalog.convert_to(api_key, 'UTF8'))
      AND k.revoked_at IS NULL;
    RETURN FOUND;
END
$$;
COMMENT ON FUNCTION dm.revoke_api_key(text) IS 'Administrator: revokes a key; false when no live key matched.';

-- Lets a login role (an analyst) act for a team from SQL.
CREATE OR REPLACE FUNCTION dm.grant_team_to_role(team_id uuid, role_name name)
RETURNS void
LANGUAGE sql
SET search_path = ''
AS $$
    INSERT INTO dm_private.team_role_grants (team_id, role_name)
    VALUES (grant_team_to_role.team_id, grant_team_to_role.role_name)
    ON CONFLICT DO NOTHING
$$;
COMMENT ON FUNCTION dm.grant_team_to_role(uuid, name) IS
'Administrator: allows a login role (member of densemem_analyst or densemem_operator) to set densemem.team_id to this team.';

REVOKE ALL ON FUNCTION dm.ensure_team(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm.ensure_profile(uuid, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm.set_profile_state(uuid, uuid, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm.issue_api_key(uuid, uuid, text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm.revoke_api_key(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm.grant_team_to_role(uuid, name) FROM PUBLIC;
