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
LANGUAGE plpgsql
STABLE
SET search_path = ''
AS $$
DECLARE
    team constant uuid := recall_hydrate.team_id;
    ids constant uuid [] := evidence_ids[1:200];
    valid_at constant timestamptz := (req ->> 'valid_at')::timestamptz;
    known_at constant timestamptz := (req ->> 'known_at')::timestamptz;
    scopes constant text [] := dm_private.authenticated_scopes();
BEGIN
    -- The evidence rows first, one primary-key lookup per id (materialised,
    -- LATERAL on the whole key, so that no plan can start from a source and
    -- walk the team's evidence), then their revision and source.
    RETURN QUERY
        WITH chosen AS MATERIALIZED (
            SELECT e.team_id, e.evidence_id, e.text, e.source_id, e.revision_id, e.owner_profile_id
            FROM (SELECT DISTINCT i.id FROM pg_catalog.unnest(ids) AS i (id)) AS i
            CROSS JOIN LATERAL (
                SELECT x.* FROM dm_private.evidence AS x WHERE x.team_id = team AND x.evidence_id = i.id
                OFFSET 0  -- a fence: one key lookup per row, whatever the estimates
            ) AS e
            WHERE e.state = 'active'
              AND e.text IS NOT NULL
              AND (e.valid_from IS NULL OR e.valid_from <= valid_at)
              AND (e.valid_to IS NULL OR e.valid_to > valid_at)
              AND e.known_from <= known_at
              AND (e.known_to IS NULL OR e.known_to > known_at)
              -- The policy labels: no label set to true outside the caller's
              -- scopes. An expression, not NOT EXISTS over jsonb_each (a
              -- subplan that filled a tuplestore per row: 9 k instructions
              -- per hydrated id, session 13): the labels minus the caller's
              -- scopes hold no member equal to true. strict: a member that is
              -- an array is not unwrapped (["true"] or [true] is not true,
              -- as jsonb equality with 'true' said); labels is always an
              -- object (evidence_labels_is_object).
              AND NOT ((e.labels OPERATOR(pg_catalog.-) scopes)
                       OPERATOR(pg_catalog.@?) 'strict $.* ? (@ == true)'::pg_catalog.jsonpath)
              -- The owner profile is active: it is not one of the team's
              -- profiles in another state, read once under row-level
              -- security (an init plan: one range of the team's few
              -- profiles), where a key lookup per id read each owner again
              -- (session 14: the ten results of a recall mostly share one
              -- owner). The same rows: owner_profile_id is NOT NULL and a
              -- foreign key to (team_id, profile_id), so every owner has a
              -- row, and it is active exactly when it is not in this list.
              AND e.owner_profile_id <> ALL (ARRAY(
                  SELECT p.profile_id FROM dm_private.profiles AS p
                  WHERE p.team_id = team AND p.state <> 'active'))
        )
        SELECT c.evidence_id, c.text, c.source_id, s.external_id
        FROM chosen AS c
        JOIN dm_private.source_revisions AS r
            ON r.team_id = team AND r.source_id = c.source_id AND r.revision_id = c.revision_id
        JOIN dm_private.sources AS s ON s.team_id = team AND s.source_id = c.source_id
        WHERE r.is_current;
END
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
