-- Recall stage 2a (support): per-team term statistics for BM25.
--
-- Migration 0024 creates the tables, the statement triggers on
-- dm_private.search_documents and the first definition of their functions;
-- this file is the current definition. The triggers are described first: on a
-- database that has not run 0024 yet this file fails and waits for it.
--
-- Writers append deltas (search_statistics_deltas); dm.compact_search_statistics
-- folds them into search_team_statistics / search_term_statistics; readers add
-- both in one snapshot, so the figures are exact whether compacted or not.

COMMENT ON TRIGGER search_documents_statistics_inserted ON dm_private.search_documents IS
'BM25 statistics: inserted recallable evidence documents append +1 deltas per lexeme and to the team totals (ENABLE ALWAYS: bulk loads count too).';
COMMENT ON TRIGGER search_documents_statistics_updated ON dm_private.search_documents IS
'BM25 statistics: a document that enters or leaves recall, or whose tsvector changes while recallable, appends its -1 / +1 deltas.';
COMMENT ON TRIGGER search_documents_statistics_deleted ON dm_private.search_documents IS
'BM25 statistics: deleted recallable evidence documents append -1 deltas.';
COMMENT ON TRIGGER search_documents_statistics_truncated ON dm_private.search_documents IS
'BM25 statistics: TRUNCATE empties the statistics with the documents.';

-- One INSERT per statement for all the changed documents, aggregated per
-- (team, lexeme): a bulk load of 100,000 documents appends one row per
-- distinct lexeme of each team, not one per document. Invoker: the write path
-- appends under RLS inside its team.
CREATE OR REPLACE FUNCTION dm_private.append_search_statistics_deltas(
    team_ids uuid [], signs integer [], vectors tsvector []
)
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
COMMENT ON FUNCTION dm_private.append_search_statistics_deltas(uuid [], integer [], tsvector []) IS
'Appends BM25 statistic deltas for documents entering (+1) or leaving (-1) recall: one row per (team, lexeme) and one per team (document count, total length).';
REVOKE ALL ON FUNCTION dm_private.append_search_statistics_deltas(uuid [], integer [], tsvector []) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.append_search_statistics_deltas(uuid [], integer [], tsvector [])
TO densemem_app;

-- Statement trigger: what the statement changed, from its transition tables.
-- A document counts while it is a recallable evidence document; an UPDATE
-- that changes neither that nor the tsvector of a recallable document (the
-- embedding worker's state updates, owner or time columns) appends nothing
-- and touches no statistics table, so roles without rights on them (the
-- worker) can still update documents.
CREATE OR REPLACE FUNCTION dm_private.capture_search_statistics()
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
COMMENT ON FUNCTION dm_private.capture_search_statistics() IS
'Statement trigger on search_documents (insert, update, delete, with transition tables): appends the BM25 statistic deltas of the recallable evidence documents the statement changed.';
REVOKE ALL ON FUNCTION dm_private.capture_search_statistics() FROM PUBLIC;

-- TRUNCATE has no transition table: the statistics go with the documents.
CREATE OR REPLACE FUNCTION dm_private.truncate_search_statistics()
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
COMMENT ON FUNCTION dm_private.truncate_search_statistics() IS
'Statement trigger on TRUNCATE of search_documents: empties the BM25 statistics.';
REVOKE ALL ON FUNCTION dm_private.truncate_search_statistics() FROM PUBLIC;

-- Compaction: fold committed deltas into the compacted rows, so that a read
-- sums a handful of rows per lexeme however long the team has been written
-- to. Safe concurrently with writers (they only insert; rows they have not
-- committed are not seen and stay for the next run) and with another
-- compaction (DELETE ... RETURNING hands each delta to exactly one of them).
-- Invoker: the service compacts its authenticated team under RLS; an
-- administrator (superuser) passes NULL to compact every team.
CREATE OR REPLACE FUNCTION dm.compact_search_statistics(team_id uuid DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
DECLARE
    team constant uuid := compact_search_statistics.team_id;
    team_ids uuid [];
    lexemes text [];
    document_deltas bigint [];
    length_deltas bigint [];
BEGIN
    IF team IS NOT NULL THEN
        PERFORM dm_private.require_team(team);
    END IF;
    -- Take the committed deltas, summed per (team, lexeme), in key order so
    -- that two compactions update rows in the same order and never deadlock.
    WITH moved AS (
        DELETE FROM dm_private.search_statistics_deltas AS d
        WHERE team IS NULL OR d.team_id = team
        RETURNING d.team_id, d.lexeme, d.document_delta, d.length_delta
    ),
    folded AS (
        SELECT m.team_id, m.lexeme, pg_catalog.sum(m.document_delta)::bigint AS document_delta,
               pg_catalog.sum(m.length_delta)::bigint AS length_delta
        FROM moved AS m
        GROUP BY m.team_id, m.lexeme
    )
    SELECT pg_catalog.array_agg(f.team_id ORDER BY f.team_id, f.lexeme NULLS FIRST),
           pg_catalog.array_agg(f.lexeme ORDER BY f.team_id, f.lexeme NULLS FIRST),
           pg_catalog.array_agg(f.document_delta ORDER BY f.team_id, f.lexeme NULLS FIRST),
           pg_catalog.array_agg(f.length_delta ORDER BY f.team_id, f.lexeme NULLS FIRST)
    INTO team_ids, lexemes, document_deltas, length_deltas
    FROM folded AS f
    WHERE f.document_delta <> 0 OR f.length_delta <> 0;
    IF team_ids IS NULL THEN
        RETURN 0;
    END IF;

    -- Team totals: make sure the row exists, then add (a proposed row of
    -- ON CONFLICT is checked against the table's checks, so a negative delta
    -- cannot be inserted-or-added in one go).
    INSERT INTO dm_private.search_team_statistics (team_id, document_count, total_length)
    SELECT DISTINCT f.team_id, 0, 0
    FROM ROWS FROM (pg_catalog.unnest(team_ids), pg_catalog.unnest(lexemes)) AS f (team_id, lexeme)
    WHERE f.lexeme IS NULL
    ON CONFLICT ON CONSTRAINT search_team_statistics_pkey DO NOTHING;
    UPDATE dm_private.search_team_statistics AS s
    SET document_count = s.document_count + f.document_delta,
        total_length = s.total_length + f.length_delta,
        compacted_at = pg_catalog.now()
    FROM ROWS FROM (pg_catalog.unnest(team_ids), pg_catalog.unnest(lexemes), pg_catalog.unnest(document_deltas),
                    pg_catalog.unnest(length_deltas)) AS f (team_id, lexeme, document_delta, length_delta)
    WHERE f.lexeme IS NULL AND s.team_id = f.team_id;

    -- Document frequencies: increases insert or add; decreases subtract (the
    -- lexeme has a row: a document leaves only after its entering delta
    -- committed); a lexeme no document holds any more loses its row.
    INSERT INTO dm_private.search_term_statistics AS s (team_id, lexeme, document_count)
    SELECT f.team_id, f.lexeme, f.document_delta
    FROM ROWS FROM (pg_catalog.unnest(team_ids), pg_catalog.unnest(lexemes), pg_catalog.unnest(document_deltas))
        AS f (team_id, lexeme, document_delta)
    WHERE f.lexeme IS NOT NULL AND f.document_delta > 0
    ON CONFLICT ON CONSTRAINT search_term_statistics_pkey DO UPDATE
    SET document_count = s.document_count + excluded.document_count;
    UPDATE dm_private.search_term_statistics AS s
    SET document_count = s.document_count + f.document_delta
    FROM ROWS FROM (pg_catalog.unnest(team_ids), pg_catalog.unnest(lexemes), pg_catalog.unnest(document_deltas))
        AS f (team_id, lexeme, document_delta)
    WHERE f.lexeme IS NOT NULL AND f.document_delta < 0
      AND s.team_id = f.team_id AND s.lexeme = f.lexeme;
    DELETE FROM dm_private.search_term_statistics AS s
    USING ROWS FROM (pg_catalog.unnest(team_ids), pg_catalog.unnest(lexemes), pg_catalog.unnest(document_deltas))
        AS f (team_id, lexeme, document_delta)
    WHERE f.lexeme IS NOT NULL AND f.document_delta < 0
      AND s.team_id = f.team_id AND s.lexeme = f.lexeme AND s.document_count = 0;
    RETURN pg_catalog.cardinality(team_ids);
END
$$;
COMMENT ON FUNCTION dm.compact_search_statistics(uuid) IS
'Folds committed BM25 statistic deltas into the compacted per-team and per-lexeme rows (of one team, or of every team the caller can see when NULL); returns how many (team, lexeme) groups were folded. Exactness never depends on it; read cost does.';
REVOKE ALL ON FUNCTION dm.compact_search_statistics(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm.compact_search_statistics(uuid) TO densemem_app;

-- The team's BM25 collection statistics: recallable evidence documents and
-- their total length, compacted plus pending deltas (one snapshot).
CREATE OR REPLACE FUNCTION dm_private.search_team_totals(team_id uuid)
RETURNS TABLE (document_count bigint, total_length bigint)
LANGUAGE sql
STABLE
PARALLEL SAFE
SET search_path = ''
AS $$
    SELECT COALESCE((SELECT s.document_count FROM dm_private.search_team_statistics AS s
                     WHERE s.team_id = search_team_totals.team_id), 0)
           + COALESCE(pg_catalog.sum(d.document_delta), 0)::bigint,
           COALESCE((SELECT s.total_length FROM dm_private.search_team_statistics AS s
                     WHERE s.team_id = search_team_totals.team_id), 0)
           + COALESCE(pg_catalog.sum(d.length_delta), 0)::bigint
    FROM dm_private.search_statistics_deltas AS d
    WHERE d.team_id = search_team_totals.team_id AND d.lexeme IS NULL
$$;
COMMENT ON FUNCTION dm_private.search_team_totals(uuid) IS
'BM25 collection statistics of one team: number of recallable evidence documents and their total length (distinct lexemes), exact (compacted rows plus pending deltas).';
REVOKE ALL ON FUNCTION dm_private.search_team_totals(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.search_team_totals(uuid)
TO densemem_app, densemem_analyst, densemem_operator, densemem_searcher;

-- Document frequency of each given lexeme in one team (0 when no recallable
-- document holds it), compacted plus pending deltas.
CREATE OR REPLACE FUNCTION dm_private.search_term_document_counts(team_id uuid, lexemes text [])
RETURNS TABLE (lexeme text, document_count bigint)
LANGUAGE sql
STABLE
PARALLEL SAFE
SET search_path = ''
AS $$
    SELECT l.lexeme,
           COALESCE(s.document_count, 0)
           + COALESCE((SELECT pg_catalog.sum(d.document_delta) FROM dm_private.search_statistics_deltas AS d
                       WHERE d.team_id = search_term_document_counts.team_id AND d.lexeme = l.lexeme), 0)::bigint
    FROM (SELECT DISTINCT u.lexeme FROM pg_catalog.unnest(lexemes) AS u (lexeme)) AS l
    LEFT JOIN dm_private.search_term_statistics AS s
        ON s.team_id = search_term_document_counts.team_id AND s.lexeme = l.lexeme
$$;
COMMENT ON FUNCTION dm_private.search_term_document_counts(uuid, text []) IS
'BM25 document frequency of each given lexeme in one team: recallable evidence documents containing it, exact (compacted rows plus pending deltas).';
REVOKE ALL ON FUNCTION dm_private.search_term_document_counts(uuid, text []) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.search_term_document_counts(uuid, text [])
TO densemem_app, densemem_analyst, densemem_operator, densemem_searcher;
