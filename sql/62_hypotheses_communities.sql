-- Stage 6b: the optional discovery fields. Related hypotheses and
-- communities each have their own response field; neither is evidence,
-- neither can replace or reorder a direct result, and the caller
-- (dm_private.discovery_for_recall) omits a field and records the
-- degradation when its lookup fails.

-- Related hypotheses: same team, not retired or refuted, owner active, and,
-- when linked to a source, linked to its current revision. Matched by
-- statement words (English lexemes of the query) or by being linked to the
-- source of a returned evidence. Statements are unverified ideas, labelled
-- by status; they never carry evidence IDs or tiers.
CREATE OR REPLACE FUNCTION dm_private.discovery_hypotheses(
    hypothesis_team_id uuid,
    query text,
    result_evidence_ids uuid [],
    max_count integer
)
RETURNS jsonb
LANGUAGE sql
STABLE
SET search_path = ''
AS $$
    WITH q AS (
        SELECT (SELECT pg_catalog.string_agg(pg_catalog.quote_literal(l.lexeme), ' | ')
                FROM pg_catalog.unnest(dm_private.discovery_lexemes(query)) AS l (lexeme))::tsquery AS ts
    ),
    result_sources AS (
        SELECT DISTINCT e.source_id
        FROM dm_private.evidence AS e
        WHERE e.team_id = hypothesis_team_id AND e.evidence_id = ANY(COALESCE(result_evidence_ids, '{}'::uuid []))
    ),
    matched AS (
        SELECT h.hypothesis_id, 1.0 AS source_match
        FROM dm_private.hypotheses AS h
        JOIN result_sources AS rs ON h.source_id = rs.source_id
        WHERE h.team_id = hypothesis_team_id
        UNION ALL
        SELECT c.hypothesis_id, 0.0
        FROM (
            SELECT h.hypothesis_id
            FROM dm_private.hypotheses AS h, q
            WHERE h.team_id = hypothesis_team_id
              AND q.ts IS NOT NULL
              AND pg_catalog.to_tsvector('english'::regconfig, h.statement) OPERATOR(pg_catalog.@@) q.ts
            LIMIT 100
        ) AS c
    ),
    eligible AS (
        SELECT h.hypothesis_id, h.statement, h.status, s.external_id AS source_external_id,
               pg_catalog.max(m.source_match) AS source_match,
               COALESCE(pg_catalog.ts_rank_cd(pg_catalog.to_tsvector('english'::regconfig, h.statement),
                                              (SELECT q.ts FROM q)), 0) AS text_rank
        FROM matched AS m
        JOIN dm_private.hypotheses AS h ON h.team_id = hypothesis_team_id AND h.hypothesis_id = m.hypothesis_id
        JOIN dm_private.profiles AS p ON p.team_id = h.team_id AND p.profile_id = h.owner_profile_id
        LEFT JOIN dm_private.source_revisions AS sr
          ON sr.team_id = h.team_id AND sr.source_id = h.source_id AND sr.revision_id = h.revision_id
        LEFT JOIN dm_private.sources AS s ON s.team_id = h.team_id AND s.source_id = h.source_id
        WHERE h.status IN ('proposed', 'supported')
          AND p.state = 'active'
          AND (h.source_id IS NULL OR sr.is_current)
        GROUP BY h.hypothesis_id, h.statement, h.status, s.external_id
    )
    SELECT COALESCE(pg_catalog.jsonb_agg(
               pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
                   'hypothesis_id', top.hypothesis_id,
                   'statement', top.statement,
                   'status', top.status,
                   'source_external_id', top.source_external_id))
               ORDER BY top.source_match + top.text_rank DESC, top.hypothesis_id), '[]'::jsonb)
    FROM (
        SELECT eligible.* FROM eligible
        ORDER BY eligible.source_match + eligible.text_rank DESC, eligible.hypothesis_id
        LIMIT GREATEST(COALESCE(max_count, 3), 0)
    ) AS top
$$;
COMMENT ON FUNCTION dm_private.discovery_hypotheses(uuid, text, uuid [], integer) IS
'Related hypotheses for recall''s separate related_hypotheses field: same team, status proposed or supported, active owner, current source revision; matched by statement words or by the source of a returned evidence. Never evidence, never a tier.';

-- Rebuilds a team's communities: connected components of the graph of
-- eligible relationships between entities, found by min-label propagation
-- (deterministic: a component's label is its smallest entity_id), at most
-- 200 rounds (a component wider than that is split, still deterministically).
-- Each community gets a deterministic summary from entity names (by degree)
-- and predicates (by count). The old rows of the team are replaced in the
-- same transaction; knowledge itself is never touched.
CREATE OR REPLACE FUNCTION dm.refresh_communities(team_id uuid)
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
DECLARE
    team constant uuid := dm_private.require_team(refresh_communities.team_id);
    changed integer;
    rounds integer := 0;
    created integer;
BEGIN
    CREATE TEMPORARY TABLE IF NOT EXISTS pg_temp.discovery_community_edges (
        relationship_id uuid, a uuid, b uuid, predicate text) ON COMMIT DROP;
    CREATE TEMPORARY TABLE IF NOT EXISTS pg_temp.discovery_community_labels (
        entity_id uuid PRIMARY KEY, label uuid) ON COMMIT DROP;
    TRUNCATE pg_temp.discovery_community_edges, pg_temp.discovery_community_labels;

    INSERT INTO pg_temp.discovery_community_edges (relationship_id, a, b, predicate)
    SELECT r.relationship_id, r.subject_entity_id, r.object_entity_id, r.predicate
    FROM dm_private.relationships AS r
    JOIN dm_private.profiles AS p ON p.team_id = r.team_id AND p.profile_id = r.owner_profile_id
    WHERE r.team_id = team
      AND r.object_entity_id IS NOT NULL
      AND r.subject_entity_id <> r.object_entity_id
      AND r.status = 'active' AND r.tier IN ('validated_claim', 'fact')
      AND p.state = 'active'
      AND (r.known_to IS NULL OR r.known_to > pg_catalog.now())
      AND (r.valid_to IS NULL OR r.valid_to > pg_catalog.now());

    INSERT INTO pg_temp.discovery_community_labels (entity_id, label)
    SELECT DISTINCT ends.entity_id, ends.entity_id
    FROM pg_temp.discovery_community_edges AS e
    CROSS JOIN LATERAL (VALUES (e.a), (e.b)) AS ends (entity_id);

    LOOP
        rounds := rounds + 1;
        WITH neighbour_min AS (
            SELECT n.entity_id, pg_catalog.min(l.label::text)::uuid AS label
            FROM (
                SELECT e.a AS entity_id, e.b AS other FROM pg_temp.discovery_community_edges AS e
                UNION ALL
                SELECT e.b, e.a FROM pg_temp.discovery_community_edges AS e
            ) AS n
            JOIN pg_temp.discovery_community_labels AS l ON l.entity_id = n.other
            GROUP BY n.entity_id
        )
        UPDATE pg_temp.discovery_community_labels AS cl
        SET label = nm.label
        FROM neighbour_min AS nm
        WHERE cl.entity_id = nm.entity_id AND nm.label::text < cl.label::text;
        GET DIAGNOSTICS changed = ROW_COUNT;
        EXIT WHEN changed = 0 OR rounds >= 200;
    END LOOP;

    DELETE FROM dm_private.communities AS c WHERE c.team_id = team;

    WITH members AS (
        SELECT l.label, l.entity_id,
               (SELECT pg_catalog.count(*) FROM pg_temp.discovery_community_edges AS e
                WHERE e.a = l.entity_id OR e.b = l.entity_id)::integer AS degree
        FROM pg_temp.discovery_community_labels AS l
    ),
    named AS (
        SELECT m.label, m.entity_id, m.degree, en.canonical_name
        FROM members AS m
        JOIN dm_private.entities AS en ON en.team_id = team AND en.entity_id = m.entity_id
    ),
    edge_labels AS (
        SELECT l.label, e.relationship_id, e.predicate
        FROM pg_temp.discovery_community_edges AS e
        JOIN pg_temp.discovery_community_labels AS l ON l.entity_id = e.a
    ),
    predicate_counts AS (
        SELECT el.label, el.predicate, pg_catalog.count(*) AS n
        FROM edge_labels AS el GROUP BY el.label, el.predicate
    ),
    summaries AS (
        SELECT g.label,
               pg_catalog.count(*)::integer AS entity_count,
               (SELECT pg_catalog.count(*) FROM edge_labels AS el WHERE el.label = g.label)::integer AS relationship_count,
               (pg_catalog.array_agg(g.entity_id ORDER BY g.degree DESC, g.canonical_name, g.entity_id))[1:5] AS top_entity_ids,
               (pg_catalog.array_agg(g.canonical_name ORDER BY g.degree DESC, g.canonical_name, g.entity_id))[1:3] AS top_names,
               (SELECT pg_catalog.array_agg(pc.predicate ORDER BY pc.n DESC, pc.predicate)
                FROM predicate_counts AS pc WHERE pc.label = g.label) AS predicates,
               (SELECT pg_catalog.string_agg(pc.predicate || ' (' || pc.n || ')', ', ' ORDER BY pc.n DESC, pc.predicate)
                FROM (SELECT * FROM predicate_counts AS p2 WHERE p2.label = g.label
                      ORDER BY p2.n DESC, p2.predicate LIMIT 3) AS pc) AS predicate_text
        FROM named AS g
        GROUP BY g.label
    )
    INSERT INTO dm_private.communities (
        team_id, community_id, algorithm, entity_count, relationship_count, summary, top_entity_ids, top_predicates)
    SELECT team,
           pg_catalog.md5(team::text || ':' || s.label::text)::uuid,
           'connected_components',
           s.entity_count,
           s.relationship_count,
           pg_catalog.left(
               pg_catalog.array_to_string(s.top_names, ', ')
               || CASE WHEN s.entity_count > 3 THEN ' and ' || (s.entity_count - 3) || ' more entities' ELSE '' END
               || '; ' || s.relationship_count || CASE WHEN s.relationship_count = 1 THEN ' relationship' ELSE ' relationships' END
               || ': ' || s.predicate_text, 2000),
           s.top_entity_ids,
           s.predicates[1:5]
    FROM summaries AS s
    WHERE s.relationship_count >= 1 AND s.entity_count >= 2;
    GET DIAGNOSTICS created = ROW_COUNT;

    INSERT INTO dm_private.community_members (team_id, community_id, entity_id, degree)
    SELECT team, pg_catalog.md5(team::text || ':' || l.label::text)::uuid, l.entity_id,
           (SELECT pg_catalog.count(*) FROM pg_temp.discovery_community_edges AS e
            WHERE e.a = l.entity_id OR e.b = l.entity_id)::integer
    FROM pg_temp.discovery_community_labels AS l;

    INSERT INTO dm_private.community_relationships (team_id, community_id, relationship_id)
    SELECT team, pg_catalog.md5(team::text || ':' || l.label::text)::uuid, e.relationship_id
    FROM pg_temp.discovery_community_edges AS e
    JOIN pg_temp.discovery_community_labels AS l ON l.entity_id = e.a;

    RETURN created;
END
$$;
COMMENT ON FUNCTION dm.refresh_communities(uuid) IS
'Rebuilds the team''s communities: connected components of eligible relationships (min-label propagation, deterministic), each with a summary built from entity names and predicate counts (no LLM). Returns the number of communities. Never changes entities, relationships or evidence.';

-- Communities near a recall: those containing a seed or path entity, most
-- overlapping first. Only as many as the result list has unused slots.
CREATE OR REPLACE FUNCTION dm_private.discovery_communities(
    community_team_id uuid,
    entity_ids uuid [],
    max_count integer
)
RETURNS jsonb
LANGUAGE sql
STABLE
SET search_path = ''
AS $$
    SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'community_id', top.community_id,
               'summary', top.summary,
               'entity_count', top.entity_count,
               'relationship_count', top.relationship_count,
               'entity_ids', pg_catalog.to_jsonb(top.top_entity_ids))
               ORDER BY top.overlap DESC, top.relationship_count DESC, top.community_id), '[]'::jsonb)
    FROM (
        SELECT c.community_id, c.summary, c.entity_count, c.relationship_count, c.top_entity_ids,
               pg_catalog.count(*) AS overlap
        FROM dm_private.community_members AS m
        JOIN dm_private.communities AS c ON c.team_id = m.team_id AND c.community_id = m.community_id
        WHERE m.team_id = community_team_id
          AND m.entity_id = ANY(COALESCE(entity_ids, '{}'::uuid []))
        GROUP BY c.community_id, c.summary, c.entity_count, c.relationship_count, c.top_entity_ids
        ORDER BY pg_catalog.count(*) DESC, c.relationship_count DESC, c.community_id
        LIMIT GREATEST(COALESCE(max_count, 0), 0)
    ) AS top
$$;
COMMENT ON FUNCTION dm_private.discovery_communities(uuid, uuid [], integer) IS
'Communities containing any of the given entities (seed and path entities of a recall), most overlapping first, for the separate communities field. Never evidence.';

REVOKE ALL ON FUNCTION dm_private.discovery_hypotheses(uuid, text, uuid [], integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm.refresh_communities(uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.discovery_communities(uuid, uuid [], integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.discovery_hypotheses(uuid, text, uuid [], integer) TO
densemem_app, densemem_analyst, densemem_operator;
GRANT EXECUTE ON FUNCTION dm.refresh_communities(uuid) TO densemem_app;
GRANT EXECUTE ON FUNCTION dm_private.discovery_communities(uuid, uuid [], integer) TO
densemem_app, densemem_analyst, densemem_operator;
