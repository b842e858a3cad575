-- Recall stage 6: hydration and the context budget.
--
-- Hydration is not a second retrieval: one bounded evidence_id = ANY(...)
-- read of the already-ordered candidates, as the caller (SECURITY INVOKER),
-- so row-level security re-authorizes every row, and the authoritative
-- eligibility is checked again on the evidence row itself (state active,
-- revision current, owner profile active, valid / known time, policy
-- labels). A row the search-document mirror let through but the authority
-- refuses is dropped here.

CREATE OR REPLACE FUNCTION dm_private.recall_hydrate(team_id uuid, evidence_ids uuid [], req jsonb)
RETURNS TABLE (evidence_id uuid, context text, source_id uuid, source_external_id text)
LANGUAGE sql
STABLE
SET search_path = ''
-- Generic plans estimate a team as ndistinct-average and pick the wrong index;
-- a custom plan per call sees the team's real size.
SET plan_cache_mode = force_custom_plan
AS $$
    SELECT e.evidence_id, e.text, e.source_id, s.external_id
    FROM dm_private.evidence AS e
    JOIN dm_private.source_revisions AS r
        ON r.team_id = e.team_id AND r.source_id = e.source_id AND r.revision_id = e.revision_id
    JOIN dm_private.sources AS s ON s.team_id = e.team_id AND s.source_id = e.source_id
    JOIN dm_private.profiles AS p ON p.team_id = e.team_id AND p.profile_id = e.owner_profile_id
    WHERE e.team_id = recall_hydrate.team_id
      AND r.team_id = recall_hydrate.team_id
      AND s.team_id = recall_hydrate.team_id
      AND p.team_id = recall_hydrate.team_id
      AND e.evidence_id = ANY (evidence_ids[1:200])
      AND e.state = 'active'
      AND e.text IS NOT NULL
      AND r.is_current
      AND p.state = 'active'
      AND (e.valid_from IS NULL OR e.valid_from <= (req ->> 'valid_at')::timestamptz)
      AND (e.valid_to IS NULL OR e.valid_to > (req ->> 'valid_at')::timestamptz)
      AND e.known_from <= (req ->> 'known_at')::timestamptz
      AND (e.known_to IS NULL OR e.known_to > (req ->> 'known_at')::timestamptz)
      AND NOT EXISTS (
          SELECT 1 FROM pg_catalog.jsonb_each(e.labels) AS l (key, value)
          WHERE l.value = 'true'::jsonb AND l.key <> ALL (dm_private.authenticated_scopes()))
$$;
COMMENT ON FUNCTION dm_private.recall_hydrate(uuid, uuid [], jsonb) IS
'Hydration: one bounded read (at most 200 ids) of the chosen evidence under row-level security as the caller, re-checking authoritative eligibility (state, current revision, active owner, valid/known time, policy labels). Returns text and stable source handles.';
REVOKE ALL ON FUNCTION dm_private.recall_hydrate(uuid, uuid [], jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_hydrate(uuid, uuid [], jsonb)
TO densemem_app, densemem_analyst, densemem_operator;

-- The context budget: walks the candidates in final order and keeps each
-- one whose text still fits max_context_bytes, until `want` are kept. A
-- text larger than the remaining budget is skipped, not cut.
CREATE OR REPLACE FUNCTION dm_private.recall_budget(evidence_ids uuid [], byte_sizes integer [], want integer,
    max_context_bytes integer)
RETURNS uuid []
LANGUAGE plpgsql
IMMUTABLE
SET search_path = ''
AS $$
DECLARE
    kept uuid [] := '{}';
    used integer := 0;
    i integer;
BEGIN
    FOR i IN 1..COALESCE(pg_catalog.cardinality(evidence_ids), 0) LOOP
        EXIT WHEN pg_catalog.cardinality(kept) >= want;
        CONTINUE WHEN byte_sizes[i] IS NULL OR used + byte_sizes[i] > max_context_bytes;
        kept := kept || evidence_ids[i];
        used := used + byte_sizes[i];
    END LOOP;
    RETURN kept;
END
$$;
COMMENT ON FUNCTION dm_private.recall_budget(uuid [], integer [], integer, integer) IS
'Top K under the byte budget: keeps candidates in order while their texts fit max_context_bytes, at most `want`; an oversized text is skipped, never cut.';
REVOKE ALL ON FUNCTION dm_private.recall_budget(uuid [], integer [], integer, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_budget(uuid [], integer [], integer, integer)
TO densemem_app, densemem_analyst, densemem_operator;
