-- Stage 6c: discovery paths for recall. Called by dm.recall_memory after
-- the evidence top K is chosen; it never sees or changes the results list.
--
-- Output: {"discovery_paths": [...], "related_hypotheses"?: [...],
--          "communities"?: [...], "degraded": [...]}.
-- A path is at most two eligible relationship edges plus supporting
-- evidence IDs (eligible evidence only, never text). Paths are ranked by
-- relevance (predicate hints, query words in predicates and names),
-- verified cross-author corroboration or challenge, preferred corrections
-- and novelty; relationships in known_relationship_ids never appear. The
-- count (max_paths), the serialized size (max_path_bytes) and the time
-- (time_budget_ms) are bounded by the ranking profile's "discovery" key.

-- A bounded list of UUIDs from a request field (an array of strings).
CREATE OR REPLACE FUNCTION dm_private.discovery_uuid_list(request jsonb, field text, max_count integer)
RETURNS uuid []
LANGUAGE plpgsql
IMMUTABLE
SET search_path = ''
AS $$
DECLARE
    value jsonb := request -> field;
BEGIN
    IF value IS NULL OR value = 'null'::jsonb THEN
        RETURN '{}'::uuid [];
    END IF;
    IF pg_catalog.jsonb_typeof(value) <> 'array' THEN
        RAISE EXCEPTION '% must be an array of ids', field USING ERRCODE = '22023';
    END IF;
    IF pg_catalog.jsonb_array_length(value) > max_count THEN
        RAISE EXCEPTION '% holds % ids; at most % are allowed', field, pg_catalog.jsonb_array_length(value), max_count
            USING ERRCODE = '22023';
    END IF;
    RETURN ARRAY(SELECT (v.item #>> '{}')::uuid FROM pg_catalog.jsonb_array_elements(value) AS v (item));
END
$$;
COMMENT ON FUNCTION dm_private.discovery_uuid_list(jsonb, text, integer) IS
'Reads a request field holding at most max_count UUID strings. SQLSTATE 22023 when too many or not an array, 22P02 when malformed.';

-- A profile setting as a bounded integer.
CREATE OR REPLACE FUNCTION dm_private.discovery_setting(cfg jsonb, key text, fallback integer, low integer, high integer)
RETURNS integer
LANGUAGE sql
IMMUTABLE
SET search_path = ''
AS $$
    SELECT LEAST(GREATEST(COALESCE(
        CASE WHEN pg_catalog.jsonb_typeof(cfg -> key) = 'number' THEN (cfg ->> key)::numeric::integer END,
        fallback), low), high)
$$;
COMMENT ON FUNCTION dm_private.discovery_setting(jsonb, text, integer, integer, integer) IS
'A discovery setting of the ranking profile, clamped to [low, high]; fallback when absent or not a number.';

-- Conflict references and cross-author corroboration of a discovery call's
-- pool edges. Called by discovery_candidate_paths only when some pool edge
-- has a recorded conflict or an equivalent relationship of another author
-- (the common call has neither, and then starts none of this plan). Per
-- edge: up to three references to eligible conflicting relationships (or
-- the one this edge superseded), whether this edge is the preferred side of
-- a correction or overridden by an eligible, supported preferred other side,
-- how many other authors challenge it, and how many other authors hold an
-- eligible, supported equivalent. STABLE: it reads with the calling
-- statement's snapshot, so the edges it re-reads are the walked ones.
-- Executable only by densemem_searcher, inside the team-checked
-- discovery_candidate_paths; it checks the team again and filters every
-- table reference by it.
CREATE OR REPLACE FUNCTION dm_private.discovery_edge_context(
    team uuid,
    edge_ids uuid [],
    inactive_owners uuid [],
    valid_at timestamptz,
    known_relationships uuid [],
    scopes text []
)
RETURNS TABLE (
    context_relationship_id uuid,
    refs jsonb,
    is_preferred boolean,
    is_overridden boolean,
    challengers bigint,
    corroborators bigint
)
LANGUAGE plpgsql
STABLE
SET search_path = ''
SET plan_cache_mode = 'force_generic_plan'
AS $$
BEGIN
    IF dm_private.require_team(discovery_edge_context.team) IS DISTINCT FROM discovery_edge_context.team THEN
        RAISE EXCEPTION 'team_id does not match the authenticated team' USING ERRCODE = '42501';
    END IF;
    RETURN QUERY
    WITH rels AS MATERIALIZED (
        SELECT r.relationship_id, r.subject_entity_id, r.object_entity_id, r.object_value, r.predicate,
               r.polarity, r.owner_profile_id, r.semantic_group
        FROM dm_private.relationships AS r
        WHERE r.team_id = team AND r.relationship_id = ANY(edge_ids)
    ),
    -- Recorded disagreements (the write path fills dm_private.conflicts).
    recorded AS MATERIALIZED (
        SELECT rels.relationship_id, c.conflicting_relationship_id AS other_id, c.kind,
               c.preferred_relationship_id
        FROM rels
        JOIN dm_private.conflicts AS c ON c.team_id = team AND c.relationship_id = rels.relationship_id
        UNION ALL
        SELECT rels.relationship_id, c.relationship_id, c.kind, c.preferred_relationship_id
        FROM rels
        JOIN dm_private.conflicts AS c ON c.team_id = team AND c.conflicting_relationship_id = rels.relationship_id
    ),
    -- Only recorded conflicts that are disagreements under the predicate's
    -- cardinality (migration 0031): different objects of a multi-valued
    -- predicate (a person uses many tools) are not a conflict, unless a
    -- correction (supersede) chose a preferred side. The team's
    -- single-valued predicates are read once, and only when some edge
    -- has a recorded conflict.
    -- The other side of each of them, when it is eligible itself (and
    -- whether a verified, eligible piece of evidence supports it), or when
    -- it was superseded by this very edge (the client may trace the
    -- corrected knowledge). One read of the other relationship.
    conflict_sides AS MATERIALIZED (
        SELECT rc.relationship_id, rc.other_id, rc.kind, rc.preferred_relationship_id,
               o.owner_profile_id AS other_owner, o.status AS other_status,
               o.superseded_by_relationship_id AS other_superseded_by,
               (o.status = 'active' AND o.tier IN ('validated_claim', 'fact')
                AND o.owner_profile_id <> ALL(inactive_owners)
                AND (o.known_to IS NULL OR o.known_to > pg_catalog.now())
                AND (valid_at IS NULL OR ((o.valid_from IS NULL OR o.valid_from <= valid_at)
                                          AND (o.valid_to IS NULL OR valid_at < o.valid_to)))
                AND NOT (o.relationship_id = ANY(known_relationships))) AS other_eligible,
               EXISTS (
                   SELECT 1
                   FROM dm_private.relationship_evidence AS ore
                   JOIN dm_private.evidence AS oev ON oev.team_id = team AND oev.evidence_id = ore.evidence_id
                   JOIN dm_private.source_revisions AS osr
                     ON osr.team_id = team AND osr.source_id = oev.source_id AND osr.revision_id = oev.revision_id
                   WHERE ore.team_id = team AND ore.relationship_id = o.relationship_id AND ore.accepted
                     AND oev.state = 'active' AND osr.is_current AND oev.owner_profile_id <> ALL(inactive_owners)
                     AND (oev.known_to IS NULL OR oev.known_to > pg_catalog.now())
                     AND NOT EXISTS (
                         SELECT 1 FROM pg_catalog.jsonb_each(oev.labels) AS l (key, value)
                         WHERE l.value = 'true'::jsonb AND NOT (l.key = ANY(scopes)))
               ) AS other_supported
        FROM recorded AS rc
        JOIN rels ON rels.relationship_id = rc.relationship_id
        JOIN dm_private.relationships AS o ON o.team_id = team AND o.relationship_id = rc.other_id
        WHERE rc.preferred_relationship_id IS NOT NULL
           OR dm_private.relationships_disagree(rels.predicate, rels.polarity, rels.object_entity_id,
                                                rels.object_value, o.polarity, o.object_entity_id,
                                                o.object_value,
                                                (SELECT dm_private.single_valued_predicates(team)))
    ),
    conflict_refs AS MATERIALIZED (
        SELECT cs.relationship_id,
               pg_catalog.jsonb_agg(JSON_OBJECT(
                   'relationship_id': cs.other_id,
                   'kind': cs.kind::text,
                   'owner_profile': JSON_OBJECT('profile_id': cs.other_owner, 'name': pn.name
                                                ABSENT ON NULL RETURNING jsonb),
                   'preferred': COALESCE(cs.preferred_relationship_id = cs.other_id, false),
                   'superseded': cs.other_status = 'superseded'
                   ABSENT ON NULL RETURNING jsonb)
                   ORDER BY cs.other_id) AS refs,
               pg_catalog.bool_or(cs.preferred_relationship_id = cs.relationship_id) AS is_preferred,
               pg_catalog.bool_or(cs.preferred_relationship_id IS NOT NULL
                                  AND cs.preferred_relationship_id <> cs.relationship_id
                                  AND cs.other_eligible AND cs.other_supported) AS is_overridden,
               pg_catalog.count(DISTINCT cs.other_owner) FILTER (
                   WHERE cs.other_eligible AND cs.other_supported) AS challengers
        FROM (
            SELECT c2.*, pg_catalog.row_number() OVER (PARTITION BY c2.relationship_id ORDER BY c2.other_id) AS n
            FROM conflict_sides AS c2
            WHERE c2.other_eligible
               OR (c2.other_status = 'superseded' AND c2.other_superseded_by = c2.relationship_id)
        ) AS cs
        JOIN dm_private.profiles AS pn ON pn.team_id = team AND pn.profile_id = cs.other_owner
        WHERE cs.n <= 3
        GROUP BY cs.relationship_id
    ),
    -- Equivalent relationships of other authors (same semantic group, or
    -- same endpoints, predicate and polarity) count as corroboration only
    -- when eligible and supported by eligible evidence.
    corroboration AS MATERIALIZED (
        SELECT rels.relationship_id, pg_catalog.count(DISTINCT eq.owner_profile_id) AS corroborators
        FROM rels
        CROSS JOIN LATERAL (
            SELECT o.relationship_id, o.owner_profile_id
            FROM dm_private.relationships AS o
            WHERE o.team_id = team AND o.semantic_group = rels.semantic_group AND rels.semantic_group IS NOT NULL
            UNION
            SELECT o.relationship_id, o.owner_profile_id
            FROM dm_private.relationships AS o
            WHERE o.team_id = team AND o.subject_entity_id = rels.subject_entity_id
              AND o.object_entity_id = rels.object_entity_id AND rels.object_entity_id IS NOT NULL
              AND o.predicate = rels.predicate AND o.polarity = rels.polarity
            LIMIT 50
        ) AS eq
        JOIN dm_private.relationships AS o ON o.team_id = team AND o.relationship_id = eq.relationship_id
        WHERE eq.owner_profile_id <> rels.owner_profile_id
          AND o.status = 'active' AND o.tier IN ('validated_claim', 'fact')
          AND o.owner_profile_id <> ALL(inactive_owners)
          AND (o.known_to IS NULL OR o.known_to > pg_catalog.now())
          AND EXISTS (
              SELECT 1
              FROM dm_private.relationship_evidence AS ore
              JOIN dm_private.evidence AS oev ON oev.team_id = team AND oev.evidence_id = ore.evidence_id
              JOIN dm_private.source_revisions AS osr
                ON osr.team_id = team AND osr.source_id = oev.source_id AND osr.revision_id = oev.revision_id
              WHERE ore.team_id = team AND ore.relationship_id = o.relationship_id AND ore.accepted
                AND oev.state = 'active' AND osr.is_current AND oev.owner_profile_id <> ALL(inactive_owners)
                AND (oev.known_to IS NULL OR oev.known_to > pg_catalog.now())
                AND NOT EXISTS (
                    SELECT 1 FROM pg_catalog.jsonb_each(oev.labels) AS l (key, value)
                    WHERE l.value = 'true'::jsonb AND NOT (l.key = ANY(scopes))))
        GROUP BY rels.relationship_id
    )
    SELECT COALESCE(cr.relationship_id, co.relationship_id), cr.refs, cr.is_preferred, cr.is_overridden,
           cr.challengers, co.corroborators
    FROM conflict_refs AS cr
    FULL JOIN corroboration AS co ON co.relationship_id = cr.relationship_id;
END
$$;
COMMENT ON FUNCTION dm_private.discovery_edge_context(uuid, uuid [], uuid [], timestamptz, uuid [], text []) IS
'Internal stage of discovery_candidate_paths: conflict references, preferred / overridden flags, challengers and cross-author corroborators of the given pool edges. Executable by densemem_searcher only.';
REVOKE ALL ON FUNCTION dm_private.discovery_edge_context(uuid, uuid [], uuid [], timestamptz, uuid [], text []) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.discovery_edge_context(uuid, uuid [], uuid [], timestamptz, uuid [], text []) TO
densemem_searcher;

-- The candidate paths of one discovery call, best first: the walk, the
-- cheap score of every walked path, and the decoration of a pool of
-- 2 x max_paths of them (supporting evidence, conflicts, verified
-- corroboration, names, novelty). Phase 1 (cheap, all walked edges):
-- candidate paths scored by seed strength and predicate relevance, from the
-- walk's own columns. Phase 2 (the pool): supporting evidence, conflicts,
-- verified corroboration, names and novelty decide.
--
-- SECURITY DEFINER owned by densemem_searcher (an internal stage of
-- discovery_for_recall_embedded): its one statement names some 25 table
-- references, and under row-level security each would carry the policy's
-- InitPlan and filter. Instead the team is checked here exactly as the
-- invoker functions check it (dm_private.require_team: the authenticated
-- team, and for analysts a granted one), and every table reference in this
-- statement and in discovery_walk / single_valued_predicates carries the
-- explicit predicate team_id = that team. The scopes are read from the
-- authenticated setting here; the other arguments only narrow what is read
-- inside that team.
-- path_json is text since session 9 (it was jsonb): CREATE OR REPLACE cannot
-- change a result type, so the function is dropped first (nothing depends on
-- it; its grants are given again below).
DROP FUNCTION IF EXISTS dm_private.discovery_candidate_paths(uuid, uuid [], jsonb, uuid [], integer, integer, integer, integer, timestamptz, timestamptz, text [], text [], uuid [], uuid [], text [], text [], timestamptz);
CREATE OR REPLACE FUNCTION dm_private.discovery_candidate_paths(
    team uuid,
    seed_ids uuid [],
    seed_scores jsonb,
    inactive_owners uuid [],
    fan_out integer,
    max_depth integer,
    walk_edges integer,
    max_paths integer,
    valid_at timestamptz,
    known_at timestamptz,
    hints text [],
    predicate_allow text [],
    known_relationships uuid [],
    seen_evidence uuid [],
    query_lexemes text [],
    query_words text [],
    deadline timestamptz
)
RETURNS TABLE (path_relationship_ids uuid [], path_entity_ids uuid [], path_json text)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = ''
SET plan_cache_mode = 'force_generic_plan'
AS $$
DECLARE
    checked_team constant uuid := dm_private.require_team(discovery_candidate_paths.team);
    -- A predicate is relevant when hinted, or when one of its words starts
    -- with a query lexeme of three or more characters ("works_on" for
    -- "work"): a word starts at the beginning or after an underscore, so
    -- that is "_" || predicate containing "_" || lexeme, one LIKE pattern
    -- per lexeme (%\_lexeme%, the lexeme's \, % and _ escaped), tested per
    -- walked edge with LIKE ANY: the same answer as the regular expression
    -- (^|_)(lexeme|...) used before, at a fraction of a regex execution's
    -- cost. No such lexeme: an empty list, which matches nothing.
    hit_likes constant text [] := ARRAY(
        SELECT '%\_' || pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(ql.lexeme, '\', '\\'), '%', '\%'),
                                           '_', '\_') || '%'
        FROM pg_catalog.unnest(query_lexemes) AS ql (lexeme)
        WHERE pg_catalog.length(ql.lexeme) >= 3);
    -- dm_private.authenticated_scopes() written out (keep the two in step):
    -- a SQL function with its own SET search_path runs its executor on
    -- every call.
    scopes constant text [] := COALESCE(pg_catalog.array_remove(pg_catalog.string_to_array(
        pg_catalog.replace(COALESCE(pg_catalog.current_setting('densemem.scopes', true), ''), ' ', ''), ','), ''),
        '{}'::text []);
BEGIN
    IF checked_team IS DISTINCT FROM discovery_candidate_paths.team THEN
        RAISE EXCEPTION 'team_id does not match the authenticated team' USING ERRCODE = '42501';
    END IF;
    RETURN QUERY
    -- The walk from the seeds: dm_private.discovery_walk(team, seed_ids,
    -- fan_out, max_depth, walk_edges, valid_at, known_at, hints,
    -- predicate_allow, known_relationships, deadline) written out (keep the
    -- two in step): the same index ranges in the same order and the same
    -- edge cap, so the same edges, without a function call, its plan
    -- start-up and two 15-column tuplestores per call. The team's inactive
    -- profiles are the caller's inactive_owners (the same query as the
    -- walk's own sub-select, which ran once per seed), a parameter rather
    -- than a column carried through every row.
    -- Only the columns the ranking reads are carried: every column is set
    -- up in the result type and projection of each of the walk's ~20 plan
    -- nodes on every call, and copied per walked edge.
    WITH RECURSIVE walk_steps (depth, relationship_id, to_entity_id, parent_relationship_id,
                         root_entity_id, subject_entity_id, predicate, object_entity_id, object_value,
                         polarity, owner_profile_id, parent_predicate, is_cycle, root_score) AS (
        -- root_score: the seed's score, read from seed_scores once per seed
        -- and carried along (it was read per walked edge and per path: a
        -- jsonb lookup and a text-to-double conversion each time).
        SELECT 0, NULL::uuid, s.entity_id, NULL::uuid, s.entity_id,
               NULL::uuid, NULL::text, NULL::uuid, NULL::text, NULL::dm_private.relationship_polarity, NULL::uuid,
               NULL::text, false,
               COALESCE((seed_scores ->> s.entity_id::text)::double precision, 0)
        FROM (SELECT DISTINCT u.entity_id FROM pg_catalog.unnest(seed_ids) AS u (entity_id)
              WHERE u.entity_id IS NOT NULL) AS s
        UNION ALL
        SELECT w.depth + 1, x.relationship_id, x.next_entity_id, w.relationship_id,
               w.root_entity_id, x.subject_entity_id, x.predicate, x.object_entity_id, x.object_value,
               x.polarity, x.owner_profile_id, w.predicate,
               -- Cycle detection (the CYCLE clause written out): with at most
               -- two hops a path is (root, entity expanded), so a row revisits
               -- its path exactly when it reaches one of those two; a literal
               -- object (NULL entity) never does.
               COALESCE(x.next_entity_id = w.root_entity_id OR x.next_entity_id = w.to_entity_id, false),
               w.root_score
        FROM walk_steps AS w
        CROSS JOIN LATERAL (
            SELECT y.relationship_id, y.next_entity_id, y.subject_entity_id, y.predicate, y.object_entity_id,
                   y.object_value, y.polarity, y.owner_profile_id
            FROM (
                (SELECT r.relationship_id, r.object_entity_id AS next_entity_id,
                        r.subject_entity_id, r.predicate, r.object_entity_id, r.object_value, r.polarity,
                        r.owner_profile_id, r.valid_from, r.valid_to, r.known_from, r.known_to
                 FROM dm_private.relationships AS r
                 WHERE r.team_id = team AND r.subject_entity_id = w.to_entity_id
                   AND r.predicate = ANY(hints)
                   AND r.status = 'active' AND r.tier IN ('validated_claim', 'fact')
                 )
                UNION ALL
                (SELECT r.relationship_id, r.subject_entity_id AS next_entity_id,
                        r.subject_entity_id, r.predicate, r.object_entity_id, r.object_value, r.polarity,
                        r.owner_profile_id, r.valid_from, r.valid_to, r.known_from, r.known_to
                 FROM dm_private.relationships AS r
                 WHERE r.team_id = team AND r.object_entity_id = w.to_entity_id
                   AND r.predicate = ANY(hints)
                   AND r.status = 'active' AND r.tier IN ('validated_claim', 'fact')
                 )
                UNION ALL
                (SELECT r.relationship_id, r.object_entity_id AS next_entity_id,
                        r.subject_entity_id, r.predicate, r.object_entity_id, r.object_value, r.polarity,
                        r.owner_profile_id, r.valid_from, r.valid_to, r.known_from, r.known_to
                 FROM dm_private.relationships AS r
                 WHERE r.team_id = team AND r.subject_entity_id = w.to_entity_id
                   AND r.predicate <> ALL(hints)
                   AND r.status = 'active' AND r.tier IN ('validated_claim', 'fact')
                 )
                UNION ALL
                (SELECT r.relationship_id, r.subject_entity_id AS next_entity_id,
                        r.subject_entity_id, r.predicate, r.object_entity_id, r.object_value, r.polarity,
                        r.owner_profile_id, r.valid_from, r.valid_to, r.known_from, r.known_to
                 FROM dm_private.relationships AS r
                 WHERE r.team_id = team AND r.object_entity_id = w.to_entity_id
                   AND r.predicate <> ALL(hints)
                   AND r.status = 'active' AND r.tier IN ('validated_claim', 'fact')
                 )
                -- The eligibility filter below is written once, above the four
                -- index ranges (OFFSET 0 keeps the planner from copying it back
                -- into each branch): its ~20 operator and function references
                -- are set up (ACL check, lookup, expression steps) once per call
                -- instead of four times, and the branches lose their own Limit
                -- nodes. Same edges in the same order as discovery_walk's
                -- per-branch filters: the Append still runs the branches in
                -- order and the LIMIT below stops it after fan_out eligible
                -- edges, and no branch can place more than fan_out of them in
                -- front of the next one.
                OFFSET 0
            ) AS y
            WHERE (predicate_allow IS NULL OR y.predicate = ANY(predicate_allow))
              AND (valid_at IS NULL OR ((y.valid_from IS NULL OR y.valid_from <= valid_at)
                                        AND (y.valid_to IS NULL OR valid_at < y.valid_to)))
              AND (CASE WHEN known_at IS NULL THEN y.known_to IS NULL OR y.known_to > pg_catalog.now()
                        ELSE y.known_from <= known_at AND (y.known_to IS NULL OR known_at < y.known_to) END)
              AND y.relationship_id <> ALL(known_relationships)
              AND y.owner_profile_id <> ALL(inactive_owners)
            -- No sort: the Append runs its branches in order (hinted outgoing,
            -- hinted incoming, outgoing, incoming) and LIMIT stops it as soon as
            -- fan_out edges are found, so later branches of a hub are never read.
            LIMIT fan_out
        ) AS x
        WHERE w.depth < LEAST(GREATEST(max_depth, 0), 2)
          AND w.to_entity_id IS NOT NULL
          AND (w.depth = 0 OR deadline IS NULL OR pg_catalog.clock_timestamp() < deadline)
          AND NOT w.is_cycle
    ),
    walk AS MATERIALIZED (
        SELECT w.depth, w.relationship_id, w.parent_relationship_id, w.subject_entity_id,
               w.predicate, w.object_entity_id, w.object_value, w.polarity, w.owner_profile_id,
               COALESCE(w.predicate = ANY(hints) OR ('_' || w.predicate) OPERATOR(pg_catalog.~~) ANY(hit_likes), false)
                   AS hit,
               COALESCE(w.parent_predicate = ANY(hints)
                        OR ('_' || w.parent_predicate) OPERATOR(pg_catalog.~~) ANY(hit_likes),
                        false) AS parent_hit,
               w.root_score
        FROM (SELECT ws.depth, ws.relationship_id, ws.parent_relationship_id, ws.subject_entity_id, ws.predicate,
                     ws.object_entity_id, ws.object_value, ws.polarity, ws.owner_profile_id, ws.parent_predicate,
                     ws.root_score
              FROM walk_steps AS ws
              WHERE ws.depth > 0 AND NOT ws.is_cycle
              LIMIT GREATEST(walk_edges, 0)) AS w
    ),
    -- One pass over the walk for both path lengths (a one-edge path per
    -- first hop, a two-edge path per second hop): one scan, not a scan per
    -- length and an Append. The score expressions are those of before, term
    -- for term, so the same doubles.
    cheap_paths AS (
        SELECT CASE WHEN w.depth = 1 THEN ARRAY[w.relationship_id]
                    ELSE ARRAY[w.parent_relationship_id, w.relationship_id] END AS relationship_ids,
               w.root_score,
               CASE WHEN w.depth = 1
                    THEN 0.2 * w.root_score
                         + CASE WHEN w.hit THEN 1.0::double precision ELSE 0.0::double precision END
                    -- (parent hit + hit) / 2 is 0, 0.5 or 1, exact in double: no
                    -- numeric arithmetic and conversion per walked edge.
                    ELSE 0.2 * w.root_score
                         + CASE WHEN w.parent_hit AND w.hit THEN 1.0::double precision
                                WHEN w.parent_hit OR w.hit THEN 0.5::double precision
                                ELSE 0.0::double precision END - 0.2 END AS score
        FROM walk AS w
    ),
    pool AS MATERIALIZED (
        SELECT d.relationship_ids, d.root_score
        FROM (SELECT DISTINCT ON (cp.relationship_ids) cp.*
              FROM cheap_paths AS cp
              ORDER BY cp.relationship_ids, cp.score DESC) AS d
        ORDER BY d.score DESC, d.relationship_ids
        LIMIT GREATEST(2 * max_paths, 6)
    ),
    rels AS MATERIALIZED (
        SELECT DISTINCT ON (w.relationship_id) w.relationship_id, w.subject_entity_id, w.object_entity_id,
               w.object_value, w.predicate, w.polarity, w.owner_profile_id, w.hit
        FROM walk AS w
        WHERE w.relationship_id IN (SELECT pg_catalog.unnest(pool.relationship_ids) FROM pool)
        ORDER BY w.relationship_id
    ),
    -- Conflicts and cross-author corroboration (discovery_edge_context),
    -- computed only when some pool edge has a recorded conflict (either
    -- side) or an equivalent relationship of another author (same semantic
    -- group, or same endpoints, predicate and polarity): without one, both
    -- are empty by definition, and this statement starts and runs none of
    -- their plan. Such a relationship is marked in discovery_context_marks
    -- (migration 0070, kept by the write path; a superset, which can only
    -- start the function for nothing): one probe of a small index per pool
    -- edge, where four probes (conflicts both ways, the semantic group and
    -- the endpoint range of relationships_outgoing_idx) decided it before.
    context AS MATERIALIZED (
        SELECT x.context_relationship_id AS relationship_id, x.refs, x.is_preferred, x.is_overridden,
               x.challengers, x.corroborators
        FROM dm_private.discovery_edge_context(team, ARRAY(SELECT rels.relationship_id FROM rels), inactive_owners,
                                               valid_at, known_relationships, scopes) AS x
        WHERE EXISTS (
            SELECT 1
            FROM rels
            WHERE EXISTS (SELECT 1 FROM dm_private.discovery_context_marks AS m
                          WHERE m.team_id = team AND m.relationship_id = rels.relationship_id))
    ),
    edges AS MATERIALIZED (
        SELECT rels.relationship_id, su.evidence_ids, rels.subject_entity_id, rels.object_entity_id,
               -- The edge as the text jsonb prints for it (canonical: keys in
               -- jsonb's order, shorter first; ", " and ": " separators;
               -- strings escaped by to_json, which jsonb's output shares), put
               -- together by concatenation: no jsonb value is built per edge
               -- or path (building nested jsonb objects and copying them into
               -- arrays and paths was a tenth of a call). The caller counts
               -- path bytes on this text and parses the chosen paths once.
               -- Absent values are skipped by concat_ws, as ABSENT ON NULL
               -- dropped them.
               '{' || pg_catalog.concat_ws(', ',
                   '"object": {"name": ' || pg_catalog.to_json(oe.canonical_name)::text
                       || ', "entity_id": "' || oe.entity_id::text || '"}',
                   '"subject": {"name": ' || pg_catalog.to_json(se.canonical_name)::text
                       || ', "entity_id": "' || se.entity_id::text || '"}',
                   '"polarity": ' || pg_catalog.to_json(rels.polarity::text)::text,
                   '"conflicts": ' || cx.refs::text,
                   '"predicate": ' || pg_catalog.to_json(rels.predicate)::text,
                   CASE WHEN cx.is_preferred THEN '"preferred": true' END,
                   '"object_value": ' || pg_catalog.to_json(rels.object_value)::text,
                   CASE WHEN cx.refs IS NOT NULL OR COALESCE(cx.corroborators, 0) > 0 THEN
                       '"owner_profile": {' || pg_catalog.concat_ws(', ',
                           '"name": ' || pg_catalog.to_json(
                               (SELECT op.name FROM dm_private.profiles AS op
                                WHERE op.team_id = team AND op.profile_id = rels.owner_profile_id))::text,
                           '"profile_id": "' || rels.owner_profile_id::text || '"') || '}' END,
                   '"relationship_id": "' || rels.relationship_id::text || '"') || '}' AS edge_json,
               -- The edge score in twentieths (every weight is a multiple of
               -- 0.05), divided once in double precision: the double nearest
               -- to the exact sum, as the numeric sum converted to double was
               -- (both round correctly), without numeric arithmetic per edge.
               ((CASE WHEN rels.hit THEN 20 ELSE 0 END
                 + 8 * LEAST(
                     (CASE WHEN pg_catalog.string_to_array(se.normalized_name, ' ') OPERATOR(pg_catalog.&&) query_words
                           THEN 1 ELSE 0 END)
                     + (CASE WHEN pg_catalog.string_to_array(
                                      COALESCE(oe.normalized_name, pg_catalog.lower(pg_catalog.left(rels.object_value, 200))),
                                      ' ') OPERATOR(pg_catalog.&&) query_words THEN 1 ELSE 0 END), 2)
                 + 5 * LEAST(COALESCE(cx.corroborators, 0), 3)
                 - 5 * LEAST(COALESCE(cx.challengers, 0), 2)
                 + CASE WHEN cx.is_preferred THEN 12 ELSE 0 END
                 - CASE WHEN cx.is_overridden THEN 12 ELSE 0 END
                 + CASE WHEN su.novel > 0 THEN 6 ELSE 0 END)::double precision / 20) AS edge_score
        FROM rels
        -- Supporting evidence of the edge, which must be eligible itself
        -- (same rule as default recall: active, current revision, active
        -- owner, request time, policy): the first three, unseen first, and
        -- whether any is unseen. An edge without any is not a candidate.
        CROSS JOIN LATERAL (
            SELECT (pg_catalog.array_agg(x.evidence_id ORDER BY x.seen, x.evidence_id))[1:3] AS evidence_ids,
                   pg_catalog.count(*) FILTER (WHERE NOT x.seen) AS novel
            FROM (
                SELECT re.evidence_id, (re.evidence_id = ANY(seen_evidence)) AS seen
                FROM dm_private.relationship_evidence AS re
                JOIN dm_private.evidence AS ev ON ev.team_id = team AND ev.evidence_id = re.evidence_id
                JOIN dm_private.source_revisions AS sr
                  ON sr.team_id = team AND sr.source_id = ev.source_id AND sr.revision_id = ev.revision_id
                WHERE re.team_id = team AND re.relationship_id = rels.relationship_id AND re.accepted
                  AND ev.state = 'active' AND sr.is_current AND ev.owner_profile_id <> ALL(inactive_owners)
                  AND (valid_at IS NULL OR ((ev.valid_from IS NULL OR ev.valid_from <= valid_at)
                                            AND (ev.valid_to IS NULL OR valid_at < ev.valid_to)))
                  AND (CASE WHEN known_at IS NULL THEN ev.known_to IS NULL OR ev.known_to > pg_catalog.now()
                            ELSE ev.known_from <= known_at AND (ev.known_to IS NULL OR known_at < ev.known_to) END)
                  -- No label, or every true label covered by the scopes (the
                  -- empty object first: no jsonb_each scan for unlabeled evidence).
                  AND (ev.labels = '{}'::jsonb
                       OR NOT EXISTS (
                           SELECT 1 FROM pg_catalog.jsonb_each(ev.labels) AS lb (key, value)
                           WHERE lb.value = 'true'::jsonb AND NOT (lb.key = ANY(scopes))))
            ) AS x
        ) AS su
        JOIN dm_private.entities AS se ON se.team_id = team AND se.entity_id = rels.subject_entity_id
        LEFT JOIN dm_private.entities AS oe ON oe.team_id = team AND oe.entity_id = rels.object_entity_id
        LEFT JOIN context AS cx ON cx.relationship_id = rels.relationship_id
        WHERE su.evidence_ids IS NOT NULL
    ),
    paths AS (
        SELECT pool.relationship_ids,
               e1.edge_json || COALESCE(', ' || e2.edge_json, '') AS edge_list,
               COALESCE(e1.evidence_ids, '{}') || COALESCE(e2.evidence_ids, '{}') AS evidence_ids,
               ARRAY[e1.subject_entity_id, e1.object_entity_id, e2.subject_entity_id, e2.object_entity_id]
                   AS entity_ids,
               0.2 * pool.root_score
               + (e1.edge_score + COALESCE(e2.edge_score, e1.edge_score)) / 2.0
               - (2 * (pg_catalog.cardinality(pool.relationship_ids) - 1))::double precision / 10 AS score
        FROM pool
        JOIN edges AS e1 ON e1.relationship_id = pool.relationship_ids[1]
        LEFT JOIN edges AS e2 ON e2.relationship_id = pool.relationship_ids[2]
        WHERE pg_catalog.cardinality(pool.relationship_ids) = 1 OR e2.relationship_id IS NOT NULL
    )
    SELECT paths.relationship_ids, paths.entity_ids,
           -- {"evidence_ids": [...], "relationships": [...]} as jsonb prints it.
           '{"evidence_ids": [' || COALESCE((
               SELECT pg_catalog.string_agg('"' || d.id::text || '"', ', ' ORDER BY d.id)
               FROM (SELECT DISTINCT ev.id FROM pg_catalog.unnest(paths.evidence_ids) AS ev (id)
                     ORDER BY ev.id LIMIT 5) AS d), '')
           || '], "relationships": [' || paths.edge_list || ']}' AS path
    FROM paths
    ORDER BY paths.score DESC, paths.relationship_ids;
END
$$;
COMMENT ON FUNCTION dm_private.discovery_candidate_paths(uuid, uuid [], jsonb, uuid [], integer, integer, integer, integer, timestamptz, timestamptz, text [], text [], uuid [], uuid [], text [], text [], timestamptz) IS
'Internal stage of discovery_for_recall_embedded: the walk from the seeds and every candidate path (1-2 eligible edges, decorated JSON, supporting evidence IDs), best first. Security definer owned by densemem_searcher: checks the team like require_team and filters every table by it explicitly.';
ALTER FUNCTION dm_private.discovery_candidate_paths(uuid, uuid [], jsonb, uuid [], integer, integer, integer, integer, timestamptz, timestamptz, text [], text [], uuid [], uuid [], text [], text [], timestamptz)
OWNER TO densemem_searcher;

-- An earlier draft had the embedding as a defaulted seventh argument of
-- discovery_for_recall itself; it would make a six-argument call ambiguous.
DROP FUNCTION IF EXISTS dm_private.discovery_for_recall(uuid, text, jsonb, uuid [], jsonb, jsonb, public.vector);

-- Discovery for one recall, with the query embedding (NULL when there is
-- none) for entity / relationship document seeds. See the header of this file.
CREATE OR REPLACE FUNCTION dm_private.discovery_for_recall_embedded(
    team_id uuid,
    query text,
    parsed jsonb,
    result_evidence_ids uuid [],
    request jsonb,
    settings jsonb,
    query_embedding public.vector
)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
SET plan_cache_mode = 'force_generic_plan'
AS $$
DECLARE
    team constant uuid := dm_private.require_team(discovery_for_recall_embedded.team_id);
    started constant timestamptz := pg_catalog.clock_timestamp();
    req constant jsonb := COALESCE(request, '{}'::jsonb);
    prs constant jsonb := COALESCE(parsed, '{}'::jsonb);
    cfg constant jsonb := COALESCE(settings -> 'discovery', '{}'::jsonb);
    -- The profile's budgets (discovery_setting's rule, read in the prelude
    -- statement below: no function call per setting).
    seed_count integer;
    fan_out integer;
    max_edges integer;
    max_depth integer;
    max_paths integer;
    max_path_bytes integer;
    time_budget_ms integer;
    deadline timestamptz;
    walk_edges integer;
    returned uuid [] := COALESCE(result_evidence_ids, '{}'::uuid []);
    known_evidence uuid [];
    known_relationships uuid [];
    expand_ids uuid [];
    parsed_entity_ids uuid [];
    seen_evidence uuid [];
    valid_at timestamptz;
    known_at timestamptz;
    hints text [];
    predicate_allow text [];
    query_lexemes text [];
    query_tsquery tsquery;
    query_words text [];
    seed_ids uuid [] := '{}';
    seed_scores jsonb := '{}';
    inactive_owners uuid [] := '{}';
    strong_seeds boolean := false;
    team_predicates text [];
    candidate record;
    -- The chosen paths, as the text jsonb prints for each (see
    -- discovery_candidate_paths), collected as an array and parsed into one
    -- JSON array at the end: no jsonb value per path.
    chosen text [] := '{}';
    chosen_relationships uuid [] := '{}';
    path_entities uuid [] := '{}';
    used_bytes integer := 2;
    path_bytes integer;
    degraded text [] := '{}';
    answer jsonb;
    -- The optional fields (related_hypotheses, communities) when asked for.
    extras jsonb;
    result_limit integer;
    want_hypotheses boolean;
    graph_less boolean := false;
BEGIN
    -- The request's ID lists (discovery_uuid_list answers '{}' for an absent
    -- field without reading anything else: an expression here, no
    -- function call, for the common request that gives none of them).
    known_evidence := CASE WHEN req -> 'known_evidence_ids' IS NULL THEN '{}'::uuid []
                           ELSE dm_private.discovery_uuid_list(req, 'known_evidence_ids', 200) END;
    known_relationships := CASE WHEN req -> 'known_relationship_ids' IS NULL THEN '{}'::uuid []
                                ELSE dm_private.discovery_uuid_list(req, 'known_relationship_ids', 200) END;
    expand_ids := CASE WHEN req -> 'expand_from_entity_ids' IS NULL THEN '{}'::uuid []
                       ELSE dm_private.discovery_uuid_list(req, 'expand_from_entity_ids', 50) END;
    seen_evidence := returned || known_evidence;
    valid_at := NULLIF(req ->> 'valid_at', '')::timestamptz;
    known_at := NULLIF(req ->> 'known_at', '')::timestamptz;

    -- A graph-less team (no entity at all: the common case of a team that
    -- stores evidence only) has no discovery path, whatever the query: every
    -- seed source is an entity of this team (requested and parsed entities
    -- and query-name seeds are re-read from dm_private.entities; seeds from
    -- the returned evidence are endpoints of its relationships, which the
    -- foreign keys relationships_subject_fkey / _object_fkey tie to
    -- entities), so seed_ids stays empty and nothing below would run past
    -- the seeds statement. One probe of the entities key (team_id leads)
    -- skips the prelude, the seeds statement and its name search, with the
    -- answer the full path gives: no paths, no time-budget degradation
    -- (that needs a seed), and hypotheses and communities below exactly as
    -- before (they read their own tables; communities get the same empty
    -- entity list). The prelude can fail only on a budget that is a number
    -- outside the integer range (22003, numeric -> integer), so a profile
    -- with any such number takes the full path and fails as it always did.
    -- The probe is a scalar sub-select in key order, not EXISTS: the planner
    -- drops ORDER BY and LIMIT inside EXISTS and, for a generic plan that
    -- expects many rows per team, takes a sequential scan that stops at the
    -- first row of the team, which is the whole table for a team with none.
    -- It runs only when the full path is not already chosen: a parse that
    -- named an entity read it from this team's names (and the full path is
    -- exact whatever the team holds), so a call naming one pays an
    -- expression here, not a statement.
    IF (prs -> 'entities' -> 0) IS NULL
       AND NOT (cfg OPERATOR(pg_catalog.@?) '$.* ? (@ >= 2147483647.5 || @ <= -2147483648.5)'::jsonpath) THEN
        graph_less := (SELECT e.entity_id FROM dm_private.entities AS e
                       WHERE e.team_id = team ORDER BY e.entity_id LIMIT 1) IS NULL;
    END IF;
    IF NOT graph_less THEN
        -- The request's parsed entities and predicates, the profile's predicate
        -- filter, its budgets and the query's lexemes, words and tsquery: one
        -- statement. Each budget is discovery_setting(cfg, key, fallback, low,
        -- high) written out: a number, else the fallback, clamped to [low, high].
        SELECT CASE WHEN pg_catalog.jsonb_typeof(prs -> 'entities') = 'array' THEN ARRAY(
                   SELECT (x.item ->> 'entity_id')::uuid
                   FROM pg_catalog.jsonb_array_elements(prs -> 'entities') AS x (item)
                   WHERE pg_catalog.jsonb_typeof(x.item) = 'object'
                     AND (x.item ->> 'entity_id') ~* '^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$'
                   LIMIT 50) ELSE '{}'::uuid [] END,
               CASE WHEN pg_catalog.jsonb_typeof(prs -> 'predicates') = 'array' THEN ARRAY(
                   SELECT DISTINCT x.item #>> '{}'
                   FROM pg_catalog.jsonb_array_elements(prs -> 'predicates') AS x (item)
                   WHERE pg_catalog.jsonb_typeof(x.item) = 'string' AND (x.item #>> '{}') ~ '^[a-z][a-z0-9_]{0,99}$'
                   LIMIT 20) ELSE '{}'::text [] END,
               CASE WHEN pg_catalog.jsonb_typeof(cfg -> 'predicates') = 'array' THEN ARRAY(
                   SELECT x.item #>> '{}' FROM pg_catalog.jsonb_array_elements(cfg -> 'predicates') AS x (item)) END,
               lx.lexemes,
               -- Query words (as entity names are normalized, stop words and short
               -- words dropped): relevance of the endpoint names of an edge. These
               -- are the one-word n-grams of dm_private.discovery_name_ngrams (the
               -- same normalization, written out here: no function call building
               -- every 1- to 4-word n-gram to keep only the single words; keep
               -- the two in step).
               ARRAY(
                   SELECT g.word
                   FROM pg_catalog.unnest((pg_catalog.regexp_split_to_array(
                            pg_catalog.btrim(pg_catalog.regexp_replace(
                                pg_catalog.regexp_replace(pg_catalog.lower(pg_catalog.left(COALESCE(query, ''), 2000)),
                                                          '''s\M', '', 'g'),
                                '[?!,;:"()\[\]{}]+|\.(\s|$)|\s''|''(\s|$)|^''', ' ', 'g')),
                            '\s+'))[1:32]) AS g (word)
                   WHERE pg_catalog.strpos(g.word, ' ') = 0 AND pg_catalog.length(g.word) >= 3
                     AND pg_catalog.length(pg_catalog.to_tsvector('english'::regconfig, g.word)) > 0),
               -- Any query lexeme: relevance of predicates. An empty query matches nothing.
               COALESCE((SELECT pg_catalog.string_agg(pg_catalog.quote_literal(l.lexeme), ' | ')
                         FROM pg_catalog.unnest(lx.lexemes) AS l (lexeme))::tsquery,
                        '''discovery-matches-nothing'''::tsquery),
               LEAST(GREATEST(COALESCE(CASE WHEN pg_catalog.jsonb_typeof(cfg -> 'seed_count') = 'number'
                                            THEN (cfg ->> 'seed_count')::numeric::integer END, 5), 0), 50),
               LEAST(GREATEST(COALESCE(CASE WHEN pg_catalog.jsonb_typeof(cfg -> 'fan_out') = 'number'
                                            THEN (cfg ->> 'fan_out')::numeric::integer END, 20), 1), 100),
               LEAST(GREATEST(COALESCE(CASE WHEN pg_catalog.jsonb_typeof(cfg -> 'max_edges') = 'number'
                                            THEN (cfg ->> 'max_edges')::numeric::integer END, 200), 1), 2000),
               LEAST(GREATEST(COALESCE(CASE WHEN pg_catalog.jsonb_typeof(cfg -> 'max_depth') = 'number'
                                            THEN (cfg ->> 'max_depth')::numeric::integer END, 2), 1), 2),
               LEAST(GREATEST(COALESCE(CASE WHEN pg_catalog.jsonb_typeof(cfg -> 'max_paths') = 'number'
                                            THEN (cfg ->> 'max_paths')::numeric::integer END, 5), 0), 50),
               LEAST(GREATEST(COALESCE(CASE WHEN pg_catalog.jsonb_typeof(cfg -> 'max_path_bytes') = 'number'
                                            THEN (cfg ->> 'max_path_bytes')::numeric::integer END, 4000), 0), 100000),
               LEAST(GREATEST(COALESCE(CASE WHEN pg_catalog.jsonb_typeof(cfg -> 'time_budget_ms') = 'number'
                                            THEN (cfg ->> 'time_budget_ms')::numeric::integer END, 20), 1), 10000)
        INTO parsed_entity_ids, hints, predicate_allow, query_lexemes, query_words, query_tsquery,
             seed_count, fan_out, max_edges, max_depth, max_paths, max_path_bytes, time_budget_ms
        -- The lexemes of the query and the parsed terms:
        -- dm_private.discovery_lexemes(text) written out (keep the two in
        -- step; a SQL function with its own SET search_path runs its executor
        -- on every call).
        FROM (SELECT pg_catalog.tsvector_to_array(pg_catalog.to_tsvector('english'::regconfig,
                  pg_catalog.replace(pg_catalog.left(COALESCE(
                      COALESCE(query, '') || ' ' || COALESCE((
                          SELECT pg_catalog.string_agg(COALESCE(x.item ->> 'term', x.item ->> 'text', x.item #>> '{}'),
                                                       ' ')
                          FROM pg_catalog.jsonb_array_elements(
                              CASE WHEN pg_catalog.jsonb_typeof(prs -> 'terms') = 'array' THEN prs -> 'terms'
                                   ELSE '[]'::jsonb END)
                              AS x (item)), ''), ''), 2000), '_', ' '))) AS lexemes
              -- OFFSET 0: evaluated once (a flattened sub-select ran the
              -- expression once per reference to lx.lexemes).
              OFFSET 0) AS lx;
        deadline := started + pg_catalog.make_interval(secs => time_budget_ms / 1000.0);
        -- The walk needs no more edges than a pool of candidate paths can use:
        -- max_edges is the cap, six edges per requested path the working size.
        walk_edges := LEAST(max_edges, GREATEST(30, 6 * max_paths));

        -- Seeds: requested expansion entities, parsed query entities, entity
        -- search, and the entities the returned evidence supports. Every source
        -- is re-checked against this team's entities.
        IF seed_count > 0 THEN
            WITH found AS (
                SELECT e.entity_id, 4.0::double precision AS score
                FROM dm_private.entities AS e
                WHERE e.team_id = team AND e.entity_id = ANY(expand_ids)
                UNION ALL
                SELECT e.entity_id, 3.0::double precision
                FROM dm_private.entities AS e
                WHERE e.team_id = team AND e.entity_id = ANY(parsed_entity_ids)
                UNION ALL
                SELECT s.entity_id, s.score
                FROM dm_private.discovery_entity_seeds(team, query, query_embedding, seed_count) AS s
                -- The parser already matched the query's names: no second name search.
                WHERE pg_catalog.cardinality(parsed_entity_ids) = 0
                UNION ALL
                SELECT l.entity_id, 1.0::double precision
                FROM (
                    -- Accepted links of the returned evidence to eligible (active,
                    -- validated_claim or fact) relationships: evidence_entity_links
                    -- (migration 0038) holds exactly those, with both endpoints.
                    -- Both endpoints from one set-returning projection, subject
                    -- then object per link (no VALUES scan per link).
                    SELECT ends.entity_id
                    FROM (SELECT pg_catalog.unnest(ARRAY[k.subject_entity_id, k.object_entity_id]) AS entity_id
                          FROM dm_private.evidence_entity_links AS k
                          WHERE k.team_id = team
                            AND k.evidence_id = ANY(returned)) AS ends
                    WHERE ends.entity_id IS NOT NULL
                    LIMIT 200
                ) AS l
            ),
            ranked AS (
                -- 0.05 per further mention: (count - 1) / 20 in double precision
                -- is the double nearest to that exact decimal, as the numeric
                -- product 0.05 * (count - 1) converted to double was (both
                -- round correctly), without numeric arithmetic and a decimal
                -- string conversion per entity. The branch constants above are
                -- typed double for the same reason (no conversion per row).
                SELECT found.entity_id,
                       pg_catalog.max(found.score) + (pg_catalog.count(*) - 1)::double precision / 20 AS score
                FROM found
                GROUP BY found.entity_id
                ORDER BY 2 DESC, found.entity_id
                LIMIT seed_count
            )
            SELECT COALESCE(pg_catalog.array_agg(ranked.entity_id ORDER BY ranked.score DESC, ranked.entity_id), '{}'),
                   COALESCE(pg_catalog.jsonb_object_agg(ranked.entity_id::text, ranked.score), '{}'::jsonb),
                   -- The team's profiles that are not active, read once: "owner
                   -- active" below is a membership test, not a profiles join per row.
                   ARRAY(SELECT p.profile_id FROM dm_private.profiles AS p
                         WHERE p.team_id = team AND p.state <> 'active'),
                   -- Whether some seed is strong enough (>= 1.5: named in the
                   -- query) to give predicate hints below.
                   COALESCE(pg_catalog.bool_or(ranked.score >= 1.5), false)
            INTO seed_ids, seed_scores, inactive_owners, strong_seeds
            FROM ranked;
        END IF;

        -- Predicate hints from the query's words when the parser gave none: the
        -- own predicates (at most 30 per direction, in order) of the two
        -- strongest seeds the query named (not those only linked to returned
        -- evidence) whose words match. Without a seed of score 1.5 or more the
        -- statement has no entity to read (the common call seeded only by
        -- returned evidence): not started.
        IF pg_catalog.cardinality(hints) = 0 AND strong_seeds
           AND pg_catalog.cardinality(query_lexemes) > 0 THEN
            -- The team's predicates (migration 0057: every predicate its
            -- relationships have had, a superset kept by the write path). When
            -- there are at most 30, no entity has more than 30 per direction,
            -- so the 30-per-direction cut never applies and the hints are
            -- exactly the matching ones a seed has: one existence probe per
            -- matching predicate and seed direction instead of the loose index
            -- scans of discovery_entity_predicates, each of whose steps reads
            -- the rest of a leaf page of a hub (~50 k instructions, ~20 steps
            -- per direction). More than 30: the loose scans, as before.
            team_predicates := ARRAY(SELECT DISTINCT t.predicate FROM dm_private.team_predicates AS t
                                     WHERE t.team_id = team ORDER BY t.predicate LIMIT 31);
            IF pg_catalog.cardinality(team_predicates) <= 30 THEN
                hints := ARRAY(
                    SELECT v.predicate
                    FROM pg_catalog.unnest(team_predicates) AS v (predicate)
                    WHERE pg_catalog.to_tsvector('english'::regconfig, pg_catalog.replace(v.predicate, '_', ' '))
                          OPERATOR(pg_catalog.@@) query_tsquery
                      AND EXISTS (
                          SELECT 1
                          FROM (SELECT sc.key::uuid AS entity_id
                                FROM pg_catalog.jsonb_each_text(seed_scores) AS sc (key, value)
                                WHERE sc.value::double precision >= 1.5
                                ORDER BY sc.value::double precision DESC, sc.key
                                LIMIT 2) AS s
                          WHERE EXISTS (SELECT 1 FROM dm_private.relationships AS r
                                        WHERE r.team_id = team AND r.subject_entity_id = s.entity_id
                                          AND r.predicate = v.predicate)
                             OR EXISTS (SELECT 1 FROM dm_private.relationships AS r
                                        WHERE r.team_id = team AND r.object_entity_id = s.entity_id
                                          AND r.predicate = v.predicate))
                    ORDER BY v.predicate
                    LIMIT 20);
            ELSE
                hints := ARRAY(
                    SELECT d.predicate
                    FROM (SELECT DISTINCT p.predicate
                          FROM (SELECT sc.key::uuid AS entity_id
                                FROM pg_catalog.jsonb_each_text(seed_scores) AS sc (key, value)
                                WHERE sc.value::double precision >= 1.5
                                ORDER BY sc.value::double precision DESC, sc.key
                                LIMIT 2) AS s
                          CROSS JOIN LATERAL dm_private.discovery_entity_predicates(team, s.entity_id, 30)
                              AS p (predicate)
                         ) AS d
                    WHERE pg_catalog.to_tsvector('english'::regconfig, pg_catalog.replace(d.predicate, '_', ' '))
                          OPERATOR(pg_catalog.@@) query_tsquery
                    ORDER BY d.predicate
                    LIMIT 20);
            END IF;
        END IF;

        IF pg_catalog.cardinality(seed_ids) > 0 AND max_paths > 0 THEN
            -- Phase 1 (cheap, all walked edges): candidate paths scored by seed
            -- strength and predicate relevance, from the walk's own columns.
            -- Phase 2 (a pool of 2 x max_paths candidates): supporting evidence,
            -- conflicts, verified corroboration, names and novelty decide.
            FOR candidate IN
            SELECT c.path_relationship_ids AS relationship_ids, c.path_entity_ids AS entity_ids, c.path_json AS path
            FROM dm_private.discovery_candidate_paths(team, seed_ids, seed_scores, inactive_owners, fan_out, max_depth,
                                                      walk_edges, max_paths, valid_at, known_at, hints, predicate_allow,
                                                      known_relationships, seen_evidence, query_lexemes, query_words,
                                                      deadline) AS c
            LOOP
                -- Greedy selection: skip a path whose every edge is already shown,
                -- stop at max_paths, the byte budget or the deadline.
                EXIT WHEN pg_catalog.cardinality(chosen) >= max_paths;
                -- Past the deadline, keep what is chosen (at least the best path).
                EXIT WHEN pg_catalog.cardinality(chosen) > 0 AND pg_catalog.clock_timestamp() >= deadline;
                CONTINUE WHEN candidate.relationship_ids OPERATOR(pg_catalog.<@) chosen_relationships;
                path_bytes := pg_catalog.octet_length(candidate.path) + 2;
                CONTINUE WHEN used_bytes + path_bytes > max_path_bytes;
                used_bytes := used_bytes + path_bytes;
                chosen := pg_catalog.array_append(chosen, candidate.path);
                chosen_relationships := chosen_relationships || candidate.relationship_ids;
                path_entities := path_entities || pg_catalog.array_remove(candidate.entity_ids, NULL);
            END LOOP;
        END IF;
        IF pg_catalog.cardinality(seed_ids) > 0 AND max_paths > 0 AND pg_catalog.clock_timestamp() >= deadline THEN
            degraded := degraded || 'discovery_time_budget'::text;
        END IF;
    END IF;

    -- Optional: related hypotheses, in their own field. A failure omits the
    -- field and is recorded; it never fails the recall.
    want_hypotheses := COALESCE(CASE WHEN pg_catalog.jsonb_typeof(req -> 'include_hypotheses') = 'boolean'
                                     THEN (req ->> 'include_hypotheses')::boolean END, false)
                       OR COALESCE(CASE WHEN pg_catalog.jsonb_typeof(settings #> '{hypotheses,enabled}') = 'boolean'
                                        THEN (settings #>> '{hypotheses,enabled}')::boolean END, false);
    IF want_hypotheses THEN
        BEGIN
            extras := COALESCE(extras, '{}'::jsonb) || pg_catalog.jsonb_build_object('related_hypotheses',
                dm_private.discovery_hypotheses(team, query, returned,
                                                dm_private.discovery_setting(settings -> 'hypotheses', 'limit', 3, 0, 20)));
        EXCEPTION WHEN OTHERS THEN
            degraded := degraded || 'hypotheses'::text;
        END;
    END IF;

    -- Optional: communities (profile switch, off by default), only into
    -- result slots the direct results left unused, in their own field.
    IF COALESCE(CASE WHEN pg_catalog.jsonb_typeof(settings #> '{communities,enabled}') = 'boolean'
                     THEN (settings #>> '{communities,enabled}')::boolean END, false) THEN
        result_limit := COALESCE(CASE WHEN pg_catalog.jsonb_typeof(req -> 'limit') = 'number'
                                      THEN (req ->> 'limit')::numeric::integer END,
                                 dm_private.discovery_setting(settings -> 'budgets', 'default_limit', 10, 1, 50));
        BEGIN
            extras := COALESCE(extras, '{}'::jsonb) || pg_catalog.jsonb_build_object('communities',
                dm_private.discovery_communities(
                    team, seed_ids || path_entities,
                    LEAST(GREATEST(result_limit - pg_catalog.cardinality(returned), 0),
                          dm_private.discovery_setting(settings -> 'communities', 'limit', 3, 0, 20))));
        EXCEPTION WHEN OTHERS THEN
            degraded := degraded || 'communities'::text;
        END;
    END IF;

    -- The answer parsed once from text: {"degraded": [...], "discovery_paths":
    -- [...]} (the chosen paths are the text jsonb prints for each). Building
    -- it as JSON_OBJECT('discovery_paths': parsed array) and then adding
    -- "degraded" with || deserialized and re-encoded every token of the
    -- paths twice more; jsonb orders an object's keys itself, so the value is
    -- the same. The optional fields, when asked for, are added after.
    answer := ('{"degraded": ' || pg_catalog.to_json(degraded)::text
               || ', "discovery_paths": [' || pg_catalog.array_to_string(chosen, ', ') || ']}')::jsonb;
    IF extras IS NOT NULL THEN
        RETURN answer || extras;
    END IF;
    RETURN answer;
END
$$;
-- The agreed signature (DEVELOPERS.md), called by dm.recall_memory after the
-- top K is chosen: discovery without a query embedding.
CREATE OR REPLACE FUNCTION dm_private.discovery_for_recall(
    team_id uuid,
    query text,
    parsed jsonb,
    result_evidence_ids uuid [],
    request jsonb,
    settings jsonb
)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
BEGIN
    RETURN dm_private.discovery_for_recall_embedded(
        discovery_for_recall.team_id, query, parsed, result_evidence_ids, request, settings, NULL);
END
$$;
COMMENT ON FUNCTION dm_private.discovery_for_recall(uuid, text, jsonb, uuid [], jsonb, jsonb) IS
'Discovery for one recall (the agreed six-argument signature; see discovery_for_recall_embedded, which also takes the query embedding).';

COMMENT ON FUNCTION dm_private.discovery_for_recall_embedded(uuid, text, jsonb, uuid [], jsonb, jsonb, public.vector) IS
'Discovery for one recall, after the evidence top K is chosen: {"discovery_paths": [{"relationships": [edge, edge?], "evidence_ids": [...]}], "related_hypotheses"?: [...], "communities"?: [...], "degraded": [...]}. Eligible relationships only, bounded by the profile''s discovery budgets; never evidence text; known relationship IDs never appear.';

REVOKE ALL ON FUNCTION dm_private.discovery_uuid_list(jsonb, text, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.discovery_setting(jsonb, text, integer, integer, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.discovery_for_recall_embedded(uuid, text, jsonb, uuid [], jsonb, jsonb, public.vector)
FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.discovery_for_recall(uuid, text, jsonb, uuid [], jsonb, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.discovery_candidate_paths(uuid, uuid [], jsonb, uuid [], integer, integer, integer, integer, timestamptz, timestamptz, text [], text [], uuid [], uuid [], text [], text [], timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.discovery_uuid_list(jsonb, text, integer) TO
densemem_app, densemem_analyst, densemem_operator;
GRANT EXECUTE ON FUNCTION dm_private.discovery_setting(jsonb, text, integer, integer, integer) TO
densemem_app, densemem_analyst, densemem_operator;
GRANT EXECUTE ON FUNCTION dm_private.discovery_for_recall_embedded(uuid, text, jsonb, uuid [], jsonb, jsonb, public.vector)
TO densemem_app, densemem_analyst, densemem_operator;
GRANT EXECUTE ON FUNCTION dm_private.discovery_for_recall(uuid, text, jsonb, uuid [], jsonb, jsonb) TO
densemem_app, densemem_analyst, densemem_operator;
GRANT EXECUTE ON FUNCTION dm_private.discovery_candidate_paths(uuid, uuid [], jsonb, uuid [], integer, integer, integer, integer, timestamptz, timestamptz, text [], text [], uuid [], uuid [], text [], text [], timestamptz)
TO densemem_app, densemem_analyst, densemem_operator;
