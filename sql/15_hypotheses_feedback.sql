-- Stage 1f: hypotheses, recall feedback and usage snapshots.
--
-- Hypotheses live in their own table: never evidence, never a relationship,
-- never a tier. Feedback is recorded as said and moves only the live usage
-- counters; ranking reads a frozen snapshot of those counters, so a replayed
-- query reproduces its historical order.

CREATE OR REPLACE FUNCTION dm.add_hypothesis(team_id uuid, hypothesis jsonb)
RETURNS uuid
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
#variable_conflict use_column
DECLARE
    team constant uuid := add_hypothesis.team_id;
    actor uuid;
    statement_text text;
    external_source text;
    found_source uuid;
    found_revision uuid;
    new_id uuid := pg_catalog.gen_random_uuid();
BEGIN
    actor := dm_private.require_active_profile(team);
    PERFORM dm_private.require_known_keys(hypothesis, ARRAY['statement', 'source_external_id'], 'hypothesis');
    IF pg_catalog.jsonb_typeof(hypothesis -> 'statement') IS DISTINCT FROM 'string'
       OR pg_catalog.btrim(hypothesis ->> 'statement') = '' THEN
        RAISE EXCEPTION 'statement is required and must be a non-blank string' USING ERRCODE = '22023';
    END IF;
    statement_text := hypothesis ->> 'statement';
    IF pg_catalog.length(statement_text) > 10000 THEN
        RAISE EXCEPTION 'statement is longer than 10000 characters' USING ERRCODE = 'DM413';
    END IF;
    external_source := dm_private.json_text(hypothesis, 'source_external_id', 'source_external_id', 1000);
    IF external_source IS NOT NULL THEN
        SELECT s.source_id, r.revision_id INTO found_source, found_revision
        FROM dm_private.sources AS s
        JOIN dm_private.source_revisions AS r
            ON r.team_id = s.team_id AND r.source_id = s.source_id AND r.is_current
        WHERE s.team_id = team AND s.external_id = external_source;
        IF found_source IS NULL THEN
            RAISE EXCEPTION 'source_external_id is not a source of this team' USING ERRCODE = '23503';
        END IF;
    END IF;
    INSERT INTO dm_private.hypotheses (team_id, hypothesis_id, statement, owner_profile_id, source_id, revision_id)
    VALUES (team, new_id, statement_text, actor, found_source, found_revision);
    RETURN new_id;
END
$$;
COMMENT ON FUNCTION dm.add_hypothesis(uuid, jsonb) IS
'Adds a proposed hypothesis authored by the acting profile: {"statement", "source_external_id"?}; a named source links it to that source''s current revision. Returns its id. SQLSTATE 22023 bad value, DM413 statement over 10000 characters, 23503 source not in this team.';
REVOKE ALL ON FUNCTION dm.add_hypothesis(uuid, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm.add_hypothesis(uuid, jsonb) TO densemem_app;

CREATE OR REPLACE FUNCTION dm.record_feedback(team_id uuid, feedback jsonb)
RETURNS uuid
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
#variable_conflict use_column
DECLARE
    team constant uuid := record_feedback.team_id;
    actor uuid;
    query_text text;
    target_evidence uuid;
    rank_value integer;
    recall uuid;
    profile_version text;
    judgment_name text;
    new_id uuid := pg_catalog.gen_random_uuid();
BEGIN
    actor := dm_private.require_active_profile(team);
    PERFORM dm_private.require_known_keys(feedback,
        ARRAY['query', 'evidence_id', 'rank', 'recall_id', 'ranking_profile_version', 'judgment'], 'feedback');
    IF pg_catalog.jsonb_typeof(feedback -> 'query') IS DISTINCT FROM 'string' THEN
        RAISE EXCEPTION 'query is required and must be a string' USING ERRCODE = '22023';
    END IF;
    query_text := feedback ->> 'query';
    IF pg_catalog.length(query_text) > 10000 THEN
        RAISE EXCEPTION 'query is longer than 10000 characters' USING ERRCODE = 'DM413';
    END IF;
    target_evidence := dm_private.json_uuid(feedback, 'evidence_id', 'evidence_id', true);
    recall := dm_private.json_uuid(feedback, 'recall_id', 'recall_id');
    profile_version := dm_private.json_text(feedback, 'ranking_profile_version', 'ranking_profile_version', 200);
    IF feedback ? 'rank' AND feedback -> 'rank' <> 'null'::jsonb THEN
        IF pg_catalog.jsonb_typeof(feedback -> 'rank') <> 'number'
           OR (feedback ->> 'rank')::numeric <> pg_catalog.trunc((feedback ->> 'rank')::numeric)
           OR (feedback ->> 'rank')::numeric < 1 OR (feedback ->> 'rank')::numeric > 1000000 THEN
            RAISE EXCEPTION 'rank must be a positive integer' USING ERRCODE = '22023';
        END IF;
        rank_value := (feedback ->> 'rank')::integer;
    END IF;
    judgment_name := dm_private.json_text(feedback, 'judgment', 'judgment', 20, true);
    IF judgment_name NOT IN ('used', 'not_used', 'relevant', 'irrelevant') THEN
        RAISE EXCEPTION 'judgment must be used, not_used, relevant or irrelevant, not %',
            pg_catalog.quote_literal(judgment_name) USING ERRCODE = '22023';
    END IF;
    IF NOT EXISTS (
        SELECT 1 FROM dm_private.evidence AS e WHERE e.team_id = team AND e.evidence_id = target_evidence) THEN
        RAISE EXCEPTION 'evidence_id is not evidence of this team' USING ERRCODE = '23503';
    END IF;

    INSERT INTO dm_private.recall_feedback (
        team_id, feedback_id, recall_id, query, evidence_id, result_rank, ranking_profile_version, judgment,
        actor_profile_id)
    VALUES (team, new_id, recall, query_text, target_evidence, rank_value, profile_version,
            judgment_name::dm_private.feedback_judgment, actor);

    -- A used result was also retrieved: retrieved_count counts every usage
    -- report (used or not_used), used_count the used ones. Relevance
    -- judgments are for evaluation and leave the counters alone.
    IF judgment_name IN ('used', 'not_used') THEN
        INSERT INTO dm_private.usage_counters AS u (team_id, evidence_id, retrieved_count, used_count)
        VALUES (team, target_evidence, 1, CASE WHEN judgment_name = 'used' THEN 1 ELSE 0 END)
        ON CONFLICT ON CONSTRAINT usage_counters_pkey DO UPDATE SET
            retrieved_count = u.retrieved_count + 1,
            used_count = u.used_count + excluded.used_count,
            updated_at = pg_catalog.now();
    END IF;
    RETURN new_id;
END
$$;
COMMENT ON FUNCTION dm.record_feedback(uuid, jsonb) IS
'Records what a caller said about one recall result: {"query", "evidence_id", "rank"?, "recall_id"?, "ranking_profile_version"?, "judgment": used|not_used|relevant|irrelevant}. used adds 1 to used_count and retrieved_count, not_used adds 1 to retrieved_count; relevant/irrelevant change no counter. Never changes weights or relationship state. Returns the feedback id.';
REVOKE ALL ON FUNCTION dm.record_feedback(uuid, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm.record_feedback(uuid, jsonb) TO densemem_app;

CREATE OR REPLACE FUNCTION dm.take_usage_snapshot(team_id uuid)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
#variable_conflict use_column
DECLARE
    team constant uuid := take_usage_snapshot.team_id;
    snapshot_id bigint;
BEGIN
    PERFORM dm_private.require_active_profile(team);
    INSERT INTO dm_private.usage_snapshots AS s (team_id) VALUES (team)
    RETURNING s.usage_snapshot_id INTO snapshot_id;
    INSERT INTO dm_private.usage_snapshot_counts (team_id, usage_snapshot_id, evidence_id, retrieved_count, used_count)
    SELECT u.team_id, snapshot_id, u.evidence_id, u.retrieved_count, u.used_count
    FROM dm_private.usage_counters AS u
    WHERE u.team_id = team;
    RETURN snapshot_id;
END
$$;
COMMENT ON FUNCTION dm.take_usage_snapshot(uuid) IS
'Freezes the team''s live usage counters into a new snapshot and returns its id; ranking reads the latest (or a requested) snapshot, never the live counters.';
REVOKE ALL ON FUNCTION dm.take_usage_snapshot(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm.take_usage_snapshot(uuid) TO densemem_app;
