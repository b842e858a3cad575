-- Stage 0: who is calling. Every dm function starts here.
--
-- The service authenticates an API key, then sets, for one transaction:
--   densemem.team_id     the authenticated team (uuid)
--   densemem.profile_id  the acting profile (uuid)
--   densemem.scopes      comma-separated scopes, e.g. 'pii,operator'
-- and switches to densemem_app. An analyst sets densemem.team_id to a team
-- its login role is granted in dm_private.team_role_grants.

-- The team named by the transaction setting, or NULL when none is set.
CREATE OR REPLACE FUNCTION dm_private.authenticated_team_id()
RETURNS uuid
LANGUAGE sql
STABLE
PARALLEL SAFE
SET search_path = ''
AS $$
    SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid
$$;
COMMENT ON FUNCTION dm_private.authenticated_team_id() IS
'The team of the current transaction (setting densemem.team_id), or NULL.';

-- The acting profile, or NULL (analysts act without one).
CREATE OR REPLACE FUNCTION dm_private.authenticated_profile_id()
RETURNS uuid
LANGUAGE sql
STABLE
PARALLEL SAFE
SET search_path = ''
AS $$
    SELECT NULLIF(pg_catalog.current_setting('densemem.profile_id', true), '')::uuid
$$;
COMMENT ON FUNCTION dm_private.authenticated_profile_id() IS
'The acting profile of the current transaction (setting densemem.profile_id), or NULL.';

-- The principal's scopes; the policy filter hides labelled evidence from
-- principals that lack the matching scope.
CREATE OR REPLACE FUNCTION dm_private.authenticated_scopes()
RETURNS text[]
LANGUAGE sql
STABLE
PARALLEL SAFE
SET search_path = ''
AS $$
    SELECT COALESCE(
        pg_catalog.array_remove(
            pg_catalog.string_to_array(
                pg_catalog.replace(COALESCE(pg_catalog.current_setting('densemem.scopes', true), ''), ' ', ''),
                ','),
            ''),
        '{}'::text[])
$$;
COMMENT ON FUNCTION dm_private.authenticated_scopes() IS
'Scopes of the current principal (setting densemem.scopes, comma-separated), e.g. {pii,operator}.';

-- Every public function calls this first with the team it was given: the
-- explicit team predicate must equal the authenticated team, and an analyst's
-- login role must be granted that team. Raises 28000 without a team and 42501
-- on a mismatch, so a caller cannot name another team's ID and get an answer.
CREATE OR REPLACE FUNCTION dm_private.require_team(requested_team_id uuid)
RETURNS uuid
LANGUAGE plpgsql
STABLE
SET search_path = ''
AS $$
DECLARE
    -- dm_private.authenticated_team_id()'s expression, written out: the
    -- same setting read the same way, without a second function call (a SQL
    -- function with its own SET search_path runs its executor on every
    -- call, and a recall checks its team about eight times)
    current_team uuid := NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid;
BEGIN
    IF current_team IS NULL THEN
        RAISE EXCEPTION 'no authenticated team'
            USING ERRCODE = '28000',
                  HINT = 'authenticate first: the service sets densemem.team_id for each transaction';
    END IF;
    IF requested_team_id IS NULL OR requested_team_id <> current_team THEN
        RAISE EXCEPTION 'team_id does not match the authenticated team'
            USING ERRCODE = '42501';
    END IF;
    -- Two statements, not one: the grant check reads team_role_grants under
    -- row-level security, so its cached plan is valid for one role only, and
    -- a recall switches between the caller and densemem_searcher. The
    -- service's login returns before that statement is ever planned.
    IF pg_catalog.pg_has_role(session_user, 'densemem_app', 'MEMBER') THEN
        RETURN current_team;
    END IF;
    IF NOT EXISTS (
           SELECT 1 FROM dm_private.team_role_grants AS g
           WHERE g.team_id = current_team AND g.role_name = session_user) THEN
        RAISE EXCEPTION 'role % is not granted team %', session_user, current_team
            USING ERRCODE = '42501',
                  HINT = 'an administrator grants teams with dm.grant_team_to_role';
    END IF;
    RETURN current_team;
END
$$;
COMMENT ON FUNCTION dm_private.require_team(uuid) IS
'Checks that the team a function was given is the authenticated team (and, for analysts, a granted one); returns it. SQLSTATE 28000 without a team, 42501 on a mismatch.';

-- The acting profile, required by every write: it must be an active profile
-- of the authenticated team.
CREATE OR REPLACE FUNCTION dm_private.require_active_profile(requested_team_id uuid)
RETURNS uuid
LANGUAGE plpgsql
STABLE
SET search_path = ''
AS $$
DECLARE
    acting_profile uuid := dm_private.authenticated_profile_id();
BEGIN
    PERFORM dm_private.require_team(requested_team_id);
    IF acting_profile IS NULL THEN
        RAISE EXCEPTION 'no acting profile'
            USING ERRCODE = '28000',
                  HINT = 'writes need densemem.profile_id: the profile the API key belongs to';
    END IF;
    IF NOT EXISTS (
        SELECT 1 FROM dm_private.profiles AS p
        WHERE p.team_id = requested_team_id AND p.profile_id = acting_profile AND p.state = 'active') THEN
        RAISE EXCEPTION 'profile % is not an active profile of this team', acting_profile
            USING ERRCODE = '42501';
    END IF;
    RETURN acting_profile;
END
$$;
COMMENT ON FUNCTION dm_private.require_active_profile(uuid) IS
'Checks the team and returns the acting profile, which must be active in it. SQLSTATE 28000 without one, 42501 when disabled or foreign.';

-- API keys read dm_<team hex>_<key hex>_<secret>. Authentication runs before
-- any team is set, so it is the one definer function that reads keys; it
-- returns nothing for a malformed, unknown, revoked or disabled key.
CREATE OR REPLACE FUNCTION dm.authenticate_api_key(api_key text)
RETURNS TABLE (team_id uuid, profile_id uuid, scopes text[])
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = ''
AS $$
DECLARE
    parts text[];
BEGIN
    IF api_key IS NULL OR pg_catalog.length(api_key) > 200
       OR api_key !~ '^dm_[0-9a-f]{32}_[0-9a-f]{32}_[A-Za-z0-9_-]{20,100}$' THEN
        RETURN;
    END IF;
    parts := pg_catalog.regexp_match(api_key, '^dm_([0-9a-f]{32})_([0-9a-f]{32})_');
    RETURN QUERY
        SELECT k.team_id, k.profile_id, k.scopes
        FROM dm_private.api_keys AS k
        JOIN dm_private.profiles AS p ON p.team_id = k.team_id AND p.profile_id = k.profile_id
        WHERE k.team_id = parts[1]::uuid
          AND k.api_key_id = parts[2]::uuid
          AND k.revoked_at IS NULL
          AND p.state = 'active'
          AND k.key_hash = pg_catalog.sha256(pg_catalog.convert_to(api_key, 'UTF8'));
END
$$;
COMMENT ON FUNCTION dm.authenticate_api_key(text) IS
'Returns the team, profile and scopes of a valid API key, or no row. Keys are compared by SHA-256; the secret is never stored.';
REVOKE ALL ON FUNCTION dm.authenticate_api_key(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm.authenticate_api_key(text) TO densemem_app;

REVOKE ALL ON FUNCTION dm_private.authenticated_team_id() FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.authenticated_profile_id() FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.authenticated_scopes() FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.require_team(uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.require_active_profile(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.authenticated_team_id() TO
densemem_app, densemem_analyst, densemem_operator, densemem_searcher;
GRANT EXECUTE ON FUNCTION dm_private.authenticated_profile_id() TO
densemem_app, densemem_analyst, densemem_operator, densemem_searcher;
GRANT EXECUTE ON FUNCTION dm_private.authenticated_scopes() TO
densemem_app, densemem_analyst, densemem_operator, densemem_searcher;
GRANT EXECUTE ON FUNCTION dm_private.require_team(uuid) TO
densemem_app, densemem_analyst, densemem_operator, densemem_searcher;
GRANT EXECUTE ON FUNCTION dm_private.require_active_profile(uuid) TO densemem_app;
