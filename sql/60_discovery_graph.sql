-- Stage 6a: the discovery graph. Entity seeds, the bounded adjacency walk
-- and graph proximity.
--
-- Discovery runs after the evidence top K is chosen. Nothing here can add,
-- remove or reorder evidence results: it returns entity and relationship IDs,
-- and the proximity hops the recall core folds into its composite score.
-- A relationship is eligible for discovery only when (seed 000):
--   team_id = the authenticated team (explicit predicate in every query),
--   its owner profile is active, status = active, tier IN (validated_claim, fact),
--   valid time contains the request's valid_at (when given) and recorded time
--   contains its known_at (or it is not yet closed when none is given),
--   and its predicate is allowed by the profile's discovery.predicates (when set).

-- Query words as normalized name n-grams (lower case, single spaces, outer
-- punctuation and possessive 's removed), 1 to 4 words long, from the first
-- 32 words: exact and trigram entity-name lookups probe these.
CREATE OR REPLACE FUNCTION dm_private.discovery_name_ngrams(query text)
RETURNS text []
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SET search_path = ''
AS $$
DECLARE
    words text [];
    word_count integer;
    ngrams text [] := '{}';
    ngram text;
BEGIN
    words := (pg_catalog.regexp_split_to_array(
                  pg_catalog.btrim(pg_catalog.regexp_replace(
                      pg_catalog.regexp_replace(pg_catalog.lower(pg_catalog.left(COALESCE(query, ''), 2000)),
                                                '''s\M', '', 'g'),
                      '[?!,;:"()\[\]{}]+|\.(\s|$)|\s''|''(\s|$)|^''', ' ', 'g')),
                  '\s+'))[1:32];
    word_count := COALESCE(pg_catalog.cardinality(words), 0);
    FOR i IN 1 .. word_count LOOP
        CONTINUE WHEN words[i] = '';
        ngram := words[i];
        ngrams := ngrams || ngram;
        FOR j IN i + 1 .. LEAST(i + 3, word_count) LOOP
            ngram := ngram || ' ' || words[j];
            ngrams := ngrams || ngram;
        END LOOP;
    END LOOP;
    RETURN ngrams;
END
$$;
COMMENT ON FUNCTION dm_private.discovery_name_ngrams(text) IS
'Normalized 1- to 4-word n-grams of a query (first 32 words), the keys probed by exact and trigram entity-name lookup.';

-- English lexemes of a query (and of names and predicates), so that "works"
-- matches works_on and "Mark's" matches Mark.
CREATE OR REPLACE FUNCTION dm_private.discovery_lexemes(words text)
RETURNS text []
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
SET search_path = ''
AS $$
    SELECT pg_catalog.tsvector_to_array(
        pg_catalog.to_tsvector('english'::regconfig,
                               pg_catalog.replace(pg_catalog.left(COALESCE(words, ''), 2000), '_', ' ')))
$$;
COMMENT ON FUNCTION dm_private.discovery_lexemes(text) IS
'English lexemes of a text (underscores read as spaces, first 2,000 characters): the relevance vocabulary of discovery.';

-- Team-qualified trigrams of an entity name: the index expression of
-- entity_names_team_trigram_idx (migration 0055), every trigram of the name
-- (public.show_trgm) prefixed by the first 8 hex digits of the team id, so a
-- GIN key's posting list holds one team's names (the team leads every key,
-- as in 0025's team lexemes). discovery_entity_seeds builds its probe keys
-- the same way. NEVER change the body while the index exists: the index
-- would keep keys the new body no longer produces (change it in a new
-- migration that rebuilds the index).
CREATE OR REPLACE FUNCTION dm_private.entity_name_team_trigrams(team_id uuid, normalized_name text)
RETURNS text []
LANGUAGE sql
IMMUTABLE
STRICT
PARALLEL SAFE
SET search_path = ''
RETURN ARRAY(
    SELECT pg_catalog.left(team_id::text, 8) || t.trigram
    FROM pg_catalog.unnest(public.show_trgm(normalized_name)) AS t (trigram));
COMMENT ON FUNCTION dm_private.entity_name_team_trigrams(uuid, text) IS
'Index expression of entity_names_team_trigram_idx: every trigram of the name (public.show_trgm) prefixed by the first 8 hex digits of the team id, so that a GIN key''s posting list holds one team''s names. Never change it while the index exists.';
REVOKE ALL ON FUNCTION dm_private.entity_name_team_trigrams(uuid, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.entity_name_team_trigrams(uuid, text)
TO densemem_app, densemem_analyst, densemem_operator, densemem_searcher, densemem_embedder, densemem_worker;

-- Entity seeds from the query text. Exact names and aliases first (a btree
-- probe per query n-gram). Only when no name or alias is spelled in the
-- query do the fuzzy branches run: trigram similarity of single query words
-- (at most 5 words of 5+ characters that are not stop words, 20 index
-- candidates each), entity documents by full text (50 candidates), and
-- entity / relationship documents by vector when a query embedding is given.
-- SECURITY DEFINER owned by densemem_searcher so the trigram, full-text and
-- vector operators (not leakproof) can use their indexes; the team predicate
-- is explicit in every branch and must equal the authenticated team. It
-- returns only entity IDs of that team; the walk re-reads relationships
-- under RLS.
CREATE OR REPLACE FUNCTION dm_private.discovery_entity_seeds(
    seed_team_id uuid,
    query text,
    query_embedding public.vector DEFAULT NULL,
    seed_limit integer DEFAULT 5
)
RETURNS TABLE (entity_id uuid, score double precision)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = ''
SET plan_cache_mode = 'force_generic_plan'
AS $$
#variable_conflict use_column
DECLARE
    ngrams text [];
    fuzzy_words text [];
    or_query tsquery;
    active_contract integer;
    exact_found integer;
    trgm_limit double precision;
    lexeme_keys text [];
BEGIN
    -- dm_private.authenticated_team_id()'s expression written out, as
    -- require_team does (a SQL function with its own SET search_path runs
    -- its executor on every call).
    IF seed_team_id IS NULL
       OR seed_team_id IS DISTINCT FROM NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid THEN
        RAISE EXCEPTION 'team_id does not match the authenticated team' USING ERRCODE = '42501';
    END IF;
    IF seed_limit IS NULL OR seed_limit < 1 THEN
        RETURN;
    END IF;
    ngrams := dm_private.discovery_name_ngrams(query);

    -- Names and aliases spelled as in the query: the strongest signal,
    -- longer names first ("dense mem" over "mem").
    RETURN QUERY
    SELECT x.entity_id, x.score
    FROM (
        SELECT n.entity_id,
               pg_catalog.max(2.0 + 0.1 * pg_catalog.array_length(pg_catalog.string_to_array(n.normalized_name, ' '), 1))
                   ::double precision AS score
        FROM dm_private.entity_names AS n
        WHERE n.team_id = seed_team_id
          AND n.normalized_name = ANY(ngrams)
        GROUP BY n.entity_id
    ) AS x
    ORDER BY x.score DESC, x.entity_id
    LIMIT seed_limit;
    GET DIAGNOSTICS exact_found = ROW_COUNT;
    IF exact_found > 0 THEN
        RETURN;
    END IF;

    -- The fuzzy words, the threshold `%` compares with
    -- (pg_trgm.similarity_threshold), and the query's lexemes as an OR
    -- query and as team-qualified index keys: one statement. The lexemes are
    -- dm_private.discovery_lexemes(query) written out (keep the two in step).
    SELECT ARRAY(
               SELECT g.word
               FROM pg_catalog.unnest(ngrams) AS g (word)
               WHERE pg_catalog.strpos(g.word, ' ') = 0
                 AND pg_catalog.length(g.word) >= 5
                 AND pg_catalog.length(pg_catalog.to_tsvector('english'::regconfig, g.word)) > 0
               ORDER BY pg_catalog.length(g.word) DESC, g.word
               LIMIT 5),
           public.show_limit(),
           lx.or_query, lx.lexeme_keys
    INTO fuzzy_words, trgm_limit, or_query, lexeme_keys
    FROM (SELECT pg_catalog.string_agg(pg_catalog.quote_literal(l.lexeme), ' | ')::tsquery AS or_query,
                 CASE WHEN NOT pg_catalog.bool_or(pg_catalog.strpos(l.lexeme, '''') > 0
                                                  OR pg_catalog.strpos(l.lexeme, '\') > 0)
                      THEN pg_catalog.array_agg(pg_catalog.left(seed_team_id::text, 8) || l.lexeme) END AS lexeme_keys
          FROM pg_catalog.unnest(pg_catalog.tsvector_to_array(pg_catalog.to_tsvector('english'::regconfig,
                   pg_catalog.replace(pg_catalog.left(COALESCE(query, ''), 2000), '_', ' ')))) AS l (lexeme)) AS lx;
    IF query_embedding IS NOT NULL THEN
        SELECT c.contract_id INTO active_contract
        FROM dm_private.embedding_contracts AS c
        WHERE c.is_active AND c.dimensions = public.vector_dims(query_embedding);
    END IF;

    -- Without a vector to compare (no query embedding, as from recall, or no
    -- active contract of its dimensions: by_vector below is empty), the same
    -- statement without the vector parts, whose plan nodes (two document
    -- index scans, the relationship join) the full statement starts on every
    -- call. Same rows: found loses only the empty vector_entities branch.
    IF active_contract IS NULL THEN
        -- The common case (a positive trigram threshold, and lexemes that all
        -- spell the same in a tsquery, or none): the same statement without
        -- its two fallback lookups (the team's trigram lookup for a threshold
        -- of 0 or less, the team's full-text lookup for a lexeme with a quote
        -- or a backslash), which the statement below starts on every call
        -- and runs on none of these. Same rows: every probe is an array when
        -- the threshold is positive, so the first fallback is empty; the
        -- second needs lexeme_keys NULL, which here means no lexeme at all,
        -- when or_query is NULL and the full-text part is empty anyway.
        IF trgm_limit > 0 AND (lexeme_keys IS NOT NULL OR or_query IS NULL) THEN
            RETURN QUERY
            WITH fuzzy AS (
                -- Misspellings: trigram similarity per query word, bounded per word.
                SELECT f.entity_id, 1.5 * f.sim AS score
                FROM (
                    -- The word's probe keys on entity_names_team_trigram_idx (0055):
                    -- its trigrams, team-qualified as dm_private.entity_name_team_trigrams
                    -- qualifies a name's. A name passes `%` only when it shares at
                    -- least c = ceil(threshold x |word trigrams|) of them (similarity
                    -- is shared / (word + name - shared) and the name has at least
                    -- the shared ones), so it shares at least one of ANY |word| - c + 1
                    -- of them: c - 1 keys may be left out. Left out are the word-start
                    -- trigrams ("  p", " po"), which the most names share. The
                    -- tolerance 0.001 keeps a float-rounded match in; a positive
                    -- threshold needs at least one shared trigram (similarity 0
                    -- never passes it). probe is NULL (the team's trigram lookup
                    -- below) for a threshold of 0 or less, which every name passes.
                    SELECT w.word,
                           CASE WHEN trgm_limit > 0
                           THEN ARRAY(
                               SELECT pg_catalog.left(seed_team_id::text, 8) || t.trigram
                               FROM pg_catalog.unnest(public.show_trgm(w.word)) AS t (trigram)
                               ORDER BY CASE WHEN pg_catalog.starts_with(t.trigram, '  ') THEN 0
                                             WHEN pg_catalog.starts_with(t.trigram, ' ') THEN 1
                                             ELSE 2 END, t.trigram
                               OFFSET GREATEST(pg_catalog.ceil(trgm_limit * pg_catalog.cardinality(public.show_trgm(w.word))
                                                               - 0.001)::integer, 1) - 1)
                           END AS probe
                    FROM pg_catalog.unnest(fuzzy_words) AS w (word)
                ) AS g
                CROSS JOIN LATERAL (
                    SELECT c.entity_id, public.similarity(c.normalized_name, g.word) AS sim
                    FROM (
                        -- GIN answers bitmap scans only, so the lookup meets the rows
                        -- in heap order, and LIMIT 20 keeps the first 20 matches in
                        -- heap order whatever the plan (the team and `%` are written
                        -- so that no other index serves them: a btree range of the
                        -- team would meet them in name order, and a BitmapAnd with
                        -- entity_names_trgm_idx would decode the team's whole posting
                        -- list again). This is what the former lookup on
                        -- entity_names_trgm_idx kept whenever its plan was a bitmap
                        -- scan, as on the bench.
                        (SELECT n.entity_id, n.normalized_name
                         FROM dm_private.entity_names AS n
                         WHERE g.probe IS NOT NULL
                           AND dm_private.entity_name_team_trigrams(n.team_id, n.normalized_name)
                               OPERATOR(pg_catalog.&&) g.probe
                           AND (n.team_id = seed_team_id) IS TRUE
                           AND (n.normalized_name OPERATOR(public.%) g.word) IS TRUE
                         LIMIT 20)
                    ) AS c
                    ORDER BY 2 DESC, c.entity_id
                    LIMIT 3
                ) AS f
                WHERE f.sim >= 0.5
            ),
            fulltext AS (
                -- Entity documents (canonical name, aliases, kind) sharing a lexeme with the query.
                SELECT d.subject_id AS entity_id, 1.0 + LEAST(pg_catalog.ts_rank_cd(d.search_vector, or_query), 0.5) AS score
                FROM (
                    -- On search_documents_entity_team_lexemes_idx (0056): a document
                    -- matching the OR query holds one of its lexemes, so the
                    -- team-qualified lexemes are a complete probe. GIN answers bitmap
                    -- scans only: either lookup meets the rows in heap order and
                    -- LIMIT 50 keeps the same 50. The team and @@ are written so that
                    -- no other index serves them. lexeme_keys is NULL when a lexeme
                    -- holds a quote or a backslash (its tsquery spelling may differ):
                    -- then the team's full-text lookup below.
                    (SELECT sd.subject_id, sd.search_vector
                     FROM dm_private.search_documents AS sd
                     WHERE lexeme_keys IS NOT NULL
                       AND dm_private.search_team_lexemes(sd.team_id, sd.search_vector) OPERATOR(pg_catalog.&&) lexeme_keys
                       AND (sd.team_id = seed_team_id) IS TRUE
                       AND (sd.search_vector OPERATOR(pg_catalog.@@) or_query) IS TRUE
                       AND sd.subject_kind = 'entity'::dm_private.subject_kind
                     LIMIT 50)
                ) AS d
                WHERE or_query IS NOT NULL
            ),
            found AS (
                SELECT fuzzy.entity_id, fuzzy.score FROM fuzzy
                UNION ALL SELECT fulltext.entity_id, fulltext.score FROM fulltext
            )
            SELECT found.entity_id, (pg_catalog.max(found.score) + 0.05 * (pg_catalog.count(*) - 1))::double precision
            FROM found
            JOIN dm_private.entities AS e ON e.team_id = seed_team_id AND e.entity_id = found.entity_id
            GROUP BY found.entity_id
            ORDER BY 2 DESC, found.entity_id
            LIMIT seed_limit;
            RETURN;
        END IF;
        RETURN QUERY
        WITH fuzzy AS (
            -- Misspellings: trigram similarity per query word, bounded per word.
            SELECT f.entity_id, 1.5 * f.sim AS score
            FROM (
                -- The word's probe keys on entity_names_team_trigram_idx (0055):
                -- its trigrams, team-qualified as dm_private.entity_name_team_trigrams
                -- qualifies a name's. A name passes `%` only when it shares at
                -- least c = ceil(threshold x |word trigrams|) of them (similarity
                -- is shared / (word + name - shared) and the name has at least
                -- the shared ones), so it shares at least one of ANY |word| - c + 1
                -- of them: c - 1 keys may be left out. Left out are the word-start
                -- trigrams ("  p", " po"), which the most names share. The
                -- tolerance 0.001 keeps a float-rounded match in; a positive
                -- threshold needs at least one shared trigram (similarity 0
                -- never passes it). probe is NULL (the team's trigram lookup
                -- below) for a threshold of 0 or less, which every name passes.
                SELECT w.word,
                       CASE WHEN trgm_limit > 0
                       THEN ARRAY(
                           SELECT pg_catalog.left(seed_team_id::text, 8) || t.trigram
                           FROM pg_catalog.unnest(public.show_trgm(w.word)) AS t (trigram)
                           ORDER BY CASE WHEN pg_catalog.starts_with(t.trigram, '  ') THEN 0
                                         WHEN pg_catalog.starts_with(t.trigram, ' ') THEN 1
                                         ELSE 2 END, t.trigram
                           OFFSET GREATEST(pg_catalog.ceil(trgm_limit * pg_catalog.cardinality(public.show_trgm(w.word))
                                                           - 0.001)::integer, 1) - 1)
                       END AS probe
                FROM pg_catalog.unnest(fuzzy_words) AS w (word)
            ) AS g
            CROSS JOIN LATERAL (
                SELECT c.entity_id, public.similarity(c.normalized_name, g.word) AS sim
                FROM (
                    -- GIN answers bitmap scans only, so the lookup meets the rows
                    -- in heap order, and LIMIT 20 keeps the first 20 matches in
                    -- heap order whatever the plan (the team and `%` are written
                    -- so that no other index serves them: a btree range of the
                    -- team would meet them in name order, and a BitmapAnd with
                    -- entity_names_trgm_idx would decode the team's whole posting
                    -- list again). This is what the former lookup on
                    -- entity_names_trgm_idx kept whenever its plan was a bitmap
                    -- scan, as on the bench.
                    (SELECT n.entity_id, n.normalized_name
                     FROM dm_private.entity_names AS n
                     WHERE g.probe IS NOT NULL
                       AND dm_private.entity_name_team_trigrams(n.team_id, n.normalized_name)
                           OPERATOR(pg_catalog.&&) g.probe
                       AND (n.team_id = seed_team_id) IS TRUE
                       AND (n.normalized_name OPERATOR(public.%) g.word) IS TRUE
                     LIMIT 20)
                    UNION ALL
                    (SELECT n.entity_id, n.normalized_name
                     FROM dm_private.entity_names AS n
                     WHERE g.probe IS NULL
                       AND n.team_id = seed_team_id
                       AND n.normalized_name OPERATOR(public.%) g.word
                     LIMIT 20)
                ) AS c
                ORDER BY 2 DESC, c.entity_id
                LIMIT 3
            ) AS f
            WHERE f.sim >= 0.5
        ),
        fulltext AS (
            -- Entity documents (canonical name, aliases, kind) sharing a lexeme with the query.
            SELECT d.subject_id AS entity_id, 1.0 + LEAST(pg_catalog.ts_rank_cd(d.search_vector, or_query), 0.5) AS score
            FROM (
                -- On search_documents_entity_team_lexemes_idx (0056): a document
                -- matching the OR query holds one of its lexemes, so the
                -- team-qualified lexemes are a complete probe. GIN answers bitmap
                -- scans only: either lookup meets the rows in heap order and
                -- LIMIT 50 keeps the same 50. The team and @@ are written so that
                -- no other index serves them. lexeme_keys is NULL when a lexeme
                -- holds a quote or a backslash (its tsquery spelling may differ):
                -- then the team's full-text lookup below.
                (SELECT sd.subject_id, sd.search_vector
                 FROM dm_private.search_documents AS sd
                 WHERE lexeme_keys IS NOT NULL
                   AND dm_private.search_team_lexemes(sd.team_id, sd.search_vector) OPERATOR(pg_catalog.&&) lexeme_keys
                   AND (sd.team_id = seed_team_id) IS TRUE
                   AND (sd.search_vector OPERATOR(pg_catalog.@@) or_query) IS TRUE
                   AND sd.subject_kind = 'entity'::dm_private.subject_kind
                 LIMIT 50)
                UNION ALL
                (SELECT sd.subject_id, sd.search_vector
                 FROM dm_private.search_documents AS sd
                 WHERE lexeme_keys IS NULL
                   AND sd.team_id = seed_team_id
                   AND sd.subject_kind = 'entity'::dm_private.subject_kind
                   AND sd.search_vector OPERATOR(pg_catalog.@@) or_query
                 LIMIT 50)
            ) AS d
            WHERE or_query IS NOT NULL
        ),
        found AS (
            SELECT fuzzy.entity_id, fuzzy.score FROM fuzzy
            UNION ALL SELECT fulltext.entity_id, fulltext.score FROM fulltext
        )
        SELECT found.entity_id, (pg_catalog.max(found.score) + 0.05 * (pg_catalog.count(*) - 1))::double precision
        FROM found
        JOIN dm_private.entities AS e ON e.team_id = seed_team_id AND e.entity_id = found.entity_id
        GROUP BY found.entity_id
        ORDER BY 2 DESC, found.entity_id
        LIMIT seed_limit;
        RETURN;
    END IF;

    RETURN QUERY
    WITH fuzzy AS (
        -- Misspellings: trigram similarity per query word, bounded per word.
        SELECT f.entity_id, 1.5 * f.sim AS score
        FROM (
            -- The word's probe keys on entity_names_team_trigram_idx (0055):
            -- its trigrams, team-qualified as dm_private.entity_name_team_trigrams
            -- qualifies a name's. A name passes `%` only when it shares at
            -- least c = ceil(threshold x |word trigrams|) of them (similarity
            -- is shared / (word + name - shared) and the name has at least
            -- the shared ones), so it shares at least one of ANY |word| - c + 1
            -- of them: c - 1 keys may be left out. Left out are the word-start
            -- trigrams ("  p", " po"), which the most names share. The
            -- tolerance 0.001 keeps a float-rounded match in; a positive
            -- threshold needs at least one shared trigram (similarity 0
            -- never passes it). probe is NULL (the team's trigram lookup
            -- below) for a threshold of 0 or less, which every name passes.
            SELECT w.word,
                   CASE WHEN trgm_limit > 0
                   THEN ARRAY(
                       SELECT pg_catalog.left(seed_team_id::text, 8) || t.trigram
                       FROM pg_catalog.unnest(public.show_trgm(w.word)) AS t (trigram)
                       ORDER BY CASE WHEN pg_catalog.starts_with(t.trigram, '  ') THEN 0
                                     WHEN pg_catalog.starts_with(t.trigram, ' ') THEN 1
                                     ELSE 2 END, t.trigram
                       OFFSET GREATEST(pg_catalog.ceil(trgm_limit * pg_catalog.cardinality(public.show_trgm(w.word))
                                                       - 0.001)::integer, 1) - 1)
                   END AS probe
            FROM pg_catalog.unnest(fuzzy_words) AS w (word)
        ) AS g
        CROSS JOIN LATERAL (
            SELECT c.entity_id, public.similarity(c.normalized_name, g.word) AS sim
            FROM (
                -- GIN answers bitmap scans only, so the lookup meets the rows
                -- in heap order, and LIMIT 20 keeps the first 20 matches in
                -- heap order whatever the plan (the team and `%` are written
                -- so that no other index serves them: a btree range of the
                -- team would meet them in name order, and a BitmapAnd with
                -- entity_names_trgm_idx would decode the team's whole posting
                -- list again). This is what the former lookup on
                -- entity_names_trgm_idx kept whenever its plan was a bitmap
                -- scan, as on the bench.
                (SELECT n.entity_id, n.normalized_name
                 FROM dm_private.entity_names AS n
                 WHERE g.probe IS NOT NULL
                   AND dm_private.entity_name_team_trigrams(n.team_id, n.normalized_name)
                       OPERATOR(pg_catalog.&&) g.probe
                   AND (n.team_id = seed_team_id) IS TRUE
                   AND (n.normalized_name OPERATOR(public.%) g.word) IS TRUE
                 LIMIT 20)
                UNION ALL
                (SELECT n.entity_id, n.normalized_name
                 FROM dm_private.entity_names AS n
                 WHERE g.probe IS NULL
                   AND n.team_id = seed_team_id
                   AND n.normalized_name OPERATOR(public.%) g.word
                 LIMIT 20)
            ) AS c
            ORDER BY 2 DESC, c.entity_id
            LIMIT 3
        ) AS f
        WHERE f.sim >= 0.5
    ),
    fulltext AS (
        -- Entity documents (canonical name, aliases, kind) sharing a lexeme with the query.
        SELECT d.subject_id AS entity_id, 1.0 + LEAST(pg_catalog.ts_rank_cd(d.search_vector, or_query), 0.5) AS score
        FROM (
            -- On search_documents_entity_team_lexemes_idx (0056): a document
            -- matching the OR query holds one of its lexemes, so the
            -- team-qualified lexemes are a complete probe. GIN answers bitmap
            -- scans only: either lookup meets the rows in heap order and
            -- LIMIT 50 keeps the same 50. The team and @@ are written so that
            -- no other index serves them. lexeme_keys is NULL when a lexeme
            -- holds a quote or a backslash (its tsquery spelling may differ):
            -- then the team's full-text lookup below.
            (SELECT sd.subject_id, sd.search_vector
             FROM dm_private.search_documents AS sd
             WHERE lexeme_keys IS NOT NULL
               AND dm_private.search_team_lexemes(sd.team_id, sd.search_vector) OPERATOR(pg_catalog.&&) lexeme_keys
               AND (sd.team_id = seed_team_id) IS TRUE
               AND (sd.search_vector OPERATOR(pg_catalog.@@) or_query) IS TRUE
               AND sd.subject_kind = 'entity'::dm_private.subject_kind
             LIMIT 50)
            UNION ALL
            (SELECT sd.subject_id, sd.search_vector
             FROM dm_private.search_documents AS sd
             WHERE lexeme_keys IS NULL
               AND sd.team_id = seed_team_id
               AND sd.subject_kind = 'entity'::dm_private.subject_kind
               AND sd.search_vector OPERATOR(pg_catalog.@@) or_query
             LIMIT 50)
        ) AS d
        WHERE or_query IS NOT NULL
    ),
    by_vector AS (
        -- Entity and relationship documents by meaning, current vectors of the
        -- active contract only; a relationship document seeds both endpoints.
        SELECT v.subject_kind, v.subject_id, 1.5 * (1.0 - v.distance) AS score
        FROM (
            SELECT sd.subject_kind, sd.subject_id,
                   (de.embedding OPERATOR(public.<=>) query_embedding::public.halfvec) AS distance
            FROM dm_private.search_documents AS sd
            JOIN dm_private.document_embeddings AS de
              ON de.team_id = sd.team_id AND de.document_id = sd.document_id
             AND de.contract_id = active_contract
             AND de.document_version = sd.document_version AND de.source_version = sd.source_version
            WHERE sd.team_id = seed_team_id
              AND sd.subject_kind IN ('entity'::dm_private.subject_kind, 'relationship'::dm_private.subject_kind)
              AND active_contract IS NOT NULL
            ORDER BY 3, sd.subject_id
            LIMIT seed_limit * 2
        ) AS v
        WHERE v.distance < 0.6
    ),
    vector_entities AS (
        SELECT bv.subject_id AS entity_id, bv.score
        FROM by_vector AS bv
        WHERE bv.subject_kind = 'entity'
        UNION ALL
        SELECT ends.entity_id, bv.score * 0.8
        FROM by_vector AS bv
        JOIN dm_private.relationships AS r
          ON r.team_id = seed_team_id AND r.relationship_id = bv.subject_id
        CROSS JOIN LATERAL (VALUES (r.subject_entity_id), (r.object_entity_id)) AS ends (entity_id)
        WHERE bv.subject_kind = 'relationship'
          AND ends.entity_id IS NOT NULL
          AND r.status = 'active' AND r.tier IN ('validated_claim', 'fact')
    ),
    found AS (
        SELECT fuzzy.entity_id, fuzzy.score FROM fuzzy
        UNION ALL SELECT fulltext.entity_id, fulltext.score FROM fulltext
        UNION ALL SELECT vector_entities.entity_id, vector_entities.score FROM vector_entities
    )
    SELECT found.entity_id, (pg_catalog.max(found.score) + 0.05 * (pg_catalog.count(*) - 1))::double precision
    FROM found
    JOIN dm_private.entities AS e ON e.team_id = seed_team_id AND e.entity_id = found.entity_id
    GROUP BY found.entity_id
    ORDER BY 2 DESC, found.entity_id
    LIMIT seed_limit;
END
$$;
COMMENT ON FUNCTION dm_private.discovery_entity_seeds(uuid, text, public.vector, integer) IS
'Discovery seeds from the query: entity names and aliases spelled in the query (exact); only when none is, trigram similarity of query words, entity documents by full text and entity / relationship documents by vector (when a query embedding is given). Team-scoped; a same-name entity of another team never seeds.';
ALTER FUNCTION dm_private.discovery_entity_seeds(uuid, text, public.vector, integer) OWNER TO densemem_searcher;

-- The bounded adjacency walk. A recursive CTE over the indexed outgoing
-- (relationships_outgoing_idx) and incoming (relationships_incoming_idx)
-- edges of each frontier entity: LATERAL (... LIMIT fan_out) per entity and
-- direction, predicate-hinted edges first; cycle detection on the entity; depth <= 2;
-- the outer LIMIT caps total edges (the CTE is evaluated only as far as
-- rows are fetched); a clock check stops expansion beyond the seeds' own
-- edges at the deadline (the seeds' edges are bounded by seeds x fan-out, so
-- a session's first call, which pays for planning, still finds them). Only
-- eligible relationships are walked (the team's inactive profiles are read
-- once); excluded (already known) relationships are neither returned nor
-- walked through. Each edge comes with the columns paths need, so that no
-- second read of the relationship is necessary.
DROP FUNCTION IF EXISTS dm_private.discovery_walk(uuid, uuid [], integer, integer, integer, timestamptz, timestamptz,
                                                  text [], text [], uuid [], timestamptz);
CREATE FUNCTION dm_private.discovery_walk(
    walk_team_id uuid,
    seed_entity_ids uuid [],
    fan_out integer,
    max_depth integer,
    max_edges integer,
    valid_at timestamptz DEFAULT NULL,
    known_at timestamptz DEFAULT NULL,
    predicate_hints text [] DEFAULT '{}',
    predicate_allow text [] DEFAULT NULL,
    excluded_relationship_ids uuid [] DEFAULT '{}',
    deadline timestamptz DEFAULT NULL
)
RETURNS TABLE (
    depth integer,
    relationship_id uuid,
    from_entity_id uuid,
    to_entity_id uuid,
    parent_relationship_id uuid,
    root_entity_id uuid,
    outgoing boolean,
    subject_entity_id uuid,
    predicate text,
    object_entity_id uuid,
    object_value text,
    polarity dm_private.relationship_polarity,
    owner_profile_id uuid,
    semantic_group text,
    parent_predicate text
)
LANGUAGE plpgsql
VOLATILE
ROWS 200
SET search_path = ''
SET plan_cache_mode = 'force_generic_plan'
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH RECURSIVE walk (depth, relationship_id, from_entity_id, to_entity_id, parent_relationship_id,
                         root_entity_id, outgoing, subject_entity_id, predicate, object_entity_id, object_value,
                         polarity, owner_profile_id, semantic_group, parent_predicate, inactive_owners,
                         is_cycle) AS (
        SELECT 0, NULL::uuid, NULL::uuid, s.entity_id, NULL::uuid, s.entity_id, NULL::boolean,
               NULL::uuid, NULL::text, NULL::uuid, NULL::text, NULL::dm_private.relationship_polarity, NULL::uuid,
               NULL::text, NULL::text,
               ARRAY(SELECT p.profile_id FROM dm_private.profiles AS p
                     WHERE p.team_id = walk_team_id AND p.state <> 'active'),
               false
        FROM (SELECT DISTINCT u.entity_id FROM pg_catalog.unnest(seed_entity_ids) AS u (entity_id)
              WHERE u.entity_id IS NOT NULL) AS s
        UNION ALL
        SELECT w.depth + 1, x.relationship_id, w.to_entity_id, x.next_entity_id, w.relationship_id,
               w.root_entity_id, x.outgoing, x.subject_entity_id, x.predicate, x.object_entity_id, x.object_value,
               x.polarity, x.owner_profile_id, x.semantic_group, w.predicate, w.inactive_owners,
               -- Cycle detection (the CYCLE clause written out): with at most
               -- two hops a path is (root, entity expanded), so a row revisits
               -- its path exactly when it reaches one of those two; a literal
               -- object (NULL entity) never does.
               COALESCE(x.next_entity_id = w.root_entity_id OR x.next_entity_id = w.to_entity_id, false)
        FROM walk AS w
        CROSS JOIN LATERAL (
            SELECT y.*
            FROM (
                (SELECT r.relationship_id, r.object_entity_id AS next_entity_id, true AS outgoing, 0 AS pass,
                        r.subject_entity_id, r.predicate, r.object_entity_id, r.object_value, r.polarity,
                        r.owner_profile_id, r.semantic_group
                 FROM dm_private.relationships AS r
                 WHERE r.team_id = walk_team_id AND r.subject_entity_id = w.to_entity_id
                   AND r.predicate = ANY(predicate_hints)
                   AND r.status = 'active' AND r.tier IN ('validated_claim', 'fact')
                   AND (predicate_allow IS NULL OR r.predicate = ANY(predicate_allow))
                   AND (valid_at IS NULL OR ((r.valid_from IS NULL OR r.valid_from <= valid_at)
                                             AND (r.valid_to IS NULL OR valid_at < r.valid_to)))
                   AND (CASE WHEN known_at IS NULL THEN r.known_to IS NULL OR r.known_to > pg_catalog.now()
                             ELSE r.known_from <= known_at AND (r.known_to IS NULL OR known_at < r.known_to) END)
                   AND r.relationship_id <> ALL(excluded_relationship_ids)
                   AND r.owner_profile_id <> ALL(w.inactive_owners)
                 LIMIT fan_out)
                UNION ALL
                (SELECT r.relationship_id, r.subject_entity_id AS next_entity_id, false AS outgoing, 0 AS pass,
                        r.subject_entity_id, r.predicate, r.object_entity_id, r.object_value, r.polarity,
                        r.owner_profile_id, r.semantic_group
                 FROM dm_private.relationships AS r
                 WHERE r.team_id = walk_team_id AND r.object_entity_id = w.to_entity_id
                   AND r.predicate = ANY(predicate_hints)
                   AND r.status = 'active' AND r.tier IN ('validated_claim', 'fact')
                   AND (predicate_allow IS NULL OR r.predicate = ANY(predicate_allow))
                   AND (valid_at IS NULL OR ((r.valid_from IS NULL OR r.valid_from <= valid_at)
                                             AND (r.valid_to IS NULL OR valid_at < r.valid_to)))
                   AND (CASE WHEN known_at IS NULL THEN r.known_to IS NULL OR r.known_to > pg_catalog.now()
                             ELSE r.known_from <= known_at AND (r.known_to IS NULL OR known_at < r.known_to) END)
                   AND r.relationship_id <> ALL(excluded_relationship_ids)
                   AND r.owner_profile_id <> ALL(w.inactive_owners)
                 LIMIT fan_out)
                UNION ALL
                (SELECT r.relationship_id, r.object_entity_id AS next_entity_id, true AS outgoing, 1 AS pass,
                        r.subject_entity_id, r.predicate, r.object_entity_id, r.object_value, r.polarity,
                        r.owner_profile_id, r.semantic_group
                 FROM dm_private.relationships AS r
                 WHERE r.team_id = walk_team_id AND r.subject_entity_id = w.to_entity_id
                   AND r.predicate <> ALL(predicate_hints)
                   AND r.status = 'active' AND r.tier IN ('validated_claim', 'fact')
                   AND (predicate_allow IS NULL OR r.predicate = ANY(predicate_allow))
                   AND (valid_at IS NULL OR ((r.valid_from IS NULL OR r.valid_from <= valid_at)
                                             AND (r.valid_to IS NULL OR valid_at < r.valid_to)))
                   AND (CASE WHEN known_at IS NULL THEN r.known_to IS NULL OR r.known_to > pg_catalog.now()
                             ELSE r.known_from <= known_at AND (r.known_to IS NULL OR known_at < r.known_to) END)
                   AND r.relationship_id <> ALL(excluded_relationship_ids)
                   AND r.owner_profile_id <> ALL(w.inactive_owners)
                 LIMIT fan_out)
                UNION ALL
                (SELECT r.relationship_id, r.subject_entity_id AS next_entity_id, false AS outgoing, 1 AS pass,
                        r.subject_entity_id, r.predicate, r.object_entity_id, r.object_value, r.polarity,
                        r.owner_profile_id, r.semantic_group
                 FROM dm_private.relationships AS r
                 WHERE r.team_id = walk_team_id AND r.object_entity_id = w.to_entity_id
                   AND r.predicate <> ALL(predicate_hints)
                   AND r.status = 'active' AND r.tier IN ('validated_claim', 'fact')
                   AND (predicate_allow IS NULL OR r.predicate = ANY(predicate_allow))
                   AND (valid_at IS NULL OR ((r.valid_from IS NULL OR r.valid_from <= valid_at)
                                             AND (r.valid_to IS NULL OR valid_at < r.valid_to)))
                   AND (CASE WHEN known_at IS NULL THEN r.known_to IS NULL OR r.known_to > pg_catalog.now()
                             ELSE r.known_from <= known_at AND (r.known_to IS NULL OR known_at < r.known_to) END)
                   AND r.relationship_id <> ALL(excluded_relationship_ids)
                   AND r.owner_profile_id <> ALL(w.inactive_owners)
                 LIMIT fan_out)
            ) AS y
            -- No sort: the Append runs its branches in order (hinted outgoing,
            -- hinted incoming, outgoing, incoming) and LIMIT stops it as soon as
            -- fan_out edges are found, so later branches of a hub are never read.
            LIMIT fan_out
        ) AS x
        WHERE w.depth < LEAST(GREATEST(max_depth, 0), 2)
          AND w.to_entity_id IS NOT NULL
          AND (w.depth = 0 OR deadline IS NULL OR pg_catalog.clock_timestamp() < deadline)
          AND NOT w.is_cycle
    )
    SELECT walk.depth, walk.relationship_id, walk.from_entity_id, walk.to_entity_id,
           walk.parent_relationship_id, walk.root_entity_id, walk.outgoing, walk.subject_entity_id, walk.predicate,
           walk.object_entity_id, walk.object_value, walk.polarity, walk.owner_profile_id, walk.semantic_group,
           walk.parent_predicate
    FROM walk
    WHERE walk.depth > 0 AND NOT walk.is_cycle
    LIMIT GREATEST(max_edges, 0);
END
$$;
COMMENT ON FUNCTION dm_private.discovery_walk(uuid, uuid [], integer, integer, integer, timestamptz, timestamptz, text [], text [], uuid [], timestamptz) IS
'Bounded adjacency over eligible relationships from seed entities: per-entity fan-out (LATERAL ... LIMIT), depth <= 2, CYCLE detection, total-edge cap, deadline. Uses relationships_outgoing_idx / relationships_incoming_idx. Terminates on hubs and cycles.';

-- The distinct predicates on an entity's edges (both directions), by a
-- skip scan of relationships_outgoing_idx / relationships_incoming_idx: one
-- index probe per distinct predicate, at most max_count per direction, so a
-- hub with 100,000 edges of three predicates costs a handful of probes.
-- Discovery matches them against the query's words to hint the walk.
CREATE OR REPLACE FUNCTION dm_private.discovery_entity_predicates(
    predicate_team_id uuid,
    predicate_entity_id uuid,
    max_count integer DEFAULT 30
)
RETURNS SETOF text
LANGUAGE plpgsql
STABLE
ROWS 10
SET search_path = ''
SET plan_cache_mode = 'force_generic_plan'
AS $$
BEGIN
    -- A loose index scan per direction: each step is one bounded index probe.
    RETURN QUERY
    WITH RECURSIVE outgoing (predicate) AS (
        SELECT (SELECT pg_catalog.min(r.predicate) FROM dm_private.relationships AS r
                WHERE r.team_id = predicate_team_id AND r.subject_entity_id = predicate_entity_id)
        UNION ALL
        SELECT (SELECT pg_catalog.min(r.predicate) FROM dm_private.relationships AS r
                WHERE r.team_id = predicate_team_id AND r.subject_entity_id = predicate_entity_id
                  AND r.predicate > o.predicate)
        FROM outgoing AS o
        WHERE o.predicate IS NOT NULL
    ),
    incoming (predicate) AS (
        SELECT (SELECT pg_catalog.min(r.predicate) FROM dm_private.relationships AS r
                WHERE r.team_id = predicate_team_id AND r.object_entity_id = predicate_entity_id)
        UNION ALL
        SELECT (SELECT pg_catalog.min(r.predicate) FROM dm_private.relationships AS r
                WHERE r.team_id = predicate_team_id AND r.object_entity_id = predicate_entity_id
                  AND r.predicate > i.predicate)
        FROM incoming AS i
        WHERE i.predicate IS NOT NULL
    )
    (SELECT o.predicate FROM outgoing AS o WHERE o.predicate IS NOT NULL LIMIT max_count)
    UNION
    (SELECT i.predicate FROM incoming AS i WHERE i.predicate IS NOT NULL LIMIT max_count);
END
$$;
COMMENT ON FUNCTION dm_private.discovery_entity_predicates(uuid, uuid, integer) IS
'Distinct predicates of an entity''s outgoing and incoming relationships (any status), by index skip scan, at most max_count per direction. Used to turn query words into predicate hints for the walk.';

-- Whether evidence may support a discovery edge or proximity: the same rule
-- as default recall (active, current source revision, active owner, request
-- time, policy labels covered by the principal's scopes).
CREATE OR REPLACE FUNCTION dm_private.discovery_eligible_evidence(
    evidence_team_id uuid,
    evidence_ids uuid [],
    valid_at timestamptz DEFAULT NULL,
    known_at timestamptz DEFAULT NULL,
    scopes text [] DEFAULT '{}'
)
RETURNS TABLE (evidence_id uuid)
LANGUAGE sql
STABLE
SET search_path = ''
AS $$
    SELECT e.evidence_id
    FROM dm_private.evidence AS e
    JOIN dm_private.source_revisions AS sr
      ON sr.team_id = e.team_id AND sr.source_id = e.source_id AND sr.revision_id = e.revision_id
    JOIN dm_private.profiles AS p ON p.team_id = e.team_id AND p.profile_id = e.owner_profile_id
    WHERE e.team_id = evidence_team_id
      AND e.evidence_id = ANY(evidence_ids)
      AND e.state = 'active'
      AND sr.is_current
      AND p.state = 'active'
      AND (valid_at IS NULL OR ((e.valid_from IS NULL OR e.valid_from <= valid_at)
                                AND (e.valid_to IS NULL OR valid_at < e.valid_to)))
      AND (CASE WHEN known_at IS NULL THEN e.known_to IS NULL OR e.known_to > pg_catalog.now()
                ELSE e.known_from <= known_at AND (e.known_to IS NULL OR known_at < e.known_to) END)
      AND NOT EXISTS (
          SELECT 1 FROM pg_catalog.jsonb_each(e.labels) AS l (key, value)
          WHERE l.value = 'true'::jsonb AND NOT (l.key = ANY(COALESCE(scopes, '{}'::text []))))
$$;
COMMENT ON FUNCTION dm_private.discovery_eligible_evidence(uuid, uuid [], timestamptz, timestamptz, text []) IS
'The subset of the given evidence IDs that is eligible as discovery support: active, current source revision, active owner, request time, policy labels covered by the scopes.';

-- Graph proximity for the composite score: hops from the query's entities to
-- each candidate evidence's linked entities (endpoints of the eligible
-- relationships it supports). Proximity is the distance within the bounded
-- seed walk (session 12, the lead's decision): a candidate's hops are the
-- smallest seed-walk distance (0..max_hops) among its linked entities, where
-- the seed walk is the walk from the query's entities under the default
-- profile's depth, fan-out and edge budgets. Evidence with no linked entity
-- inside that walk is not returned. Until session 11 a one-hop walk out of
-- the linked entities also met the seed walk in the middle; it was dropped
-- because it expanded linked entities in UUID order under a 200-edge cap, so
-- which candidates gained a 2-hop route was arbitrary, and it cost a third
-- of the call.
CREATE OR REPLACE FUNCTION dm_private.entity_proximity(
    team_id uuid,
    seed_entity_ids uuid [],
    evidence_ids uuid [],
    max_hops integer
)
RETURNS TABLE (evidence_id uuid, hops integer)
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
SET plan_cache_mode = 'force_generic_plan'
AS $$
DECLARE
    proximity_team uuid := dm_private.require_team(entity_proximity.team_id);
    cfg jsonb;
    fan_out integer;
    max_edges integer;
    hop_limit integer := LEAST(GREATEST(COALESCE(max_hops, 2), 0), 2);
    inactive_owners uuid [];
BEGIN
    IF seed_entity_ids IS NULL OR pg_catalog.cardinality(seed_entity_ids) = 0
       OR evidence_ids IS NULL OR pg_catalog.cardinality(evidence_ids) = 0 THEN
        RETURN;
    END IF;
    SELECT rp.settings -> 'discovery' INTO cfg FROM dm_private.ranking_profiles AS rp WHERE rp.is_default;
    fan_out := LEAST(GREATEST(COALESCE((cfg ->> 'fan_out')::integer, 20), 1), 100);
    max_edges := LEAST(GREATEST(COALESCE((cfg ->> 'max_edges')::integer, 200), 1), 2000);
    inactive_owners := ARRAY(SELECT p.profile_id FROM dm_private.profiles AS p
                             WHERE p.team_id = proximity_team AND p.state <> 'active');

    RETURN QUERY
    WITH RECURSIVE
    -- The walk from the seeds: dm_private.discovery_walk with no predicate
    -- hints, filter, exclusions, request time or deadline, carrying only the
    -- depth and the entity reached (no function call, no 15-column
    -- tuplestore). The same index ranges in the same order and the same
    -- edge cap, so the same edges: keep the two in step. Cycle detection is
    -- the CYCLE clause written out (a row reaching an entity already on its
    -- path is marked and not expanded; a NULL entity, a literal object, is
    -- never a cycle and never expanded). With at most two hops a path is
    -- (root, entity reached): the root entity and the entity the row
    -- expands are all it can revisit, two columns instead of a growing
    -- array copied into every row.
    seed_walk (depth, to_entity_id, is_cycle, root_entity_id) AS (
        SELECT 0, s.entity_id, false, s.entity_id
        FROM (SELECT DISTINCT u.entity_id FROM pg_catalog.unnest(seed_entity_ids) AS u (entity_id)
              WHERE u.entity_id IS NOT NULL) AS s
        UNION ALL
        SELECT w.depth + 1, x.next_entity_id,
               COALESCE(x.next_entity_id = w.root_entity_id OR x.next_entity_id = w.to_entity_id, false),
               w.root_entity_id
        FROM seed_walk AS w
        CROSS JOIN LATERAL (
            SELECT y.next_entity_id
            FROM (
                (SELECT r.object_entity_id AS next_entity_id
                 FROM dm_private.relationships AS r
                 WHERE r.team_id = proximity_team AND r.subject_entity_id = w.to_entity_id
                   AND r.status = 'active' AND r.tier IN ('validated_claim', 'fact')
                   AND (r.known_to IS NULL OR r.known_to > pg_catalog.now())
                   AND r.owner_profile_id <> ALL(inactive_owners)
                 LIMIT fan_out)
                UNION ALL
                (SELECT r.subject_entity_id AS next_entity_id
                 FROM dm_private.relationships AS r
                 WHERE r.team_id = proximity_team AND r.object_entity_id = w.to_entity_id
                   AND r.status = 'active' AND r.tier IN ('validated_claim', 'fact')
                   AND (r.known_to IS NULL OR r.known_to > pg_catalog.now())
                   AND r.owner_profile_id <> ALL(inactive_owners)
                 LIMIT fan_out)
            ) AS y
            LIMIT fan_out
        ) AS x
        WHERE w.depth < hop_limit
          AND w.to_entity_id IS NOT NULL
          AND NOT w.is_cycle
    ),
    from_seeds AS (
        SELECT s.entity_id, 0 AS dist
        FROM pg_catalog.unnest(seed_entity_ids) AS s (entity_id)
        WHERE s.entity_id IS NOT NULL
        UNION ALL
        SELECT w.to_entity_id, w.depth
        FROM (SELECT sw.depth, sw.to_entity_id FROM seed_walk AS sw
              WHERE sw.depth > 0 AND NOT sw.is_cycle
              LIMIT GREATEST(max_edges, 0)) AS w
        WHERE w.to_entity_id IS NOT NULL
    ),
    -- Read once (the final join), so not materialized: the hash join is
    -- built straight from the aggregate, without a copy into a CTE store
    -- (-0.19 M instructions per call, session 12).
    seed_dist AS (
        SELECT fs.entity_id, pg_catalog.min(fs.dist) AS dist FROM from_seeds AS fs GROUP BY fs.entity_id
    )
    ,
    endpoints AS (
        -- The linked entities of each candidate: the endpoints of the first
        -- fan_out of its eligible links by relationship_id (so evidence
        -- supporting thousands of relationships is read no further than
        -- any other, and the cut is deterministic). One hash probe of
        -- evidence_link_endpoints (migration 0073) per candidate: when all
        -- its links are within fan_out, none has a recorded end at or
        -- before now and no owner is inactive, its stored distinct
        -- endpoints are exactly that set, with no row per link. Otherwise
        -- (rare) the links are read as before, one range of the key of
        -- evidence_entity_links (0038). unnest in the select list
        -- (ProjectSet) streams the endpoints; in FROM it would fill a
        -- tuplestore per candidate.
        SELECT s.evidence_id,
               pg_catalog.unnest(CASE
                   WHEN s.link_count <= fan_out
                        AND (s.earliest_known_to IS NULL OR s.earliest_known_to > pg_catalog.now())
                        AND NOT (s.owner_ids OPERATOR(pg_catalog.&&) inactive_owners)
                       THEN s.entity_ids
                   ELSE ARRAY(
                       SELECT y.entity_id
                       FROM (SELECT k.subject_entity_id, k.object_entity_id
                             FROM dm_private.evidence_entity_links AS k
                             WHERE k.team_id = proximity_team
                               AND k.evidence_id = s.evidence_id
                               AND (k.known_to IS NULL OR k.known_to > pg_catalog.now())
                               AND k.owner_profile_id <> ALL(inactive_owners)
                             ORDER BY k.relationship_id
                             LIMIT fan_out) AS l
                       CROSS JOIN LATERAL (VALUES (l.subject_entity_id), (l.object_entity_id)) AS y (entity_id)
                       WHERE y.entity_id IS NOT NULL)
               END) AS entity_id
        FROM (SELECT DISTINCT u.evidence_id
              FROM pg_catalog.unnest(entity_proximity.evidence_ids) AS u (evidence_id)) AS c
        JOIN dm_private.evidence_link_endpoints AS s
          ON s.team_id = proximity_team AND s.evidence_id = c.evidence_id
    )
    -- Per evidence, the nearest of its linked entities inside the seed walk
    -- (seed_dist holds only distances 0..hop_limit).
    SELECT ep.evidence_id, pg_catalog.min(sd.dist)::integer
    FROM endpoints AS ep
    JOIN seed_dist AS sd ON sd.entity_id = ep.entity_id
    GROUP BY ep.evidence_id
    ORDER BY ep.evidence_id;
END
$$;
COMMENT ON FUNCTION dm_private.entity_proximity(uuid, uuid [], uuid [], integer) IS
'Graph hops (0 to max_hops, at most 2) from the query entities to each candidate evidence''s linked entities: the smallest distance of a linked entity within the seed walk (eligible relationships, the default profile''s depth, fan-out and edge caps); evidence with no linked entity in that walk is omitted. Feeds the recall core''s proximity signal.';

-- Predicate cardinality (migration 0031): the single-valued predicates of a
-- team, its own rows overriding the defaults; any other predicate is
-- multi-valued. Read once per discovery call or trace.
CREATE OR REPLACE FUNCTION dm_private.single_valued_predicates(cardinality_team_id uuid)
RETURNS text []
LANGUAGE sql
STABLE
SET search_path = ''
AS $$
    SELECT COALESCE(pg_catalog.array_agg(x.predicate ORDER BY x.predicate), '{}'::text [])
    FROM (
        SELECT t.predicate
        FROM dm_private.predicate_cardinalities AS t
        WHERE t.team_id = cardinality_team_id AND t.cardinality = 'single'
        UNION
        SELECT d.predicate
        FROM dm_private.predicate_cardinality_defaults AS d
        WHERE d.cardinality = 'single'
          AND NOT EXISTS (SELECT 1 FROM dm_private.predicate_cardinalities AS t
                          WHERE t.team_id = cardinality_team_id AND t.predicate = d.predicate)
    ) AS x
$$;
COMMENT ON FUNCTION dm_private.single_valued_predicates(uuid) IS
'The predicates that are single-valued for a team: its own predicate_cardinalities rows, else predicate_cardinality_defaults; every other predicate is multi-valued.';

-- Whether two relationships of the same subject and predicate (a recorded
-- conflict) really disagree: opposite polarity on the same object always
-- does; different objects only for a single-valued predicate and when both
-- sides are positive (lives in Berlin vs does not live in Paris agree; a
-- person uses many tools). Same object and same polarity never disagree.
CREATE OR REPLACE FUNCTION dm_private.relationships_disagree(
    predicate text,
    polarity dm_private.relationship_polarity,
    object_entity_id uuid,
    object_value text,
    other_polarity dm_private.relationship_polarity,
    other_object_entity_id uuid,
    other_object_value text,
    single_valued text []
)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
SET search_path = ''
AS $$
    SELECT CASE
        WHEN object_entity_id IS NOT DISTINCT FROM other_object_entity_id
             AND object_value IS NOT DISTINCT FROM other_object_value
            THEN polarity <> other_polarity
        ELSE predicate = ANY(COALESCE(single_valued, '{}'::text []))
             AND polarity = '+'::dm_private.relationship_polarity
             AND other_polarity = '+'::dm_private.relationship_polarity
    END
$$;
COMMENT ON FUNCTION dm_private.relationships_disagree(text, dm_private.relationship_polarity, uuid, text, dm_private.relationship_polarity, uuid, text, text []) IS
'Whether a recorded conflict is a disagreement: opposite polarity on the same object always; different objects only for a single-valued predicate (see single_valued_predicates) with both sides positive.';

REVOKE ALL ON FUNCTION dm_private.discovery_name_ngrams(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.discovery_lexemes(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.discovery_entity_seeds(uuid, text, public.vector, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.discovery_walk(uuid, uuid [], integer, integer, integer, timestamptz, timestamptz, text [], text [], uuid [], timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.discovery_entity_predicates(uuid, uuid, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.discovery_eligible_evidence(uuid, uuid [], timestamptz, timestamptz, text []) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.entity_proximity(uuid, uuid [], uuid [], integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.single_valued_predicates(uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.relationships_disagree(text, dm_private.relationship_polarity, uuid, text, dm_private.relationship_polarity, uuid, text, text []) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.discovery_name_ngrams(text) TO
densemem_app, densemem_analyst, densemem_operator, densemem_searcher;
GRANT EXECUTE ON FUNCTION dm_private.discovery_lexemes(text) TO
densemem_app, densemem_analyst, densemem_operator, densemem_searcher;
GRANT EXECUTE ON FUNCTION dm_private.discovery_entity_seeds(uuid, text, public.vector, integer) TO
densemem_app, densemem_analyst, densemem_operator;
GRANT EXECUTE ON FUNCTION dm_private.discovery_walk(uuid, uuid [], integer, integer, integer, timestamptz, timestamptz, text [], text [], uuid [], timestamptz) TO
densemem_app, densemem_analyst, densemem_operator, densemem_searcher;
GRANT EXECUTE ON FUNCTION dm_private.discovery_entity_predicates(uuid, uuid, integer) TO
densemem_app, densemem_analyst, densemem_operator;
GRANT EXECUTE ON FUNCTION dm_private.discovery_eligible_evidence(uuid, uuid [], timestamptz, timestamptz, text []) TO
densemem_app, densemem_analyst, densemem_operator;
GRANT EXECUTE ON FUNCTION dm_private.entity_proximity(uuid, uuid [], uuid [], integer) TO
densemem_app, densemem_analyst, densemem_operator;
GRANT EXECUTE ON FUNCTION dm_private.single_valued_predicates(uuid) TO
densemem_app, densemem_analyst, densemem_operator, densemem_searcher;
GRANT EXECUTE ON FUNCTION dm_private.relationships_disagree(text, dm_private.relationship_polarity, uuid, text, dm_private.relationship_polarity, uuid, text, text []) TO
densemem_app, densemem_analyst, densemem_operator, densemem_searcher;

-- ---------------------------------------------------------------- team predicates (migration 0057)

-- The predicates a team's relationships have ever used (insert-only, a
-- superset): discovery's predicate hints probe only the query-matching ones
-- when the team has used at most 30 (see migration 0057 and
-- discovery_for_recall_embedded). The triggers are created by 0057.
-- After INSERT on relationships (statement): the predicates of the new rows
-- the team has not used before.
CREATE OR REPLACE FUNCTION dm_private.team_predicates_inserted()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
    INSERT INTO dm_private.team_predicates (team_id, predicate)
    SELECT DISTINCT n.team_id, n.predicate
    FROM new_rows AS n
    WHERE NOT EXISTS (SELECT 1 FROM dm_private.team_predicates AS t
                      WHERE t.team_id = n.team_id AND t.predicate = n.predicate);
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.team_predicates_inserted() IS
'Trigger (statement, after INSERT on relationships): adds the predicates of the new rows that team_predicates does not hold yet.';
REVOKE ALL ON FUNCTION dm_private.team_predicates_inserted() FROM PUBLIC;

-- After UPDATE OF predicate on relationships (row, only when it changes):
-- the new predicate, when the team has not used it before.
CREATE OR REPLACE FUNCTION dm_private.team_predicates_updated()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
    INSERT INTO dm_private.team_predicates (team_id, predicate)
    SELECT NEW.team_id, NEW.predicate
    WHERE NOT EXISTS (SELECT 1 FROM dm_private.team_predicates AS t
                      WHERE t.team_id = NEW.team_id AND t.predicate = NEW.predicate);
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.team_predicates_updated() IS
'Trigger (row, after UPDATE OF predicate on relationships when it changes): adds the new predicate when team_predicates does not hold it yet.';
REVOKE ALL ON FUNCTION dm_private.team_predicates_updated() FROM PUBLIC;

-- ---------------------------------------------------------------- context marks (migration 0070)

-- Relationships that have (or had) a recorded conflict or an equivalent
-- relationship of another author (insert-only, a superset):
-- discovery_candidate_paths starts discovery_edge_context only when a pool
-- edge is marked (see migration 0070). The triggers are created by 0070.
-- After INSERT on conflicts (statement): both sides of every new conflict.
CREATE OR REPLACE FUNCTION dm_private.context_marks_conflicts_inserted()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
    INSERT INTO dm_private.discovery_context_marks (team_id, relationship_id)
    SELECT DISTINCT s.team_id, s.relationship_id
    FROM new_rows AS n
    CROSS JOIN LATERAL (VALUES (n.team_id, n.relationship_id), (n.team_id, n.conflicting_relationship_id))
        AS s (team_id, relationship_id)
    WHERE NOT EXISTS (SELECT 1 FROM dm_private.discovery_context_marks AS m
                      WHERE m.team_id = s.team_id AND m.relationship_id = s.relationship_id);
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.context_marks_conflicts_inserted() IS
'Trigger (statement, after INSERT or UPDATE on conflicts): marks both sides of the new rows in discovery_context_marks.';
REVOKE ALL ON FUNCTION dm_private.context_marks_conflicts_inserted() FROM PUBLIC;

-- After INSERT or UPDATE on relationships (statement): the written rows and
-- their equivalents, when the two have different authors. An update that
-- changes none of the columns deciding equivalence (status, tier,
-- verification, lifecycle: every update the service makes) reads nothing
-- but the transition tables.
CREATE OR REPLACE FUNCTION dm_private.context_marks_relationships_written()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF NOT EXISTS (
            SELECT 1
            FROM new_rows AS n
            JOIN old_rows AS o ON o.team_id = n.team_id AND o.relationship_id = n.relationship_id
            WHERE (n.semantic_group, n.subject_entity_id, n.predicate, n.object_entity_id, n.polarity,
                   n.owner_profile_id)
                  IS DISTINCT FROM (o.semantic_group, o.subject_entity_id, o.predicate, o.object_entity_id,
                                    o.polarity, o.owner_profile_id)) THEN
            RETURN NULL;
        END IF;
    END IF;
    -- Equivalent relationships form groups (same semantic group; same
    -- subject, predicate, object and polarity). A group with two or more
    -- authors has every member marked: each has an equivalent of another
    -- author. A group has two authors exactly when some member's owner
    -- differs from a new row's owner: one probe per new row (the probe
    -- discovery made per pool edge on every call before), and the members
    -- are read only for such groups. A member-wise "other author exists"
    -- probe would read a single-author group of n to its end for each member.
    INSERT INTO dm_private.discovery_context_marks (team_id, relationship_id)
    SELECT DISTINCT x.team_id, x.relationship_id
    FROM (SELECT DISTINCT n.team_id, n.semantic_group
          FROM new_rows AS n
          WHERE n.semantic_group IS NOT NULL
            AND EXISTS (SELECT 1 FROM dm_private.relationships AS y
                        WHERE y.team_id = n.team_id AND y.semantic_group = n.semantic_group
                          AND y.owner_profile_id <> n.owner_profile_id)) AS g
    JOIN dm_private.relationships AS x ON x.team_id = g.team_id AND x.semantic_group = g.semantic_group
    WHERE NOT EXISTS (SELECT 1 FROM dm_private.discovery_context_marks AS m
                      WHERE m.team_id = x.team_id AND m.relationship_id = x.relationship_id);
    INSERT INTO dm_private.discovery_context_marks (team_id, relationship_id)
    SELECT DISTINCT x.team_id, x.relationship_id
    FROM (SELECT DISTINCT n.team_id, n.subject_entity_id, n.predicate, n.object_entity_id, n.polarity
          FROM new_rows AS n
          WHERE n.object_entity_id IS NOT NULL
            AND EXISTS (SELECT 1 FROM dm_private.relationships AS y
                        WHERE y.team_id = n.team_id AND y.subject_entity_id = n.subject_entity_id
                          AND y.predicate = n.predicate AND y.object_entity_id = n.object_entity_id
                          AND y.polarity = n.polarity AND y.owner_profile_id <> n.owner_profile_id)) AS g
    JOIN dm_private.relationships AS x
      ON x.team_id = g.team_id AND x.subject_entity_id = g.subject_entity_id AND x.predicate = g.predicate
     AND x.object_entity_id = g.object_entity_id AND x.polarity = g.polarity
    WHERE NOT EXISTS (SELECT 1 FROM dm_private.discovery_context_marks AS m
                      WHERE m.team_id = x.team_id AND m.relationship_id = x.relationship_id);
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.context_marks_relationships_written() IS
'Trigger (statement, after INSERT or UPDATE on relationships): marks the written rows and their equivalents (same semantic group, or same endpoints, predicate and polarity) when some equivalent has another author.';
REVOKE ALL ON FUNCTION dm_private.context_marks_relationships_written() FROM PUBLIC;
