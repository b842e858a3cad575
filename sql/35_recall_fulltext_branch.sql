-- Recall stage 2a: the full-text branch, ranked by BM25.
--
-- It runs as densemem_searcher (BYPASSRLS, SECURITY DEFINER, empty
-- search_path): @@ and ts_rank are not leakproof, so under row-level
-- security the planner could not use the GIN index ahead of the policy. The
-- explicit team predicate, checked against the authenticated setting by
-- require_team, replaces the policy here; hydration re-reads the chosen rows
-- under RLS as the caller.
--
-- Scoring is Okapi BM25 with the team's own statistics (sql/34: document
-- frequency per lexeme, document count and total length of the team's
-- recallable evidence documents), so a rare term outweighs a common one and
-- one team's corpus never moves another team's ranking.
--
-- Early cutoff: BM25 needs each candidate's tsvector, so the number of
-- documents read is bounded by fulltext.scan_budget per pass. The any-term
-- pass ORs the query's lexemes rarest first (known document frequencies)
-- while their frequencies add up to at most the budget (the rarest always),
-- so a common lexeme never floods the pool; documents holding only common
-- query lexemes score little anyway. The all-terms pass (websearch_to_tsquery:
-- quoted phrases and -exclusions work) always runs, capped by the same
-- budget, and its matches are always scored, so an all-terms match is never
-- dropped in favour of an any-term one. Every query lexeme counts in the
-- score of every candidate, chosen for the scan or not.

-- Team-qualified lexemes of a search document: the index expression of
-- search_documents_team_lexemes_idx (migration 0025, which creates it; this
-- file keeps the current definition, as for every function). The any-term
-- and all-terms passes look their keys up there: left(team_id::text, 8) ||
-- lexeme, so a key's posting list holds one team's documents (two teams
-- sharing a prefix share lists; the team predicate keeps them apart).
-- NEVER change the body while the index exists: the index would keep keys
-- the new body no longer produces (change it in a new migration that
-- rebuilds the index).
CREATE OR REPLACE FUNCTION dm_private.search_team_lexemes(team_id uuid, search_vector tsvector)
RETURNS text []
LANGUAGE sql
IMMUTABLE
STRICT
PARALLEL SAFE
SET search_path = ''
RETURN ARRAY(
    SELECT pg_catalog.left(team_id::text, 8) || l.lexeme
    FROM pg_catalog.unnest(pg_catalog.tsvector_to_array(search_vector)) AS l (lexeme));
COMMENT ON FUNCTION dm_private.search_team_lexemes(uuid, tsvector) IS
'Index expression of search_documents_team_lexemes_idx: every lexeme of the tsvector prefixed by the first 8 hex digits of the team id, so that a GIN key''s posting list holds one team''s documents. Never change it while the index exists.';
REVOKE ALL ON FUNCTION dm_private.search_team_lexemes(uuid, tsvector) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.search_team_lexemes(uuid, tsvector)
TO densemem_app, densemem_analyst, densemem_operator, densemem_searcher, densemem_embedder, densemem_worker;

-- Team key of an evidence document in search_documents_team_order_idx
-- (migration 0053, which creates it; this file keeps the current
-- definition): the team id itself, through a function that is never inlined
-- (SET search_path), so that only that index serves a query on it. Every key
-- of a team is equal, so the index keeps the team's documents in heap (TID)
-- order, the order in which the bitmap scans of the lexeme keys return them:
-- the dense passes below read the same first rows. NEVER change the body
-- while the index exists.
CREATE OR REPLACE FUNCTION dm_private.search_team_order_key(team_id uuid)
RETURNS uuid
LANGUAGE sql
IMMUTABLE
STRICT
PARALLEL SAFE
SET search_path = ''
RETURN team_id;
COMMENT ON FUNCTION dm_private.search_team_order_key(uuid) IS
'Index expression of search_documents_team_order_idx: the team id, through a function that is never inlined, so that only that index serves a query on it and the team''s evidence documents come in heap order. Never change it while the index exists.';
REVOKE ALL ON FUNCTION dm_private.search_team_order_key(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.search_team_order_key(uuid)
TO densemem_app, densemem_analyst, densemem_operator, densemem_searcher, densemem_embedder, densemem_worker;

-- The query's tsqueries: "all" is websearch_to_tsquery; "any" is the OR of
-- the lexemes of the query text (NULL when the query excludes terms, since
-- an OR would let excluded terms back in, or has fewer than two lexemes).
CREATE OR REPLACE FUNCTION dm_private.recall_tsqueries(query text, config regconfig DEFAULT 'english')
RETURNS TABLE (all_terms tsquery, any_terms tsquery)
LANGUAGE plpgsql
STABLE
PARALLEL SAFE
SET search_path = ''
AS $$
DECLARE
    all_q tsquery := pg_catalog.websearch_to_tsquery(config, COALESCE(query, ''));
    any_text text;
    lexeme_count integer;
BEGIN
    SELECT pg_catalog.string_agg(
               '''' || pg_catalog.replace(pg_catalog.replace(l.lexeme, '\', '\\'), '''', '''''') || '''',
               ' | ' ORDER BY l.lexeme),
           pg_catalog.count(*)
    INTO any_text, lexeme_count
    FROM pg_catalog.unnest(pg_catalog.to_tsvector(config, COALESCE(query, ''))) AS l;
    IF pg_catalog.numnode(all_q) = 0 THEN
        all_q := NULL;
    END IF;
    IF lexeme_count < 2 OR pg_catalog.strpos(COALESCE(all_q::text, ''), '!') > 0 THEN
        RETURN QUERY SELECT all_q, NULL::tsquery;
    ELSE
        RETURN QUERY SELECT all_q, any_text::tsquery;
    END IF;
END
$$;
COMMENT ON FUNCTION dm_private.recall_tsqueries(text, regconfig) IS
'The two full-text queries of a recall: all_terms (websearch_to_tsquery) and any_terms (OR of the query''s lexemes; NULL with exclusions or fewer than two lexemes).';
REVOKE ALL ON FUNCTION dm_private.recall_tsqueries(text, regconfig) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_tsqueries(text, regconfig)
TO densemem_app, densemem_analyst, densemem_operator, densemem_searcher;

-- Full-text candidates of one team, BM25-ranked: eligible evidence documents
-- matching all query terms, and those matching any of the rarest query
-- lexemes within the scan budget; score = sum over query lexemes of
-- idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)) with
-- idf = ln(1 + (N - df + 0.5) / (df + 0.5)) from the team's statistics,
-- tf from the tsvector's positions and dl = length(tsvector) (distinct
-- lexemes); top `candidates.fulltext`, one row per evidence.
-- Session 17: each hit carries the heap address (ctid) at which the
-- statement read its document (migration 0094): every read of
-- search_documents below carries `ctid AS row_tid` (one 6-byte column)
-- through the passes, the context window and the scorer to the kept rows.
-- The ranking fetches each candidate's document there (a Tid Scan of a page
-- this branch has just read) instead of probing the hash index of migration
-- 0072, whose bucket pages were cold in the CPU caches on every call at 1M.
CREATE OR REPLACE FUNCTION dm_private.recall_fulltext_candidates(team_id uuid, query text, req jsonb, settings jsonb)
RETURNS SETOF dm_private.recall_branch_hit
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = ''
-- one generic plan per session: with the passes' switches (small_team,
-- all_pass_needed) folded, custom plans always look cheaper, and planning
-- this statement on every call costs more than running it for a small team;
-- and never a table scan: that one plan serves every team of the session, and
-- with few teams a generic estimate takes a team for a large share of the table
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
-- and never a parallel plan: workers return rows in no fixed order, and the
-- passes' LIMIT would then pick different documents from call to call (the
-- generic estimate of the lexeme-key scans of migration 0025 made a
-- Parallel Bitmap Heap Scan look cheaper); on this workload one backend
-- per recall is also the cheaper way
SET max_parallel_workers_per_gather = 0
AS $$
DECLARE
    team constant uuid := dm_private.require_team(recall_fulltext_candidates.team_id);
    config regconfig := COALESCE(settings #>> '{fulltext,config}', 'english')::regconfig;
    cap integer := COALESCE((settings #>> '{candidates,fulltext}')::integer, 100);
    budget integer := GREATEST(1, COALESCE((settings #>> '{fulltext,scan_budget}')::integer, 500));
    k1 double precision := COALESCE((settings #>> '{fulltext,bm25_k1}')::double precision, 1.2);
    b double precision := COALESCE((settings #>> '{fulltext,bm25_b}')::double precision, 0.75);
    use_or boolean := COALESCE((settings #>> '{fulltext,or_terms}')::boolean, true);
    -- 0 (off) .. 2: see the followers CTE below
    context_radius integer := LEAST(GREATEST(COALESCE((settings #>> '{fulltext,context_radius}')::integer, 0), 0), 2);
    -- heap rows worth one posting entry, for the choice of dense passes below
    dense_factor double precision;
    all_q tsquery;
    -- the query's lexemes (read by the statistics statement: its terms, and
    -- their number as the tsvector's length)
    query_vector tsvector;
    query_lexemes integer;
    scan_q tsquery;
    scan_keys text [];
    all_keys text [];
    -- the choice of the keyed all-terms pass's keys (below)
    key_factor double precision;
    all_matches double precision;
    read_share double precision;
    candidates double precision;
    chosen_keys text [];
    term_queries tsquery [];
    idfs double precision [];
    term_count integer;
    all_pass_needed boolean;
    all_text text;
    keyed boolean;
    scan_df numeric;
    -- the held lexemes' frequencies and index keys, rarest first, and how
    -- many of them the scan query ORs
    term_dfs numeric [];
    term_keys text [];
    scan_n integer;
    held_lexemes integer;
    log_share double precision;
    any_dense boolean := false;
    -- the dense walk's query, and whether it is scan_q / all_q itself
    walk_q tsquery;
    walk_is_scan boolean;
    walk_is_all boolean;
    all_dense boolean := false;
    team_documents double precision;
    total_length double precision;
    held_names text [];
    small_team boolean;
    average_length double precision;
    valid_at timestamptz := (req ->> 'valid_at')::timestamptz;
    known_at timestamptz := (req ->> 'known_at')::timestamptz;
    scopes text [] := dm_private.authenticated_scopes();
    source_groups text [];
    memory_types text [];
    created_after timestamptz := (req ->> 'created_after')::timestamptz;
    created_before timestamptz := (req ->> 'created_before')::timestamptz;
    has_window boolean := COALESCE((req ->> 'has_window')::boolean, false);
    window_from timestamptz := (req ->> 'window_from')::timestamptz;
    window_to timestamptz := (req ->> 'window_to')::timestamptz;
    known_ids uuid [] := '{}';
    -- whether the request filters documents at all (a list, a creation bound,
    -- a window, known ids): every statement tests the seven request
    -- predicates only when it does, one boolean per candidate otherwise
    -- (session 16: the predicates, the known-ids array above all, which a
    -- PL/pgSQL variable holds expanded and every row's <> ALL flattens again,
    -- were about 0.5 k instructions a candidate on unfiltered calls)
    request_filtered boolean;
    -- the team's profiles that are not active (read by the statistics
    -- statement below, one statement less per call)
    disabled uuid [];
    -- context_radius > 0 and some evidence document of the team has a
    -- source group (read by the statistics statement): otherwise no
    -- candidate can have exchange context, and the 8-lexeme GIN passes run
    -- the statement without it
    grouped boolean;
    -- the 8-lexeme statements read each query lexeme's tsquery and weight
    -- from these (term_queries[k] and idfs[k], copied once per call), not by
    -- subscripting the arrays twice per candidate and lexeme (session 8)
    tq1 tsquery; tq2 tsquery; tq3 tsquery; tq4 tsquery; tq5 tsquery; tq6 tsquery; tq7 tsquery; tq8 tsquery;
    tw1 double precision; tw2 double precision; tw3 double precision; tw4 double precision;
    tw5 double precision; tw6 double precision; tw7 double precision; tw8 double precision;
BEGIN
    IF cap <= 0 THEN
        RETURN;
    END IF;
    -- The all-terms query (as dm_private.recall_tsqueries builds it, inline
    -- here to save a function call per recall).
    all_q := pg_catalog.websearch_to_tsquery(config, COALESCE(query, ''));
    IF pg_catalog.numnode(all_q) = 0 THEN
        RETURN;
    END IF;
    all_text := all_q::text;
    query_vector := pg_catalog.to_tsvector(config, COALESCE(query, ''));
    -- List filters, read only when given (the normalised request holds
    -- empty arrays otherwise, and an empty list is no filter: NULL here);
    -- the IF is an expression, the ARRAY a statement run only when needed.
    IF pg_catalog.jsonb_array_length(req -> 'source_groups') > 0 THEN
        source_groups := ARRAY(SELECT pg_catalog.jsonb_array_elements_text(req -> 'source_groups'));
    END IF;
    IF pg_catalog.jsonb_array_length(req -> 'memory_types') > 0 THEN
        memory_types := ARRAY(SELECT pg_catalog.jsonb_array_elements_text(req -> 'memory_types'));
    END IF;
    IF pg_catalog.jsonb_array_length(req -> 'known_evidence_ids') > 0 THEN
        known_ids := ARRAY(SELECT pg_catalog.jsonb_array_elements_text(req -> 'known_evidence_ids')::uuid);
    END IF;
    request_filtered := source_groups IS NOT NULL OR memory_types IS NOT NULL
                        OR created_after IS NOT NULL OR created_before IS NOT NULL OR has_window
                        OR pg_catalog.cardinality(known_ids) > 0;

    -- The team's statistics, exact (compacted rows plus pending deltas; the
    -- same reads as dm_private.search_team_totals and
    -- search_term_document_counts, inline to save two function calls), and
    -- the query lexemes some recallable document holds, rarest first: their
    -- one-lexeme tsqueries and (k1 + 1) * idf, at most 24 (the scorer below is
    -- unrolled; the commonest lexemes of a longer query weigh least). The
    -- scan query ORs the rarest while their frequencies fit the budget.
    SELECT h.lexemes, h.dfs,
           GREATEST(COALESCE(s.document_count, 0) + COALESCE(p.document_delta, 0), 1)::double precision,
           COALESCE(s.total_length, 0) + COALESCE(p.length_delta, 0)::double precision,
           ARRAY(SELECT f.profile_id FROM dm_private.profiles AS f
                 WHERE f.team_id = team AND f.state <> 'active'),
           -- any evidence document, recallable or not, with both a source
           -- group and a sequence number (a superset of what the context
           -- reads: its islands and neighbourhoods need both), in one descent
           -- of search_documents_grouped_idx (migration 0082); not read at
           -- all without context
           context_radius > 0
           AND EXISTS (SELECT FROM dm_private.search_documents AS g
                       WHERE g.team_id = team AND g.subject_kind = 'evidence'
                         AND g.source_group IS NOT NULL AND g.sequence_number IS NOT NULL)
    INTO held_names, term_dfs, team_documents, total_length, disabled, grouped
    -- one read of the team's row and one of its pending totals
    FROM (SELECT pg_catalog.sum(d.document_delta) AS document_delta,
                 pg_catalog.sum(d.length_delta) AS length_delta
          FROM dm_private.search_statistics_deltas AS d
          WHERE d.team_id = team AND d.lexeme IS NULL) AS p
    LEFT JOIN dm_private.search_team_statistics AS s ON s.team_id = team
    CROSS JOIN (
        -- the query lexemes some recallable document holds, rarest first
        -- (ties by lexeme), and their frequencies
        SELECT pg_catalog.array_agg(t.lexeme ORDER BY t.df, t.lexeme) AS lexemes,
               pg_catalog.array_agg(t.df ORDER BY t.df, t.lexeme) AS dfs
        FROM (
            -- the compacted count by one primary-key probe per query lexeme (a
            -- scalar subquery, at most one row), never a join the generic plan
            -- may turn into a read of every compacted row of the team (it did
            -- on a database whose statistics were empty when it was planned:
            -- a hash join over the team's rows; session 8); OFFSET 0: each
            -- lexeme's two probes run once, not again for the df > 0 test
            SELECT l.lexeme,
                   COALESCE((SELECT c.document_count FROM dm_private.search_term_statistics AS c
                             WHERE c.team_id = team AND c.lexeme = l.lexeme), 0)
                   + COALESCE((SELECT pg_catalog.sum(d.document_delta) FROM dm_private.search_statistics_deltas AS d
                               WHERE d.team_id = team AND d.lexeme = l.lexeme), 0) AS df
            FROM pg_catalog.unnest(pg_catalog.tsvector_to_array(query_vector)) AS l (lexeme)
            OFFSET 0
        ) AS t
        WHERE t.df > 0
    ) AS h;
    average_length := GREATEST(total_length / team_documents, 1.0);
    -- the query's distinct lexemes: its tsvector's length
    query_lexemes := pg_catalog.length(query_vector);
    -- Each held lexeme's one-lexeme tsquery, (k1 + 1) * idf and key in
    -- search_documents_team_lexemes_idx (migration 0025), and the log of the
    -- product of their shares of the team's documents (for the dense passes),
    -- in the statistics' order: simple expressions here, not four ordered
    -- aggregates of the statement (their start-up cost more than this loop
    -- on a query of a few lexemes; session 14).
    held_lexemes := COALESCE(pg_catalog.cardinality(term_dfs), 0);
    FOR i IN 1..held_lexemes LOOP
        term_queries[i] := ('''' || pg_catalog.replace(pg_catalog.replace(held_names[i], '\', '\\'), '''', '''''')
                            || '''')::tsquery;
        idfs[i] := GREATEST((k1 + 1.0) * pg_catalog.ln(1.0 + (team_documents - term_dfs[i] + 0.5) / (term_dfs[i] + 0.5)),
                            0.0)::double precision;
        term_keys[i] := pg_catalog.left(team::text, 8) || held_names[i];
        log_share := CASE WHEN i = 1 THEN pg_catalog.ln(term_dfs[i] / team_documents)
                          ELSE log_share + pg_catalog.ln(term_dfs[i] / team_documents) END;
    END LOOP;
    -- The query lexemes some document holds, and the scan query: the rarest
    -- (always) and the next ones while their frequencies, summed rarest
    -- first, stay within the budget (frequencies are positive, so that is a
    -- prefix: the statement's former "position = 1 OR running_df <= budget").
    IF held_lexemes > 0 THEN
        scan_n := 1;
        scan_df := term_dfs[1];
        WHILE scan_n < held_lexemes AND scan_df + term_dfs[scan_n + 1] <= budget LOOP
            scan_n := scan_n + 1;
            scan_df := scan_df + term_dfs[scan_n];
        END LOOP;
        scan_q := pg_catalog.array_to_string(term_queries[1:scan_n], ' | ')::tsquery;
        scan_keys := term_keys[1:scan_n];
        -- the scorer is unrolled to 24: the commonest lexemes of a longer
        -- query weigh least
        IF held_lexemes > 24 THEN
            term_queries := term_queries[1:24];
            idfs := idfs[1:24];
        END IF;
    END IF;
    term_count := COALESCE(pg_catalog.cardinality(term_queries), 0);
    -- The any-term pass (as recall_tsqueries' any_terms): only with or_terms,
    -- at least two query lexemes and no exclusion, which an OR would let back in.
    IF NOT use_or OR query_lexemes < 2 OR pg_catalog.strpos(all_text, '!') > 0 THEN
        scan_q := NULL;
    END IF;
    -- The all-terms pass adds nothing when the any-term pass already holds
    -- every all-terms match: all_q is a conjunction (no "or"), so each match
    -- holds the rarest lexeme, which the scan query always ORs, and the scan
    -- cannot have been cut (the chosen frequencies add up to at most the
    -- budget, unless the rarest alone exceeds it). Then one pass reads the
    -- heap, not two.
    -- (the rarest lexeme's frequency exceeds the budget exactly when the
    -- scan's do: the scan always holds the rarest, and adds another only
    -- while the running sum of positive frequencies stays within the
    -- budget; so no aggregate of its own, ~15 k of executor start-up a call
    -- less, session 8)
    all_pass_needed := scan_q IS NULL OR scan_df > budget
                       OR pg_catalog.strpos(all_text, '|') > 0;
    -- The all-terms pass can go through the team's lexeme keys when every
    -- lexeme of all_q is required (a conjunction of lexemes and phrases: no
    -- "or", no exclusion, no prefix or weight): a match then holds all of
    -- them, so the keys of all of them select a superset of the matches
    -- (@@ all_q decides). Otherwise (all_keys NULL) through the
    -- (team_id, search_vector) index. The lexemes are read from all_q's text
    -- form ('lexeme' & 'lexeme' <-> ...), quotes doubled inside; a backslash
    -- (doubled in that form) also falls back.
    keyed := pg_catalog.strpos(all_text, '|') = 0 AND pg_catalog.strpos(all_text, '!') = 0
             AND pg_catalog.strpos(all_text, '\') = 0 AND pg_catalog.strpos(all_text, ''':') = 0;
    -- At most `budget` recallable documents in the team (the exact count of
    -- the statistics above) and an all-terms pass that cannot use the lexeme
    -- keys (an "or", an exclusion): read the team through its btree range
    -- and test the match on each (team_rows below), instead of the
    -- (team_id, search_vector) index, whose posting lists of common lexemes
    -- span every team. Otherwise the passes read only the team's matches
    -- through the lexeme keys (one team's posting lists), a small team too:
    -- cheaper than testing every row of a team of 101-500 documents (session
    -- 7, docs/RECALL.md). Same rows either way: no pass's LIMIT can cut a
    -- team of at most `budget` documents.
    small_team := team_documents <= budget AND all_pass_needed AND NOT keyed;
    IF all_pass_needed AND NOT small_team AND keyed THEN
        all_keys := ARRAY(
            SELECT DISTINCT pg_catalog.left(team::text, 8) || pg_catalog.replace(m.x[1], '''''', '''')
            FROM pg_catalog.regexp_matches(all_text, '''((?:[^'']|'''')+)''', 'g') AS m (x));
        IF pg_catalog.cardinality(all_keys) = 0 THEN
            all_keys := NULL;
        END IF;
        -- The keyed all-terms pass looks up only the keys worth their
        -- posting lists (session 10). A GIN bitmap scan decodes every
        -- posting entry of every key it is given and intersects them
        -- before the first heap row is read: a lexeme most of a large team
        -- holds ("residence": 15,000 entries in a team of 16,699) cost
        -- millions of instructions per call, team-size work, to narrow the
        -- candidates by a few rows. @@ all_q decides which documents match,
        -- so any subset of the keys selects a superset of the matches, in
        -- the same heap order, and the pass's LIMIT keeps the same rows;
        -- only the cost changes. Rarest first (the statistics' order), the
        -- rarest always; the next key joins while its frequency is at most
        -- fulltext.key_factor times the heap rows it would save, those
        -- estimated as if the lexemes were independent: the candidates of
        -- the keys so far, of which the pass reads the share that holds
        -- its first `budget` matches. Only when every key's frequency is
        -- known (a key the statistics do not list keeps all of them).
        IF all_keys IS NOT NULL AND pg_catalog.cardinality(all_keys) > 1 AND all_keys <@ term_keys THEN
            key_factor := COALESCE((settings #>> '{fulltext,key_factor}')::double precision, 16.0);
            all_matches := team_documents;
            FOR i IN 1..held_lexemes LOOP
                IF term_keys[i] = ANY (all_keys) THEN
                    all_matches := all_matches * term_dfs[i]::double precision / team_documents;
                END IF;
            END LOOP;
            read_share := LEAST(1.0, budget / GREATEST(all_matches, 1e-9));
            chosen_keys := NULL;
            FOR i IN 1..held_lexemes LOOP
                CONTINUE WHEN NOT (term_keys[i] = ANY (all_keys));
                IF chosen_keys IS NULL THEN
                    chosen_keys := ARRAY[term_keys[i]];
                    candidates := term_dfs[i]::double precision;
                ELSE
                    EXIT WHEN term_dfs[i]::double precision
                              > key_factor * (candidates - candidates * term_dfs[i]::double precision / team_documents)
                                * read_share;
                    chosen_keys := chosen_keys || term_keys[i];
                    candidates := candidates * term_dfs[i]::double precision / team_documents;
                END IF;
            END LOOP;
            all_keys := chosen_keys;
        END IF;
    END IF;
    -- Dense passes (search_documents_team_order_idx, migration 0053): a
    -- pass whose lexemes most of a large team holds reads the team's
    -- documents in heap order and stops at the budget-th match, instead of
    -- a bitmap of every holder. Same rows (the bitmap scan returns them in
    -- heap order too, and keeps the first budget); cheaper when the
    -- documents read, about budget x team size / matches, cost less than
    -- the matches' posting entries: a heap row read in heap order costs
    -- about fulltext.dense_factor posting entries, hence matches^2 >
    -- dense_factor x budget x team size. Default 2: on 40 common-term
    -- queries of the two largest bench teams, 1 / 2 / 4 / 16 / never gave
    -- 16.96 / 17.00 / 17.71 / 19.57 / 28.80 M instructions per call and 0
    -- (always) 255 M (callgrind, session 7). The choice never changes the
    -- rows, only what they cost. The any-term pass knows its matches (the
    -- frequencies of its lexemes, or of its one lexeme over the budget);
    -- the all-terms pass
    -- only when every lexeme is required and there is no phrase, estimated
    -- as if the lexemes were independent.
    IF NOT small_team THEN
        dense_factor := COALESCE((settings #>> '{fulltext,dense_factor}')::double precision, 2.0);
        any_dense := scan_q IS NOT NULL
                     AND scan_df * scan_df > dense_factor * budget * team_documents;
        -- the all-terms matches, were the lexemes independent (none when a
        -- query lexeme is in no document)
        -- (never NULL: log_share is NULL only when no lexeme is held, and
        -- then held_lexemes = query_lexemes is false, all_q having lexemes)
        all_dense := all_pass_needed AND all_keys IS NOT NULL AND pg_catalog.strpos(all_text, '<') = 0
                     AND held_lexemes = query_lexemes
                     AND pg_catalog.power(team_documents * pg_catalog.exp(log_share), 2)
                         > dense_factor * budget * team_documents;
    END IF;

    -- Two statements, one per path, each with only the CTEs its path runs:
    -- executor start-up initialises every node and expression of a plan,
    -- run or not, and for one statement holding both paths that was a fifth
    -- of a small team's call. The scoring (in_context onwards) is the same
    -- text in both.
    -- The BM25 scorer is unrolled (one column per query lexeme): a query of
    -- at most 8 scored lexemes (most) runs the statement unrolled to 8, the
    -- same text with terms 9-24 left out. Executor start-up compiles every
    -- term of the unrolled expressions whether it is used or not (0.7 M
    -- instructions per call of the 24-term statement on a small team);
    -- the left-out terms would add +0.0 (never a different sum).
    IF term_count <= 8 THEN
        tq1 := term_queries[1]; tq2 := term_queries[2]; tq3 := term_queries[3]; tq4 := term_queries[4];
        tq5 := term_queries[5]; tq6 := term_queries[6]; tq7 := term_queries[7]; tq8 := term_queries[8];
        tw1 := idfs[1]; tw2 := idfs[2]; tw3 := idfs[3]; tw4 := idfs[4];
        tw5 := idfs[5]; tw6 := idfs[6]; tw7 := idfs[7]; tw8 := idfs[8];
    END IF;
    IF small_team THEN
        IF term_count <= 8 THEN
            RETURN QUERY
                -- A team with at most `budget` recallable documents: its own rows
                -- through the team's btree range, the match tested on each, rather
                -- than the GIN index, whose posting lists of common lexemes span
                -- every team. No LIMIT can cut (the team holds at most budget
                -- eligible documents), so both ways give the same rows. One
                -- materialised read: the passes' candidates (is_match: eligible and
                -- matching either pass, tested on the heap tuple as it is read)
                -- and, with exchange context, the followers and predecessors all
                -- come from it (each further copy of the team's tsvectors, into a
                -- pass or a set of matches, cost more than the test).
                WITH team_rows AS MATERIALIZED (
                    -- every recallable evidence document of a small team that the
                    -- caller's policy labels allow, whether it is eligible, and
                    -- whether it is a match
                    SELECT t.document_id, t.subject_id, t.row_tid, t.search_vector, t.source_group, t.sequence_number,
                           t.eligible,
                           COALESCE(t.eligible
                                    AND ((all_pass_needed AND t.search_vector @@ all_q)
                                         OR (scan_q IS NOT NULL AND t.search_vector @@ scan_q)), false) AS is_match
                    FROM (SELECT d.document_id, d.subject_id, d.ctid AS row_tid, d.search_vector, d.source_group, d.sequence_number,
                                 (d.owner_profile_id <> ALL (disabled)
                                  AND (d.valid_from IS NULL OR d.valid_from <= valid_at)
                                  AND (d.valid_to IS NULL OR d.valid_to > valid_at)
                                  AND (d.known_from IS NULL OR d.known_from <= known_at)
                                  AND (d.known_to IS NULL OR d.known_to > known_at)
                                  AND (NOT request_filtered
                                       OR ((source_groups IS NULL OR d.source_group = ANY (source_groups))
                                           AND (memory_types IS NULL OR d.memory_type::text = ANY (memory_types))
                                           AND (created_after IS NULL OR d.source_created_at >= created_after)
                                           AND (created_before IS NULL OR d.source_created_at < created_before)
                                           AND (NOT has_window OR (d.source_created_at IS NOT NULL
                                                                   AND (window_from IS NULL OR d.source_created_at >= window_from)
                                                                   AND (window_to IS NULL OR d.source_created_at <= window_to)))
                                           AND d.subject_id <> ALL (known_ids)))) AS eligible
                          FROM dm_private.search_documents AS d
                          WHERE small_team
                            AND d.team_id = team
                            AND d.subject_kind = 'evidence'
                            AND d.is_recallable
                            AND d.policy_labels <@ scopes
                          -- eligibility computed once per row, not once per reference
                          OFFSET 0) AS t
                ),
                -- Exchange context (fulltext.context_radius > 0, at most 2): the
                -- eligible documents written up to context_radius sequence numbers
                -- after a match in its source group (the reply to a matching turn)
                -- are candidates too, and every candidate with a source group is
                -- scored on its own tsvector concatenated with those of the
                -- recallable documents written up to context_radius before it in
                -- that group (the nearest first): a turn is searched as the exchange
                -- it closes. Evidence without a source group or sequence number is
                -- scored alone.
                --
                -- Both come from one window over the neighbourhood: the recallable
                -- documents the caller may see (a predecessor needs no more), with
                -- their eligibility (a follower needs it). Sequence numbers are one
                -- identity, so a group holds at most context_radius of them in
                -- [s - context_radius, s): the one or two rows before a row in its
                -- group (lag) are all its candidates for predecessor, and a follower
                -- is an eligible row one of whose lags is a match within the radius.
                -- The neighbourhood of a small team is team_rows, already read; of a
                -- larger team, the documents within context_radius of a match, read
                -- as one (team_id, sequence_number) range per run of matches whose
                -- ranges overlap (a speaker's name matches most turns: a handful of
                -- ranges, not an index probe per match and per candidate).
                neighbourhood AS (
                    SELECT p.document_id, p.subject_id, p.row_tid, p.search_vector, p.source_group, p.sequence_number, p.eligible,
                           p.is_match
                    FROM team_rows AS p
                    WHERE context_radius > 0
                      AND p.source_group IS NOT NULL AND p.sequence_number IS NOT NULL
                ),
                in_context AS (
                    SELECT w.document_id, w.subject_id, w.row_tid, w.search_vector, w.sequence_number, w.eligible, w.is_match,
                           pg_catalog.lag(w.sequence_number, 1) OVER g AS sequence_1,
                           pg_catalog.lag(w.search_vector, 1) OVER g AS vector_1,
                           pg_catalog.lag(w.is_match, 1) OVER g AS match_1,
                           pg_catalog.lag(w.sequence_number, 2) OVER g AS sequence_2,
                           pg_catalog.lag(w.search_vector, 2) OVER g AS vector_2,
                           pg_catalog.lag(w.is_match, 2) OVER g AS match_2
                    FROM neighbourhood AS w
                    WINDOW g AS (PARTITION BY w.source_group ORDER BY w.sequence_number)
                ),
                matched AS (
                    -- without context, and evidence without a group or sequence number: alone
                    SELECT o.document_id, o.subject_id, o.row_tid, o.search_vector
                    FROM team_rows AS o
                    WHERE o.is_match
                      AND (context_radius = 0 OR o.source_group IS NULL OR o.sequence_number IS NULL)
                    UNION ALL
                    -- the matches and their followers, each once, with their predecessors
                    SELECT c.document_id, c.subject_id, c.row_tid,
                           CASE WHEN c.sequence_2 >= c.sequence_number - context_radius
                                    THEN c.search_vector OPERATOR(pg_catalog.||) c.vector_1
                                         OPERATOR(pg_catalog.||) c.vector_2
                                WHEN c.sequence_1 >= c.sequence_number - context_radius
                                    THEN c.search_vector OPERATOR(pg_catalog.||) c.vector_1
                                ELSE c.search_vector END AS search_vector
                    FROM in_context AS c
                    WHERE c.is_match
                       OR (c.eligible
                           AND ((c.match_1 AND c.sequence_1 >= c.sequence_number - context_radius)
                                OR (c.match_2 AND c.sequence_2 >= c.sequence_number - context_radius)))
                ),
                term_frequencies AS (
                    -- ts_rank of each one-lexeme query (r1, r2, ...): one binary search in
                    -- the tsvector per query lexeme, unrolled (a per-row subquery over
                    -- the lexemes costs five times as much); the scorer recovers tf
                    -- from it. OFFSET 0 keeps each computed once.
                    SELECT m.document_id, m.subject_id, m.row_tid,
                           k1 * (1.0 - b + b * pg_catalog.length(m.search_vector) / average_length) AS norm,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, tq1, 0) AS r1,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, tq2, 0) AS r2,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, tq3, 0) AS r3,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, tq4, 0) AS r4,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, tq5, 0) AS r5,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, tq6, 0) AS r6,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, tq7, 0) AS r7,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, tq8, 0) AS r8
                    FROM matched AS m
                    OFFSET 0
                ),
                scored AS (
                    -- ts_rank of a one-lexeme query with unit weights is
                    -- sum(1/i^2, i = 1..tf) / (pi^2/6), so tf is recovered from the
                    -- remainder of that series (about 1/(tf + 0.5)). A lexeme the
                    -- document does not hold (ts_rank 0: tf 0) adds exactly 0.0, and one
                    -- beyond term_count (NULL) too, so only the held lexemes' tf is
                    -- recovered and weighed (session 14: a candidate holds one or two of
                    -- the query's lexemes; the same sums as weighing every lexeme).
                    -- A lexeme beyond term_count has a NULL query, and ts_rank, strict, a
                    -- NULL rank without being called (no CASE per lexeme and row); 1 - rank
                    -- is at least 1 - 0.99763 (a lexeme keeps at most 256 positions, and
                    -- sum(1/i^2, i <= 256) / (pi^2/6) = 0.99763), so the division needs no
                    -- guard (session 16: both dropped, the same values).
                    SELECT t.document_id, t.subject_id, t.row_tid,
                           (
                             CASE WHEN t.r1 > 0 THEN tw1 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r1)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r1)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r2 > 0 THEN tw2 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r2)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r2)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r3 > 0 THEN tw3 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r3)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r3)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r4 > 0 THEN tw4 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r4)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r4)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r5 > 0 THEN tw5 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r5)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r5)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r6 > 0 THEN tw6 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r6)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r6)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r7 > 0 THEN tw7 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r7)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r7)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r8 > 0 THEN tw8 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r8)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r8)) - 0.5) + t.norm) ELSE 0.0 END
                           )::double precision AS score
                    FROM term_frequencies AS t
                )
                SELECT 'fulltext'::text, r.document_id, r.subject_id,
                       -- equal scores share a rank, so ties stay ties through fusion;
                       -- ranked after the LIMIT (session 8): every row scoring more
                       -- than a kept row is kept, so its rank is the same, and the
                       -- sort keeps the top `cap` alone instead of ordering every
                       -- candidate twice around a window over all of them
                       (pg_catalog.rank() OVER (ORDER BY r.score DESC))::integer,
                       r.score, r.row_tid
                FROM (SELECT s.document_id, s.subject_id, s.row_tid, s.score
                      FROM scored AS s
                      ORDER BY s.score DESC, s.subject_id
                      LIMIT cap) AS r
                ORDER BY r.score DESC, r.subject_id;
        ELSE
            RETURN QUERY
                -- A team with at most `budget` recallable documents: its own rows
                -- through the team's btree range, the match tested on each, rather
                -- than the GIN index, whose posting lists of common lexemes span
                -- every team. No LIMIT can cut (the team holds at most budget
                -- eligible documents), so both ways give the same rows. One
                -- materialised read: the passes' candidates (is_match: eligible and
                -- matching either pass, tested on the heap tuple as it is read)
                -- and, with exchange context, the followers and predecessors all
                -- come from it (each further copy of the team's tsvectors, into a
                -- pass or a set of matches, cost more than the test).
                WITH team_rows AS MATERIALIZED (
                    -- every recallable evidence document of a small team that the
                    -- caller's policy labels allow, whether it is eligible, and
                    -- whether it is a match
                    SELECT t.document_id, t.subject_id, t.row_tid, t.search_vector, t.source_group, t.sequence_number,
                           t.eligible,
                           COALESCE(t.eligible
                                    AND ((all_pass_needed AND t.search_vector @@ all_q)
                                         OR (scan_q IS NOT NULL AND t.search_vector @@ scan_q)), false) AS is_match
                    FROM (SELECT d.document_id, d.subject_id, d.ctid AS row_tid, d.search_vector, d.source_group, d.sequence_number,
                                 (d.owner_profile_id <> ALL (disabled)
                                  AND (d.valid_from IS NULL OR d.valid_from <= valid_at)
                                  AND (d.valid_to IS NULL OR d.valid_to > valid_at)
                                  AND (d.known_from IS NULL OR d.known_from <= known_at)
                                  AND (d.known_to IS NULL OR d.known_to > known_at)
                                  AND (NOT request_filtered
                                       OR ((source_groups IS NULL OR d.source_group = ANY (source_groups))
                                           AND (memory_types IS NULL OR d.memory_type::text = ANY (memory_types))
                                           AND (created_after IS NULL OR d.source_created_at >= created_after)
                                           AND (created_before IS NULL OR d.source_created_at < created_before)
                                           AND (NOT has_window OR (d.source_created_at IS NOT NULL
                                                                   AND (window_from IS NULL OR d.source_created_at >= window_from)
                                                                   AND (window_to IS NULL OR d.source_created_at <= window_to)))
                                           AND d.subject_id <> ALL (known_ids)))) AS eligible
                          FROM dm_private.search_documents AS d
                          WHERE small_team
                            AND d.team_id = team
                            AND d.subject_kind = 'evidence'
                            AND d.is_recallable
                            AND d.policy_labels <@ scopes
                          -- eligibility computed once per row, not once per reference
                          OFFSET 0) AS t
                ),
                -- Exchange context (fulltext.context_radius > 0, at most 2): the
                -- eligible documents written up to context_radius sequence numbers
                -- after a match in its source group (the reply to a matching turn)
                -- are candidates too, and every candidate with a source group is
                -- scored on its own tsvector concatenated with those of the
                -- recallable documents written up to context_radius before it in
                -- that group (the nearest first): a turn is searched as the exchange
                -- it closes. Evidence without a source group or sequence number is
                -- scored alone.
                --
                -- Both come from one window over the neighbourhood: the recallable
                -- documents the caller may see (a predecessor needs no more), with
                -- their eligibility (a follower needs it). Sequence numbers are one
                -- identity, so a group holds at most context_radius of them in
                -- [s - context_radius, s): the one or two rows before a row in its
                -- group (lag) are all its candidates for predecessor, and a follower
                -- is an eligible row one of whose lags is a match within the radius.
                -- The neighbourhood of a small team is team_rows, already read; of a
                -- larger team, the documents within context_radius of a match, read
                -- as one (team_id, sequence_number) range per run of matches whose
                -- ranges overlap (a speaker's name matches most turns: a handful of
                -- ranges, not an index probe per match and per candidate).
                neighbourhood AS (
                    SELECT p.document_id, p.subject_id, p.row_tid, p.search_vector, p.source_group, p.sequence_number, p.eligible,
                           p.is_match
                    FROM team_rows AS p
                    WHERE context_radius > 0
                      AND p.source_group IS NOT NULL AND p.sequence_number IS NOT NULL
                ),
                in_context AS (
                    SELECT w.document_id, w.subject_id, w.row_tid, w.search_vector, w.sequence_number, w.eligible, w.is_match,
                           pg_catalog.lag(w.sequence_number, 1) OVER g AS sequence_1,
                           pg_catalog.lag(w.search_vector, 1) OVER g AS vector_1,
                           pg_catalog.lag(w.is_match, 1) OVER g AS match_1,
                           pg_catalog.lag(w.sequence_number, 2) OVER g AS sequence_2,
                           pg_catalog.lag(w.search_vector, 2) OVER g AS vector_2,
                           pg_catalog.lag(w.is_match, 2) OVER g AS match_2
                    FROM neighbourhood AS w
                    WINDOW g AS (PARTITION BY w.source_group ORDER BY w.sequence_number)
                ),
                matched AS (
                    -- without context, and evidence without a group or sequence number: alone
                    SELECT o.document_id, o.subject_id, o.row_tid, o.search_vector
                    FROM team_rows AS o
                    WHERE o.is_match
                      AND (context_radius = 0 OR o.source_group IS NULL OR o.sequence_number IS NULL)
                    UNION ALL
                    -- the matches and their followers, each once, with their predecessors
                    SELECT c.document_id, c.subject_id, c.row_tid,
                           CASE WHEN c.sequence_2 >= c.sequence_number - context_radius
                                    THEN c.search_vector OPERATOR(pg_catalog.||) c.vector_1
                                         OPERATOR(pg_catalog.||) c.vector_2
                                WHEN c.sequence_1 >= c.sequence_number - context_radius
                                    THEN c.search_vector OPERATOR(pg_catalog.||) c.vector_1
                                ELSE c.search_vector END AS search_vector
                    FROM in_context AS c
                    WHERE c.is_match
                       OR (c.eligible
                           AND ((c.match_1 AND c.sequence_1 >= c.sequence_number - context_radius)
                                OR (c.match_2 AND c.sequence_2 >= c.sequence_number - context_radius)))
                ),
                term_frequencies AS (
                    -- ts_rank of each one-lexeme query (r1, r2, ...): one binary search in
                    -- the tsvector per query lexeme, unrolled (a per-row subquery over
                    -- the lexemes costs five times as much); the scorer recovers tf
                    -- from it. OFFSET 0 keeps each computed once.
                    SELECT m.document_id, m.subject_id, m.row_tid,
                           k1 * (1.0 - b + b * pg_catalog.length(m.search_vector) / average_length) AS norm,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[1], 0) AS r1,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[2], 0) AS r2,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[3], 0) AS r3,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[4], 0) AS r4,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[5], 0) AS r5,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[6], 0) AS r6,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[7], 0) AS r7,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[8], 0) AS r8,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[9], 0) AS r9,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[10], 0) AS r10,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[11], 0) AS r11,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[12], 0) AS r12,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[13], 0) AS r13,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[14], 0) AS r14,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[15], 0) AS r15,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[16], 0) AS r16,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[17], 0) AS r17,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[18], 0) AS r18,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[19], 0) AS r19,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[20], 0) AS r20,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[21], 0) AS r21,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[22], 0) AS r22,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[23], 0) AS r23,
                               pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[24], 0) AS r24
                    FROM matched AS m
                    OFFSET 0
                ),
                scored AS (
                    -- ts_rank of a one-lexeme query with unit weights is
                    -- sum(1/i^2, i = 1..tf) / (pi^2/6), so tf is recovered from the
                    -- remainder of that series (about 1/(tf + 0.5)). A lexeme the
                    -- document does not hold (ts_rank 0: tf 0) adds exactly 0.0, and one
                    -- beyond term_count (NULL) too, so only the held lexemes' tf is
                    -- recovered and weighed (session 14: a candidate holds one or two of
                    -- the query's lexemes; the same sums as weighing every lexeme).
                    -- A lexeme beyond term_count has a NULL query, and ts_rank, strict, a
                    -- NULL rank without being called (no CASE per lexeme and row); 1 - rank
                    -- is at least 1 - 0.99763 (a lexeme keeps at most 256 positions, and
                    -- sum(1/i^2, i <= 256) / (pi^2/6) = 0.99763), so the division needs no
                    -- guard (session 16: both dropped, the same values).
                    SELECT t.document_id, t.subject_id, t.row_tid,
                           (
                             CASE WHEN t.r1 > 0 THEN idfs[1] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r1)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r1)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r2 > 0 THEN idfs[2] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r2)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r2)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r3 > 0 THEN idfs[3] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r3)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r3)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r4 > 0 THEN idfs[4] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r4)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r4)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r5 > 0 THEN idfs[5] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r5)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r5)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r6 > 0 THEN idfs[6] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r6)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r6)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r7 > 0 THEN idfs[7] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r7)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r7)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r8 > 0 THEN idfs[8] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r8)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r8)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r9 > 0 THEN idfs[9] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r9)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r9)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r10 > 0 THEN idfs[10] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r10)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r10)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r11 > 0 THEN idfs[11] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r11)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r11)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r12 > 0 THEN idfs[12] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r12)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r12)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r13 > 0 THEN idfs[13] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r13)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r13)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r14 > 0 THEN idfs[14] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r14)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r14)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r15 > 0 THEN idfs[15] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r15)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r15)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r16 > 0 THEN idfs[16] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r16)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r16)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r17 > 0 THEN idfs[17] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r17)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r17)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r18 > 0 THEN idfs[18] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r18)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r18)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r19 > 0 THEN idfs[19] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r19)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r19)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r20 > 0 THEN idfs[20] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r20)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r20)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r21 > 0 THEN idfs[21] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r21)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r21)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r22 > 0 THEN idfs[22] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r22)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r22)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r23 > 0 THEN idfs[23] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r23)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r23)) - 0.5) + t.norm) ELSE 0.0 END
                           + CASE WHEN t.r24 > 0 THEN idfs[24] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r24)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r24)) - 0.5) + t.norm) ELSE 0.0 END
                           )::double precision AS score
                    FROM term_frequencies AS t
                )
                SELECT 'fulltext'::text, r.document_id, r.subject_id,
                       -- equal scores share a rank, so ties stay ties through fusion;
                       -- ranked after the LIMIT (session 8): every row scoring more
                       -- than a kept row is kept, so its rank is the same, and the
                       -- sort keeps the top `cap` alone instead of ordering every
                       -- candidate twice around a window over all of them
                       (pg_catalog.rank() OVER (ORDER BY r.score DESC))::integer,
                       r.score, r.row_tid
                FROM (SELECT s.document_id, s.subject_id, s.row_tid, s.score
                      FROM scored AS s
                      ORDER BY s.score DESC, s.subject_id
                      LIMIT cap) AS r
                ORDER BY r.score DESC, r.subject_id;
        END IF;
        RETURN;
    END IF;
    IF any_dense OR all_dense THEN
        -- The dense walk's query (the dense_walk CTEs below): the dense
        -- pass's; when both are dense and the rarest held lexeme is required
        -- by all_q (scan_q always ORs it), scan_q alone, since every all-terms
        -- match then matches scan_q; otherwise the OR of both.
        walk_q := CASE WHEN NOT all_dense THEN scan_q
                       WHEN NOT any_dense THEN all_q
                       WHEN term_keys[1] = ANY (all_keys) THEN scan_q
                       ELSE scan_q OPERATOR(pg_catalog.||) all_q END;
        walk_is_scan := any_dense AND walk_q OPERATOR(pg_catalog.=) scan_q;
        walk_is_all := all_dense AND walk_q OPERATOR(pg_catalog.=) all_q;
    END IF;
    -- A dense pass of a team without exchange context and a query of at most
    -- 8 scored lexemes runs the 8-lexeme GIN statement below, which has the
    -- dense ways too (session 14: this statement's 24 unrolled terms and
    -- context CTEs cost more to start and run than the walk it saved).
    IF (any_dense OR all_dense) AND (grouped OR term_count > 8) THEN
        RETURN QUERY
            -- A larger team with a dense pass (any_dense or all_dense) and
            -- exchange context or more than 8 scored lexemes: the GIN passes,
            -- each with its dense way (the team's documents in heap order,
            -- search_documents_team_order_idx), in the 24-lexeme width (a query of
            -- at most 8 scored lexemes gets the same sums). A statement of its own,
            -- so that the other calls do not initialise the dense scans.
            -- The dense ways of both passes (search_documents_team_order_idx,
            -- migration 0053): one walk of the team's eligible documents in
            -- heap order, keeping those that match a dense pass's query. A CTE
            -- is read on demand: each pass takes its first `budget` matches in
            -- that order, the rows a walk of its own would take; when both
            -- passes are dense the team is walked once, as far as the further
            -- pass needs, not twice (session 14: the all-terms walk of a
            -- common-lexeme query read most of a large team again). Never run
            -- when no pass is dense (its readers' one-time filters are false).
            WITH dense_walk AS MATERIALIZED (
                SELECT d.document_id, d.subject_id, d.ctid AS row_tid, d.search_vector, d.source_group, d.sequence_number,
                       -- each row is tested once against walk_q, and against
                       -- the other pass's query only when walk_q is not it
                       any_dense AND (walk_is_scan OR (d.search_vector @@ scan_q) IS TRUE) AS is_any,
                       all_dense AND (walk_is_all OR (d.search_vector @@ all_q) IS TRUE) AS is_all
                FROM dm_private.search_documents AS d
                WHERE dm_private.search_team_order_key(d.team_id) = team
                  AND (d.team_id = team) IS TRUE
                  AND (d.search_vector @@ walk_q) IS TRUE
                  AND d.subject_kind = 'evidence'
                  AND d.is_recallable
                  AND d.owner_profile_id <> ALL (disabled)
                  AND (d.valid_from IS NULL OR d.valid_from <= valid_at)
                  AND (d.valid_to IS NULL OR d.valid_to > valid_at)
                  AND (d.known_from IS NULL OR d.known_from <= known_at)
                  AND (d.known_to IS NULL OR d.known_to > known_at)
                  AND d.policy_labels <@ scopes
                  AND (NOT request_filtered
                       OR ((source_groups IS NULL OR d.source_group = ANY (source_groups))
                           AND (memory_types IS NULL OR d.memory_type::text = ANY (memory_types))
                           AND (created_after IS NULL OR d.source_created_at >= created_after)
                           AND (created_before IS NULL OR d.source_created_at < created_before)
                           AND (NOT has_window OR (d.source_created_at IS NOT NULL
                                                   AND (window_from IS NULL OR d.source_created_at >= window_from)
                                                   AND (window_to IS NULL OR d.source_created_at <= window_to)))
                           AND d.subject_id <> ALL (known_ids)))
            ),
            -- read once (by own_matched), so not materialised: its rows go
            -- straight into own_matched's store, one tuplestore copy of each
            -- candidate and its tsvector less (session 8)
            any_pass AS NOT MATERIALIZED (
                -- the keyed way: a bitmap of the lexemes' documents
                (SELECT d.document_id, d.subject_id, d.ctid AS row_tid, d.search_vector, d.source_group, d.sequence_number
                FROM dm_private.search_documents AS d
                WHERE scan_q IS NOT NULL
                  AND NOT small_team
                  AND NOT any_dense
                  -- the keys select exactly the team's documents holding one of
                  -- scan_q's lexemes (plus, on a prefix collision, another
                  -- team's, which the team predicate drops): within the team
                  -- that is what @@ scan_q (an OR of those lexemes) tests, so
                  -- the pass does not test it again on every row (session 8);
                  -- the team predicate is written so that no other index
                  -- serves it (a BitmapAnd with the team's btree range would
                  -- read every row of the team)
                  AND dm_private.search_team_lexemes(d.team_id, d.search_vector) OPERATOR(pg_catalog.&&) scan_keys
                  AND (d.team_id = team) IS TRUE
                  AND d.subject_kind = 'evidence'
                  AND d.is_recallable
                  AND d.owner_profile_id <> ALL (disabled)
                  AND (d.valid_from IS NULL OR d.valid_from <= valid_at)
                  AND (d.valid_to IS NULL OR d.valid_to > valid_at)
                  AND (d.known_from IS NULL OR d.known_from <= known_at)
                  AND (d.known_to IS NULL OR d.known_to > known_at)
                  AND d.policy_labels <@ scopes
                  AND (NOT request_filtered
                       OR ((source_groups IS NULL OR d.source_group = ANY (source_groups))
                           AND (memory_types IS NULL OR d.memory_type::text = ANY (memory_types))
                           AND (created_after IS NULL OR d.source_created_at >= created_after)
                           AND (created_before IS NULL OR d.source_created_at < created_before)
                           AND (NOT has_window OR (d.source_created_at IS NOT NULL
                                                   AND (window_from IS NULL OR d.source_created_at >= window_from)
                                                   AND (window_to IS NULL OR d.source_created_at <= window_to)))
                           AND d.subject_id <> ALL (known_ids)))
                LIMIT budget)
                UNION ALL
                -- the dense way: the same first rows in heap order
                (SELECT w.document_id, w.subject_id, w.row_tid, w.search_vector, w.source_group, w.sequence_number
                FROM dense_walk AS w
                WHERE any_dense AND w.is_any
                LIMIT budget)
            ),
            all_pass AS MATERIALIZED (
                -- the keyed way (all_keys: every lexeme of all_q is required)
                (SELECT d.document_id, d.subject_id, d.ctid AS row_tid, d.search_vector, d.source_group, d.sequence_number
                FROM dm_private.search_documents AS d
                WHERE all_pass_needed
                  AND NOT small_team
                  AND all_keys IS NOT NULL
                  AND NOT all_dense
                  AND dm_private.search_team_lexemes(d.team_id, d.search_vector) OPERATOR(pg_catalog.@>) all_keys
                  AND (d.team_id = team) IS TRUE
                  AND (d.search_vector @@ all_q) IS TRUE
                  AND d.subject_kind = 'evidence'
                  AND d.is_recallable
                  AND d.owner_profile_id <> ALL (disabled)
                  AND (d.valid_from IS NULL OR d.valid_from <= valid_at)
                  AND (d.valid_to IS NULL OR d.valid_to > valid_at)
                  AND (d.known_from IS NULL OR d.known_from <= known_at)
                  AND (d.known_to IS NULL OR d.known_to > known_at)
                  AND d.policy_labels <@ scopes
                  AND (NOT request_filtered
                       OR ((source_groups IS NULL OR d.source_group = ANY (source_groups))
                           AND (memory_types IS NULL OR d.memory_type::text = ANY (memory_types))
                           AND (created_after IS NULL OR d.source_created_at >= created_after)
                           AND (created_before IS NULL OR d.source_created_at < created_before)
                           AND (NOT has_window OR (d.source_created_at IS NOT NULL
                                                   AND (window_from IS NULL OR d.source_created_at >= window_from)
                                                   AND (window_to IS NULL OR d.source_created_at <= window_to)))
                           AND d.subject_id <> ALL (known_ids)))
                LIMIT budget)
                UNION ALL
                -- the dense way (all_dense): the same first rows in heap order
                (SELECT w.document_id, w.subject_id, w.row_tid, w.search_vector, w.source_group, w.sequence_number
                FROM dense_walk AS w
                WHERE all_dense AND w.is_all
                LIMIT budget)
                UNION ALL
                -- any other all_q (or, exclusions): the (team_id, search_vector) index
                (SELECT d.document_id, d.subject_id, d.ctid AS row_tid, d.search_vector, d.source_group, d.sequence_number
                FROM dm_private.search_documents AS d
                WHERE all_pass_needed
                  AND NOT small_team
                  AND all_keys IS NULL
                  AND d.team_id = team
                  AND d.search_vector @@ all_q
                  AND d.subject_kind = 'evidence'
                  AND d.is_recallable
                  AND d.owner_profile_id <> ALL (disabled)
                  AND (d.valid_from IS NULL OR d.valid_from <= valid_at)
                  AND (d.valid_to IS NULL OR d.valid_to > valid_at)
                  AND (d.known_from IS NULL OR d.known_from <= known_at)
                  AND (d.known_to IS NULL OR d.known_to > known_at)
                  AND d.policy_labels <@ scopes
                  AND (NOT request_filtered
                       OR ((source_groups IS NULL OR d.source_group = ANY (source_groups))
                           AND (memory_types IS NULL OR d.memory_type::text = ANY (memory_types))
                           AND (created_after IS NULL OR d.source_created_at >= created_after)
                           AND (created_before IS NULL OR d.source_created_at < created_before)
                           AND (NOT has_window OR (d.source_created_at IS NOT NULL
                                                   AND (window_from IS NULL OR d.source_created_at >= window_from)
                                                   AND (window_to IS NULL OR d.source_created_at <= window_to)))
                           AND d.subject_id <> ALL (known_ids)))
                LIMIT budget)
            ),
            own_matched AS MATERIALIZED (
                SELECT b.document_id, b.subject_id, b.row_tid, b.search_vector, b.source_group, b.sequence_number FROM all_pass AS b
                UNION ALL
                SELECT a.document_id, a.subject_id, a.row_tid, a.search_vector, a.source_group, a.sequence_number FROM any_pass AS a
                -- a hashed subplan (document ids are never NULL, so NOT IN is NOT
                -- EXISTS): the anti-join the planner chose for NOT EXISTS, a
                -- nested loop rescanning all_pass for every any_pass row, read
                -- up to budget x budget tuples (half of a 10k+ team's call)
                WHERE a.document_id NOT IN (SELECT b.document_id FROM all_pass AS b)
            ),
            -- Exchange context (fulltext.context_radius > 0, at most 2): the
            -- eligible documents written up to context_radius sequence numbers
            -- after a match in its source group (the reply to a matching turn)
            -- are candidates too, and every candidate with a source group is
            -- scored on its own tsvector concatenated with those of the
            -- recallable documents written up to context_radius before it in
            -- that group (the nearest first): a turn is searched as the exchange
            -- it closes. Evidence without a source group or sequence number is
            -- scored alone.
            --
            -- Both come from one window over the neighbourhood: the recallable
            -- documents the caller may see (a predecessor needs no more), with
            -- their eligibility (a follower needs it). Sequence numbers are one
            -- identity, so a group holds at most context_radius of them in
            -- [s - context_radius, s): the one or two rows before a row in its
            -- group (lag) are all its candidates for predecessor, and a follower
            -- is an eligible row one of whose lags is a match within the radius.
            -- The neighbourhood of a small team is team_rows, already read; of a
            -- larger team, the documents within context_radius of a match, read
            -- as one (team_id, sequence_number) range per run of matches whose
            -- ranges overlap (a speaker's name matches most turns: a handful of
            -- ranges, not an index probe per match and per candidate).
            islands AS (
                SELECT pg_catalog.min(i.sequence_number) - context_radius AS lo,
                       pg_catalog.max(i.sequence_number) + context_radius AS hi
                FROM (SELECT s.sequence_number,
                             pg_catalog.sum(s.gap) OVER (ORDER BY s.sequence_number) AS island
                      FROM (SELECT o.sequence_number,
                                   CASE WHEN o.sequence_number
                                             - pg_catalog.lag(o.sequence_number) OVER (ORDER BY o.sequence_number)
                                             <= 2 * context_radius
                                        THEN 0 ELSE 1 END AS gap
                            FROM own_matched AS o
                            WHERE context_radius > 0
                              AND NOT small_team
                              AND o.source_group IS NOT NULL AND o.sequence_number IS NOT NULL) AS s) AS i
                GROUP BY i.island
            ),
            near_rows AS MATERIALIZED (
                SELECT d.document_id, d.subject_id, d.row_tid, d.search_vector, d.source_group, d.sequence_number,
                       (d.owner_profile_id <> ALL (disabled)
                        AND (d.valid_from IS NULL OR d.valid_from <= valid_at)
                        AND (d.valid_to IS NULL OR d.valid_to > valid_at)
                        AND (d.known_from IS NULL OR d.known_from <= known_at)
                        AND (d.known_to IS NULL OR d.known_to > known_at)
                        AND (NOT request_filtered
                             OR ((source_groups IS NULL OR d.source_group = ANY (source_groups))
                                 AND (memory_types IS NULL OR d.memory_type::text = ANY (memory_types))
                                 AND (created_after IS NULL OR d.source_created_at >= created_after)
                                 AND (created_before IS NULL OR d.source_created_at < created_before)
                                 AND (NOT has_window OR (d.source_created_at IS NOT NULL
                                                         AND (window_from IS NULL OR d.source_created_at >= window_from)
                                                         AND (window_to IS NULL OR d.source_created_at <= window_to)))
                                 AND d.subject_id <> ALL (known_ids)))) AS eligible
                FROM islands AS n
                CROSS JOIN LATERAL (
                    SELECT x.document_id, x.subject_id, x.ctid AS row_tid, x.search_vector, x.source_group, x.sequence_number,
                           x.is_recallable, x.policy_labels, x.owner_profile_id, x.valid_from, x.valid_to,
                           x.known_from, x.known_to, x.memory_type, x.source_created_at
                    FROM dm_private.search_documents AS x
                    WHERE x.team_id = team
                      AND x.subject_kind = 'evidence'
                      AND x.sequence_number >= n.lo
                      AND x.sequence_number <= n.hi
                ) AS d
                WHERE d.is_recallable
                  AND d.policy_labels <@ scopes
                  AND d.source_group IS NOT NULL
            ),
            neighbourhood AS (
                SELECT p.document_id, p.subject_id, p.row_tid, p.search_vector, p.source_group, p.sequence_number, p.eligible,
                       -- a hashed subplan: own_matched holds each document once
                       p.document_id IN (SELECT o.document_id FROM own_matched AS o) AS is_match
                FROM near_rows AS p
                -- is_match computed once, not once per reference below
                OFFSET 0
            ),
            in_context AS (
                SELECT w.document_id, w.subject_id, w.row_tid, w.search_vector, w.sequence_number, w.eligible, w.is_match,
                       pg_catalog.lag(w.sequence_number, 1) OVER g AS sequence_1,
                       pg_catalog.lag(w.search_vector, 1) OVER g AS vector_1,
                       pg_catalog.lag(w.is_match, 1) OVER g AS match_1,
                       pg_catalog.lag(w.sequence_number, 2) OVER g AS sequence_2,
                       pg_catalog.lag(w.search_vector, 2) OVER g AS vector_2,
                       pg_catalog.lag(w.is_match, 2) OVER g AS match_2
                FROM neighbourhood AS w
                WINDOW g AS (PARTITION BY w.source_group ORDER BY w.sequence_number)
            ),
            matched AS (
                -- without context, and evidence without a group or sequence number: alone
                SELECT o.document_id, o.subject_id, o.row_tid, o.search_vector
                FROM own_matched AS o
                WHERE context_radius = 0 OR o.source_group IS NULL OR o.sequence_number IS NULL
                UNION ALL
                -- the matches and their followers, each once, with their predecessors
                SELECT c.document_id, c.subject_id, c.row_tid,
                       CASE WHEN c.sequence_2 >= c.sequence_number - context_radius
                                THEN c.search_vector OPERATOR(pg_catalog.||) c.vector_1
                                     OPERATOR(pg_catalog.||) c.vector_2
                            WHEN c.sequence_1 >= c.sequence_number - context_radius
                                THEN c.search_vector OPERATOR(pg_catalog.||) c.vector_1
                            ELSE c.search_vector END AS search_vector
                FROM in_context AS c
                WHERE c.is_match
                   OR (c.eligible
                       AND ((c.match_1 AND c.sequence_1 >= c.sequence_number - context_radius)
                            OR (c.match_2 AND c.sequence_2 >= c.sequence_number - context_radius)))
            ),
            term_frequencies AS (
                -- ts_rank of each one-lexeme query (r1, r2, ...): one binary search in
                -- the tsvector per query lexeme, unrolled (a per-row subquery over
                -- the lexemes costs five times as much); the scorer recovers tf
                -- from it. OFFSET 0 keeps each computed once.
                SELECT m.document_id, m.subject_id, m.row_tid,
                       k1 * (1.0 - b + b * pg_catalog.length(m.search_vector) / average_length) AS norm,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[1], 0) AS r1,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[2], 0) AS r2,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[3], 0) AS r3,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[4], 0) AS r4,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[5], 0) AS r5,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[6], 0) AS r6,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[7], 0) AS r7,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[8], 0) AS r8,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[9], 0) AS r9,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[10], 0) AS r10,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[11], 0) AS r11,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[12], 0) AS r12,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[13], 0) AS r13,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[14], 0) AS r14,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[15], 0) AS r15,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[16], 0) AS r16,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[17], 0) AS r17,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[18], 0) AS r18,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[19], 0) AS r19,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[20], 0) AS r20,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[21], 0) AS r21,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[22], 0) AS r22,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[23], 0) AS r23,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[24], 0) AS r24
                FROM matched AS m
                OFFSET 0
            ),
            scored AS (
                -- ts_rank of a one-lexeme query with unit weights is
                -- sum(1/i^2, i = 1..tf) / (pi^2/6), so tf is recovered from the
                -- remainder of that series (about 1/(tf + 0.5)). A lexeme the
                -- document does not hold (ts_rank 0: tf 0) adds exactly 0.0, and one
                -- beyond term_count (NULL) too, so only the held lexemes' tf is
                -- recovered and weighed (session 14: a candidate holds one or two of
                -- the query's lexemes; the same sums as weighing every lexeme).
                -- A lexeme beyond term_count has a NULL query, and ts_rank, strict, a
                -- NULL rank without being called (no CASE per lexeme and row); 1 - rank
                -- is at least 1 - 0.99763 (a lexeme keeps at most 256 positions, and
                -- sum(1/i^2, i <= 256) / (pi^2/6) = 0.99763), so the division needs no
                -- guard (session 16: both dropped, the same values).
                SELECT t.document_id, t.subject_id, t.row_tid,
                       (
                         CASE WHEN t.r1 > 0 THEN idfs[1] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r1)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r1)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r2 > 0 THEN idfs[2] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r2)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r2)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r3 > 0 THEN idfs[3] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r3)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r3)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r4 > 0 THEN idfs[4] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r4)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r4)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r5 > 0 THEN idfs[5] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r5)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r5)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r6 > 0 THEN idfs[6] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r6)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r6)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r7 > 0 THEN idfs[7] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r7)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r7)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r8 > 0 THEN idfs[8] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r8)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r8)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r9 > 0 THEN idfs[9] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r9)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r9)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r10 > 0 THEN idfs[10] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r10)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r10)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r11 > 0 THEN idfs[11] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r11)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r11)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r12 > 0 THEN idfs[12] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r12)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r12)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r13 > 0 THEN idfs[13] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r13)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r13)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r14 > 0 THEN idfs[14] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r14)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r14)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r15 > 0 THEN idfs[15] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r15)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r15)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r16 > 0 THEN idfs[16] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r16)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r16)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r17 > 0 THEN idfs[17] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r17)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r17)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r18 > 0 THEN idfs[18] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r18)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r18)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r19 > 0 THEN idfs[19] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r19)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r19)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r20 > 0 THEN idfs[20] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r20)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r20)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r21 > 0 THEN idfs[21] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r21)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r21)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r22 > 0 THEN idfs[22] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r22)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r22)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r23 > 0 THEN idfs[23] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r23)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r23)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r24 > 0 THEN idfs[24] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r24)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r24)) - 0.5) + t.norm) ELSE 0.0 END
                       )::double precision AS score
                FROM term_frequencies AS t
            )
            SELECT 'fulltext'::text, r.document_id, r.subject_id,
                   -- equal scores share a rank, so ties stay ties through fusion;
                   -- ranked after the LIMIT (session 8): every row scoring more
                   -- than a kept row is kept, so its rank is the same, and the
                   -- sort keeps the top `cap` alone instead of ordering every
                   -- candidate twice around a window over all of them
                   (pg_catalog.rank() OVER (ORDER BY r.score DESC))::integer,
                   r.score, r.row_tid
            FROM (SELECT s.document_id, s.subject_id, s.row_tid, s.score
                  FROM scored AS s
                  ORDER BY s.score DESC, s.subject_id
                  LIMIT cap) AS r
            ORDER BY r.score DESC, r.subject_id;
    ELSIF term_count <= 4 AND NOT grouped AND NOT all_pass_needed AND NOT any_dense THEN
        RETURN QUERY
            -- The next statement with the scorer unrolled to 4 query lexemes
            -- (session 9): most bench queries have 2-4. Executor start-up
            -- compiles every unrolled term whether it is used or not; the
            -- left-out terms 5-8 would add +0.0 (scores are never -0.0), so
            -- the sums are the same bits.
            -- The any-term pass computes each candidate's ts_rank per lexeme
            -- and length norm as it reads the row (session 9): the scan node
            -- projects them, so no subquery layer between the pass's LIMIT
            -- and the scorer copies every candidate and its tsvector again
            -- (the LIMIT stops the scan, so no row beyond the budget is
            -- scored). The pass's one-time filter (scan_q present, not a
            -- small team) is what this branch of the IF already holds, so
            -- the statement does not test it: no Result node per row.
            -- The scan projects each query lexeme's ts_rank (one binary search in
            -- the tsvector per query lexeme, unrolled: a per-row subquery over
            -- the lexemes costs five times as much); the scorer recovers tf from it.
            WITH any_pass AS NOT MATERIALIZED (
                SELECT d.document_id, d.subject_id, d.ctid AS row_tid,
                       k1 * (1.0 - b + b * pg_catalog.length(d.search_vector) / average_length) AS norm,
                       pg_catalog.ts_rank('{1,1,1,1}'::real [], d.search_vector, tq1, 0) AS r1,
                       pg_catalog.ts_rank('{1,1,1,1}'::real [], d.search_vector, tq2, 0) AS r2,
                       pg_catalog.ts_rank('{1,1,1,1}'::real [], d.search_vector, tq3, 0) AS r3,
                       pg_catalog.ts_rank('{1,1,1,1}'::real [], d.search_vector, tq4, 0) AS r4
                FROM dm_private.search_documents AS d
                -- the keys select exactly the team's documents holding one of
                -- scan_q's lexemes (plus, on a prefix collision, another
                -- team's, which the team predicate drops): within the team
                -- that is what @@ scan_q (an OR of those lexemes) tests, so
                -- the pass does not test it again on every row (session 8);
                -- the team predicate is written so that no other index
                -- serves it (a BitmapAnd with the team's btree range would
                -- read every row of the team)
                WHERE dm_private.search_team_lexemes(d.team_id, d.search_vector) OPERATOR(pg_catalog.&&) scan_keys
                  AND (d.team_id = team) IS TRUE
                  AND d.subject_kind = 'evidence'
                  AND d.is_recallable
                  AND d.owner_profile_id <> ALL (disabled)
                  AND (d.valid_from IS NULL OR d.valid_from <= valid_at)
                  AND (d.valid_to IS NULL OR d.valid_to > valid_at)
                  AND (d.known_from IS NULL OR d.known_from <= known_at)
                  AND (d.known_to IS NULL OR d.known_to > known_at)
                  AND d.policy_labels <@ scopes
                  AND (NOT request_filtered
                       OR ((source_groups IS NULL OR d.source_group = ANY (source_groups))
                           AND (memory_types IS NULL OR d.memory_type::text = ANY (memory_types))
                           AND (created_after IS NULL OR d.source_created_at >= created_after)
                           AND (created_before IS NULL OR d.source_created_at < created_before)
                           AND (NOT has_window OR (d.source_created_at IS NOT NULL
                                                   AND (window_from IS NULL OR d.source_created_at >= window_from)
                                                   AND (window_to IS NULL OR d.source_created_at <= window_to)))
                           AND d.subject_id <> ALL (known_ids)))
                LIMIT budget
            ),
            scored AS (
                -- ts_rank of a one-lexeme query with unit weights is
                -- sum(1/i^2, i = 1..tf) / (pi^2/6), so tf is recovered from the
                -- remainder of that series (about 1/(tf + 0.5)). A lexeme the
                -- document does not hold (ts_rank 0: tf 0) adds exactly 0.0, and one
                -- beyond term_count (NULL) too, so only the held lexemes' tf is
                -- recovered and weighed (session 14: a candidate holds one or two of
                -- the query's lexemes; the same sums as weighing every lexeme).
                -- A lexeme beyond term_count has a NULL query, and ts_rank, strict, a
                -- NULL rank without being called (no CASE per lexeme and row); 1 - rank
                -- is at least 1 - 0.99763 (a lexeme keeps at most 256 positions, and
                -- sum(1/i^2, i <= 256) / (pi^2/6) = 0.99763), so the division needs no
                -- guard (session 16: both dropped, the same values).
                SELECT t.document_id, t.subject_id, t.row_tid,
                       (
                         CASE WHEN t.r1 > 0 THEN tw1 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r1)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r1)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r2 > 0 THEN tw2 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r2)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r2)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r3 > 0 THEN tw3 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r3)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r3)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r4 > 0 THEN tw4 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r4)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r4)) - 0.5) + t.norm) ELSE 0.0 END
                       )::double precision AS score
                FROM any_pass AS t
            )
            SELECT 'fulltext'::text, r.document_id, r.subject_id,
                   -- equal scores share a rank, so ties stay ties through fusion;
                   -- ranked after the LIMIT (session 8): every row scoring more
                   -- than a kept row is kept, so its rank is the same, and the
                   -- sort keeps the top `cap` alone instead of ordering every
                   -- candidate twice around a window over all of them
                   (pg_catalog.rank() OVER (ORDER BY r.score DESC))::integer,
                   r.score, r.row_tid
            FROM (SELECT s.document_id, s.subject_id, s.row_tid, s.score
                  FROM scored AS s
                  ORDER BY s.score DESC, s.subject_id
                  LIMIT cap) AS r
            ORDER BY r.score DESC, r.subject_id;
    ELSIF term_count <= 8 AND NOT grouped AND NOT all_pass_needed AND NOT any_dense THEN
        RETURN QUERY
            -- A larger team: the any-term GIN pass alone, without the exchange
            -- context (as the next statement), when the all-terms pass is not
            -- needed: the any-term pass then holds every all-terms match, the
            -- next statement's all_pass is empty and own_matched is any_pass.
            -- Its own statement (session 8), so that these calls (most) do not
            -- initialise the all-terms scans and the anti-join.
            -- The any-term pass computes each candidate's ts_rank per lexeme
            -- and length norm as it reads the row (session 9): the scan node
            -- projects them, so no subquery layer between the pass's LIMIT
            -- and the scorer copies every candidate and its tsvector again
            -- (the LIMIT stops the scan, so no row beyond the budget is
            -- scored). The pass's one-time filter (scan_q present, not a
            -- small team) is what this branch of the IF already holds, so
            -- the statement does not test it: no Result node per row.
            -- The scan projects each query lexeme's ts_rank (one binary search in
            -- the tsvector per query lexeme, unrolled: a per-row subquery over
            -- the lexemes costs five times as much); the scorer recovers tf from it.
            WITH any_pass AS NOT MATERIALIZED (
                SELECT d.document_id, d.subject_id, d.ctid AS row_tid,
                       k1 * (1.0 - b + b * pg_catalog.length(d.search_vector) / average_length) AS norm,
                       pg_catalog.ts_rank('{1,1,1,1}'::real [], d.search_vector, tq1, 0) AS r1,
                       pg_catalog.ts_rank('{1,1,1,1}'::real [], d.search_vector, tq2, 0) AS r2,
                       pg_catalog.ts_rank('{1,1,1,1}'::real [], d.search_vector, tq3, 0) AS r3,
                       pg_catalog.ts_rank('{1,1,1,1}'::real [], d.search_vector, tq4, 0) AS r4,
                       pg_catalog.ts_rank('{1,1,1,1}'::real [], d.search_vector, tq5, 0) AS r5,
                       pg_catalog.ts_rank('{1,1,1,1}'::real [], d.search_vector, tq6, 0) AS r6,
                       pg_catalog.ts_rank('{1,1,1,1}'::real [], d.search_vector, tq7, 0) AS r7,
                       pg_catalog.ts_rank('{1,1,1,1}'::real [], d.search_vector, tq8, 0) AS r8
                FROM dm_private.search_documents AS d
                -- the keys select exactly the team's documents holding one of
                -- scan_q's lexemes (plus, on a prefix collision, another
                -- team's, which the team predicate drops): within the team
                -- that is what @@ scan_q (an OR of those lexemes) tests, so
                -- the pass does not test it again on every row (session 8);
                -- the team predicate is written so that no other index
                -- serves it (a BitmapAnd with the team's btree range would
                -- read every row of the team)
                WHERE dm_private.search_team_lexemes(d.team_id, d.search_vector) OPERATOR(pg_catalog.&&) scan_keys
                  AND (d.team_id = team) IS TRUE
                  AND d.subject_kind = 'evidence'
                  AND d.is_recallable
                  AND d.owner_profile_id <> ALL (disabled)
                  AND (d.valid_from IS NULL OR d.valid_from <= valid_at)
                  AND (d.valid_to IS NULL OR d.valid_to > valid_at)
                  AND (d.known_from IS NULL OR d.known_from <= known_at)
                  AND (d.known_to IS NULL OR d.known_to > known_at)
                  AND d.policy_labels <@ scopes
                  AND (NOT request_filtered
                       OR ((source_groups IS NULL OR d.source_group = ANY (source_groups))
                           AND (memory_types IS NULL OR d.memory_type::text = ANY (memory_types))
                           AND (created_after IS NULL OR d.source_created_at >= created_after)
                           AND (created_before IS NULL OR d.source_created_at < created_before)
                           AND (NOT has_window OR (d.source_created_at IS NOT NULL
                                                   AND (window_from IS NULL OR d.source_created_at >= window_from)
                                                   AND (window_to IS NULL OR d.source_created_at <= window_to)))
                           AND d.subject_id <> ALL (known_ids)))
                LIMIT budget
            ),
            scored AS (
                -- ts_rank of a one-lexeme query with unit weights is
                -- sum(1/i^2, i = 1..tf) / (pi^2/6), so tf is recovered from the
                -- remainder of that series (about 1/(tf + 0.5)). A lexeme the
                -- document does not hold (ts_rank 0: tf 0) adds exactly 0.0, and one
                -- beyond term_count (NULL) too, so only the held lexemes' tf is
                -- recovered and weighed (session 14: a candidate holds one or two of
                -- the query's lexemes; the same sums as weighing every lexeme).
                -- A lexeme beyond term_count has a NULL query, and ts_rank, strict, a
                -- NULL rank without being called (no CASE per lexeme and row); 1 - rank
                -- is at least 1 - 0.99763 (a lexeme keeps at most 256 positions, and
                -- sum(1/i^2, i <= 256) / (pi^2/6) = 0.99763), so the division needs no
                -- guard (session 16: both dropped, the same values).
                SELECT t.document_id, t.subject_id, t.row_tid,
                       (
                         CASE WHEN t.r1 > 0 THEN tw1 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r1)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r1)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r2 > 0 THEN tw2 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r2)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r2)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r3 > 0 THEN tw3 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r3)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r3)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r4 > 0 THEN tw4 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r4)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r4)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r5 > 0 THEN tw5 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r5)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r5)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r6 > 0 THEN tw6 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r6)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r6)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r7 > 0 THEN tw7 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r7)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r7)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r8 > 0 THEN tw8 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r8)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r8)) - 0.5) + t.norm) ELSE 0.0 END
                       )::double precision AS score
                FROM any_pass AS t
            )
            SELECT 'fulltext'::text, r.document_id, r.subject_id,
                   -- equal scores share a rank, so ties stay ties through fusion;
                   -- ranked after the LIMIT (session 8): every row scoring more
                   -- than a kept row is kept, so its rank is the same, and the
                   -- sort keeps the top `cap` alone instead of ordering every
                   -- candidate twice around a window over all of them
                   (pg_catalog.rank() OVER (ORDER BY r.score DESC))::integer,
                   r.score, r.row_tid
            FROM (SELECT s.document_id, s.subject_id, s.row_tid, s.score
                  FROM scored AS s
                  ORDER BY s.score DESC, s.subject_id
                  LIMIT cap) AS r
            ORDER BY r.score DESC, r.subject_id;
    ELSIF term_count <= 8 AND NOT grouped THEN
        RETURN QUERY
            -- A larger team: the GIN passes, without the exchange context
            -- (context_radius 0, or a team none of whose evidence has a source
            -- group: then the context CTEs of the next statement read nothing,
            -- and matched is own_matched). Its own statement (session 8), so
            -- that these calls neither initialise the context's scans, windows
            -- and sorts nor copy every candidate into own_matched's store.
            -- The dense ways of both passes (search_documents_team_order_idx,
            -- migration 0053): one walk of the team's eligible documents in
            -- heap order, keeping those that match a dense pass's query. A CTE
            -- is read on demand: each pass takes its first `budget` matches in
            -- that order, the rows a walk of its own would take; when both
            -- passes are dense the team is walked once, as far as the further
            -- pass needs, not twice (session 14: the all-terms walk of a
            -- common-lexeme query read most of a large team again). Never run
            -- when no pass is dense (its readers' one-time filters are false).
            WITH dense_walk AS MATERIALIZED (
                SELECT d.document_id, d.subject_id, d.ctid AS row_tid, d.search_vector, d.source_group, d.sequence_number,
                       -- each row is tested once against walk_q, and against
                       -- the other pass's query only when walk_q is not it
                       any_dense AND (walk_is_scan OR (d.search_vector @@ scan_q) IS TRUE) AS is_any,
                       all_dense AND (walk_is_all OR (d.search_vector @@ all_q) IS TRUE) AS is_all
                FROM dm_private.search_documents AS d
                WHERE dm_private.search_team_order_key(d.team_id) = team
                  AND (d.team_id = team) IS TRUE
                  AND (d.search_vector @@ walk_q) IS TRUE
                  AND d.subject_kind = 'evidence'
                  AND d.is_recallable
                  AND d.owner_profile_id <> ALL (disabled)
                  AND (d.valid_from IS NULL OR d.valid_from <= valid_at)
                  AND (d.valid_to IS NULL OR d.valid_to > valid_at)
                  AND (d.known_from IS NULL OR d.known_from <= known_at)
                  AND (d.known_to IS NULL OR d.known_to > known_at)
                  AND d.policy_labels <@ scopes
                  AND (NOT request_filtered
                       OR ((source_groups IS NULL OR d.source_group = ANY (source_groups))
                           AND (memory_types IS NULL OR d.memory_type::text = ANY (memory_types))
                           AND (created_after IS NULL OR d.source_created_at >= created_after)
                           AND (created_before IS NULL OR d.source_created_at < created_before)
                           AND (NOT has_window OR (d.source_created_at IS NOT NULL
                                                   AND (window_from IS NULL OR d.source_created_at >= window_from)
                                                   AND (window_to IS NULL OR d.source_created_at <= window_to)))
                           AND d.subject_id <> ALL (known_ids)))
            ),
            -- read once (by own_matched), so not materialised: its rows go
            -- straight into own_matched's store, one tuplestore copy of each
            -- candidate and its tsvector less (session 8)
            any_pass AS NOT MATERIALIZED (
                (SELECT d.document_id, d.subject_id, d.ctid AS row_tid, d.search_vector, d.source_group, d.sequence_number
                FROM dm_private.search_documents AS d
                WHERE scan_q IS NOT NULL
                  AND NOT small_team
                  AND NOT any_dense
                  -- the keys select exactly the team's documents holding one of
                  -- scan_q's lexemes (plus, on a prefix collision, another
                  -- team's, which the team predicate drops): within the team
                  -- that is what @@ scan_q (an OR of those lexemes) tests, so
                  -- the pass does not test it again on every row (session 8);
                  -- the team predicate is written so that no other index
                  -- serves it (a BitmapAnd with the team's btree range would
                  -- read every row of the team)
                  AND dm_private.search_team_lexemes(d.team_id, d.search_vector) OPERATOR(pg_catalog.&&) scan_keys
                  AND (d.team_id = team) IS TRUE
                  AND d.subject_kind = 'evidence'
                  AND d.is_recallable
                  AND d.owner_profile_id <> ALL (disabled)
                  AND (d.valid_from IS NULL OR d.valid_from <= valid_at)
                  AND (d.valid_to IS NULL OR d.valid_to > valid_at)
                  AND (d.known_from IS NULL OR d.known_from <= known_at)
                  AND (d.known_to IS NULL OR d.known_to > known_at)
                  AND d.policy_labels <@ scopes
                  AND (NOT request_filtered
                       OR ((source_groups IS NULL OR d.source_group = ANY (source_groups))
                           AND (memory_types IS NULL OR d.memory_type::text = ANY (memory_types))
                           AND (created_after IS NULL OR d.source_created_at >= created_after)
                           AND (created_before IS NULL OR d.source_created_at < created_before)
                           AND (NOT has_window OR (d.source_created_at IS NOT NULL
                                                   AND (window_from IS NULL OR d.source_created_at >= window_from)
                                                   AND (window_to IS NULL OR d.source_created_at <= window_to)))
                           AND d.subject_id <> ALL (known_ids)))
                LIMIT budget)
                UNION ALL
                -- the dense way: the same first rows in heap order
                (SELECT w.document_id, w.subject_id, w.row_tid, w.search_vector, w.source_group, w.sequence_number
                FROM dense_walk AS w
                WHERE any_dense AND w.is_any
                LIMIT budget)
            ),
            all_pass AS MATERIALIZED (
                -- the keyed way (all_keys: every lexeme of all_q is required)
                (SELECT d.document_id, d.subject_id, d.ctid AS row_tid, d.search_vector, d.source_group, d.sequence_number
                FROM dm_private.search_documents AS d
                WHERE all_pass_needed
                  AND NOT small_team
                  AND all_keys IS NOT NULL
                  AND NOT all_dense
                  AND dm_private.search_team_lexemes(d.team_id, d.search_vector) OPERATOR(pg_catalog.@>) all_keys
                  AND (d.team_id = team) IS TRUE
                  AND (d.search_vector @@ all_q) IS TRUE
                  AND d.subject_kind = 'evidence'
                  AND d.is_recallable
                  AND d.owner_profile_id <> ALL (disabled)
                  AND (d.valid_from IS NULL OR d.valid_from <= valid_at)
                  AND (d.valid_to IS NULL OR d.valid_to > valid_at)
                  AND (d.known_from IS NULL OR d.known_from <= known_at)
                  AND (d.known_to IS NULL OR d.known_to > known_at)
                  AND d.policy_labels <@ scopes
                  AND (NOT request_filtered
                       OR ((source_groups IS NULL OR d.source_group = ANY (source_groups))
                           AND (memory_types IS NULL OR d.memory_type::text = ANY (memory_types))
                           AND (created_after IS NULL OR d.source_created_at >= created_after)
                           AND (created_before IS NULL OR d.source_created_at < created_before)
                           AND (NOT has_window OR (d.source_created_at IS NOT NULL
                                                   AND (window_from IS NULL OR d.source_created_at >= window_from)
                                                   AND (window_to IS NULL OR d.source_created_at <= window_to)))
                           AND d.subject_id <> ALL (known_ids)))
                LIMIT budget)
                UNION ALL
                -- the dense way (all_dense): the same first rows in heap order
                (SELECT w.document_id, w.subject_id, w.row_tid, w.search_vector, w.source_group, w.sequence_number
                FROM dense_walk AS w
                WHERE all_dense AND w.is_all
                LIMIT budget)
                UNION ALL
                -- any other all_q (or, exclusions): the (team_id, search_vector) index
                (SELECT d.document_id, d.subject_id, d.ctid AS row_tid, d.search_vector, d.source_group, d.sequence_number
                FROM dm_private.search_documents AS d
                WHERE all_pass_needed
                  AND NOT small_team
                  AND all_keys IS NULL
                  AND d.team_id = team
                  AND d.search_vector @@ all_q
                  AND d.subject_kind = 'evidence'
                  AND d.is_recallable
                  AND d.owner_profile_id <> ALL (disabled)
                  AND (d.valid_from IS NULL OR d.valid_from <= valid_at)
                  AND (d.valid_to IS NULL OR d.valid_to > valid_at)
                  AND (d.known_from IS NULL OR d.known_from <= known_at)
                  AND (d.known_to IS NULL OR d.known_to > known_at)
                  AND d.policy_labels <@ scopes
                  AND (NOT request_filtered
                       OR ((source_groups IS NULL OR d.source_group = ANY (source_groups))
                           AND (memory_types IS NULL OR d.memory_type::text = ANY (memory_types))
                           AND (created_after IS NULL OR d.source_created_at >= created_after)
                           AND (created_before IS NULL OR d.source_created_at < created_before)
                           AND (NOT has_window OR (d.source_created_at IS NOT NULL
                                                   AND (window_from IS NULL OR d.source_created_at >= window_from)
                                                   AND (window_to IS NULL OR d.source_created_at <= window_to)))
                           AND d.subject_id <> ALL (known_ids)))
                LIMIT budget)
            ),
            -- read once (by term_frequencies): not materialised
            own_matched AS NOT MATERIALIZED (
                SELECT b.document_id, b.subject_id, b.row_tid, b.search_vector, b.source_group, b.sequence_number FROM all_pass AS b
                UNION ALL
                SELECT a.document_id, a.subject_id, a.row_tid, a.search_vector, a.source_group, a.sequence_number FROM any_pass AS a
                -- a hashed subplan (document ids are never NULL, so NOT IN is NOT
                -- EXISTS): the anti-join the planner chose for NOT EXISTS, a
                -- nested loop rescanning all_pass for every any_pass row, read
                -- up to budget x budget tuples (half of a 10k+ team's call)
                WHERE a.document_id NOT IN (SELECT b.document_id FROM all_pass AS b)
            ),
            term_frequencies AS (
                -- ts_rank of each one-lexeme query (r1, r2, ...): one binary search in
                -- the tsvector per query lexeme, unrolled (a per-row subquery over
                -- the lexemes costs five times as much); the scorer recovers tf
                -- from it. OFFSET 0 keeps each computed once.
                SELECT m.document_id, m.subject_id, m.row_tid,
                       k1 * (1.0 - b + b * pg_catalog.length(m.search_vector) / average_length) AS norm,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, tq1, 0) AS r1,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, tq2, 0) AS r2,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, tq3, 0) AS r3,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, tq4, 0) AS r4,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, tq5, 0) AS r5,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, tq6, 0) AS r6,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, tq7, 0) AS r7,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, tq8, 0) AS r8
                FROM own_matched AS m
                OFFSET 0
            ),
            scored AS (
                -- ts_rank of a one-lexeme query with unit weights is
                -- sum(1/i^2, i = 1..tf) / (pi^2/6), so tf is recovered from the
                -- remainder of that series (about 1/(tf + 0.5)). A lexeme the
                -- document does not hold (ts_rank 0: tf 0) adds exactly 0.0, and one
                -- beyond term_count (NULL) too, so only the held lexemes' tf is
                -- recovered and weighed (session 14: a candidate holds one or two of
                -- the query's lexemes; the same sums as weighing every lexeme).
                -- A lexeme beyond term_count has a NULL query, and ts_rank, strict, a
                -- NULL rank without being called (no CASE per lexeme and row); 1 - rank
                -- is at least 1 - 0.99763 (a lexeme keeps at most 256 positions, and
                -- sum(1/i^2, i <= 256) / (pi^2/6) = 0.99763), so the division needs no
                -- guard (session 16: both dropped, the same values).
                SELECT t.document_id, t.subject_id, t.row_tid,
                       (
                         CASE WHEN t.r1 > 0 THEN tw1 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r1)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r1)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r2 > 0 THEN tw2 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r2)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r2)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r3 > 0 THEN tw3 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r3)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r3)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r4 > 0 THEN tw4 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r4)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r4)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r5 > 0 THEN tw5 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r5)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r5)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r6 > 0 THEN tw6 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r6)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r6)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r7 > 0 THEN tw7 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r7)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r7)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r8 > 0 THEN tw8 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r8)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r8)) - 0.5) + t.norm) ELSE 0.0 END
                       )::double precision AS score
                FROM term_frequencies AS t
            )
            SELECT 'fulltext'::text, r.document_id, r.subject_id,
                   -- equal scores share a rank, so ties stay ties through fusion;
                   -- ranked after the LIMIT (session 8): every row scoring more
                   -- than a kept row is kept, so its rank is the same, and the
                   -- sort keeps the top `cap` alone instead of ordering every
                   -- candidate twice around a window over all of them
                   (pg_catalog.rank() OVER (ORDER BY r.score DESC))::integer,
                   r.score, r.row_tid
            FROM (SELECT s.document_id, s.subject_id, s.row_tid, s.score
                  FROM scored AS s
                  ORDER BY s.score DESC, s.subject_id
                  LIMIT cap) AS r
            ORDER BY r.score DESC, r.subject_id;
    ELSIF term_count <= 8 THEN
        RETURN QUERY
            -- A larger team: the GIN passes.
            -- read once (by own_matched), so not materialised: its rows go
            -- straight into own_matched's store, one tuplestore copy of each
            -- candidate and its tsvector less (session 8)
            WITH any_pass AS NOT MATERIALIZED (
                SELECT d.document_id, d.subject_id, d.ctid AS row_tid, d.search_vector, d.source_group, d.sequence_number
                FROM dm_private.search_documents AS d
                WHERE scan_q IS NOT NULL
                  AND NOT small_team
                  -- the keys select exactly the team's documents holding one of
                  -- scan_q's lexemes (plus, on a prefix collision, another
                  -- team's, which the team predicate drops): within the team
                  -- that is what @@ scan_q (an OR of those lexemes) tests, so
                  -- the pass does not test it again on every row (session 8);
                  -- the team predicate is written so that no other index
                  -- serves it (a BitmapAnd with the team's btree range would
                  -- read every row of the team)
                  AND dm_private.search_team_lexemes(d.team_id, d.search_vector) OPERATOR(pg_catalog.&&) scan_keys
                  AND (d.team_id = team) IS TRUE
                  AND d.subject_kind = 'evidence'
                  AND d.is_recallable
                  AND d.owner_profile_id <> ALL (disabled)
                  AND (d.valid_from IS NULL OR d.valid_from <= valid_at)
                  AND (d.valid_to IS NULL OR d.valid_to > valid_at)
                  AND (d.known_from IS NULL OR d.known_from <= known_at)
                  AND (d.known_to IS NULL OR d.known_to > known_at)
                  AND d.policy_labels <@ scopes
                  AND (NOT request_filtered
                       OR ((source_groups IS NULL OR d.source_group = ANY (source_groups))
                           AND (memory_types IS NULL OR d.memory_type::text = ANY (memory_types))
                           AND (created_after IS NULL OR d.source_created_at >= created_after)
                           AND (created_before IS NULL OR d.source_created_at < created_before)
                           AND (NOT has_window OR (d.source_created_at IS NOT NULL
                                                   AND (window_from IS NULL OR d.source_created_at >= window_from)
                                                   AND (window_to IS NULL OR d.source_created_at <= window_to)))
                           AND d.subject_id <> ALL (known_ids)))
                LIMIT budget
            ),
            all_pass AS MATERIALIZED (
                -- the keyed way (all_keys: every lexeme of all_q is required)
                (SELECT d.document_id, d.subject_id, d.ctid AS row_tid, d.search_vector, d.source_group, d.sequence_number
                FROM dm_private.search_documents AS d
                WHERE all_pass_needed
                  AND NOT small_team
                  AND all_keys IS NOT NULL
                  AND dm_private.search_team_lexemes(d.team_id, d.search_vector) OPERATOR(pg_catalog.@>) all_keys
                  AND (d.team_id = team) IS TRUE
                  AND (d.search_vector @@ all_q) IS TRUE
                  AND d.subject_kind = 'evidence'
                  AND d.is_recallable
                  AND d.owner_profile_id <> ALL (disabled)
                  AND (d.valid_from IS NULL OR d.valid_from <= valid_at)
                  AND (d.valid_to IS NULL OR d.valid_to > valid_at)
                  AND (d.known_from IS NULL OR d.known_from <= known_at)
                  AND (d.known_to IS NULL OR d.known_to > known_at)
                  AND d.policy_labels <@ scopes
                  AND (NOT request_filtered
                       OR ((source_groups IS NULL OR d.source_group = ANY (source_groups))
                           AND (memory_types IS NULL OR d.memory_type::text = ANY (memory_types))
                           AND (created_after IS NULL OR d.source_created_at >= created_after)
                           AND (created_before IS NULL OR d.source_created_at < created_before)
                           AND (NOT has_window OR (d.source_created_at IS NOT NULL
                                                   AND (window_from IS NULL OR d.source_created_at >= window_from)
                                                   AND (window_to IS NULL OR d.source_created_at <= window_to)))
                           AND d.subject_id <> ALL (known_ids)))
                LIMIT budget)
                UNION ALL
                -- any other all_q (or, exclusions): the (team_id, search_vector) index
                (SELECT d.document_id, d.subject_id, d.ctid AS row_tid, d.search_vector, d.source_group, d.sequence_number
                FROM dm_private.search_documents AS d
                WHERE all_pass_needed
                  AND NOT small_team
                  AND all_keys IS NULL
                  AND d.team_id = team
                  AND d.search_vector @@ all_q
                  AND d.subject_kind = 'evidence'
                  AND d.is_recallable
                  AND d.owner_profile_id <> ALL (disabled)
                  AND (d.valid_from IS NULL OR d.valid_from <= valid_at)
                  AND (d.valid_to IS NULL OR d.valid_to > valid_at)
                  AND (d.known_from IS NULL OR d.known_from <= known_at)
                  AND (d.known_to IS NULL OR d.known_to > known_at)
                  AND d.policy_labels <@ scopes
                  AND (NOT request_filtered
                       OR ((source_groups IS NULL OR d.source_group = ANY (source_groups))
                           AND (memory_types IS NULL OR d.memory_type::text = ANY (memory_types))
                           AND (created_after IS NULL OR d.source_created_at >= created_after)
                           AND (created_before IS NULL OR d.source_created_at < created_before)
                           AND (NOT has_window OR (d.source_created_at IS NOT NULL
                                                   AND (window_from IS NULL OR d.source_created_at >= window_from)
                                                   AND (window_to IS NULL OR d.source_created_at <= window_to)))
                           AND d.subject_id <> ALL (known_ids)))
                LIMIT budget)
            ),
            own_matched AS MATERIALIZED (
                SELECT b.document_id, b.subject_id, b.row_tid, b.search_vector, b.source_group, b.sequence_number FROM all_pass AS b
                UNION ALL
                SELECT a.document_id, a.subject_id, a.row_tid, a.search_vector, a.source_group, a.sequence_number FROM any_pass AS a
                -- a hashed subplan (document ids are never NULL, so NOT IN is NOT
                -- EXISTS): the anti-join the planner chose for NOT EXISTS, a
                -- nested loop rescanning all_pass for every any_pass row, read
                -- up to budget x budget tuples (half of a 10k+ team's call)
                WHERE a.document_id NOT IN (SELECT b.document_id FROM all_pass AS b)
            ),
            -- Exchange context (fulltext.context_radius > 0, at most 2): the
            -- eligible documents written up to context_radius sequence numbers
            -- after a match in its source group (the reply to a matching turn)
            -- are candidates too, and every candidate with a source group is
            -- scored on its own tsvector concatenated with those of the
            -- recallable documents written up to context_radius before it in
            -- that group (the nearest first): a turn is searched as the exchange
            -- it closes. Evidence without a source group or sequence number is
            -- scored alone.
            --
            -- Both come from one window over the neighbourhood: the recallable
            -- documents the caller may see (a predecessor needs no more), with
            -- their eligibility (a follower needs it). Sequence numbers are one
            -- identity, so a group holds at most context_radius of them in
            -- [s - context_radius, s): the one or two rows before a row in its
            -- group (lag) are all its candidates for predecessor, and a follower
            -- is an eligible row one of whose lags is a match within the radius.
            -- The neighbourhood of a small team is team_rows, already read; of a
            -- larger team, the documents within context_radius of a match, read
            -- as one (team_id, sequence_number) range per run of matches whose
            -- ranges overlap (a speaker's name matches most turns: a handful of
            -- ranges, not an index probe per match and per candidate).
            islands AS (
                SELECT pg_catalog.min(i.sequence_number) - context_radius AS lo,
                       pg_catalog.max(i.sequence_number) + context_radius AS hi
                FROM (SELECT s.sequence_number,
                             pg_catalog.sum(s.gap) OVER (ORDER BY s.sequence_number) AS island
                      FROM (SELECT o.sequence_number,
                                   CASE WHEN o.sequence_number
                                             - pg_catalog.lag(o.sequence_number) OVER (ORDER BY o.sequence_number)
                                             <= 2 * context_radius
                                        THEN 0 ELSE 1 END AS gap
                            FROM own_matched AS o
                            WHERE context_radius > 0
                              AND NOT small_team
                              AND o.source_group IS NOT NULL AND o.sequence_number IS NOT NULL) AS s) AS i
                GROUP BY i.island
            ),
            near_rows AS MATERIALIZED (
                SELECT d.document_id, d.subject_id, d.row_tid, d.search_vector, d.source_group, d.sequence_number,
                       (d.owner_profile_id <> ALL (disabled)
                        AND (d.valid_from IS NULL OR d.valid_from <= valid_at)
                        AND (d.valid_to IS NULL OR d.valid_to > valid_at)
                        AND (d.known_from IS NULL OR d.known_from <= known_at)
                        AND (d.known_to IS NULL OR d.known_to > known_at)
                        AND (NOT request_filtered
                             OR ((source_groups IS NULL OR d.source_group = ANY (source_groups))
                                 AND (memory_types IS NULL OR d.memory_type::text = ANY (memory_types))
                                 AND (created_after IS NULL OR d.source_created_at >= created_after)
                                 AND (created_before IS NULL OR d.source_created_at < created_before)
                                 AND (NOT has_window OR (d.source_created_at IS NOT NULL
                                                         AND (window_from IS NULL OR d.source_created_at >= window_from)
                                                         AND (window_to IS NULL OR d.source_created_at <= window_to)))
                                 AND d.subject_id <> ALL (known_ids)))) AS eligible
                FROM islands AS n
                CROSS JOIN LATERAL (
                    SELECT x.document_id, x.subject_id, x.ctid AS row_tid, x.search_vector, x.source_group, x.sequence_number,
                           x.is_recallable, x.policy_labels, x.owner_profile_id, x.valid_from, x.valid_to,
                           x.known_from, x.known_to, x.memory_type, x.source_created_at
                    FROM dm_private.search_documents AS x
                    WHERE x.team_id = team
                      AND x.subject_kind = 'evidence'
                      AND x.sequence_number >= n.lo
                      AND x.sequence_number <= n.hi
                ) AS d
                WHERE d.is_recallable
                  AND d.policy_labels <@ scopes
                  AND d.source_group IS NOT NULL
            ),
            neighbourhood AS (
                SELECT p.document_id, p.subject_id, p.row_tid, p.search_vector, p.source_group, p.sequence_number, p.eligible,
                       -- a hashed subplan: own_matched holds each document once
                       p.document_id IN (SELECT o.document_id FROM own_matched AS o) AS is_match
                FROM near_rows AS p
                -- is_match computed once, not once per reference below
                OFFSET 0
            ),
            in_context AS (
                SELECT w.document_id, w.subject_id, w.row_tid, w.search_vector, w.sequence_number, w.eligible, w.is_match,
                       pg_catalog.lag(w.sequence_number, 1) OVER g AS sequence_1,
                       pg_catalog.lag(w.search_vector, 1) OVER g AS vector_1,
                       pg_catalog.lag(w.is_match, 1) OVER g AS match_1,
                       pg_catalog.lag(w.sequence_number, 2) OVER g AS sequence_2,
                       pg_catalog.lag(w.search_vector, 2) OVER g AS vector_2,
                       pg_catalog.lag(w.is_match, 2) OVER g AS match_2
                FROM neighbourhood AS w
                WINDOW g AS (PARTITION BY w.source_group ORDER BY w.sequence_number)
            ),
            matched AS (
                -- without context, and evidence without a group or sequence number: alone
                SELECT o.document_id, o.subject_id, o.row_tid, o.search_vector
                FROM own_matched AS o
                WHERE context_radius = 0 OR o.source_group IS NULL OR o.sequence_number IS NULL
                UNION ALL
                -- the matches and their followers, each once, with their predecessors
                SELECT c.document_id, c.subject_id, c.row_tid,
                       CASE WHEN c.sequence_2 >= c.sequence_number - context_radius
                                THEN c.search_vector OPERATOR(pg_catalog.||) c.vector_1
                                     OPERATOR(pg_catalog.||) c.vector_2
                            WHEN c.sequence_1 >= c.sequence_number - context_radius
                                THEN c.search_vector OPERATOR(pg_catalog.||) c.vector_1
                            ELSE c.search_vector END AS search_vector
                FROM in_context AS c
                WHERE c.is_match
                   OR (c.eligible
                       AND ((c.match_1 AND c.sequence_1 >= c.sequence_number - context_radius)
                            OR (c.match_2 AND c.sequence_2 >= c.sequence_number - context_radius)))
            ),
            term_frequencies AS (
                -- ts_rank of each one-lexeme query (r1, r2, ...): one binary search in
                -- the tsvector per query lexeme, unrolled (a per-row subquery over
                -- the lexemes costs five times as much); the scorer recovers tf
                -- from it. OFFSET 0 keeps each computed once.
                SELECT m.document_id, m.subject_id, m.row_tid,
                       k1 * (1.0 - b + b * pg_catalog.length(m.search_vector) / average_length) AS norm,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, tq1, 0) AS r1,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, tq2, 0) AS r2,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, tq3, 0) AS r3,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, tq4, 0) AS r4,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, tq5, 0) AS r5,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, tq6, 0) AS r6,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, tq7, 0) AS r7,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, tq8, 0) AS r8
                FROM matched AS m
                OFFSET 0
            ),
            scored AS (
                -- ts_rank of a one-lexeme query with unit weights is
                -- sum(1/i^2, i = 1..tf) / (pi^2/6), so tf is recovered from the
                -- remainder of that series (about 1/(tf + 0.5)). A lexeme the
                -- document does not hold (ts_rank 0: tf 0) adds exactly 0.0, and one
                -- beyond term_count (NULL) too, so only the held lexemes' tf is
                -- recovered and weighed (session 14: a candidate holds one or two of
                -- the query's lexemes; the same sums as weighing every lexeme).
                -- A lexeme beyond term_count has a NULL query, and ts_rank, strict, a
                -- NULL rank without being called (no CASE per lexeme and row); 1 - rank
                -- is at least 1 - 0.99763 (a lexeme keeps at most 256 positions, and
                -- sum(1/i^2, i <= 256) / (pi^2/6) = 0.99763), so the division needs no
                -- guard (session 16: both dropped, the same values).
                SELECT t.document_id, t.subject_id, t.row_tid,
                       (
                         CASE WHEN t.r1 > 0 THEN tw1 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r1)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r1)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r2 > 0 THEN tw2 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r2)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r2)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r3 > 0 THEN tw3 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r3)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r3)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r4 > 0 THEN tw4 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r4)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r4)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r5 > 0 THEN tw5 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r5)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r5)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r6 > 0 THEN tw6 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r6)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r6)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r7 > 0 THEN tw7 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r7)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r7)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r8 > 0 THEN tw8 * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r8)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r8)) - 0.5) + t.norm) ELSE 0.0 END
                       )::double precision AS score
                FROM term_frequencies AS t
            )
            SELECT 'fulltext'::text, r.document_id, r.subject_id,
                   -- equal scores share a rank, so ties stay ties through fusion;
                   -- ranked after the LIMIT (session 8): every row scoring more
                   -- than a kept row is kept, so its rank is the same, and the
                   -- sort keeps the top `cap` alone instead of ordering every
                   -- candidate twice around a window over all of them
                   (pg_catalog.rank() OVER (ORDER BY r.score DESC))::integer,
                   r.score, r.row_tid
            FROM (SELECT s.document_id, s.subject_id, s.row_tid, s.score
                  FROM scored AS s
                  ORDER BY s.score DESC, s.subject_id
                  LIMIT cap) AS r
            ORDER BY r.score DESC, r.subject_id;
    ELSE
        RETURN QUERY
            -- A larger team: the GIN passes.
            -- read once (by own_matched), so not materialised: its rows go
            -- straight into own_matched's store, one tuplestore copy of each
            -- candidate and its tsvector less (session 8)
            WITH any_pass AS NOT MATERIALIZED (
                SELECT d.document_id, d.subject_id, d.ctid AS row_tid, d.search_vector, d.source_group, d.sequence_number
                FROM dm_private.search_documents AS d
                WHERE scan_q IS NOT NULL
                  AND NOT small_team
                  -- the keys select exactly the team's documents holding one of
                  -- scan_q's lexemes (plus, on a prefix collision, another
                  -- team's, which the team predicate drops): within the team
                  -- that is what @@ scan_q (an OR of those lexemes) tests, so
                  -- the pass does not test it again on every row (session 8);
                  -- the team predicate is written so that no other index
                  -- serves it (a BitmapAnd with the team's btree range would
                  -- read every row of the team)
                  AND dm_private.search_team_lexemes(d.team_id, d.search_vector) OPERATOR(pg_catalog.&&) scan_keys
                  AND (d.team_id = team) IS TRUE
                  AND d.subject_kind = 'evidence'
                  AND d.is_recallable
                  AND d.owner_profile_id <> ALL (disabled)
                  AND (d.valid_from IS NULL OR d.valid_from <= valid_at)
                  AND (d.valid_to IS NULL OR d.valid_to > valid_at)
                  AND (d.known_from IS NULL OR d.known_from <= known_at)
                  AND (d.known_to IS NULL OR d.known_to > known_at)
                  AND d.policy_labels <@ scopes
                  AND (NOT request_filtered
                       OR ((source_groups IS NULL OR d.source_group = ANY (source_groups))
                           AND (memory_types IS NULL OR d.memory_type::text = ANY (memory_types))
                           AND (created_after IS NULL OR d.source_created_at >= created_after)
                           AND (created_before IS NULL OR d.source_created_at < created_before)
                           AND (NOT has_window OR (d.source_created_at IS NOT NULL
                                                   AND (window_from IS NULL OR d.source_created_at >= window_from)
                                                   AND (window_to IS NULL OR d.source_created_at <= window_to)))
                           AND d.subject_id <> ALL (known_ids)))
                LIMIT budget
            ),
            all_pass AS MATERIALIZED (
                -- the keyed way (all_keys: every lexeme of all_q is required)
                (SELECT d.document_id, d.subject_id, d.ctid AS row_tid, d.search_vector, d.source_group, d.sequence_number
                FROM dm_private.search_documents AS d
                WHERE all_pass_needed
                  AND NOT small_team
                  AND all_keys IS NOT NULL
                  AND dm_private.search_team_lexemes(d.team_id, d.search_vector) OPERATOR(pg_catalog.@>) all_keys
                  AND (d.team_id = team) IS TRUE
                  AND (d.search_vector @@ all_q) IS TRUE
                  AND d.subject_kind = 'evidence'
                  AND d.is_recallable
                  AND d.owner_profile_id <> ALL (disabled)
                  AND (d.valid_from IS NULL OR d.valid_from <= valid_at)
                  AND (d.valid_to IS NULL OR d.valid_to > valid_at)
                  AND (d.known_from IS NULL OR d.known_from <= known_at)
                  AND (d.known_to IS NULL OR d.known_to > known_at)
                  AND d.policy_labels <@ scopes
                  AND (NOT request_filtered
                       OR ((source_groups IS NULL OR d.source_group = ANY (source_groups))
                           AND (memory_types IS NULL OR d.memory_type::text = ANY (memory_types))
                           AND (created_after IS NULL OR d.source_created_at >= created_after)
                           AND (created_before IS NULL OR d.source_created_at < created_before)
                           AND (NOT has_window OR (d.source_created_at IS NOT NULL
                                                   AND (window_from IS NULL OR d.source_created_at >= window_from)
                                                   AND (window_to IS NULL OR d.source_created_at <= window_to)))
                           AND d.subject_id <> ALL (known_ids)))
                LIMIT budget)
                UNION ALL
                -- any other all_q (or, exclusions): the (team_id, search_vector) index
                (SELECT d.document_id, d.subject_id, d.ctid AS row_tid, d.search_vector, d.source_group, d.sequence_number
                FROM dm_private.search_documents AS d
                WHERE all_pass_needed
                  AND NOT small_team
                  AND all_keys IS NULL
                  AND d.team_id = team
                  AND d.search_vector @@ all_q
                  AND d.subject_kind = 'evidence'
                  AND d.is_recallable
                  AND d.owner_profile_id <> ALL (disabled)
                  AND (d.valid_from IS NULL OR d.valid_from <= valid_at)
                  AND (d.valid_to IS NULL OR d.valid_to > valid_at)
                  AND (d.known_from IS NULL OR d.known_from <= known_at)
                  AND (d.known_to IS NULL OR d.known_to > known_at)
                  AND d.policy_labels <@ scopes
                  AND (NOT request_filtered
                       OR ((source_groups IS NULL OR d.source_group = ANY (source_groups))
                           AND (memory_types IS NULL OR d.memory_type::text = ANY (memory_types))
                           AND (created_after IS NULL OR d.source_created_at >= created_after)
                           AND (created_before IS NULL OR d.source_created_at < created_before)
                           AND (NOT has_window OR (d.source_created_at IS NOT NULL
                                                   AND (window_from IS NULL OR d.source_created_at >= window_from)
                                                   AND (window_to IS NULL OR d.source_created_at <= window_to)))
                           AND d.subject_id <> ALL (known_ids)))
                LIMIT budget)
            ),
            own_matched AS MATERIALIZED (
                SELECT b.document_id, b.subject_id, b.row_tid, b.search_vector, b.source_group, b.sequence_number FROM all_pass AS b
                UNION ALL
                SELECT a.document_id, a.subject_id, a.row_tid, a.search_vector, a.source_group, a.sequence_number FROM any_pass AS a
                -- a hashed subplan (document ids are never NULL, so NOT IN is NOT
                -- EXISTS): the anti-join the planner chose for NOT EXISTS, a
                -- nested loop rescanning all_pass for every any_pass row, read
                -- up to budget x budget tuples (half of a 10k+ team's call)
                WHERE a.document_id NOT IN (SELECT b.document_id FROM all_pass AS b)
            ),
            -- Exchange context (fulltext.context_radius > 0, at most 2): the
            -- eligible documents written up to context_radius sequence numbers
            -- after a match in its source group (the reply to a matching turn)
            -- are candidates too, and every candidate with a source group is
            -- scored on its own tsvector concatenated with those of the
            -- recallable documents written up to context_radius before it in
            -- that group (the nearest first): a turn is searched as the exchange
            -- it closes. Evidence without a source group or sequence number is
            -- scored alone.
            --
            -- Both come from one window over the neighbourhood: the recallable
            -- documents the caller may see (a predecessor needs no more), with
            -- their eligibility (a follower needs it). Sequence numbers are one
            -- identity, so a group holds at most context_radius of them in
            -- [s - context_radius, s): the one or two rows before a row in its
            -- group (lag) are all its candidates for predecessor, and a follower
            -- is an eligible row one of whose lags is a match within the radius.
            -- The neighbourhood of a small team is team_rows, already read; of a
            -- larger team, the documents within context_radius of a match, read
            -- as one (team_id, sequence_number) range per run of matches whose
            -- ranges overlap (a speaker's name matches most turns: a handful of
            -- ranges, not an index probe per match and per candidate).
            islands AS (
                SELECT pg_catalog.min(i.sequence_number) - context_radius AS lo,
                       pg_catalog.max(i.sequence_number) + context_radius AS hi
                FROM (SELECT s.sequence_number,
                             pg_catalog.sum(s.gap) OVER (ORDER BY s.sequence_number) AS island
                      FROM (SELECT o.sequence_number,
                                   CASE WHEN o.sequence_number
                                             - pg_catalog.lag(o.sequence_number) OVER (ORDER BY o.sequence_number)
                                             <= 2 * context_radius
                                        THEN 0 ELSE 1 END AS gap
                            FROM own_matched AS o
                            WHERE context_radius > 0
                              AND NOT small_team
                              AND o.source_group IS NOT NULL AND o.sequence_number IS NOT NULL) AS s) AS i
                GROUP BY i.island
            ),
            near_rows AS MATERIALIZED (
                SELECT d.document_id, d.subject_id, d.row_tid, d.search_vector, d.source_group, d.sequence_number,
                       (d.owner_profile_id <> ALL (disabled)
                        AND (d.valid_from IS NULL OR d.valid_from <= valid_at)
                        AND (d.valid_to IS NULL OR d.valid_to > valid_at)
                        AND (d.known_from IS NULL OR d.known_from <= known_at)
                        AND (d.known_to IS NULL OR d.known_to > known_at)
                        AND (NOT request_filtered
                             OR ((source_groups IS NULL OR d.source_group = ANY (source_groups))
                                 AND (memory_types IS NULL OR d.memory_type::text = ANY (memory_types))
                                 AND (created_after IS NULL OR d.source_created_at >= created_after)
                                 AND (created_before IS NULL OR d.source_created_at < created_before)
                                 AND (NOT has_window OR (d.source_created_at IS NOT NULL
                                                         AND (window_from IS NULL OR d.source_created_at >= window_from)
                                                         AND (window_to IS NULL OR d.source_created_at <= window_to)))
                                 AND d.subject_id <> ALL (known_ids)))) AS eligible
                FROM islands AS n
                CROSS JOIN LATERAL (
                    SELECT x.document_id, x.subject_id, x.ctid AS row_tid, x.search_vector, x.source_group, x.sequence_number,
                           x.is_recallable, x.policy_labels, x.owner_profile_id, x.valid_from, x.valid_to,
                           x.known_from, x.known_to, x.memory_type, x.source_created_at
                    FROM dm_private.search_documents AS x
                    WHERE x.team_id = team
                      AND x.subject_kind = 'evidence'
                      AND x.sequence_number >= n.lo
                      AND x.sequence_number <= n.hi
                ) AS d
                WHERE d.is_recallable
                  AND d.policy_labels <@ scopes
                  AND d.source_group IS NOT NULL
            ),
            neighbourhood AS (
                SELECT p.document_id, p.subject_id, p.row_tid, p.search_vector, p.source_group, p.sequence_number, p.eligible,
                       -- a hashed subplan: own_matched holds each document once
                       p.document_id IN (SELECT o.document_id FROM own_matched AS o) AS is_match
                FROM near_rows AS p
                -- is_match computed once, not once per reference below
                OFFSET 0
            ),
            in_context AS (
                SELECT w.document_id, w.subject_id, w.row_tid, w.search_vector, w.sequence_number, w.eligible, w.is_match,
                       pg_catalog.lag(w.sequence_number, 1) OVER g AS sequence_1,
                       pg_catalog.lag(w.search_vector, 1) OVER g AS vector_1,
                       pg_catalog.lag(w.is_match, 1) OVER g AS match_1,
                       pg_catalog.lag(w.sequence_number, 2) OVER g AS sequence_2,
                       pg_catalog.lag(w.search_vector, 2) OVER g AS vector_2,
                       pg_catalog.lag(w.is_match, 2) OVER g AS match_2
                FROM neighbourhood AS w
                WINDOW g AS (PARTITION BY w.source_group ORDER BY w.sequence_number)
            ),
            matched AS (
                -- without context, and evidence without a group or sequence number: alone
                SELECT o.document_id, o.subject_id, o.row_tid, o.search_vector
                FROM own_matched AS o
                WHERE context_radius = 0 OR o.source_group IS NULL OR o.sequence_number IS NULL
                UNION ALL
                -- the matches and their followers, each once, with their predecessors
                SELECT c.document_id, c.subject_id, c.row_tid,
                       CASE WHEN c.sequence_2 >= c.sequence_number - context_radius
                                THEN c.search_vector OPERATOR(pg_catalog.||) c.vector_1
                                     OPERATOR(pg_catalog.||) c.vector_2
                            WHEN c.sequence_1 >= c.sequence_number - context_radius
                                THEN c.search_vector OPERATOR(pg_catalog.||) c.vector_1
                            ELSE c.search_vector END AS search_vector
                FROM in_context AS c
                WHERE c.is_match
                   OR (c.eligible
                       AND ((c.match_1 AND c.sequence_1 >= c.sequence_number - context_radius)
                            OR (c.match_2 AND c.sequence_2 >= c.sequence_number - context_radius)))
            ),
            term_frequencies AS (
                -- ts_rank of each one-lexeme query (r1, r2, ...): one binary search in
                -- the tsvector per query lexeme, unrolled (a per-row subquery over
                -- the lexemes costs five times as much); the scorer recovers tf
                -- from it. OFFSET 0 keeps each computed once.
                SELECT m.document_id, m.subject_id, m.row_tid,
                       k1 * (1.0 - b + b * pg_catalog.length(m.search_vector) / average_length) AS norm,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[1], 0) AS r1,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[2], 0) AS r2,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[3], 0) AS r3,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[4], 0) AS r4,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[5], 0) AS r5,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[6], 0) AS r6,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[7], 0) AS r7,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[8], 0) AS r8,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[9], 0) AS r9,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[10], 0) AS r10,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[11], 0) AS r11,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[12], 0) AS r12,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[13], 0) AS r13,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[14], 0) AS r14,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[15], 0) AS r15,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[16], 0) AS r16,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[17], 0) AS r17,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[18], 0) AS r18,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[19], 0) AS r19,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[20], 0) AS r20,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[21], 0) AS r21,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[22], 0) AS r22,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[23], 0) AS r23,
                           pg_catalog.ts_rank('{1,1,1,1}'::real [], m.search_vector, term_queries[24], 0) AS r24
                FROM matched AS m
                OFFSET 0
            ),
            scored AS (
                -- ts_rank of a one-lexeme query with unit weights is
                -- sum(1/i^2, i = 1..tf) / (pi^2/6), so tf is recovered from the
                -- remainder of that series (about 1/(tf + 0.5)). A lexeme the
                -- document does not hold (ts_rank 0: tf 0) adds exactly 0.0, and one
                -- beyond term_count (NULL) too, so only the held lexemes' tf is
                -- recovered and weighed (session 14: a candidate holds one or two of
                -- the query's lexemes; the same sums as weighing every lexeme).
                -- A lexeme beyond term_count has a NULL query, and ts_rank, strict, a
                -- NULL rank without being called (no CASE per lexeme and row); 1 - rank
                -- is at least 1 - 0.99763 (a lexeme keeps at most 256 positions, and
                -- sum(1/i^2, i <= 256) / (pi^2/6) = 0.99763), so the division needs no
                -- guard (session 16: both dropped, the same values).
                SELECT t.document_id, t.subject_id, t.row_tid,
                       (
                         CASE WHEN t.r1 > 0 THEN idfs[1] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r1)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r1)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r2 > 0 THEN idfs[2] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r2)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r2)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r3 > 0 THEN idfs[3] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r3)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r3)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r4 > 0 THEN idfs[4] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r4)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r4)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r5 > 0 THEN idfs[5] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r5)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r5)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r6 > 0 THEN idfs[6] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r6)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r6)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r7 > 0 THEN idfs[7] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r7)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r7)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r8 > 0 THEN idfs[8] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r8)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r8)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r9 > 0 THEN idfs[9] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r9)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r9)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r10 > 0 THEN idfs[10] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r10)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r10)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r11 > 0 THEN idfs[11] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r11)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r11)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r12 > 0 THEN idfs[12] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r12)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r12)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r13 > 0 THEN idfs[13] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r13)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r13)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r14 > 0 THEN idfs[14] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r14)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r14)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r15 > 0 THEN idfs[15] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r15)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r15)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r16 > 0 THEN idfs[16] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r16)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r16)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r17 > 0 THEN idfs[17] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r17)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r17)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r18 > 0 THEN idfs[18] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r18)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r18)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r19 > 0 THEN idfs[19] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r19)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r19)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r20 > 0 THEN idfs[20] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r20)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r20)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r21 > 0 THEN idfs[21] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r21)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r21)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r22 > 0 THEN idfs[22] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r22)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r22)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r23 > 0 THEN idfs[23] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r23)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r23)) - 0.5) + t.norm) ELSE 0.0 END
                       + CASE WHEN t.r24 > 0 THEN idfs[24] * pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r24)) - 0.5) / (pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - t.r24)) - 0.5) + t.norm) ELSE 0.0 END
                       )::double precision AS score
                FROM term_frequencies AS t
            )
            SELECT 'fulltext'::text, r.document_id, r.subject_id,
                   -- equal scores share a rank, so ties stay ties through fusion;
                   -- ranked after the LIMIT (session 8): every row scoring more
                   -- than a kept row is kept, so its rank is the same, and the
                   -- sort keeps the top `cap` alone instead of ordering every
                   -- candidate twice around a window over all of them
                   (pg_catalog.rank() OVER (ORDER BY r.score DESC))::integer,
                   r.score, r.row_tid
            FROM (SELECT s.document_id, s.subject_id, s.row_tid, s.score
                  FROM scored AS s
                  ORDER BY s.score DESC, s.subject_id
                  LIMIT cap) AS r
            ORDER BY r.score DESC, r.subject_id;
    END IF;
END
$$;
COMMENT ON FUNCTION dm_private.recall_fulltext_candidates(uuid, text, jsonb, jsonb) IS
'Full-text branch, BM25 (k1 fulltext.bm25_k1, b fulltext.bm25_b) with the team''s own term statistics: eligible evidence documents matching all query terms, and any of the rarest query lexemes whose document frequencies fit fulltext.scan_budget, top candidates.fulltext by score, one row per evidence. Runs as densemem_searcher so the GIN index serves @@.';
ALTER FUNCTION dm_private.recall_fulltext_candidates(uuid, text, jsonb, jsonb) OWNER TO densemem_searcher;
REVOKE ALL ON FUNCTION dm_private.recall_fulltext_candidates(uuid, text, jsonb, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.recall_fulltext_candidates(uuid, text, jsonb, jsonb)
TO densemem_app, densemem_analyst, densemem_operator;
