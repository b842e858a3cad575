-- 0024: per-team term statistics for BM25 in the full-text branch, and
-- ranking profile 'default' v6 (with evaluation rows fulltext_only v2 and
-- vector_only v2 copied from it).
--
-- BM25 needs, per team: the number of recallable evidence documents (N), their
-- total length (for the average document length) and, per lexeme, the number
-- of those documents that contain it (df). They are kept exact by statement
-- triggers on dm_private.search_documents with transition tables; a
-- statement appends one delta row per (team, lexeme) it changes and one per
-- team for N and the total length. Writers only ever INSERT deltas, so two
-- transactions writing documents that share a hot lexeme ("go", "meet") or the
-- same team never wait for each other, never deadlock, and never update the
-- same row. dm.compact_search_statistics folds committed deltas into the
-- compacted tables (one row per team and per (team, lexeme)); readers add the
-- compacted value and the not-yet-compacted deltas in one snapshot, so the
-- figures are exact at every moment, compacted or not. The trade-off is in
-- docs/RECALL.md ("Term statistics").
--
-- A document counts when it is an evidence document with is_recallable (state
-- active, current source revision: the write path's mirror). Its length is
-- pg_catalog.length(search_vector), the number of distinct lexemes.
--
-- The triggers are ENABLE ALWAYS: they fire under session_replication_role =
-- replica too (bulk loaders such as `densemem bench recall` use it to skip the
-- write path's per-row triggers), so no writer can leave the statistics wrong.
-- The trigger function and the compaction function are defined here because
-- the triggers and the backfill need them now; sql/34_recall_term_statistics.sql
-- holds their current definition.

SET LOCAL ROLE densemem_owner;

CREATE TABLE dm_private.search_team_statistics (
    team_id uuid NOT NULL,
    document_count bigint NOT NULL DEFAULT 0,
    total_length bigint NOT NULL DEFAULT 0,
    compacted_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT search_team_statistics_pkey PRIMARY KEY (team_id),
    CONSTRAINT search_team_statistics_team_fkey FOREIGN KEY (team_id) REFERENCES dm_private.teams (team_id),
    CONSTRAINT search_team_statistics_counts_non_negative CHECK (document_count >= 0 AND total_length >= 0)
);
COMMENT ON TABLE dm_private.search_team_statistics IS
'BM25 collection statistics of a team, compacted: the number of recallable evidence search documents and the sum of their lengths (distinct lexemes). The exact figure is this row plus the team''s rows in search_statistics_deltas with a NULL lexeme.';

CREATE TABLE dm_private.search_term_statistics (
    team_id uuid NOT NULL,
    lexeme text NOT NULL,
    document_count bigint NOT NULL,
    CONSTRAINT search_term_statistics_pkey PRIMARY KEY (team_id, lexeme),
    CONSTRAINT search_term_statistics_team_fkey FOREIGN KEY (team_id) REFERENCES dm_private.teams (team_id),
    CONSTRAINT search_term_statistics_document_count_non_negative CHECK (document_count >= 0)
);
COMMENT ON TABLE dm_private.search_term_statistics IS
'BM25 document frequency per (team, lexeme), compacted: how many recallable evidence search documents of the team contain the lexeme. The exact figure is this row plus the team''s deltas for the lexeme in search_statistics_deltas; compaction deletes the row of a lexeme no document holds any more.';

-- No foreign key to teams: team_id is copied from search_documents rows,
-- whose own key already holds, and a key check per appended delta would put
-- a lookup and a share lock on the team row into every write.
CREATE TABLE dm_private.search_statistics_deltas (
    team_id uuid NOT NULL,
    delta_id bigint GENERATED ALWAYS AS IDENTITY,
    lexeme text,
    document_delta bigint NOT NULL,
    length_delta bigint NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT search_statistics_deltas_pkey PRIMARY KEY (team_id, delta_id),
    CONSTRAINT search_statistics_deltas_length_only_for_team CHECK (lexeme IS NULL OR length_delta = 0)
);
CREATE INDEX search_statistics_deltas_lexeme_idx ON dm_private.search_statistics_deltas (team_id, lexeme)
INCLUDE (document_delta, length_delta);
COMMENT ON TABLE dm_private.search_statistics_deltas IS
'Append-only changes to the BM25 statistics, one row per (statement, team, lexeme) changed; a NULL lexeme carries the change of the team''s document count and total length. Written by the statement triggers on search_documents, folded into search_team_statistics and search_term_statistics by dm.compact_search_statistics.';
COMMENT ON COLUMN dm_private.search_statistics_deltas.lexeme IS
'The lexeme whose document frequency changes, or NULL for the team''s document count and total length.';

DO $policies$
DECLARE
    team_table text;
    current_team constant text :=
        '(SELECT NULLIF(pg_catalog.current_setting(''densemem.team_id'', true), '''')::uuid)';
    analyst_allowed constant text :=
        '(pg_catalog.pg_has_role(session_user, ''densemem_app'', ''MEMBER'') OR EXISTS ('
        || 'SELECT 1 FROM dm_private.team_role_grants AS g WHERE g.team_id = '
        || '(SELECT NULLIF(pg_catalog.current_setting(''densemem.team_id'', true), '''')::uuid) '
        || 'AND g.role_name = session_user))';
BEGIN
    FOREACH team_table IN ARRAY ARRAY['search_team_statistics', 'search_term_statistics',
                                      'search_statistics_deltas'] LOOP
        EXECUTE pg_catalog.format('ALTER TABLE dm_private.%I ENABLE ROW LEVEL SECURITY', team_table);
        EXECUTE pg_catalog.format('ALTER TABLE dm_private.%I FORCE ROW LEVEL SECURITY', team_table);
        EXECUTE pg_catalog.format(
            'CREATE POLICY "the service works inside the authenticated team" ON dm_private.%I '
            'AS PERMISSIVE FOR ALL TO densemem_app USING (team_id = %s) WITH CHECK (team_id = %s)',
            team_table, current_team, current_team);
        EXECUTE pg_catalog.format(
            'CREATE POLICY "analysts and operators read only their granted team" ON dm_private.%I '
            'AS PERMISSIVE FOR SELECT TO densemem_analyst, densemem_operator USING (team_id = %s AND %s)',
            team_table, current_team, analyst_allowed);
        EXECUTE pg_catalog.format(
            'CREATE POLICY "the owner works inside the authenticated team" ON dm_private.%I '
            'AS PERMISSIVE FOR ALL TO densemem_owner USING (team_id = %s) WITH CHECK (team_id = %s)',
            team_table, current_team, current_team);
    END LOOP;
END
$policies$;

REVOKE ALL ON dm_private.search_team_statistics, dm_private.search_term_statistics,
dm_private.search_statistics_deltas FROM PUBLIC;
REVOKE ALL ON SEQUENCE dm_private.search_statistics_deltas_delta_id_seq FROM PUBLIC;
-- The write path (invoker functions as densemem_app) appends deltas through
-- the trigger and compacts its own team; RLS keeps both inside the team.
GRANT SELECT, INSERT, UPDATE, DELETE ON dm_private.search_team_statistics, dm_private.search_term_statistics
TO densemem_app;
GRANT SELECT, INSERT, DELETE ON dm_private.search_statistics_deltas TO densemem_app;
GRANT USAGE ON SEQUENCE dm_private.search_statistics_deltas_delta_id_seq TO densemem_app;
GRANT SELECT ON dm_private.search_team_statistics, dm_private.search_term_statistics,
dm_private.search_statistics_deltas TO densemem_analyst, densemem_operator;
-- The full-text branch (security definer, owned by the searcher) reads them
-- with its explicit team predicate.
GRANT SELECT ON dm_private.search_team_statistics, dm_private.search_term_statistics,
dm_private.search_statistics_deltas TO densemem_searcher;

-- ---------------------------------------------------------------- write path: deltas

-- Appends the statistics change of a set of documents (sign +1 entering, -1
-- leaving) as delta rows aggregated per (team, lexeme); current definition in
-- sql/34.
CREATE FUNCTION dm_private.append_search_statistics_deltas(team_ids uuid [], signs integer [], vectors tsvector [])
RETURNS void
LANGUAGE sql
VOLATILE
SET search_path = ''
AS $$
    INSERT INTO dm_private.search_statistics_deltas (team_id, lexeme, document_delta, length_delta)
    SELECT c.team_id, NULL, pg_catalog.sum(c.sign), pg_catalog.sum(c.sign * pg_catalog.length(c.vector))
    FROM ROWS FROM (pg_catalog.unnest(team_ids), pg_catalog.unnest(signs), pg_catalog.unnest(vectors)) AS c (team_id, sign, vector)
    GROUP BY c.team_id
    HAVING pg_catalog.sum(c.sign) <> 0 OR pg_catalog.sum(c.sign * pg_catalog.length(c.vector)) <> 0
    UNION ALL
    SELECT c.team_id, l.lexeme, pg_catalog.sum(c.sign), 0
    FROM ROWS FROM (pg_catalog.unnest(team_ids), pg_catalog.unnest(signs), pg_catalog.unnest(vectors)) AS c (team_id, sign, vector)
    CROSS JOIN LATERAL pg_catalog.unnest(c.vector) AS l
    GROUP BY c.team_id, l.lexeme
    HAVING pg_catalog.sum(c.sign) <> 0
$$;
REVOKE ALL ON FUNCTION dm_private.append_search_statistics_deltas(uuid [], integer [], tsvector []) FROM PUBLIC;

-- Statement trigger on search_documents; current definition in sql/34.
CREATE FUNCTION dm_private.capture_search_statistics()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
DECLARE
    team_ids uuid [];
    signs integer [];
    vectors tsvector [];
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT pg_catalog.array_agg(n.team_id), pg_catalog.array_agg(1), pg_catalog.array_agg(n.search_vector)
        INTO team_ids, signs, vectors
        FROM new_rows AS n
        WHERE n.subject_kind = 'evidence' AND n.is_recallable;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT pg_catalog.array_agg(o.team_id), pg_catalog.array_agg(-1), pg_catalog.array_agg(o.search_vector)
        INTO team_ids, signs, vectors
        FROM old_rows AS o
        WHERE o.subject_kind = 'evidence' AND o.is_recallable;
    ELSE
        SELECT pg_catalog.array_agg(c.team_id), pg_catalog.array_agg(c.sign), pg_catalog.array_agg(c.vector)
        INTO team_ids, signs, vectors
        FROM old_rows AS o
        JOIN new_rows AS n ON n.team_id = o.team_id AND n.document_id = o.document_id
        CROSS JOIN LATERAL (
            SELECT o.team_id, -1 AS sign, o.search_vector AS vector
            WHERE o.subject_kind = 'evidence' AND o.is_recallable
            UNION ALL
            SELECT n.team_id, 1, n.search_vector
            WHERE n.subject_kind = 'evidence' AND n.is_recallable
        ) AS c
        WHERE (o.subject_kind = 'evidence' AND o.is_recallable) IS DISTINCT FROM
              (n.subject_kind = 'evidence' AND n.is_recallable)
           OR (n.subject_kind = 'evidence' AND n.is_recallable
               AND o.search_vector OPERATOR(pg_catalog.<>) n.search_vector);
    END IF;
    IF team_ids IS NOT NULL THEN
        PERFORM dm_private.append_search_statistics_deltas(team_ids, signs, vectors);
    END IF;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION dm_private.capture_search_statistics() FROM PUBLIC;

-- TRUNCATE has no transition table: the statistics are emptied with it.
CREATE FUNCTION dm_private.truncate_search_statistics()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
    TRUNCATE dm_private.search_statistics_deltas, dm_private.search_term_statistics,
    dm_private.search_team_statistics;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION dm_private.truncate_search_statistics() FROM PUBLIC;

-- Lock out writers while the triggers are created and the backfill reads the
-- table, so that no change falls between the backfill and the triggers.
LOCK TABLE dm_private.search_documents IN SHARE ROW EXCLUSIVE MODE;

CREATE TRIGGER search_documents_statistics_inserted
AFTER INSERT ON dm_private.search_documents
REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION dm_private.capture_search_statistics();
CREATE TRIGGER search_documents_statistics_updated
AFTER UPDATE ON dm_private.search_documents
REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION dm_private.capture_search_statistics();
CREATE TRIGGER search_documents_statistics_deleted
AFTER DELETE ON dm_private.search_documents
REFERENCING OLD TABLE AS old_rows
FOR EACH STATEMENT EXECUTE FUNCTION dm_private.capture_search_statistics();
CREATE TRIGGER search_documents_statistics_truncated
AFTER TRUNCATE ON dm_private.search_documents
FOR EACH STATEMENT EXECUTE FUNCTION dm_private.truncate_search_statistics();
ALTER TABLE dm_private.search_documents ENABLE ALWAYS TRIGGER search_documents_statistics_inserted;
ALTER TABLE dm_private.search_documents ENABLE ALWAYS TRIGGER search_documents_statistics_updated;
ALTER TABLE dm_private.search_documents ENABLE ALWAYS TRIGGER search_documents_statistics_deleted;
ALTER TABLE dm_private.search_documents ENABLE ALWAYS TRIGGER search_documents_statistics_truncated;

-- ---------------------------------------------------------------- backfill (all teams: superuser)

RESET ROLE;
INSERT INTO dm_private.search_team_statistics (team_id, document_count, total_length)
SELECT d.team_id, pg_catalog.count(*), pg_catalog.sum(pg_catalog.length(d.search_vector))
FROM dm_private.search_documents AS d
WHERE d.subject_kind = 'evidence' AND d.is_recallable
GROUP BY d.team_id;
INSERT INTO dm_private.search_term_statistics (team_id, lexeme, document_count)
SELECT d.team_id, l.lexeme, pg_catalog.count(*)
FROM dm_private.search_documents AS d
CROSS JOIN LATERAL pg_catalog.unnest(d.search_vector) AS l
WHERE d.subject_kind = 'evidence' AND d.is_recallable
GROUP BY d.team_id, l.lexeme;

-- ---------------------------------------------------------------- ranking profile 'default' v6

-- v5 with BM25 in the full-text branch: k1 1.2, b 0.75 (the usual values),
-- and a scan budget of 500 documents per pass chosen rarest lexeme first
-- (fulltext.rank_cap and rank_normalization are no longer read; scan_cap
-- stays: the exact branch, sql/36, still caps its phrase scan with it).
-- Tuned on SciFact train judgments only, full-text branch alone (dev data):
-- nDCG@10 .684 with budgets 500, 2,000 and 6,000 (all of SciFact), .682 with
-- 250, .666 with 100; v5's ts_rank_cd branch scored .394. k1 0.9 / b 0.4
-- gave .687, k1 1.5 .682, b 0.9 .682: the usual values stay.
-- The evaluation rows fulltext_only and vector_only get v2: v6 with the same
-- branch switched off as in migration 0045, so that they stay comparable.
-- Global configuration: written by the migrating superuser; v5 stays.
UPDATE dm_private.ranking_profiles SET is_default = false WHERE name = 'default' AND is_default;
INSERT INTO dm_private.ranking_profiles (name, version, is_default, settings, description)
SELECT
    'default',
    6,
    true,
    rp.settings || pg_catalog.jsonb_build_object(
        'fulltext', (rp.settings -> 'fulltext') - 'rank_cap' - 'rank_normalization'
        || '{"scoring": "bm25", "bm25_k1": 1.2, "bm25_b": 0.75, "scan_budget": 500}'::jsonb
    ),
    'v5 with BM25 full-text scoring (per-team term statistics, k1 1.2, b 0.75) and a scan budget of 500 documents per pass taken rarest lexeme first (SciFact train, full-text branch alone: nDCG@10 .684 at 500, 2,000 and 6,000 alike; .682 at 250, .666 at 100).'
FROM dm_private.ranking_profiles AS rp
WHERE rp.name = 'default' AND rp.version = 5;

INSERT INTO dm_private.ranking_profiles (name, version, is_default, settings, description)
SELECT
    'fulltext_only',
    2,
    false,
    rp.settings
    || '{"required_branches": ["fulltext"], "optional_branches": []}'::jsonb
    || pg_catalog.jsonb_build_object(
        'candidates', COALESCE(rp.settings -> 'candidates', '{}'::jsonb) || '{"vector": 0}'::jsonb
    ),
    'Evaluation branch row: default v6 with the vector branch off (candidates.vector 0); full-text and exact branches only.'
FROM dm_private.ranking_profiles AS rp
WHERE rp.name = 'default' AND rp.version = 6;

INSERT INTO dm_private.ranking_profiles (name, version, is_default, settings, description)
SELECT
    'vector_only',
    2,
    false,
    rp.settings
    || '{"required_branches": ["vector"], "optional_branches": [],
         "relevance_mix": {"fusion": 1.0, "phrase": 0.0, "exact_terms": 0.0}}'::jsonb
    || pg_catalog.jsonb_build_object(
        'candidates', COALESCE(rp.settings -> 'candidates', '{}'::jsonb) || '{"fulltext": 0, "exact": 0}'::jsonb
    ),
    'Evaluation branch row: default v6 with the full-text and exact branches off and no lexical signals in relevance; vector branch required.'
FROM dm_private.ranking_profiles AS rp
WHERE rp.name = 'default' AND rp.version = 6;
