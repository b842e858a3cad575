-- Stage 2: query understanding.
--
-- Recall starts by making the query's structure explicit: hard anchors
-- (identifiers that a result must contain), quoted phrases, content terms,
-- entity mentions, predicate hints and time. The grammars are documented in
-- docs/QUERY_GRAMMAR.md; this file is their only implementation, so HTTP and
-- SQL callers get the same parse.
--
--   dm_private.parse_query_text(query, now)   pure text parsing, no tables:
--       dm_private.parse_anchors(text)         hard anchors
--       dm_private.parse_time(text, now)       time window, intent, temporal question
--                                             (dm_private.parse_time_words on split text)
--   dm_private.query_tokens(query)            tokens for name matching
--   dm_private.query_token_ngrams(tokens)     their 1-4 token n-grams
--   dm_private.query_fuzzy_keys(cased tokens) trigram-lookup candidates
--   dm_private.parse_query_names(team, n-grams, sorted n-grams, candidates, pieces)
--                                             the team check, then the team's entity names
--                                             and predicate synonyms in one statement
--                                             (dm_private.match_entity_trigrams for misspellings),
--                                             and the whole answer; match_query_names(team,
--                                             n-grams, candidates) is its wrapper
--   dm_private.parse_query_team(team, tokens, sorted tokens, candidates, pieces)
--                                             what dm.parse_query calls (session 8): the same
--                                             answer, the names and phrases read by their first
--                                             two words instead of by n-gram, since session 11
--                                             from one table (dm_private.parse_lexicon, 0068)
--   dm_private.match_query_entities(team, n-grams, candidates)
--   dm_private.predicate_hints(team, n-grams) the same two answers by sorting SQL statements,
--                                             for direct use (and rows beyond 16)
--   dm.parse_query(query, team, now)          all of the above, one jsonb
--
-- Work is capped: only the first 2,000 characters of a query are parsed, at
-- most 64 tokens feed the n-grams, and every output list has a maximum, so a
-- 1 MB query costs what a 2,000-character one costs.
--
-- Speed (the parse runs once per recall; target p95 <= 0.3 ms): everything is
-- PL/pgSQL with simple expressions; the only SQL statement is the team
-- lookup (and a trigram probe for misspelled names). Regular expressions run
-- only behind cheap guards that every match implies (a needle character, a
-- short regex with no lookaround, a digit test with ascii(), a word set as a
-- jsonb object); anchor matches are walked with regexp_instr (one scan) then
-- regexp_substr at the match; time is read by walking tokens and skipping
-- those that open no expression. The team is checked once per parse, by the
-- definer lookup: dm_private.require_team's plan reads an RLS table and is
-- re-planned whenever it runs under another role than last time.
-- docs/QUERY_GRAMMAR.md ("Cost") lists each shortcut; tests/python/
-- test_parse_fast_paths.py checks each against its plain rule.

-- The capped, space-normalized text every parser reads: the first 2,000
-- characters, with tabs, line breaks and exotic spaces (no-break, thin,
-- ideographic, zero-width) turned into plain spaces and typographic
-- apostrophes into ASCII ones.
CREATE OR REPLACE FUNCTION dm_private.parse_prepare_text(query text)
RETURNS text
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SET search_path = ''
AS $$
DECLARE
    capped constant text := pg_catalog.left(COALESCE(query, ''), 2000);
BEGIN
    -- Printable ASCII (most queries) holds none of the characters below:
    -- one regex run instead of translate's pass over its character list
    -- for every character of the query.
    IF capped !~ '[^ -~]' THEN
        RETURN capped;
    END IF;
    RETURN pg_catalog.translate(
        capped,
        U&'\0009\000A\000B\000C\000D\00A0\2000\2001\2002\2003\2004\2005\2006\2007\2008\2009\200A\200B\202F\205F\3000\FEFF\2019\2018',
        '                      ''''');
END
$$;
COMMENT ON FUNCTION dm_private.parse_prepare_text(text) IS
'The part of a query the parser reads: its first 2,000 characters, white space of any kind as plain spaces, typographic apostrophes as ASCII apostrophes. NULL reads as empty.';

-- Hard anchors: identifiers that one result must contain. Each grammar is a
-- regular expression with explicit boundaries plus a few documented
-- post-filters; grammars run in a fixed order and every accepted match is
-- masked out of the text before the next grammar runs, so an identifier
-- inside another (a hash inside a path, a version inside repo@v1.2.3) is
-- reported once, as the outer one. E-mail addresses are masked first and are
-- not anchors. Returns {"anchors": [...], "masked": text}; masked feeds the
-- terms.
CREATE OR REPLACE FUNCTION dm_private.parse_anchors(prepared text)
RETURNS jsonb
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SET search_path = ''
AS $$
DECLARE
    t text := COALESCE(prepared, '');
    anchors jsonb := '[]'::jsonb;
    seen text [] := '{}'::text [];
    raw text;
    v text;
    k text;
    pattern text;
    pos integer;
    found_at integer;
    letters integer;
    digits integer;
    masked text;
    grammar_kinds constant text [] := ARRAY[
        'path', 'path', 'path', 'scoped_name', 'scoped_name', 'uuid', 'server_id', 'semver', 'issue_key', 'hash'];
    -- A literal character every match of the grammar contains: a cheap guard.
    grammar_needles constant text [] := ARRAY[':\', '/', '/', ':', '@', '-', '-', '.', '-', ''];
    -- Then a short regular expression every match contains (a DFA scan with
    -- no lookaround), so that the full grammar runs only where it can match:
    -- a hyphenated word or an abbreviation such as "Dr." costs one scan.
    grammar_guards constant text [] := ARRAY[
        '', '', '', '[A-Za-z0-9]:[A-Za-z0-9]', '[A-Za-z0-9_.-]@[A-Za-z0-9]', '[0-9A-Fa-f]{8}-[0-9A-Fa-f]',
        '[Ss][Rr][Vv]-[A-Za-z0-9]', '[0-9]\.[0-9]', '[A-Z0-9]-[1-9]', '[0-9A-Fa-f]{7}'];
    grammar_patterns constant text [] := ARRAY[
        -- 1 path, Windows: drive letter, colon, backslash, at least one segment.
        '(?<![A-Za-z0-9_])[A-Za-z]:\\[^ \\/:*?"<>|]+(?:\\[^ \\/:*?"<>|]+)*\\?',
        -- 2 path, Unix absolute: at least two segments, starting a token.
        '(?<![^ ([{<"''=,;])/[A-Za-z0-9._~+@-]+(?:/[A-Za-z0-9._~+@-]+)+/?',
        -- 3 path, relative: at least one slash and a file extension that starts with a letter.
        '(?<![^ ([{<"''=,;])(?:\.\.?/)*[A-Za-z0-9_~+@-][A-Za-z0-9._~+@-]*(?:/[A-Za-z0-9._~+@-]+)*/[A-Za-z0-9_~+@-][A-Za-z0-9._~+@-]*\.[A-Za-z][A-Za-z0-9]{0,9}(?![A-Za-z0-9_~+@/-])',
        -- 4 scope:name, the scope starting with a letter (so 10:30 is a time, not a name).
        '(?<![A-Za-z0-9_.:/@-])[A-Za-z][A-Za-z0-9_-]*[A-Za-z0-9]:[A-Za-z0-9](?:[A-Za-z0-9_./-]*[A-Za-z0-9])?(?![A-Za-z0-9_:@-])',
        -- 5 repo@branch (e-mail addresses were masked before).
        '(?<![A-Za-z0-9_.:/@+-])[A-Za-z0-9][A-Za-z0-9_.-]*@[A-Za-z0-9](?:[A-Za-z0-9_./-]*[A-Za-z0-9])?(?![A-Za-z0-9_@-])',
        -- 6 uuid: 8-4-4-4-12 hex digits.
        '(?<![0-9A-Za-z_.+])[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}(?![0-9A-Za-z_])',
        -- 7 server id, our own grammar: srv- then 1-8 groups of letters and digits joined by hyphens.
        '(?<![0-9A-Za-z_.+-])[Ss][Rr][Vv](?:-[A-Za-z0-9]+){1,8}(?![A-Za-z0-9_]|-[A-Za-z0-9])',
        -- 8 semantic version: [v]MAJOR.MINOR.PATCH[-pre][+build], not inside a longer dotted number.
        '(?<![0-9A-Za-z_.+])[vV]?(?:0|[1-9][0-9]{0,8})\.(?:0|[1-9][0-9]{0,8})\.(?:0|[1-9][0-9]{0,8})(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?![0-9A-Za-z_+-]|\.[0-9A-Za-z])',
        -- 9 issue key: upper-case project key of 2-10 characters, hyphen, number without leading zero.
        '(?<![0-9A-Za-z_-])[A-Z][A-Z0-9]{1,9}-[1-9][0-9]{0,6}(?![0-9A-Za-z_]|-[0-9A-Za-z])',
        -- 10 hash: a run of 7-64 hex digits in one letter case, not joined by a hyphen (length and mix rules below).
        '(?<![0-9A-Za-z_-])(?:[0-9a-f]{7,64}|[0-9A-F]{7,64})(?![0-9A-Za-z_-])'];
BEGIN
    -- E-mail addresses: masked so that their parts are not read as anchors.
    IF pg_catalog.strpos(t, '@') > 0 THEN
        t := pg_catalog.regexp_replace(t,
            '[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![A-Za-z0-9_-])', ' ', 'g');
    END IF;

    -- Every grammar's match holds one of the needles above or, for a hash, a
    -- run of 7 hex digits: a query with neither (most queries) has no anchor.
    IF t !~ '[-:/@.]|[0-9A-Fa-f]{7}' THEN
        RETURN pg_catalog.jsonb_build_object('anchors', anchors, 'masked', t);
    END IF;

    FOR g IN 1..10 LOOP
        k := grammar_kinds[g];
        CONTINUE WHEN grammar_needles[g] <> '' AND pg_catalog.strpos(t, grammar_needles[g]) = 0;
        CONTINUE WHEN grammar_guards[g] <> '' AND t !~ grammar_guards[g];
        -- A hash below 17 characters has a digit; a longer one may be all letters.
        CONTINUE WHEN k = 'hash' AND t !~ '[0-9]' AND t !~ '[a-fA-F]{17}';
        pattern := grammar_patterns[g];
        masked := t;
        pos := 1;
        LOOP
            found_at := pg_catalog.regexp_instr(t, pattern, pos);
            EXIT WHEN found_at = 0;
            raw := pg_catalog.regexp_substr(t, pattern, found_at);
            pos := found_at + pg_catalog.length(raw);
            v := raw;
            IF k = 'path' THEN
                -- A sentence's punctuation is not part of a path.
                v := pg_catalog.regexp_replace(v, '(?<=[A-Za-z0-9_])[.,;!?''")\]}]+$', '');
                raw := v;
            ELSIF k = 'scoped_name' AND pg_catalog.strpos(v, '@') > 0 THEN
                -- meet@10, lunch@9:30pm-style times and digit-only left sides are not names.
                CONTINUE WHEN pg_catalog.split_part(v, '@', 1) !~ '[A-Za-z]'
                    OR pg_catalog.split_part(v, '@', 2) ~ '^[0-9]{1,2}(?:[:.][0-9]{2})?(?:am|pm)?$';
            ELSIF k = 'uuid' OR k = 'server_id' THEN
                v := pg_catalog.lower(v);
            ELSIF k = 'semver' THEN
                -- d.m.yyyy is a date, not a version.
                CONTINUE WHEN v ~ '^(?:[1-9]|[12][0-9]|3[01])\.(?:[1-9]|1[0-2])\.(?:19|20)[0-9]{2}$';
            ELSIF k = 'issue_key' THEN
                -- A short prefix with a one-digit number reads as a gene, protein or virus name
                -- (PD-1, IL-6, HIV-1, BCL-2) far more often than as a ticket: a wrong hard anchor
                -- empties a recall, a missed one only loses a boost, so these are not anchors.
                CONTINUE WHEN pg_catalog.split_part(v, '-', 2) ~ '^[0-9]$'
                    AND pg_catalog.length(pg_catalog.split_part(v, '-', 1)) < 4;
                -- Well-known names shaped like keys: encodings, ciphers, standards, diseases, devices.
                CONTINUE WHEN pg_catalog.split_part(v, '-', 1) = ANY (
                    '{UTF,UCS,SHA,MD,AES,RSA,DES,COVID,SARS,MERS,ISO,CVE,GPT,WPA,TLS,SSL,IPV,HTTP,MPEG,MP,PCI,USB,HDMI,DDR,LTE,PS,XBOX,IP,COM,LPT}'::text []);
            ELSIF k = 'hash' THEN
                letters := pg_catalog.length(pg_catalog.translate(v, '0123456789', ''));
                digits := pg_catalog.length(v) - letters;
                CONTINUE WHEN NOT (pg_catalog.length(v) BETWEEN 7 AND 40 OR pg_catalog.length(v) = 64);
                -- Never all digits (a number); below 17 characters letters and
                -- digits must mix (no English word has a digit, and no word
                -- spelled with a-f is 17 long); below 12, at least two digits and
                -- not a word followed by a year (cafe2024, dec2023).
                CONTINUE WHEN letters = 0;
                CONTINUE WHEN pg_catalog.length(v) < 17 AND digits = 0;
                CONTINUE WHEN pg_catalog.length(v) < 12
                    AND (digits < 2 OR v ~* '^[a-f]+(?:19|20)[0-9]{2}$');
                v := pg_catalog.lower(v);
            END IF;
            CONTINUE WHEN v = '';
            -- Mask what was accepted, at its own position only (rejected
            -- near-misses stay ordinary words): replacing every occurrence
            -- would also blank the same characters inside a longer identifier
            -- that a later grammar still has to find (/0/0 inside 0/0/0.a).
            -- Same-length blanks keep masked aligned with t.
            masked := pg_catalog.overlay(masked, pg_catalog.repeat(' ', pg_catalog.length(raw)),
                                         found_at, pg_catalog.length(raw));
            CONTINUE WHEN (k || ':' || v) = ANY (seen);
            seen := seen || (k || ':' || v);
            anchors := anchors || pg_catalog.jsonb_build_object('kind', k, 'value', v, 'required', true);
            EXIT WHEN pg_catalog.cardinality(seen) >= 32;
        END LOOP;
        t := masked;
        EXIT WHEN pg_catalog.cardinality(seen) >= 32;
    END LOOP;
    RETURN pg_catalog.jsonb_build_object('anchors', anchors, 'masked', t);
END
$$;
COMMENT ON FUNCTION dm_private.parse_anchors(text) IS
'Hard anchors of a prepared query text: [{"kind": "path|scoped_name|uuid|server_id|semver|issue_key|hash", "value", "required": true}] in grammar order then text order, at most 32, plus the text with accepted anchors and e-mail addresses masked. Grammars: docs/QUERY_GRAMMAR.md.';

-- Time: a window, an intent and the temporal-question flag, relative to the
-- injected clock, in UTC, read by walking the query's tokens. Calendar periods are half-open [from, to); several
-- window expressions intersect (an empty intersection keeps the first);
-- since / after / before / until / by open one side. Every form is in
-- docs/QUERY_GRAMMAR.md.
-- The time walker on a query already split (t, words, toks as
-- dm_private.parse_time computes them): dm.parse_query passes the tokens it
-- has already computed when they are the same ones.
CREATE OR REPLACE FUNCTION dm_private.parse_time_words(t text, words text [], toks text [], clock timestamptz)
RETURNS jsonb
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SET search_path = ''
AS $$
DECLARE
    -- Word lists are typed literals where they are used (folded into the
    -- cached plan; = ANY on nine or more elements is a hash probe), not
    -- variables: a variable is copied and expanded on every call, also by
    -- the queries (most) that never reach the walker.
    -- The words every intent rule starts from (a jsonb object as a word set).
    intent_words constant jsonb := '{"recent": true, "recently": true, "latest": true, "lately": true, "currently": true,
        "current": true, "nowadays": true, "days": true, "now": true, "newest": true, "time": true,
        "still": true, "first": true, "firstly": true, "originally": true, "original": true,
        "initially": true, "earliest": true, "oldest": true, "beginning": true, "with": true}'::jsonb;
    nt integer;
    i integer;
    j integer;
    k integer;
    t1 text;
    t2 text;
    t3 text;
    t4 text;
    n timestamp;
    today0 timestamp;
    prefix text;
    prep text;
    b text;
    w_from timestamp;
    w_to timestamp;
    unit text;
    qty integer;
    y integer;
    mo integer;
    d integer;
    found_windows integer := 0;
    first_from timestamp;
    first_to timestamp;
    win_from timestamp;
    win_to timestamp;
    expressions jsonb := '[]'::jsonb;
    intent text;
    temporal boolean;
    w text;
    form text;
    window_json jsonb := 'null'::jsonb;
BEGIN
    IF clock IS NOT NULL AND (
        t ~ '[0-9]'
        -- A jsonb object as a word set: ?| finds each word by binary search
        -- (an array overlap compares every pair of words).
        OR '{"today": true, "tonight": true, "yesterday": true, "tomorrow": true, "night": true,
           "morning": true, "afternoon": true, "evening": true, "day": true, "days": true,
           "week": true, "weeks": true, "weekend": true, "month": true, "months": true, "year": true,
           "years": true, "january": true, "february": true, "march": true, "april": true,
           "may": true, "june": true, "july": true, "august": true, "september": true,
           "october": true, "november": true, "december": true, "sept": true, "jan": true,
           "feb": true, "mar": true, "apr": true, "jun": true, "jul": true, "aug": true, "sep": true,
           "oct": true, "nov": true, "dec": true, "monday": true, "tuesday": true, "wednesday": true,
           "thursday": true, "friday": true, "saturday": true, "sunday": true}'::jsonb OPERATOR(pg_catalog.?|) words) THEN
        n := clock AT TIME ZONE 'UTC';
        today0 := pg_catalog.date_trunc('day', n);
        nt := COALESCE(pg_catalog.cardinality(toks), 0);
        i := 1;
        -- Walk the tokens: [opening word] [preposition] [the] base form. The
        -- longest base form at a position wins; a position without one moves on
        -- by one token.
        WHILE i <= nt LOOP
            -- Most tokens open no time expression: a token that is not an
            -- opening word, preposition, "the", number word, month, weekday
            -- or relative word and does not start with a digit matches no
            -- base form below, so one probe moves past it.
            IF pg_catalog.ascii(toks[i]) NOT BETWEEN 48 AND 57
               AND NOT ('{"since": true, "before": true, "after": true, "until": true, "till": true, "by": true,
                        "prior": true, "in": true, "during": true, "on": true, "of": true, "from": true,
                        "throughout": true, "around": true, "the": true, "a": true, "an": true, "one": true,
                        "two": true, "three": true, "four": true, "five": true, "six": true, "seven": true,
                        "eight": true, "nine": true, "ten": true, "eleven": true, "twelve": true, "january": true,
                        "february": true, "march": true, "april": true, "may": true, "june": true, "july": true,
                        "august": true, "september": true, "october": true, "november": true, "december": true,
                        "sept": true, "jan": true, "feb": true, "mar": true, "apr": true, "jun": true, "jul": true,
                        "aug": true, "sep": true, "oct": true, "nov": true, "dec": true, "today": true,
                        "tonight": true, "yesterday": true, "tomorrow": true, "last": true, "this": true,
                        "next": true, "past": true, "previous": true, "monday": true, "tuesday": true,
                        "wednesday": true, "thursday": true, "friday": true, "saturday": true, "sunday": true}'::jsonb OPERATOR(pg_catalog.?) toks[i]) THEN
                i := i + 1;
                CONTINUE;
            END IF;
            j := i;
            prefix := NULL;
            prep := NULL;
            IF toks[j] IN ('since', 'before', 'after', 'until', 'till', 'by') THEN
                prefix := toks[j];
                j := j + 1;
            ELSIF toks[j] = 'prior' AND toks[j + 1] = 'to' THEN
                prefix := 'prior to';
                j := j + 2;
            END IF;
            IF toks[j] IN ('in', 'during', 'on', 'of', 'from', 'throughout', 'around') THEN
                prep := toks[j];
                j := j + 1;
            END IF;
            IF toks[j] = 'the' THEN
                j := j + 1;
            END IF;
            -- Every base form below starts with a digit or one of these
            -- words (number words, months, day words, last / this / next /
            -- past / previous, weekdays): any other word (most often what
            -- follows "the", "in", "of") is no base form, and the position
            -- moves on as the chain below would (k = 0), without it.
            IF toks[j] IS NULL OR (pg_catalog.ascii(toks[j]) NOT BETWEEN 48 AND 57
               AND NOT ('{"a": true, "an": true, "one": true, "two": true, "three": true, "four": true,
                        "five": true, "six": true, "seven": true, "eight": true, "nine": true, "ten": true,
                        "eleven": true, "twelve": true, "january": true, "february": true, "march": true,
                        "april": true, "may": true, "june": true, "july": true, "august": true,
                        "september": true, "october": true, "november": true, "december": true, "sept": true,
                        "jan": true, "feb": true, "mar": true, "apr": true, "jun": true, "jul": true,
                        "aug": true, "sep": true, "oct": true, "nov": true, "dec": true, "today": true,
                        "tonight": true, "yesterday": true, "tomorrow": true, "last": true, "this": true,
                        "next": true, "past": true, "previous": true, "monday": true, "tuesday": true,
                        "wednesday": true, "thursday": true, "friday": true, "saturday": true,
                        "sunday": true}'::jsonb OPERATOR(pg_catalog.?) toks[j])) THEN
                i := i + 1;
                CONTINUE;
            END IF;
            t1 := toks[j];
            t2 := toks[j + 1];
            t3 := toks[j + 2];
            t4 := toks[j + 3];
            k := 0;
            -- The base form is recognized here, once, and its kind kept in
            -- form; the window below is computed from the tokens by kind.
            -- Token shapes are tested with string functions, not regular
            -- expressions (a regex run builds its automaton on every call):
            -- digits{1,3} (3), a year 19xx/20xx (2023), yyyy-mm-dd, a day
            -- [0-3]?[0-9] with an optional st/nd/rd/th (8th); each test is
            -- exactly its regular expression in docs/QUERY_GRAMMAR.md.
            form := NULL;
            IF t1 IS NULL THEN
                k := 0;
            ELSIF (t1 = ANY ('{a,an,one,two,three,four,five,six,seven,eight,nine,ten,eleven,twelve}'::text []) OR (pg_catalog.ascii(t1) BETWEEN 48 AND 57 AND pg_catalog.length(t1) <= 3 AND pg_catalog.ltrim(t1, '0123456789') = '')) AND t2 = ANY ('{day,days,week,weeks,month,months,year,years}'::text []) AND t3 = 'ago' THEN
                k := 3;                                   -- 3 days ago
                form := 'ago';
            ELSIF (pg_catalog.ascii(t1) BETWEEN 48 AND 57 AND pg_catalog.length(t1) = 10 AND pg_catalog.substr(t1, 5, 1) = '-' AND pg_catalog.substr(t1, 8, 1) = '-' AND pg_catalog.translate(t1, '0123456789', '') = '--') THEN
                k := 1;                                   -- 2023-05-08
                form := 'iso';
            ELSIF (pg_catalog.ascii(t1) BETWEEN 48 AND 57 AND CASE pg_catalog.ltrim(t1, '0123456789') WHEN '' THEN pg_catalog.length(t1) = 1 OR (pg_catalog.length(t1) = 2 AND pg_catalog.ascii(t1) <= 51) WHEN 'st' THEN pg_catalog.length(t1) = 3 OR (pg_catalog.length(t1) = 4 AND pg_catalog.ascii(t1) <= 51) WHEN 'nd' THEN pg_catalog.length(t1) = 3 OR (pg_catalog.length(t1) = 4 AND pg_catalog.ascii(t1) <= 51) WHEN 'rd' THEN pg_catalog.length(t1) = 3 OR (pg_catalog.length(t1) = 4 AND pg_catalog.ascii(t1) <= 51) WHEN 'th' THEN pg_catalog.length(t1) = 3 OR (pg_catalog.length(t1) = 4 AND pg_catalog.ascii(t1) <= 51) ELSE false END) AND (t2 = ANY ('{january,february,march,april,may,june,july,august,september,october,november,december,sept,jan,feb,mar,apr,jun,jul,aug,sep,oct,nov,dec}'::text []) OR (t2 = 'of' AND t3 = ANY ('{january,february,march,april,may,june,july,august,september,october,november,december,sept,jan,feb,mar,apr,jun,jul,aug,sep,oct,nov,dec}'::text []))) THEN
                IF t2 = 'of' THEN
                    k := CASE WHEN (pg_catalog.ascii(t4) BETWEEN 48 AND 57 AND pg_catalog.length(t4) = 4 AND pg_catalog.left(t4, 2) IN ('19', '20') AND pg_catalog.ltrim(t4, '0123456789') = '') THEN 4 ELSE 3 END;   -- 8th of May [2023]
                ELSE
                    k := CASE WHEN (pg_catalog.ascii(t3) BETWEEN 48 AND 57 AND pg_catalog.length(t3) = 4 AND pg_catalog.left(t3, 2) IN ('19', '20') AND pg_catalog.ltrim(t3, '0123456789') = '') THEN 3 ELSE 2 END;   -- 8 May [2023]
                END IF;
                form := CASE WHEN k = 2 OR (k = 3 AND t2 = 'of') THEN 'day month' ELSE 'day month year' END;
            ELSIF t1 = ANY ('{january,february,march,april,may,june,july,august,september,october,november,december,sept,jan,feb,mar,apr,jun,jul,aug,sep,oct,nov,dec}'::text []) THEN
                IF (pg_catalog.ascii(t2) BETWEEN 48 AND 57 AND CASE pg_catalog.ltrim(t2, '0123456789') WHEN '' THEN pg_catalog.length(t2) = 1 OR (pg_catalog.length(t2) = 2 AND pg_catalog.ascii(t2) <= 51) WHEN 'st' THEN pg_catalog.length(t2) = 3 OR (pg_catalog.length(t2) = 4 AND pg_catalog.ascii(t2) <= 51) WHEN 'nd' THEN pg_catalog.length(t2) = 3 OR (pg_catalog.length(t2) = 4 AND pg_catalog.ascii(t2) <= 51) WHEN 'rd' THEN pg_catalog.length(t2) = 3 OR (pg_catalog.length(t2) = 4 AND pg_catalog.ascii(t2) <= 51) WHEN 'th' THEN pg_catalog.length(t2) = 3 OR (pg_catalog.length(t2) = 4 AND pg_catalog.ascii(t2) <= 51) ELSE false END) THEN
                    k := CASE WHEN (pg_catalog.ascii(t3) BETWEEN 48 AND 57 AND pg_catalog.length(t3) = 4 AND pg_catalog.left(t3, 2) IN ('19', '20') AND pg_catalog.ltrim(t3, '0123456789') = '') THEN 3 ELSE 2 END;   -- May 8[, 2023]
                    form := CASE k WHEN 3 THEN 'month day year' ELSE 'month day' END;
                ELSIF (pg_catalog.ascii(t2) BETWEEN 48 AND 57 AND pg_catalog.length(t2) = 4 AND pg_catalog.left(t2, 2) IN ('19', '20') AND pg_catalog.ltrim(t2, '0123456789') = '') THEN
                    k := 2;                               -- May 2023
                    form := 'month year';
                ELSE
                    k := 1;                               -- May
                    form := 'month';
                END IF;
            ELSIF t1 IN ('today', 'tonight', 'yesterday', 'tomorrow') THEN
                k := 1;
                form := 'day word';
            ELSIF (t1 = 'last' AND t2 = 'night') OR (t1 = 'this' AND t2 IN ('morning', 'afternoon', 'evening')) THEN
                k := 2;
                form := 'day word';
            ELSIF t1 IN ('last', 'this', 'next', 'past', 'previous') AND t2 IN ('weekend', 'week', 'month', 'year') THEN
                k := 2;
                form := 'period';
            ELSIF t1 IN ('last', 'past', 'previous') AND (t2 = ANY ('{a,an,one,two,three,four,five,six,seven,eight,nine,ten,eleven,twelve}'::text []) OR (pg_catalog.ascii(t2) BETWEEN 48 AND 57 AND pg_catalog.length(t2) <= 3 AND pg_catalog.ltrim(t2, '0123456789') = ''))
                  AND t3 = ANY ('{day,days,week,weeks,month,months,year,years}'::text []) THEN
                k := 3;                                   -- last 3 days
                form := 'rolling';
            ELSIF t1 IN ('last', 'previous') AND t2 = ANY ('{monday,tuesday,wednesday,thursday,friday,saturday,sunday}'::text []) THEN
                k := 2;
                form := 'weekday';
            ELSIF t1 = ANY ('{monday,tuesday,wednesday,thursday,friday,saturday,sunday}'::text []) THEN
                k := 1;                                   -- Friday (needs a preposition)
                form := 'weekday';
            ELSIF (pg_catalog.ascii(t1) BETWEEN 48 AND 57 AND pg_catalog.length(t1) = 4 AND pg_catalog.left(t1, 2) IN ('19', '20') AND pg_catalog.ltrim(t1, '0123456789') = '') THEN
                k := 1;                                   -- 2023 (needs a preposition)
                form := 'year';
            END IF;
            IF k = 0 THEN
                i := i + 1;
                CONTINUE;
            END IF;
            b := pg_catalog.array_to_string(toks[j:j + k - 1], ' ');
            i := j + k;
            w_from := NULL;
            w_to := NULL;
            y := NULL;
            mo := NULL;
            d := NULL;
            IF form = 'iso' THEN
                -- 2023-05-08
                y := pg_catalog.substr(b, 1, 4)::integer;
                mo := pg_catalog.substr(b, 6, 2)::integer;
                d := pg_catalog.substr(b, 9, 2)::integer;
            ELSIF form = 'day month year' THEN
                -- 8 May 2023, 8th of May, 2023 (the day's digits: t1 without its suffix)
                d := pg_catalog.rtrim(t1, 'stndrh')::integer;
                mo := (pg_catalog.strpos('janfebmaraprmayjunjulaugsepoctnovdec', pg_catalog.left(CASE WHEN t2 = 'of' THEN t3 ELSE t2 END, 3)) + 2) / 3;
                y := (CASE WHEN t2 = 'of' THEN t4 ELSE t3 END)::integer;
            ELSIF form = 'month day year' THEN
                -- May 8, 2023
                mo := (pg_catalog.strpos('janfebmaraprmayjunjulaugsepoctnovdec', pg_catalog.left(t1, 3)) + 2) / 3;
                d := pg_catalog.rtrim(t2, 'stndrh')::integer;
                y := t3::integer;
            ELSIF form = 'month year' THEN
                -- May 2023
                mo := (pg_catalog.strpos('janfebmaraprmayjunjulaugsepoctnovdec', pg_catalog.left(t1, 3)) + 2) / 3;
                y := t2::integer;
            ELSIF form IN ('day month', 'month day') THEN
                -- 8 May / May 8: the most recent such day, today included.
                IF form = 'day month' THEN
                    d := pg_catalog.rtrim(t1, 'stndrh')::integer;
                    mo := (pg_catalog.strpos('janfebmaraprmayjunjulaugsepoctnovdec', pg_catalog.left(CASE WHEN t2 = 'of' THEN t3 ELSE t2 END, 3)) + 2) / 3;
                ELSE
                    d := pg_catalog.rtrim(t2, 'stndrh')::integer;
                    mo := (pg_catalog.strpos('janfebmaraprmayjunjulaugsepoctnovdec', pg_catalog.left(t1, 3)) + 2) / 3;
                END IF;
                y := pg_catalog.date_part('year', n)::integer;
                IF mo BETWEEN 1 AND 12 AND d BETWEEN 1 AND 31
                   AND pg_catalog.make_date(y, mo, 1) + (d - 1) > today0::date THEN
                    y := y - 1;
                END IF;
            ELSIF b IN ('today', 'tonight', 'this morning', 'this afternoon', 'this evening') THEN
                w_from := today0;
                w_to := today0 + interval '1 day';
            ELSIF b IN ('yesterday', 'last night') THEN
                w_from := today0 - interval '1 day';
                w_to := today0;
            ELSIF b = 'tomorrow' THEN
                w_from := today0 + interval '1 day';
                w_to := today0 + interval '2 days';
            ELSIF form = 'period' THEN
                -- last / this / next / past / previous weekend, week, month, year
                unit := t2;
                IF t1 = 'past' THEN
                    -- past week: the rolling seven days up to now.
                    w_to := n;
                    w_from := n - ('1 ' || CASE unit WHEN 'weekend' THEN 'week' ELSE unit END)::interval;
                ELSE
                    qty := CASE t1 WHEN 'this' THEN 0 WHEN 'next' THEN 1 ELSE -1 END;
                    IF unit = 'weekend' THEN
                        -- Saturday and Sunday of the ISO week (Monday first).
                        w_from := pg_catalog.date_trunc('week', n) + pg_catalog.make_interval(days => 5 + 7 * qty);
                        w_to := w_from + interval '2 days';
                    ELSE
                        w_from := pg_catalog.date_trunc(unit, n) + (qty::text || ' ' || unit)::interval;
                        w_to := w_from + ('1 ' || unit)::interval;
                    END IF;
                END IF;
            ELSIF form IN ('ago', 'rolling') THEN
                -- 3 days ago (t1 t2 ago) / last 3 days (t1 t2 t3)
                w := CASE form WHEN 'ago' THEN t1 ELSE t2 END;
                qty := CASE
                    WHEN pg_catalog.ascii(w) BETWEEN 48 AND 57 THEN w::integer
                    WHEN w IN ('a', 'an') THEN 1
                    ELSE pg_catalog.array_position(
                        '{one,two,three,four,five,six,seven,eight,nine,ten,eleven,twelve}'::text [], w)
                END;
                unit := pg_catalog.rtrim(CASE form WHEN 'ago' THEN t2 ELSE t3 END, 's');
                IF form = 'rolling' THEN
                    -- last 3 days: rolling, up to now.
                    w_to := n;
                    w_from := n - (qty::text || ' ' || unit)::interval;
                ELSE
                    -- 3 days ago: that calendar day (week, month, year).
                    w_from := pg_catalog.date_trunc(unit, n) - (qty::text || ' ' || unit)::interval;
                    w_to := w_from + ('1 ' || unit)::interval;
                END IF;
            ELSIF form = 'weekday' THEN
                -- last Friday / on Friday: the most recent such day before today.
                CONTINUE WHEN k = 1 AND prefix IS NULL AND prep IS NULL;
                qty := pg_catalog.array_position('{monday,tuesday,wednesday,thursday,friday,saturday,sunday}'::text [],
                    CASE k WHEN 1 THEN t1 ELSE t2 END);
                d := pg_catalog.date_part('isodow', n)::integer;
                w_from := today0 - pg_catalog.make_interval(days => ((d - qty + 6) % 7) + 1);
                w_to := w_from + interval '1 day';
                d := NULL;
            ELSIF form = 'month' THEN
                -- A bare month needs a preposition (in May, since March): the most
                -- recent such month that has started.
                CONTINUE WHEN prefix IS NULL AND prep IS NULL;
                mo := (pg_catalog.strpos('janfebmaraprmayjunjulaugsepoctnovdec', pg_catalog.left(b, 3)) + 2) / 3;
                y := pg_catalog.date_part('year', n)::integer;
                IF mo > pg_catalog.date_part('month', n) THEN
                    y := y - 1;
                END IF;
            ELSIF form = 'year' THEN
                -- A bare year needs a preposition (in 2023, before 2024).
                CONTINUE WHEN prefix IS NULL AND prep IS NULL;
                w_from := pg_catalog.make_timestamp(b::integer, 1, 1, 0, 0, 0);
                w_to := w_from + interval '1 year';
            ELSE
                CONTINUE;
            END IF;

            IF w_from IS NULL AND w_to IS NULL THEN
                -- A calendar month or day from y, mo, d; impossible dates are skipped.
                CONTINUE WHEN y IS NULL OR mo IS NULL OR mo NOT BETWEEN 1 AND 12 OR y NOT BETWEEN 1 AND 9999;
                IF d IS NULL THEN
                    w_from := pg_catalog.make_timestamp(y, mo, 1, 0, 0, 0);
                    w_to := w_from + interval '1 month';
                ELSE
                    CONTINUE WHEN d < 1
                        OR d > pg_catalog.date_part('day',
                            pg_catalog.make_timestamp(y, mo, 1, 0, 0, 0) + interval '1 month' - interval '1 day');
                    w_from := pg_catalog.make_timestamp(y, mo, d, 0, 0, 0);
                    w_to := w_from + interval '1 day';
                END IF;
            END IF;

            -- since / after / before / until / by open one side.
            IF prefix = 'since' THEN
                w_to := NULL;
            ELSIF prefix = 'after' THEN
                w_from := w_to;
                w_to := NULL;
            ELSIF prefix IN ('before', 'prior to') THEN
                w_to := w_from;
                w_from := NULL;
            ELSIF prefix IN ('until', 'till', 'by') THEN
                w_from := NULL;
            END IF;

            found_windows := found_windows + 1;
            IF found_windows = 1 THEN
                first_from := w_from;
                first_to := w_to;
                win_from := w_from;
                win_to := w_to;
            ELSE
                IF w_from IS NOT NULL AND (win_from IS NULL OR w_from > win_from) THEN
                    win_from := w_from;
                END IF;
                IF w_to IS NOT NULL AND (win_to IS NULL OR w_to < win_to) THEN
                    win_to := w_to;
                END IF;
            END IF;
            expressions := expressions || pg_catalog.to_jsonb(pg_catalog.concat_ws(' ', prefix, prep, b));
            EXIT WHEN found_windows >= 8;
        END LOOP;
    END IF;

    IF found_windows > 0 THEN
        IF win_from IS NOT NULL AND win_to IS NOT NULL AND win_from >= win_to THEN
            -- Contradictory expressions: keep the first one.
            win_from := first_from;
            win_to := first_to;
        END IF;
        -- ISO 8601 with an explicit +00:00, whatever the session's TimeZone.
        -- Two texts (or nulls): jsonb_object, without jsonb_build_object's
        -- per-argument type look-ups.
        window_json := pg_catalog.jsonb_object('{from,to}'::text [], ARRAY[
            (pg_catalog.to_jsonb(win_from) OPERATOR(pg_catalog.#>>) '{}'::text []) || '+00:00',
            (pg_catalog.to_jsonb(win_to) OPERATOR(pg_catalog.#>>) '{}'::text []) || '+00:00']);
    END IF;

    -- Intent: the first intent word of the query decides.
    IF intent_words OPERATOR(pg_catalog.?|) words THEN
        FOR idx IN 1..COALESCE(pg_catalog.cardinality(toks), 0) LOOP
            -- Every rule below starts from one of the intent words.
            CONTINUE WHEN NOT (intent_words OPERATOR(pg_catalog.?) toks[idx]);
            w := toks[idx];
            IF w IN ('recently', 'recent', 'latest', 'lately', 'currently', 'current', 'nowadays', 'now', 'newest', 'still')
               OR (w = 'days' AND toks[idx - 1] = 'these') OR (w = 'time' AND toks[idx - 1] = 'last') THEN
                intent := 'latest';
                EXIT;
            ELSIF w IN ('first', 'firstly', 'originally', 'original', 'initially', 'earliest', 'oldest')
                  OR (w = 'beginning' AND toks[idx - 1] = 'the' AND toks[idx - 2] = 'in')
                  OR (w = 'with' AND toks[idx - 1] = 'begin' AND toks[idx - 2] = 'to') THEN
                intent := 'earliest';
                EXIT;
            END IF;
        END LOOP;
    END IF;

    -- A temporal question: "when" opening the query or a clause (after
    -- .?!;: or and / but / so / since) or before an auxiliary; what / which
    -- year, month, day, date, time, week, season; how long ago / has / did ...
    temporal := false;
    IF '{"when": true, "year": true, "month": true, "day": true, "date": true, "time": true,
          "week": true, "season": true, "long": true}'::jsonb OPERATOR(pg_catalog.?|) words THEN
        FOR idx IN 1..COALESCE(pg_catalog.cardinality(toks), 0) LOOP
            CONTINUE WHEN toks[idx] NOT IN ('when', 'what', 'which', 'how');
            w := toks[idx];
            IF w = 'when' THEN
                -- COALESCE: past the last word toks[idx + 1] is NULL, and
                -- the flag must stay a boolean ("Really? when")
                temporal := COALESCE(idx = 1
                    OR toks[idx - 1] IN ('and', 'but', 'so', 'since')
                    OR toks[idx + 1] IN ('did', 'do', 'does', 'was', 'were', 'is', 'are', 'will', 'has', 'have', 'had',
                                         'would', 'could', 'should', 'can'), false);
            ELSIF w IN ('what', 'which') THEN
                temporal := COALESCE(toks[idx + 1] IN ('year', 'month', 'day', 'date', 'time', 'week', 'season'), false);
            ELSIF w = 'how' THEN
                temporal := COALESCE(toks[idx + 1] = 'long'
                                     AND toks[idx + 2] IN ('ago', 'has', 'have', 'had', 'did', 'was', 'were'), false);
            END IF;
            EXIT WHEN temporal;
        END LOOP;
        IF NOT temporal AND pg_catalog.strpos(t, 'when') > 0 THEN
            temporal := t ~ '[.?!;:] *when\M';
        END IF;
    END IF;

    -- Most queries name no time: a typed literal (folded into the cached
    -- plan) instead of building the same object.
    IF intent IS NULL AND temporal IS NOT NULL AND window_json = 'null'::jsonb AND expressions = '[]'::jsonb THEN
        IF temporal THEN
            RETURN '{"window": null, "intent": null, "temporal_question": true, "expressions": []}'::jsonb;
        END IF;
        RETURN '{"window": null, "intent": null, "temporal_question": false, "expressions": []}'::jsonb;
    END IF;
    RETURN pg_catalog.jsonb_build_object(
        'window', window_json,
        'intent', intent,
        'temporal_question', temporal,
        'expressions', expressions);
END
$$;
COMMENT ON FUNCTION dm_private.parse_time_words(text, text [], text [], timestamptz) IS
'dm_private.parse_time on a query already split: t its lower-case text, words its words (only tested for membership: empty elements are ignored), toks the walker''s tokens, as dm_private.parse_time computes them.';

CREATE OR REPLACE FUNCTION dm_private.parse_time(prepared text, clock timestamptz)
RETURNS jsonb
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SET search_path = ''
AS $$
DECLARE
    t constant text := pg_catalog.lower(COALESCE(prepared, ''));
    -- Words for the keyword guards, so that the walker and its regular
    -- expressions run only when a form can match. Punctuation becomes space
    -- by regexp_replace (one regex run per punctuation mark; translate would
    -- scan its whole character list for every character of the query).
    words constant text [] := pg_catalog.string_to_array(
        pg_catalog.regexp_replace(t, '[][,.;:!?(){}"“”''/-]', ' ', 'g'), ' ');
    -- Tokens for the window walker: punctuation (but not - in 2023-05-08)
    -- and apostrophes are separators; without - or / they are the words.
    toks constant text [] := pg_catalog.array_remove(CASE
        WHEN pg_catalog.strpos(t, '-') = 0 AND pg_catalog.strpos(t, '/') = 0 THEN words
        ELSE pg_catalog.string_to_array(pg_catalog.regexp_replace(t, '[][,.;:!?(){}"“”'']', ' ', 'g'), ' ')
    END, '');
BEGIN
    RETURN dm_private.parse_time_words(t, words, toks, clock);
END
$$;
COMMENT ON FUNCTION dm_private.parse_time(text, timestamptz) IS
'Time hints of a prepared query under the given clock (UTC): {"window": {"from", "to"} or null, "intent": "latest"|"earliest"|null, "temporal_question": bool, "expressions": [...]}. Grammar: docs/QUERY_GRAMMAR.md.';

-- Tokens for name matching, in the query's own case: split on spaces,
-- punctuation trimmed from both ends of each token (inner punctuation stays:
-- dense-mem, o'neil, node.js; + and # stay: c++, c#), possessive 's removed,
-- at most 64 tokens.
CREATE OR REPLACE FUNCTION dm_private.query_tokens_cased(query text)
RETURNS text []
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SET search_path = ''
AS $$
BEGIN
    RETURN (pg_catalog.array_remove(pg_catalog.string_to_array(
        pg_catalog.regexp_replace(
            dm_private.parse_prepare_text(query),
            '''[sS](?![^ !"$%&''()*,./:;<=>?@[\\\]^_`{|}~“”‘«»¿¡…—–·-])|(?<![^ ])[!"$%&''()*,./:;<=>?@[\\\]^_`{|}~“”‘«»¿¡…—–·-]+|[!"$%&''()*,./:;<=>?@[\\\]^_`{|}~“”‘«»¿¡…—–·-]+(?![^ ])',
            '', 'g'),
        ' '), ''))[1:64];
END
$$;
COMMENT ON FUNCTION dm_private.query_tokens_cased(text) IS
'Tokens of a query for name matching, case kept: split on spaces, edge punctuation and possessive ''s removed, at most 64.';

-- The same tokens in lower case: entity names are normalized the same way
-- (dm_private.normalize_name: lower case, single spaces).
CREATE OR REPLACE FUNCTION dm_private.query_tokens(query text)
RETURNS text []
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SET search_path = ''
AS $$
BEGIN
    RETURN pg_catalog.string_to_array(pg_catalog.lower(
        pg_catalog.array_to_string(dm_private.query_tokens_cased(query), ' ')), ' ');
END
$$;
COMMENT ON FUNCTION dm_private.query_tokens(text) IS
'Lower-case tokens of a query for name matching (dm_private.query_tokens_cased in lower case), at most 64.';

-- The n-grams of lower-case tokens: every contiguous run of 1 to 4 tokens,
-- ordered by start then length (exact lookup of names, aliases and predicate
-- phrases). Built as one text, the n-grams separated by a control character
-- (U+001F), and split once at the end: one string concatenation per token
-- instead of an array constructor and an array copy per token (the array
-- grew by copying, quadratic in the tokens). An array the text form cannot
-- carry (a token holding the separator, a NULL token, a lone token, a lower
-- bound other than 1) takes the element-wise loop.
CREATE OR REPLACE FUNCTION dm_private.query_token_ngrams(toks text [])
RETURNS text []
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SET search_path = ''
AS $$
DECLARE
    n constant integer := COALESCE(pg_catalog.cardinality(toks), 0);
    joined text := '';
    grams text [] := '{}'::text [];
BEGIN
    IF n = 0 THEN
        RETURN grams;
    END IF;
    IF n > 1 AND pg_catalog.array_lower(toks, 1) = 1 AND pg_catalog.array_position(toks, NULL) IS NULL
       AND pg_catalog.strpos(pg_catalog.array_to_string(toks, ''), U&'\001F') = 0 THEN
        -- Starts with all four lengths, then the last three starts.
        FOR i IN 1..n - 3 LOOP
            joined := joined || toks[i] || U&'\001F'
                || toks[i] || ' ' || toks[i + 1] || U&'\001F'
                || toks[i] || ' ' || toks[i + 1] || ' ' || toks[i + 2] || U&'\001F'
                || toks[i] || ' ' || toks[i + 1] || ' ' || toks[i + 2] || ' ' || toks[i + 3] || U&'\001F';
        END LOOP;
        IF n >= 3 THEN
            joined := joined || toks[n - 2] || U&'\001F'
                || toks[n - 2] || ' ' || toks[n - 1] || U&'\001F'
                || toks[n - 2] || ' ' || toks[n - 1] || ' ' || toks[n] || U&'\001F';
        END IF;
        IF n >= 2 THEN
            joined := joined || toks[n - 1] || U&'\001F' || toks[n - 1] || ' ' || toks[n] || U&'\001F';
        END IF;
        RETURN pg_catalog.string_to_array(joined || toks[n], U&'\001F');
    END IF;
    -- One array expression per token: the runs that would pass the end of
    -- the query (or hold a NULL token) are NULL and are removed at the end.
    FOR i IN 1..n LOOP
        grams := grams || ARRAY[
            toks[i],
            toks[i] || ' ' || toks[i + 1],
            toks[i] || ' ' || toks[i + 1] || ' ' || toks[i + 2],
            toks[i] || ' ' || toks[i + 1] || ' ' || toks[i + 2] || ' ' || toks[i + 3]];
    END LOOP;
    RETURN pg_catalog.array_remove(grams, NULL);
END
$$;
COMMENT ON FUNCTION dm_private.query_token_ngrams(text []) IS
'Every run of 1 to 4 consecutive tokens of a token array, joined by single spaces, ordered by start then length.';

-- The trigram-lookup candidates (misspelled names) of a query's cased
-- tokens, at most 8. Names are written capitalized, so the candidates are
-- pairs of consecutive capitalized tokens, then capitalized tokens of 4+
-- characters, never the query's first token, a stop word, a month or a
-- weekday; a query with no upper-case letter at all uses its tokens of 5+
-- characters that are not stop words. dm_private.match_query_entities
-- probes at most 2 of them (one GIN index probe each), skipping those inside
-- an exact match. The word lists are literals so that = ANY is a hash probe.
CREATE OR REPLACE FUNCTION dm_private.query_fuzzy_keys(cased text [])
RETURNS text []
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SET search_path = ''
AS $$
DECLARE
    joined constant text := pg_catalog.array_to_string(cased, ' ');
    toks constant text [] := pg_catalog.string_to_array(pg_catalog.lower(joined), ' ');
    n constant integer := COALESCE(pg_catalog.cardinality(toks), 0);
    prev_capitalized boolean := false;
    capitalized boolean;
    pairs text [] := '{}'::text [];
    singles text [] := '{}'::text [];
BEGIN
    IF joined = pg_catalog.array_to_string(toks, ' ') THEN
        -- No upper-case letter: the longer words that are not stop words.
        FOR i IN 1..n LOOP
            IF pg_catalog.length(toks[i]) >= 5
               AND NOT toks[i] = ANY ('{a,about,after,all,also,an,and,any,are,as,at,be,been,before,but,by,can,could,did,do,does,for,from,had,has,have,he,her,his,how,if,in,into,is,it,its,just,me,my,no,not,of,on,or,our,she,so,some,than,that,the,their,them,then,there,these,they,this,to,was,we,were,what,when,where,which,while,who,whom,why,will,with,would,you,your,i,im,ive,id,ill,us,him,hers,ours,theirs,does,doing,done,been,being,into,over,under,again,ever,never,yes,okay,ok,hey,hi,hello,thanks,thank,please,did,didn,doesn,isn,wasn,weren,won,dont,cant,wont,about,after,before,since,until,last,first,next,this,that,those,these,such,very,much,many,more,most,other,another}'::text []) THEN
                singles := singles || toks[i];
            END IF;
        END LOOP;
        RETURN singles[1:8];
    END IF;
    FOR i IN 2..n LOOP
        -- Capitalized, not a stop word, month or weekday, not the first word.
        capitalized := pg_catalog.left(cased[i], 1) <> pg_catalog.lower(pg_catalog.left(cased[i], 1))
            AND NOT toks[i] = ANY ('{a,about,after,all,also,an,and,any,are,as,at,be,been,before,but,by,can,could,did,do,does,for,from,had,has,have,he,her,his,how,if,in,into,is,it,its,just,me,my,no,not,of,on,or,our,she,so,some,than,that,the,their,them,then,there,these,they,this,to,was,we,were,what,when,where,which,while,who,whom,why,will,with,would,you,your,i,im,ive,id,ill,us,him,hers,ours,theirs,does,doing,done,been,being,into,over,under,again,ever,never,yes,okay,ok,hey,hi,hello,thanks,thank,please,did,didn,doesn,isn,wasn,weren,won,dont,cant,wont,about,after,before,since,until,last,first,next,this,that,those,these,such,very,much,many,more,most,other,another,january,february,march,april,may,june,july,august,september,october,november,december,jan,feb,mar,apr,jun,jul,aug,sep,sept,oct,nov,dec,monday,tuesday,wednesday,thursday,friday,saturday,sunday,today,yesterday,tomorrow}'::text []);
        IF capitalized THEN
            IF prev_capitalized THEN
                pairs := pairs || (toks[i - 1] || ' ' || toks[i]);
            END IF;
            IF pg_catalog.length(toks[i]) >= 4 THEN
                singles := singles || toks[i];
            END IF;
        END IF;
        prev_capitalized := capitalized;
    END LOOP;
    RETURN (pairs || singles)[1:8];
END
$$;
COMMENT ON FUNCTION dm_private.query_fuzzy_keys(text []) IS
'At most 8 trigram-lookup candidates of a query''s cased tokens (dm_private.query_tokens_cased): pairs of consecutive capitalized tokens, then capitalized tokens of 4+ characters (never the first token, stop words or calendar words); tokens of 5+ characters that are not stop words in an all-lower-case query.';

-- What the entity lookup needs from a query, computed once: the n-grams
-- (dm_private.query_token_ngrams of the lower-case tokens) and the trigram
-- candidates (dm_private.query_fuzzy_keys).
CREATE OR REPLACE FUNCTION dm_private.query_name_keys(query text, OUT ngrams text [], OUT fuzzy text [])
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SET search_path = ''
AS $$
DECLARE
    cased constant text [] := dm_private.query_tokens_cased(query);
BEGIN
    ngrams := dm_private.query_token_ngrams(
        pg_catalog.string_to_array(pg_catalog.lower(pg_catalog.array_to_string(cased, ' ')), ' '));
    fuzzy := dm_private.query_fuzzy_keys(cased);
END
$$;
COMMENT ON FUNCTION dm_private.query_name_keys(text) IS
'The n-grams (1-4 lower-case tokens, by start then length) and at most 8 trigram-lookup candidates (pairs of capitalized tokens, then capitalized tokens; tokens of 5+ characters in an all-lower-case query) of a query.';

CREATE OR REPLACE FUNCTION dm_private.query_ngrams(query text)
RETURNS text []
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SET search_path = ''
AS $$
BEGIN
    RETURN dm_private.query_token_ngrams(dm_private.query_tokens(query));
END
$$;
COMMENT ON FUNCTION dm_private.query_ngrams(text) IS
'The 1- to 4-token n-grams of a query (dm_private.query_tokens), ordered by start then length.';

-- The pure part of the parse: everything that needs no table. IMMUTABLE:
-- the same query and clock give the same answer under any session settings.
CREATE OR REPLACE FUNCTION dm_private.parse_query_text(query text, now timestamptz)
RETURNS jsonb
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SET search_path = ''
AS $$
DECLARE
    prepared constant text := dm_private.parse_prepare_text(query);
    anchored jsonb;
    t_lower text;
    t_words text [];
    t_toks text [];
    phrases jsonb := '[]'::jsonb;
    terms text [] := '{}'::text [];
    raw text;
    phrase text;
    pos integer := 1;
    found_at integer;
    w text;
BEGIN
    anchored := dm_private.parse_anchors(prepared);

    -- Quoted phrases: "..." and “...”, 1-300 characters (longer quotes are
    -- skipped), spaces collapsed, at most 16.
    IF pg_catalog.strpos(prepared, '"') > 0 OR pg_catalog.strpos(prepared, '“') > 0 THEN
        LOOP
            found_at := pg_catalog.regexp_instr(prepared, '"[^"]+"|“[^”]+”', pos);
            EXIT WHEN found_at = 0;
            raw := pg_catalog.regexp_substr(prepared, '"[^"]+"|“[^”]+”', found_at);
            pos := found_at + pg_catalog.length(raw);
            phrase := pg_catalog.btrim(pg_catalog.regexp_replace(
                pg_catalog.substr(raw, 2, pg_catalog.length(raw) - 2), ' +', ' ', 'g'));
            CONTINUE WHEN phrase = '' OR pg_catalog.length(phrase) > 300
                OR phrases OPERATOR(pg_catalog.@>) pg_catalog.jsonb_build_array(phrase);
            phrases := phrases || pg_catalog.to_jsonb(phrase);
            EXIT WHEN pg_catalog.jsonb_array_length(phrases) >= 16;
        END LOOP;
    END IF;

    -- Content terms: lower-case words (letters and digits) of the
    -- anchor-masked text, without stop words and one-letter words, first
    -- occurrence order, at most 32.
    -- In ASCII (one byte per character) the letters and digits are [a-z0-9]
    -- once lower-cased: replacing the other runs (punctuation, one regex run
    -- each) and splitting on spaces gives the same words as splitting on
    -- [^[:alnum:]]+ (one regex run per word boundary); empty pieces are
    -- skipped below.
    FOREACH w IN ARRAY CASE WHEN pg_catalog.octet_length(prepared) = pg_catalog.length(prepared) THEN pg_catalog.string_to_array(pg_catalog.regexp_replace(
        pg_catalog.lower(anchored OPERATOR(pg_catalog.->>) 'masked'), '[^ a-z0-9]+', ' ', 'g'), ' ')
        ELSE pg_catalog.regexp_split_to_array(
        pg_catalog.lower(anchored OPERATOR(pg_catalog.->>) 'masked'), '[^[:alnum:]]+') END LOOP
        CONTINUE WHEN pg_catalog.length(w) < 2 OR w = ANY (terms) OR w = ANY ('{about,above,after,again,against,all,am,an,and,any,are,as,at,be,because,been,before,being,below,between,both,but,by,can,could,did,do,does,doing,down,during,each,few,for,from,further,had,has,have,having,he,her,here,hers,herself,him,himself,his,how,if,in,into,is,it,its,itself,just,me,more,most,my,myself,no,nor,not,now,of,off,on,once,only,or,other,our,ours,ourselves,out,over,own,same,she,should,so,some,such,than,that,the,their,theirs,them,themselves,then,there,these,they,this,those,through,to,too,under,until,up,very,was,we,were,what,when,where,which,while,who,whom,why,will,with,would,you,your,yours,yourself,yourselves,ll,re,ve,don,didn,doesn,isn,wasn,weren,won}'::text []);
        terms := terms || w;
        EXIT WHEN pg_catalog.cardinality(terms) >= 32;
    END LOOP;

    RETURN pg_catalog.jsonb_build_object(
        'anchors', anchored OPERATOR(pg_catalog.->) 'anchors',
        'phrases', phrases,
        'terms', pg_catalog.to_jsonb(terms),
        'time', dm_private.parse_time(prepared, now));
END
$$;
COMMENT ON FUNCTION dm_private.parse_query_text(text, timestamptz) IS
'The table-free part of dm.parse_query: {"anchors", "phrases", "terms", "time"} of the first 2,000 characters of a query under the given clock (UTC). IMMUTABLE; never raises on any text. Grammar: docs/QUERY_GRAMMAR.md.';

-- The first ten elements of a jsonb array, in order: the cap of the entity
-- and predicate lists, applied after their statements (rarely needed).
CREATE OR REPLACE FUNCTION dm_private.parse_first_ten(list jsonb)
RETURNS jsonb
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
SET search_path = ''
AS $$
    SELECT COALESCE(pg_catalog.jsonb_agg(z.value ORDER BY z.ord), '[]'::jsonb)
    FROM pg_catalog.jsonb_array_elements(list) WITH ORDINALITY AS z (value, ord)
    WHERE z.ord <= 10
$$;
COMMENT ON FUNCTION dm_private.parse_first_ten(jsonb) IS
'The first ten elements of a jsonb array, in order (the cap of dm.parse_query''s entity and predicate lists).';

-- The default predicate synonyms as a constant: {first word of the phrase:
-- the text of a text [] {{predicate, phrase}, ...} ordered by phrase, then
-- predicate}. Generated: dm_private.parse_write_default_synonyms() replaces
-- this definition with one holding the current rows of
-- dm_private.predicate_synonym_defaults, when this file is applied and,
-- through a statement trigger, after every change of that table. IMMUTABLE
-- without arguments: the planner evaluates it once into the cached plan of
-- the expression that calls it (dm_private.parse_query_team), and replacing
-- the function invalidates that plan; a session sees a change of the
-- defaults from its next transaction on. The empty object below stands
-- only until the end of this file.
CREATE OR REPLACE FUNCTION dm_private.parse_default_synonyms()
RETURNS jsonb
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SET search_path = ''
AS $$
BEGIN
    RETURN '{}'::jsonb;
END
$$;

-- Writes dm_private.parse_default_synonyms() from the table: one object,
-- its keys the phrases' first words (a phrase holds 1-4 words separated by
-- single spaces, lower case: its table's check), each value a text []
-- literal (array_in reads any phrase back exactly).
CREATE OR REPLACE FUNCTION dm_private.parse_write_default_synonyms()
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
DECLARE
    generated jsonb;
BEGIN
    SELECT COALESCE(pg_catalog.jsonb_object_agg(g.first_word, g.pairs), '{}'::jsonb)
    INTO generated
    FROM (
        SELECT pg_catalog.split_part(d.phrase, ' ', 1) AS first_word,
               pg_catalog.array_agg(ARRAY[d.predicate, d.phrase] ORDER BY d.phrase, d.predicate)::text AS pairs
        FROM dm_private.predicate_synonym_defaults AS d
        GROUP BY pg_catalog.split_part(d.phrase, ' ', 1)
    ) AS g;
    EXECUTE pg_catalog.format(
        'CREATE OR REPLACE FUNCTION dm_private.parse_default_synonyms() RETURNS jsonb LANGUAGE plpgsql '
        'IMMUTABLE PARALLEL SAFE SET search_path = %L AS %L',
        '', pg_catalog.format(E'\nBEGIN\n    RETURN %L::jsonb;\nEND\n', generated::text));
END
$$;
COMMENT ON FUNCTION dm_private.parse_write_default_synonyms() IS
'Rewrites dm_private.parse_default_synonyms() from the current rows of dm_private.predicate_synonym_defaults (called by this file and by the table''s statement trigger).';

CREATE OR REPLACE FUNCTION dm_private.parse_default_synonyms_changed()
RETURNS trigger
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
BEGIN
    PERFORM dm_private.parse_write_default_synonyms();
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.parse_default_synonyms_changed() IS
'Statement trigger of dm_private.predicate_synonym_defaults: keeps dm_private.parse_default_synonyms() equal to the table.';

-- The defaults change only by migration (no role but the owner writes
-- them), so the trigger adds no work to any service write.
CREATE OR REPLACE TRIGGER predicate_synonym_defaults_parse_copy
AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON dm_private.predicate_synonym_defaults
FOR EACH STATEMENT EXECUTE FUNCTION dm_private.parse_default_synonyms_changed();
COMMENT ON TRIGGER predicate_synonym_defaults_parse_copy ON dm_private.predicate_synonym_defaults IS
'Rewrites dm_private.parse_default_synonyms() (the constant copy dm.parse_query reads) after every change of the defaults.';

SELECT dm_private.parse_write_default_synonyms();
COMMENT ON FUNCTION dm_private.parse_default_synonyms() IS
'The default predicate synonyms (dm_private.predicate_synonym_defaults) as a constant: {first word: text of {{predicate, phrase}, ...}}. Generated by dm_private.parse_write_default_synonyms(); read by dm_private.parse_query_team, folded into its plan.';

-- The trigram half of the entity lookup (misspelled names), apart so that
-- its similarity threshold is set only when there is something to probe:
-- names with the probe's first letter and pg_trgm similarity >= 0.45, at
-- most 3 entities per probe; the planner serves % from the GIN index on
-- (team_id, normalized_name gin_trgm_ops) for large teams. Runs as
-- densemem_searcher (see dm_private.match_query_entities).
CREATE OR REPLACE FUNCTION dm_private.match_entity_trigrams(match_team_id uuid, probes text [], exclude_ids uuid [])
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = ''
SET pg_trgm.similarity_threshold = 0.45
-- One plan for every call: the GIN probe plan does not depend on the probe,
-- and planning it anew (custom plans) costs more than running it.
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    -- Checked first, as an expression (PERFORM would run a whole query);
    -- the service's case without a call, as in dm_private.parse_query_names.
    checked_team constant uuid := CASE
        WHEN pg_catalog.current_setting('densemem.team_id', true) = match_team_id::text
             AND pg_catalog.pg_has_role(session_user, 'densemem_app', 'MEMBER')
        THEN match_team_id
        ELSE dm_private.require_team(match_team_id) END;
    -- One probe's rows: {entity id, 't' when similarity >= 0.45, the rounded
    -- similarity, canonical name}, most similar first.
    one_rows text [];
    r text [];
    seen text [] := '{}'::text [];
    found jsonb := '[]'::jsonb;
    -- Each probe's LIKE pattern (its first letter), computed here: a
    -- pattern the statement computes costs more than the % test in the
    -- planner's eyes, and a sequential scan (a small team) then ran the
    -- similarity on every name of the table before the first-letter test.
    first_letters text [] := '{}'::text [];
    -- The one probe and its pattern as scalars: an array element written
    -- in the statement (probes[1]) is fetched again for every row the scan
    -- reads (a sequential scan, on a small database, reads every team's
    -- names).
    probe text;
    pattern text;
BEGIN
    FOR i IN 1..LEAST(COALESCE(pg_catalog.cardinality(probes), 0), 2) LOOP
        first_letters := first_letters || (pg_catalog.left(probes[i], 1) || '%');
    END LOOP;
    IF pg_catalog.cardinality(first_letters) = 1 THEN
        -- One probe (most queries that probe): its three best rows in one
        -- lean statement (a limited sort over the index scan; no function
        -- scan, join, unique or aggregate node to start), then the same
        -- rules as the statement below in PL/pgSQL: excluded entities
        -- dropped, each entity once at its most similar row (the first, in
        -- this order), rows under 0.45 dropped, most similar first then by id.
        probe := probes[1];
        pattern := first_letters[1];
        one_rows := ARRAY(
            SELECT ARRAY[
                n.entity_id::text,
                CASE WHEN public.similarity(n.normalized_name, probe) >= 0.45 THEN 't' ELSE 'f' END,
                pg_catalog.round(public.similarity(n.normalized_name, probe)::numeric, 3)::text,
                (SELECT e.canonical_name FROM dm_private.entities AS e
                 WHERE e.team_id = match_team_id AND e.entity_id = n.entity_id)]
            FROM dm_private.entity_names AS n
            WHERE n.team_id = match_team_id
              AND n.normalized_name LIKE pattern
              AND n.normalized_name OPERATOR(public.%) probe
            ORDER BY public.similarity(n.normalized_name, probe) DESC, n.entity_id
            LIMIT 3);
        IF pg_catalog.cardinality(one_rows) > 0 THEN
            FOREACH r SLICE 1 IN ARRAY one_rows LOOP
                CONTINUE WHEN r[1]::uuid = ANY (COALESCE(exclude_ids, '{}')) OR r[1] = ANY (seen);
                seen := seen || r[1];
                CONTINUE WHEN r[2] = 'f';
                found := found || pg_catalog.jsonb_build_object(
                    'entity_id', r[1], 'name', r[4], 'mention', probe, 'match', 'trigram',
                    'similarity', r[3]::numeric);
            END LOOP;
        END IF;
        RETURN found;
    END IF;
    RETURN (
        SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                'entity_id', y.entity_id,
                'name', (SELECT e.canonical_name FROM dm_private.entities AS e
                         WHERE e.team_id = match_team_id AND e.entity_id = y.entity_id),
                'mention', y.mention, 'match', 'trigram', 'similarity', pg_catalog.round(y.sim::numeric, 3))
                ORDER BY y.sim DESC, y.entity_id), '[]'::jsonb)
        FROM (
            SELECT DISTINCT ON (f.entity_id) f.entity_id, f.mention, f.sim
            FROM ROWS FROM (pg_catalog.unnest(probes[1:2]), pg_catalog.unnest(first_letters)) AS c (candidate, first_letter)
            CROSS JOIN LATERAL (
                SELECT n.entity_id, c.candidate AS mention, public.similarity(n.normalized_name, c.candidate) AS sim
                FROM dm_private.entity_names AS n
                WHERE n.team_id = match_team_id
                  -- Same first letter: a cheap test that runs before the costly
                  -- similarity when the planner reads a small team's names
                  -- (equal-cost quals keep their written order).
                  AND n.normalized_name LIKE c.first_letter
                  AND n.normalized_name OPERATOR(public.%) c.candidate
                ORDER BY public.similarity(n.normalized_name, c.candidate) DESC, n.entity_id
                LIMIT 3
            ) AS f
            WHERE NOT (f.entity_id = ANY (COALESCE(exclude_ids, '{}')))
            ORDER BY f.entity_id, f.sim DESC
        ) AS y
        WHERE y.sim >= 0.45);
END
$$;
COMMENT ON FUNCTION dm_private.match_entity_trigrams(uuid, text [], uuid []) IS
'Entities of the authenticated team whose name or alias starts with the same letter as, and has pg_trgm similarity >= 0.45 with, one of (at most 2) probe strings, except exclude_ids: [{"entity_id", "name", "mention", "match": "trigram", "similarity"}], most similar first. Definer (densemem_searcher) with an explicit, checked team predicate.';
ALTER FUNCTION dm_private.match_entity_trigrams(uuid, text [], uuid []) OWNER TO densemem_searcher;

-- Entity mentions: query n-grams against this team's entity names and
-- aliases. Exact normalized matches first (canonical name: "exact", alias:
-- "alias"); then the trigram candidates (dm_private.query_name_keys) that
-- are not inside an exact match, through dm_private.match_entity_trigrams
-- ("trigram"). Runs as densemem_searcher so that the non-leakproof %
-- operator can use the GIN trigram index ahead of row-level security; the
-- explicit team predicate is checked against the authenticated team first
-- (dm_private.require_team), so it reads only the caller's own team.
CREATE OR REPLACE FUNCTION dm_private.match_query_entities(match_team_id uuid, ngrams text [], fuzzy text [])
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = ''
AS $$
DECLARE
    -- Checked first, as an expression (PERFORM would run a whole query).
    checked_team constant uuid := dm_private.require_team(match_team_id);
    found jsonb;
    matched_names text [];
    matched_ids uuid [];
    candidate text;
    covered text;
    probes text [] := '{}'::text [];
BEGIN
    IF ngrams IS NULL OR pg_catalog.cardinality(ngrams) = 0 THEN
        RETURN '[]'::jsonb;
    END IF;
    -- Canonical before alias, longer mentions first. The ten best are kept
    -- below, in PL/pgSQL: more than ten exact matches is rare, and a LIMIT
    -- would cost the statement a sort and a node on every call.
    SELECT
        COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
            'entity_id', d.entity_id,
            -- The canonical name by primary key, for the matches only.
            'name', (SELECT e.canonical_name FROM dm_private.entities AS e
                     WHERE e.team_id = match_team_id AND e.entity_id = d.entity_id),
            'mention', d.mention, 'match', d.match_kind, 'similarity', 1.0)
            ORDER BY d.match_kind DESC, pg_catalog.length(d.mention) DESC, d.entity_id), '[]'::jsonb),
        pg_catalog.array_agg(d.mention),
        pg_catalog.array_agg(d.entity_id)
    INTO found, matched_names, matched_ids
    FROM (
        -- One btree scan for all n-grams (= ANY walks the sorted array in
        -- one descent), compared in byte order: equality is the same under
        -- any deterministic collation, and sorting the array with memcmp
        -- instead of strcoll halves the lookup (migration 0011).
        SELECT DISTINCT ON (n.entity_id)
            n.entity_id, n.normalized_name AS mention,
            CASE WHEN n.is_canonical THEN 'exact' ELSE 'alias' END AS match_kind
        FROM dm_private.entity_names AS n
        WHERE n.team_id = match_team_id AND n.normalized_name COLLATE "C" = ANY (ngrams)
        ORDER BY n.entity_id, n.is_canonical DESC, pg_catalog.length(n.normalized_name) DESC, n.normalized_name
    ) AS d;
    IF pg_catalog.jsonb_array_length(found) > 10 THEN
        -- Ten exact matches leave no room for a trigram match: no probe below.
        found := dm_private.parse_first_ten(found);
    END IF;

    -- At most 2 probes; candidates inside an exact match need none.
    covered := ' ' || COALESCE(pg_catalog.array_to_string(matched_names, ' | '), '') || ' ';
    FOREACH candidate IN ARRAY COALESCE(fuzzy, '{}') LOOP
        EXIT WHEN pg_catalog.cardinality(probes) >= 2;
        IF pg_catalog.strpos(covered, ' ' || candidate || ' ') = 0 THEN
            probes := probes || candidate;
        END IF;
    END LOOP;
    IF pg_catalog.cardinality(probes) > 0 AND pg_catalog.jsonb_array_length(found) < 10 THEN
        found := found || dm_private.match_entity_trigrams(match_team_id, probes, matched_ids);
        IF pg_catalog.jsonb_array_length(found) > 10 THEN
            found := dm_private.parse_first_ten(found);
        END IF;
    END IF;
    RETURN found;
END
$$;
COMMENT ON FUNCTION dm_private.match_query_entities(uuid, text [], text []) IS
'Entities of the authenticated team named in a query: [{"entity_id", "name" (canonical), "mention" (the query n-gram), "match": "exact"|"alias"|"trigram", "similarity"}], exact then alias (longer mentions first) then trigram (similarity >= 0.45, highest first), at most 10. Definer (densemem_searcher) with an explicit, checked team predicate.';
ALTER FUNCTION dm_private.match_query_entities(uuid, text [], text []) OWNER TO densemem_searcher;

-- Predicate hints: n-grams that are phrases of the team's synonyms, or of the
-- global defaults when the team has no row for that phrase (a team row,
-- enabled or not, replaces the defaults of its phrase). In order of first
-- mention, at most 10.
CREATE OR REPLACE FUNCTION dm_private.predicate_hints(hint_team_id uuid, ngrams text [])
RETURNS jsonb
LANGUAGE plpgsql
STABLE
PARALLEL SAFE
SET search_path = ''
AS $$
DECLARE
    found jsonb;
BEGIN
    -- In order of first mention; the first ten are kept below, in PL/pgSQL
    -- (a LIMIT would cost the statement a sort and a node on every call).
    found := (
        SELECT COALESCE(pg_catalog.jsonb_agg(p.predicate ORDER BY p.first_at, p.predicate), '[]'::jsonb)
        FROM (
            -- first_at: where the phrase first occurs among the n-grams.
            SELECT m.predicate, pg_catalog.min(pg_catalog.array_position(ngrams, m.phrase)) AS first_at
            FROM (
                SELECT s.predicate, s.phrase
                FROM dm_private.predicate_synonyms AS s
                WHERE s.team_id = hint_team_id AND s.phrase COLLATE "C" = ANY (ngrams) AND s.enabled
                UNION ALL
                SELECT d.predicate, d.phrase
                FROM dm_private.predicate_synonym_defaults AS d
                WHERE d.phrase COLLATE "C" = ANY (ngrams)
                  AND NOT EXISTS (
                    SELECT 1 FROM dm_private.predicate_synonyms AS o
                    WHERE o.team_id = hint_team_id AND o.phrase = d.phrase)
            ) AS m
            GROUP BY m.predicate
        ) AS p);
    IF pg_catalog.jsonb_array_length(found) > 10 THEN
        found := dm_private.parse_first_ten(found);
    END IF;
    RETURN found;
END
$$;
COMMENT ON FUNCTION dm_private.predicate_hints(uuid, text []) IS
'Predicates hinted by query n-grams through dm_private.predicate_synonyms (the team''s rows replace the defaults of their phrase) and dm_private.predicate_synonym_defaults, in order of first mention, at most 10.';

-- Everything dm.parse_query reads from the team's tables, in one definer
-- call and one statement: the team check, the exact entity names and
-- aliases, and the predicate hints (the same answers as
-- dm_private.match_query_entities and dm_private.predicate_hints, which
-- stay for direct use); then the trigram probe only for candidates outside
-- an exact match. The statement is lean: the matching rows come back as
-- arrays (one aggregate over each index scan, no sort, no DISTINCT ON, no
-- GROUP BY), and the handful of rows a query matches is reduced and ordered
-- here, by the same rules, in a few PL/pgSQL expressions: initializing
-- sort, unique and hash-aggregate nodes on every call cost more than the
-- rows they order. More than 16 rows (never seen in a real question) take
-- the SQL functions above. The override rule needs no join: a default is
-- dropped when its phrase is among the team's phrases that occur in the
-- query (that subquery runs only when a default matched).
CREATE OR REPLACE FUNCTION dm_private.parse_query_names(
    match_team_id uuid, ngrams text [], scan_grams text [], fuzzy text [],
    anchors jsonb, phrases jsonb, terms jsonb, time_hints jsonb)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = ''
AS $$
DECLARE
    -- Checked first, as an expression (PERFORM would run a whole query).
    -- The service's case (the requested team is the authenticated one and
    -- the session user is a member of densemem_app) is the case in which
    -- dm_private.require_team returns at once, without an error: tested
    -- here without its two function calls; every other case (no team, a
    -- mismatch, an analyst whose grant must be read) calls it and gets its
    -- errors.
    checked_team constant uuid := CASE
        WHEN match_team_id = NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid
             AND pg_catalog.pg_has_role(session_user, 'densemem_app', 'MEMBER')
        THEN match_team_id
        ELSE dm_private.require_team(match_team_id) END;
    -- One row per matched name: {entity id, mention, 't' if canonical else
    -- 'f', canonical name}, one aggregate instead of four (each aggregate
    -- costs its start-up on every call). A uuid's text orders as its bytes
    -- in byte order (hex digits, hyphens at fixed places), so the ordering
    -- below compares the text COLLATE "C".
    name_rows_found text [];
    hints text [];
    team_hints text [];
    default_hints text [];
    taken text [] := '{}'::text [];
    n integer;
    name_rows integer;
    first_at integer;
    picked integer [] := '{}'::integer [];
    pos integer [] := '{}'::integer [];
    names text [] := '{}'::text [];
    better boolean;
    k integer;
    found jsonb := '[]'::jsonb;
    predicates jsonb := '[]'::jsonb;
    matched_names text [] := '{}'::text [];
    matched_ids uuid [] := '{}'::uuid [];
    candidate text;
    covered text;
    probes text [] := '{}'::text [];
BEGIN
    IF ngrams IS NULL OR pg_catalog.cardinality(ngrams) = 0 THEN
        IF anchors IS NULL THEN
            RETURN '{"entities": [], "predicates": []}'::jsonb;
        END IF;
        RETURN pg_catalog.jsonb_build_object(
            'anchors', anchors, 'phrases', phrases, 'terms', terms, 'time', time_hints,
            'entities', '[]'::jsonb, 'predicates', '[]'::jsonb);
    END IF;
    -- Three ARRAY(SELECT ...) sublinks under one Result: no aggregate node
    -- to start (an Agg node's start-up, with its catalog look-ups and ACL
    -- checks, ran on every call); an empty answer is an empty array.
    SELECT
        ARRAY(
            SELECT ARRAY[
                x.entity_id::text, x.normalized_name, CASE WHEN x.is_canonical THEN 't' ELSE 'f' END,
                -- The canonical name by primary key, for the matches only.
                (SELECT e.canonical_name FROM dm_private.entities AS e
                 WHERE e.team_id = match_team_id AND e.entity_id = x.entity_id)]
            FROM dm_private.entity_names AS x
            WHERE x.team_id = match_team_id AND x.normalized_name COLLATE "C" = ANY (scan_grams)),
        -- Predicate and first position among the n-grams, as 'predicate
        -- position' (a predicate holds no space): the team's rows (a disabled
        -- one marked ' -') and the defaults, apart; the override rule is
        -- applied below (two scans: fewer plan nodes to start than a union
        -- with an anti-join subquery).
        ARRAY(
            SELECT s.predicate || ' ' || pg_catalog.array_position(ngrams, s.phrase)
                   || CASE WHEN s.enabled THEN '' ELSE ' -' END
            FROM dm_private.predicate_synonyms AS s
            WHERE s.team_id = match_team_id AND s.phrase COLLATE "C" = ANY (scan_grams)),
        ARRAY(
            SELECT f.predicate || ' ' || pg_catalog.array_position(ngrams, f.phrase)
            FROM dm_private.predicate_synonym_defaults AS f
            WHERE f.phrase COLLATE "C" = ANY (scan_grams))
    INTO name_rows_found, team_hints, default_hints;

    -- Entities: the best name of each entity (canonical, then longer, then
    -- smaller), then canonical before alias, longer mentions first, by id;
    -- the first ten.
    n := COALESCE(pg_catalog.array_length(name_rows_found, 1), 0);
    name_rows := n;
    IF n > 16 THEN
        found := dm_private.match_query_entities(match_team_id, ngrams, fuzzy);
    ELSIF n > 0 THEN
        FOR i IN 1..n LOOP
            better := false;
            FOR j IN 1..n LOOP
                IF j <> i AND name_rows_found[j][1] = name_rows_found[i][1]
                   AND (name_rows_found[j][3] COLLATE "C" > name_rows_found[i][3]
                        OR (name_rows_found[j][3] = name_rows_found[i][3] AND (
                       pg_catalog.length(name_rows_found[j][2]) > pg_catalog.length(name_rows_found[i][2])
                       OR (pg_catalog.length(name_rows_found[j][2]) = pg_catalog.length(name_rows_found[i][2])
                           AND name_rows_found[j][2] < name_rows_found[i][2])))) THEN
                    better := true;
                    EXIT;
                END IF;
            END LOOP;
            CONTINUE WHEN better;
            -- Insertion into picked, kept in output order.
            k := pg_catalog.cardinality(picked);
            picked := picked || i;
            WHILE k > 0 AND (name_rows_found[i][3] COLLATE "C" > name_rows_found[picked[k]][3]
                             OR (name_rows_found[i][3] = name_rows_found[picked[k]][3] AND (
                      pg_catalog.length(name_rows_found[i][2]) > pg_catalog.length(name_rows_found[picked[k]][2])
                      OR (pg_catalog.length(name_rows_found[i][2]) = pg_catalog.length(name_rows_found[picked[k]][2])
                          AND name_rows_found[i][1] COLLATE "C" < name_rows_found[picked[k]][1])))) LOOP
                picked[k + 1] := picked[k];
                picked[k] := i;
                k := k - 1;
            END LOOP;
        END LOOP;
        FOREACH k IN ARRAY picked LOOP
            matched_names := matched_names || name_rows_found[k][2];
            matched_ids := matched_ids || name_rows_found[k][1]::uuid;
            CONTINUE WHEN pg_catalog.jsonb_array_length(found) >= 10;
            -- The four text fields by jsonb_object (no per-argument type
            -- look-ups, as jsonb_build_object makes on every call), then the
            -- constant similarity: the same object at half the cost.
            found := found || (pg_catalog.jsonb_object(
                '{entity_id,name,mention,match}'::text [],
                ARRAY[name_rows_found[k][1], name_rows_found[k][4], name_rows_found[k][2],
                      CASE WHEN name_rows_found[k][3] = 't' THEN 'exact' ELSE 'alias' END])
                || '{"similarity": 1.0}'::jsonb);
        END LOOP;
    END IF;

    -- The team's phrases replace the defaults of the same phrase, enabled or
    -- not: a phrase has one first position among the n-grams, so a default
    -- is dropped when a team row has its position.
    IF pg_catalog.cardinality(team_hints) = 0 THEN
        hints := default_hints;
    ELSE
        hints := '{}'::text [];
        FOREACH candidate IN ARRAY team_hints LOOP
            taken := taken || pg_catalog.split_part(candidate, ' ', 2);
            IF pg_catalog.split_part(candidate, ' ', 3) = '' THEN
                hints := hints || candidate;
            END IF;
        END LOOP;
        IF pg_catalog.cardinality(default_hints) > 0 THEN
            FOREACH candidate IN ARRAY default_hints LOOP
                IF NOT pg_catalog.split_part(candidate, ' ', 2) = ANY (taken) THEN
                    hints := hints || candidate;
                END IF;
            END LOOP;
        END IF;
    END IF;

    -- Predicates: each once at its first position among the n-grams, in
    -- that order (then by name), the first ten.
    n := COALESCE(pg_catalog.cardinality(hints), 0);
    IF n > 16 THEN
        predicates := dm_private.predicate_hints(match_team_id, ngrams);
    ELSIF n = 1 THEN
        predicates := pg_catalog.jsonb_build_array(pg_catalog.split_part(hints[1], ' ', 1));
    ELSIF n > 1 THEN
        FOR i IN 1..n LOOP
            candidate := pg_catalog.split_part(hints[i], ' ', 1);
            first_at := pg_catalog.split_part(hints[i], ' ', 2)::integer;
            k := pg_catalog.array_position(names, candidate);
            IF k IS NULL THEN
                names := names || candidate;
                pos := pos || first_at;
            ELSIF first_at < pos[k] THEN
                pos[k] := first_at;
            END IF;
        END LOOP;
        picked := '{}'::integer [];
        FOR i IN 1..pg_catalog.cardinality(names) LOOP
            k := pg_catalog.cardinality(picked);
            picked := picked || i;
            WHILE k > 0 AND (pos[i] < pos[picked[k]] OR (pos[i] = pos[picked[k]] AND names[i] < names[picked[k]])) LOOP
                picked[k + 1] := picked[k];
                picked[k] := i;
                k := k - 1;
            END LOOP;
        END LOOP;
        FOREACH k IN ARRAY picked[1:10] LOOP
            predicates := predicates || pg_catalog.to_jsonb(names[k]);
        END LOOP;
    END IF;

    -- At most 2 trigram probes; candidates inside an exact match need none
    -- (more than 16 name rows: dm_private.match_query_entities probed).
    IF name_rows <= 16 AND fuzzy IS NOT NULL AND pg_catalog.cardinality(fuzzy) > 0 AND pg_catalog.jsonb_array_length(found) < 10 THEN
        covered := ' ' || pg_catalog.array_to_string(matched_names, ' | ') || ' ';
        FOREACH candidate IN ARRAY fuzzy LOOP
            EXIT WHEN pg_catalog.cardinality(probes) >= 2;
            IF pg_catalog.strpos(covered, ' ' || candidate || ' ') = 0 THEN
                probes := probes || candidate;
            END IF;
        END LOOP;
        IF pg_catalog.cardinality(probes) > 0 THEN
            found := found || dm_private.match_entity_trigrams(match_team_id, probes, matched_ids);
            IF pg_catalog.jsonb_array_length(found) > 10 THEN
                found := dm_private.parse_first_ten(found);
            END IF;
        END IF;
    END IF;
    IF anchors IS NULL THEN
        RETURN pg_catalog.jsonb_build_object('entities', found, 'predicates', predicates);
    END IF;
    -- dm.parse_query's whole answer, built once here: the entity objects
    -- are written into one object, not into a two-key object that the
    -- caller takes apart and writes again.
    -- JSON_OBJECT: the same object as jsonb_build_object, a little cheaper
    -- (its arguments' JSON categories are not looked up as the variadic
    -- function's are).
    RETURN JSON_OBJECT(
        'anchors': anchors, 'phrases': phrases, 'terms': terms, 'time': time_hints,
        'entities': found, 'predicates': predicates RETURNING jsonb);
END
$$;
COMMENT ON FUNCTION dm_private.parse_query_names(uuid, text [], text [], text [], jsonb, jsonb, jsonb, jsonb) IS
'What dm.parse_query reads from the authenticated team''s tables, in one call: the entities (dm_private.match_query_entities) and predicates (dm_private.predicate_hints) for the n-grams (scan_grams: the same n-grams, sorted in byte order without duplicates, or as given) and trigram candidates; with anchors NULL {"entities", "predicates"}, otherwise dm.parse_query''s whole answer with the given anchors, phrases, terms and time. Definer (densemem_searcher) with an explicit, checked team predicate.';
ALTER FUNCTION dm_private.parse_query_names(uuid, text [], text [], text [], jsonb, jsonb, jsonb, jsonb) OWNER TO densemem_searcher;

-- The team's part of a parse reads one table (migration 0068): every entity
-- name and alias, and every team predicate synonym, as the row the parse
-- needs, kept exact by these statement triggers in the transaction of every
-- write (upsert_entities, erasure's cascades, direct SQL). The parse read the
-- names by one index scan, each found name's canonical name by a primary-key
-- sub-select on entities (~30 k instructions per parse: its executor
-- start-up and one descent per name) and the team's synonyms by a third
-- scan (~23 k: its start-up, also for the most common team, which has none);
-- carried here, they cost one index scan.
-- The trigger functions run as densemem_searcher (definer, search_path ''):
-- they write only rows derived from the rows the writing statement changed
-- (its transition tables), and they must see and change the lexicon rows
-- of that team also when no team is authenticated, as in the cascaded
-- delete of an entity's names, which runs as the table owner. No other
-- role writes the table.
-- After INSERT on entity_names: the new names, with their entity's canonical name.
CREATE OR REPLACE FUNCTION dm_private.parse_lexicon_names_inserted()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = ''
AS $$
BEGIN
    INSERT INTO dm_private.parse_lexicon AS l (team_id, first_word, second_word, phrase, kind, ref, entry)
    SELECT n.team_id, pg_catalog.split_part(n.normalized_name, ' ', 1), pg_catalog.split_part(n.normalized_name, ' ', 2),
           n.normalized_name, 'n', n.entity_id::text,
           ARRAY[n.entity_id::text, n.normalized_name, CASE WHEN n.is_canonical THEN 't' ELSE 'f' END, e.canonical_name]
    FROM new_rows AS n
    JOIN dm_private.entities AS e ON e.team_id = n.team_id AND e.entity_id = n.entity_id
    ON CONFLICT ON CONSTRAINT parse_lexicon_pkey DO UPDATE SET entry = excluded.entry;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.parse_lexicon_names_inserted() IS
'Trigger (statement, after INSERT on entity_names): adds the new names to dm_private.parse_lexicon with their entity''s canonical name.';
ALTER FUNCTION dm_private.parse_lexicon_names_inserted() OWNER TO densemem_searcher;

-- After DELETE on entity_names (also cascaded from entities): their rows go.
CREATE OR REPLACE FUNCTION dm_private.parse_lexicon_names_deleted()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = ''
AS $$
BEGIN
    DELETE FROM dm_private.parse_lexicon AS l
    USING old_rows AS o
    WHERE l.team_id = o.team_id AND l.first_word = pg_catalog.split_part(o.normalized_name, ' ', 1)
      AND l.second_word = pg_catalog.split_part(o.normalized_name, ' ', 2)
      AND l.phrase = o.normalized_name AND l.kind = 'n' AND l.ref = o.entity_id::text;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.parse_lexicon_names_deleted() IS
'Trigger (statement, after DELETE on entity_names): removes their dm_private.parse_lexicon rows.';
ALTER FUNCTION dm_private.parse_lexicon_names_deleted() OWNER TO densemem_searcher;

-- After UPDATE on entity_names (no write path updates names; direct SQL may):
-- the old rows go, the new ones come.
CREATE OR REPLACE FUNCTION dm_private.parse_lexicon_names_updated()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = ''
AS $$
BEGIN
    DELETE FROM dm_private.parse_lexicon AS l
    USING old_rows AS o
    WHERE l.team_id = o.team_id AND l.first_word = pg_catalog.split_part(o.normalized_name, ' ', 1)
      AND l.second_word = pg_catalog.split_part(o.normalized_name, ' ', 2)
      AND l.phrase = o.normalized_name AND l.kind = 'n' AND l.ref = o.entity_id::text;
    INSERT INTO dm_private.parse_lexicon AS l (team_id, first_word, second_word, phrase, kind, ref, entry)
    SELECT n.team_id, pg_catalog.split_part(n.normalized_name, ' ', 1), pg_catalog.split_part(n.normalized_name, ' ', 2),
           n.normalized_name, 'n', n.entity_id::text,
           ARRAY[n.entity_id::text, n.normalized_name, CASE WHEN n.is_canonical THEN 't' ELSE 'f' END, e.canonical_name]
    FROM new_rows AS n
    JOIN dm_private.entities AS e ON e.team_id = n.team_id AND e.entity_id = n.entity_id
    ON CONFLICT ON CONSTRAINT parse_lexicon_pkey DO UPDATE SET entry = excluded.entry;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.parse_lexicon_names_updated() IS
'Trigger (statement, after UPDATE on entity_names): rewrites the dm_private.parse_lexicon rows of the updated names.';
ALTER FUNCTION dm_private.parse_lexicon_names_updated() OWNER TO densemem_searcher;

-- After UPDATE OF canonical_name on entities (row trigger, only when the
-- name changed; upsert_entities never changes it): the entity's names carry
-- the new canonical name.
CREATE OR REPLACE FUNCTION dm_private.parse_lexicon_entity_renamed()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = ''
AS $$
BEGIN
    UPDATE dm_private.parse_lexicon AS l
    SET entry = ARRAY[l.entry[1], l.entry[2], l.entry[3], new.canonical_name]
    FROM dm_private.entity_names AS x
    WHERE x.team_id = new.team_id AND x.entity_id = new.entity_id
      AND l.team_id = x.team_id AND l.first_word = pg_catalog.split_part(x.normalized_name, ' ', 1)
      AND l.second_word = pg_catalog.split_part(x.normalized_name, ' ', 2)
      AND l.phrase = x.normalized_name AND l.kind = 'n' AND l.ref = x.entity_id::text;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.parse_lexicon_entity_renamed() IS
'Trigger (row, after UPDATE OF canonical_name on entities when it changed): the entity''s dm_private.parse_lexicon rows carry the new canonical name.';
ALTER FUNCTION dm_private.parse_lexicon_entity_renamed() OWNER TO densemem_searcher;

-- After INSERT on predicate_synonyms: {predicate, phrase, '' or ' -' for a
-- disabled row, ''} (the third element tells a phrase from a name, whose
-- third element is 't' or 'f').
CREATE OR REPLACE FUNCTION dm_private.parse_lexicon_synonyms_inserted()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = ''
AS $$
BEGIN
    INSERT INTO dm_private.parse_lexicon AS l (team_id, first_word, second_word, phrase, kind, ref, entry)
    SELECT n.team_id, pg_catalog.split_part(n.phrase, ' ', 1), pg_catalog.split_part(n.phrase, ' ', 2),
           n.phrase, 's', n.predicate,
           ARRAY[n.predicate, n.phrase, CASE WHEN n.enabled THEN '' ELSE ' -' END, '']
    FROM new_rows AS n
    ON CONFLICT ON CONSTRAINT parse_lexicon_pkey DO UPDATE SET entry = excluded.entry;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.parse_lexicon_synonyms_inserted() IS
'Trigger (statement, after INSERT on predicate_synonyms): adds the new phrases to dm_private.parse_lexicon.';
ALTER FUNCTION dm_private.parse_lexicon_synonyms_inserted() OWNER TO densemem_searcher;

-- After DELETE on predicate_synonyms: their rows go.
CREATE OR REPLACE FUNCTION dm_private.parse_lexicon_synonyms_deleted()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = ''
AS $$
BEGIN
    DELETE FROM dm_private.parse_lexicon AS l
    USING old_rows AS o
    WHERE l.team_id = o.team_id AND l.first_word = pg_catalog.split_part(o.phrase, ' ', 1)
      AND l.second_word = pg_catalog.split_part(o.phrase, ' ', 2)
      AND l.phrase = o.phrase AND l.kind = 's' AND l.ref = o.predicate;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.parse_lexicon_synonyms_deleted() IS
'Trigger (statement, after DELETE on predicate_synonyms): removes their dm_private.parse_lexicon rows.';
ALTER FUNCTION dm_private.parse_lexicon_synonyms_deleted() OWNER TO densemem_searcher;

-- After UPDATE on predicate_synonyms (enabled switched, phrase or predicate
-- changed): the old rows go, the new ones come.
CREATE OR REPLACE FUNCTION dm_private.parse_lexicon_synonyms_updated()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = ''
AS $$
BEGIN
    DELETE FROM dm_private.parse_lexicon AS l
    USING old_rows AS o
    WHERE l.team_id = o.team_id AND l.first_word = pg_catalog.split_part(o.phrase, ' ', 1)
      AND l.second_word = pg_catalog.split_part(o.phrase, ' ', 2)
      AND l.phrase = o.phrase AND l.kind = 's' AND l.ref = o.predicate;
    INSERT INTO dm_private.parse_lexicon AS l (team_id, first_word, second_word, phrase, kind, ref, entry)
    SELECT n.team_id, pg_catalog.split_part(n.phrase, ' ', 1), pg_catalog.split_part(n.phrase, ' ', 2),
           n.phrase, 's', n.predicate,
           ARRAY[n.predicate, n.phrase, CASE WHEN n.enabled THEN '' ELSE ' -' END, '']
    FROM new_rows AS n
    ON CONFLICT ON CONSTRAINT parse_lexicon_pkey DO UPDATE SET entry = excluded.entry;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.parse_lexicon_synonyms_updated() IS
'Trigger (statement, after UPDATE on predicate_synonyms): rewrites the dm_private.parse_lexicon rows of the updated phrases.';
ALTER FUNCTION dm_private.parse_lexicon_synonyms_updated() OWNER TO densemem_searcher;

-- TRUNCATE has no transition table: the rows of the truncated table go.
CREATE OR REPLACE FUNCTION dm_private.parse_lexicon_truncated()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = ''
AS $$
BEGIN
    DELETE FROM dm_private.parse_lexicon AS l
    WHERE l.kind = CASE tg_table_name WHEN 'entity_names' THEN 'n' ELSE 's' END;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.parse_lexicon_truncated() IS
'Trigger (statement, after TRUNCATE on entity_names or predicate_synonyms): removes that table''s dm_private.parse_lexicon rows.';
ALTER FUNCTION dm_private.parse_lexicon_truncated() OWNER TO densemem_searcher;

REVOKE ALL ON FUNCTION dm_private.parse_lexicon_names_inserted() FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.parse_lexicon_names_deleted() FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.parse_lexicon_names_updated() FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.parse_lexicon_entity_renamed() FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.parse_lexicon_synonyms_inserted() FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.parse_lexicon_synonyms_deleted() FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.parse_lexicon_synonyms_updated() FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.parse_lexicon_truncated() FROM PUBLIC;

-- The team's part of dm.parse_query since session 8: the same answer as
-- dm_private.parse_query_names, without the n-grams. The names, aliases and
-- synonym phrases whose first two words are tokens of the query (the second
-- may be empty) are read with the query's ~9 distinct tokens as keys,
-- instead of ~35 n-grams (since session 11 from dm_private.parse_lexicon,
-- which carries each name's canonical name and the team's synonyms, by its
-- first-word index: one index scan); a row is kept
-- when its name or phrase has one to four words and stands between spaces
-- in the tokens, which is n-gram equality. It forces one generic plan: the
-- plan cache kept custom plans for a team without entities or synonyms and
-- planned the statement on every parse.
CREATE OR REPLACE FUNCTION dm_private.parse_query_team(
    match_team_id uuid, toks text [], scan_toks text [], fuzzy text [],
    anchors jsonb, phrases jsonb, terms jsonb, time_hints jsonb)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = ''
-- One plan for every call. With custom plans (the plan cache's choice when
-- a team's estimates are below the generic plan's, as for a team without
-- entities or synonyms) every call planned the lookup again: ~2.5 M
-- instructions per parse in a graph-less team instead of ~0.4 M.
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    -- Checked first, as an expression (PERFORM would run a whole query).
    -- The service's case (the requested team is the authenticated one and
    -- the session user is a member of densemem_app) is the case in which
    -- dm_private.require_team returns at once, without an error: tested
    -- here without its two function calls; every other case (no team, a
    -- mismatch, an analyst whose grant must be read) calls it and gets its
    -- errors.
    -- The setting is compared as text with the team's canonical text (a
    -- uuid's output: lower case, hyphens), which costs less than reading
    -- the setting as a uuid; a setting written otherwise (upper case, no
    -- hyphens) is not this case and dm_private.require_team decides, with
    -- the same result.
    checked_team constant uuid := CASE
        WHEN pg_catalog.current_setting('densemem.team_id', true) = match_team_id::text
             AND pg_catalog.pg_has_role(session_user, 'densemem_app', 'MEMBER')
        THEN match_team_id
        ELSE dm_private.require_team(match_team_id) END;
    -- One row per matched name: {entity id, mention, 't' if canonical else
    -- 'f', canonical name}, one aggregate instead of four (each aggregate
    -- costs its start-up on every call). A uuid's text orders as its bytes
    -- in byte order (hex digits, hyphens at fixed places), so the ordering
    -- below compares the text COLLATE "C".
    -- The rows read from dm_private.parse_lexicon: names {entity id,
    -- name, 't' canonical or 'f' alias, canonical name} and the team's
    -- phrases {predicate, phrase, '' or ' -' when disabled, ''}.
    rows_read text [];
    name_rows_found text [] := '{}'::text [];
    r text [];
    at integer;
    hints text [];
    team_hints text [] := '{}'::text [];
    default_hints text [] := '{}'::text [];
    default_firsts text [] := '{}'::text [];
    taken text [] := '{}'::text [];
    n integer;
    name_rows integer;
    first_at integer;
    picked integer [] := '{}'::integer [];
    by_position integer [];
    pos integer [] := '{}'::integer [];
    names text [] := '{}'::text [];
    better boolean;
    k integer;
    found jsonb := '[]'::jsonb;
    predicates jsonb := '[]'::jsonb;
    matched_names text [] := '{}'::text [];
    matched_ids uuid [];
    candidate text;
    covered text;
    probes text [] := '{}'::text [];
    -- The query's tokens between single spaces: a name or phrase of one to
    -- four words is one of the query's 1-4 token n-grams exactly when it is
    -- found here between spaces (tokens hold no space and are never empty).
    padded constant text := ' ' || pg_catalog.array_to_string(toks, ' ') || ' ';
    -- The second word of a name or phrase of the query: a token, or none
    -- ('' sorts first in byte order, so the array stays sorted).
    second_toks constant text [] := '{""}'::text [] || scan_toks;
BEGIN
    IF toks IS NULL OR pg_catalog.cardinality(toks) = 0 THEN
        IF anchors IS NULL THEN
            RETURN '{"entities": [], "predicates": []}'::jsonb;
        END IF;
        RETURN pg_catalog.jsonb_build_object(
            'anchors', anchors, 'phrases', phrases, 'terms', terms, 'time', time_hints,
            'entities', '[]'::jsonb, 'predicates', '[]'::jsonb);
    END IF;
    -- The team's names, aliases and synonym phrases whose first word is a
    -- token of the query and whose second word is one too or empty, from
    -- one table (dm_private.parse_lexicon, migration 0068) in one index
    -- scan, each row as the parse needs it: the canonical name of a name
    -- and the team's phrases are carried in the rows, so no sub-select
    -- reads entities per name found and no second scan reads the team's
    -- synonyms (which most teams do not have). Few rows: the index skips a
    -- team's names that share a first word but continue otherwise. The
    -- statement has the fewest expressions (they are compiled on every
    -- execution); the test that the whole name or phrase is an n-gram runs
    -- below, in PL/pgSQL, on the rows found. An empty answer is an empty
    -- array.
    rows_read := ARRAY(
        SELECT l.entry
        FROM dm_private.parse_lexicon AS l
        WHERE l.team_id = match_team_id
          AND l.first_word = ANY (scan_toks)
          AND l.second_word = ANY (second_toks));

    -- A name or phrase of one to four words is one of the query's n-grams
    -- exactly when it stands between spaces in the tokens. The phrases'
    -- rows become 'predicate position[ -]' (a predicate holds no space),
    -- the position being the first character offset between spaces times 4
    -- plus the phrase's spaces: the order of the first position among the
    -- n-grams (by first token, then by length). The order of the rows read
    -- decides nothing: entities and predicates are ordered below.
    IF pg_catalog.cardinality(rows_read) = 0 THEN
        NULL;
    ELSIF rows_read[:][3:3] OPERATOR(pg_catalog.<@) '{t,f}'::text [] THEN
        -- Names only (most often: most teams have no synonyms).
        IF pg_catalog.strpos(pg_catalog.array_to_string(rows_read[:][2:2], '|'), ' ') = 0 THEN
            -- One-word names only: each is its own first word, a token, so
            -- each stands between spaces in the tokens: all kept.
            name_rows_found := rows_read;
        ELSE
            FOREACH r SLICE 1 IN ARRAY rows_read LOOP
                IF pg_catalog.split_part(r[2], ' ', 5) = '' AND pg_catalog.strpos(padded, ' ' || r[2] || ' ') > 0 THEN
                    name_rows_found := name_rows_found || ARRAY[r];
                END IF;
            END LOOP;
        END IF;
    ELSE
        FOREACH r SLICE 1 IN ARRAY rows_read LOOP
            CONTINUE WHEN pg_catalog.split_part(r[2], ' ', 5) <> '';
            at := pg_catalog.strpos(padded, ' ' || r[2] || ' ');
            CONTINUE WHEN at = 0;
            IF r[3] IN ('t', 'f') THEN
                name_rows_found := name_rows_found || ARRAY[r];
            ELSE
                team_hints := team_hints || (r[1] || ' ' || (at * 4 + pg_catalog.length(r[2])
                    - pg_catalog.length(pg_catalog.replace(r[2], ' ', ''))) || r[3]);
            END IF;
        END LOOP;
    END IF;
    -- The defaults are not read from their table: dm_private.parse_default_synonyms()
    -- is their copy as a constant (first word -> {{predicate, phrase}, ...}),
    -- rewritten by a trigger whenever the table changes, and IMMUTABLE
    -- without arguments, so the planner folds it into this expression's
    -- cached plan once (replacing the function invalidates the plan). The
    -- same rows as an index scan on the first two words: a phrase that
    -- stands between spaces in the tokens starts with a token. Most queries
    -- hold no default's first word: one ?| probe (a binary search per
    -- token), no scan (the scan read most of the 81 rows: ~70 k
    -- instructions per parse).
    IF dm_private.parse_default_synonyms() OPERATOR(pg_catalog.?|) scan_toks THEN
        FOREACH candidate IN ARRAY scan_toks LOOP
            -- scan_toks has no duplicates unless the text passed 2,047 bytes.
            CONTINUE WHEN NOT dm_private.parse_default_synonyms() OPERATOR(pg_catalog.?) candidate
                OR candidate = ANY (default_firsts);
            default_firsts := default_firsts || candidate;
            FOREACH r SLICE 1 IN ARRAY (dm_private.parse_default_synonyms() OPERATOR(pg_catalog.->>) candidate)::text [] LOOP
                at := pg_catalog.strpos(padded, ' ' || r[2] || ' ');
                IF at > 0 AND pg_catalog.split_part(r[2], ' ', 5) = '' THEN
                    default_hints := default_hints || (r[1] || ' ' || (at * 4 + pg_catalog.length(r[2])
                        - pg_catalog.length(pg_catalog.replace(r[2], ' ', ''))));
                END IF;
            END LOOP;
        END LOOP;
    END IF;

    -- Entities: the best name of each entity (canonical, then longer, then
    -- smaller), then canonical before alias, longer mentions first, by id;
    -- the first ten.
    n := COALESCE(pg_catalog.array_length(name_rows_found, 1), 0);
    name_rows := n;
    IF n > 16 THEN
        found := dm_private.match_query_entities(match_team_id, dm_private.query_token_ngrams(toks), fuzzy);
    ELSIF n = 1 THEN
        -- One name found (the most common case): it is its entity's best
        -- name and the only one in order; the same object as below,
        -- without the ordering loops.
        picked := '{1}'::integer [];
        matched_names := ARRAY[name_rows_found[1][2]];
        found := found || (pg_catalog.jsonb_object(
            '{entity_id,name,mention,match}'::text [],
            ARRAY[name_rows_found[1][1], name_rows_found[1][4], name_rows_found[1][2],
                  CASE WHEN name_rows_found[1][3] = 't' THEN 'exact' ELSE 'alias' END])
            || '{"similarity": 1.0}'::jsonb);
    ELSIF n > 0 THEN
        FOR i IN 1..n LOOP
            better := false;
            FOR j IN 1..n LOOP
                IF j <> i AND name_rows_found[j][1] = name_rows_found[i][1]
                   AND (name_rows_found[j][3] COLLATE "C" > name_rows_found[i][3]
                        OR (name_rows_found[j][3] = name_rows_found[i][3] AND (
                       pg_catalog.length(name_rows_found[j][2]) > pg_catalog.length(name_rows_found[i][2])
                       OR (pg_catalog.length(name_rows_found[j][2]) = pg_catalog.length(name_rows_found[i][2])
                           AND name_rows_found[j][2] < name_rows_found[i][2])))) THEN
                    better := true;
                    EXIT;
                END IF;
            END LOOP;
            CONTINUE WHEN better;
            -- Insertion into picked, kept in output order.
            k := pg_catalog.cardinality(picked);
            picked := picked || i;
            WHILE k > 0 AND (name_rows_found[i][3] COLLATE "C" > name_rows_found[picked[k]][3]
                             OR (name_rows_found[i][3] = name_rows_found[picked[k]][3] AND (
                      pg_catalog.length(name_rows_found[i][2]) > pg_catalog.length(name_rows_found[picked[k]][2])
                      OR (pg_catalog.length(name_rows_found[i][2]) = pg_catalog.length(name_rows_found[picked[k]][2])
                          AND name_rows_found[i][1] COLLATE "C" < name_rows_found[picked[k]][1])))) LOOP
                picked[k + 1] := picked[k];
                picked[k] := i;
                k := k - 1;
            END LOOP;
        END LOOP;
        FOREACH k IN ARRAY picked LOOP
            matched_names := matched_names || name_rows_found[k][2];
            CONTINUE WHEN pg_catalog.jsonb_array_length(found) >= 10;
            -- The four text fields by jsonb_object (no per-argument type
            -- look-ups, as jsonb_build_object makes on every call), then the
            -- constant similarity: the same object at half the cost.
            found := found || (pg_catalog.jsonb_object(
                '{entity_id,name,mention,match}'::text [],
                ARRAY[name_rows_found[k][1], name_rows_found[k][4], name_rows_found[k][2],
                      CASE WHEN name_rows_found[k][3] = 't' THEN 'exact' ELSE 'alias' END])
                || '{"similarity": 1.0}'::jsonb);
        END LOOP;
    END IF;

    -- The team's phrases replace the defaults of the same phrase, enabled or
    -- not: a phrase has one first position among the n-grams, so a default
    -- is dropped when a team row has its position.
    IF pg_catalog.cardinality(team_hints) = 0 THEN
        hints := default_hints;
    ELSE
        hints := '{}'::text [];
        FOREACH candidate IN ARRAY team_hints LOOP
            taken := taken || pg_catalog.split_part(candidate, ' ', 2);
            IF pg_catalog.split_part(candidate, ' ', 3) = '' THEN
                hints := hints || candidate;
            END IF;
        END LOOP;
        IF pg_catalog.cardinality(default_hints) > 0 THEN
            FOREACH candidate IN ARRAY default_hints LOOP
                IF NOT pg_catalog.split_part(candidate, ' ', 2) = ANY (taken) THEN
                    hints := hints || candidate;
                END IF;
            END LOOP;
        END IF;
    END IF;

    -- Predicates: each once at its first position among the n-grams, in
    -- that order (then by name), the first ten.
    n := COALESCE(pg_catalog.cardinality(hints), 0);
    IF n > 16 THEN
        predicates := dm_private.predicate_hints(match_team_id, dm_private.query_token_ngrams(toks));
    ELSIF n = 1 THEN
        predicates := pg_catalog.jsonb_build_array(pg_catalog.split_part(hints[1], ' ', 1));
    ELSIF n > 1 THEN
        FOR i IN 1..n LOOP
            candidate := pg_catalog.split_part(hints[i], ' ', 1);
            first_at := pg_catalog.split_part(hints[i], ' ', 2)::integer;
            k := pg_catalog.array_position(names, candidate);
            IF k IS NULL THEN
                names := names || candidate;
                pos := pos || first_at;
            ELSIF first_at < pos[k] THEN
                pos[k] := first_at;
            END IF;
        END LOOP;
        -- (by_position, not picked: picked still orders the entities,
        -- whose ids the trigram probe below excludes)
        by_position := '{}'::integer [];
        FOR i IN 1..pg_catalog.cardinality(names) LOOP
            k := pg_catalog.cardinality(by_position);
            by_position := by_position || i;
            WHILE k > 0 AND (pos[i] < pos[by_position[k]] OR (pos[i] = pos[by_position[k]] AND names[i] < names[by_position[k]])) LOOP
                by_position[k + 1] := by_position[k];
                by_position[k] := i;
                k := k - 1;
            END LOOP;
        END LOOP;
        FOREACH k IN ARRAY by_position[1:10] LOOP
            predicates := predicates || pg_catalog.to_jsonb(names[k]);
        END LOOP;
    END IF;

    -- At most 2 trigram probes; candidates inside an exact match need none
    -- (more than 16 name rows: dm_private.match_query_entities probed).
    -- Candidates that are all exactly matched names (fuzzy <@
    -- matched_names: a name stands between spaces in the covered text
    -- built below) probe nothing: one test instead of that text and a loop.
    IF name_rows <= 16 AND fuzzy IS NOT NULL AND pg_catalog.cardinality(fuzzy) > 0 AND pg_catalog.jsonb_array_length(found) < 10
       AND NOT fuzzy OPERATOR(pg_catalog.<@) matched_names THEN
        covered := ' ' || pg_catalog.array_to_string(matched_names, ' | ') || ' ';
        FOREACH candidate IN ARRAY fuzzy LOOP
            EXIT WHEN pg_catalog.cardinality(probes) >= 2;
            IF pg_catalog.strpos(covered, ' ' || candidate || ' ') = 0 THEN
                probes := probes || candidate;
            END IF;
        END LOOP;
        IF pg_catalog.cardinality(probes) > 0 THEN
            -- The exactly matched entities' ids, as uuids only here (few
            -- queries probe): no cast and append per entity on every parse.
            matched_ids := '{}'::uuid [];
            FOREACH k IN ARRAY picked LOOP
                matched_ids := matched_ids || name_rows_found[k][1]::uuid;
            END LOOP;
            found := found || dm_private.match_entity_trigrams(match_team_id, probes, matched_ids);
            IF pg_catalog.jsonb_array_length(found) > 10 THEN
                found := dm_private.parse_first_ten(found);
            END IF;
        END IF;
    END IF;
    IF anchors IS NULL THEN
        RETURN pg_catalog.jsonb_build_object('entities', found, 'predicates', predicates);
    END IF;
    -- dm.parse_query's whole answer, built once here: the entity objects
    -- are written into one object, not into a two-key object that the
    -- caller takes apart and writes again.
    -- JSON_OBJECT: the same object as jsonb_build_object, a little cheaper
    -- (its arguments' JSON categories are not looked up as the variadic
    -- function's are).
    RETURN JSON_OBJECT(
        'anchors': anchors, 'phrases': phrases, 'terms': terms, 'time': time_hints,
        'entities': found, 'predicates': predicates RETURNING jsonb);
END
$$;
COMMENT ON FUNCTION dm_private.parse_query_team(uuid, text [], text [], text [], jsonb, jsonb, jsonb, jsonb) IS
'What dm.parse_query reads from the authenticated team''s tables, in one call: the entities (as dm_private.match_query_entities) and predicates (as dm_private.predicate_hints) that the 1-4 token n-grams of toks (the query''s lower-case tokens; scan_toks: the same, sorted in byte order without duplicates, or as given) would find, read by their first two words from dm_private.parse_lexicon, and the trigram candidates; with anchors NULL {"entities", "predicates"}, otherwise dm.parse_query''s whole answer with the given anchors, phrases, terms and time. Definer (densemem_searcher) with an explicit, checked team predicate; one generic plan.';
ALTER FUNCTION dm_private.parse_query_team(uuid, text [], text [], text [], jsonb, jsonb, jsonb, jsonb) OWNER TO densemem_searcher;

-- The one-call lookup behind dm.parse_query (dm_private.parse_query_names
-- below does the work); kept with its signature for direct use and its
-- tests: the n-grams sorted for the index scans, then {"entities",
-- "predicates"}.
CREATE OR REPLACE FUNCTION dm_private.match_query_names(match_team_id uuid, ngrams text [], fuzzy text [])
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = ''
AS $$
DECLARE
    -- The n-grams for the index scans, sorted in byte order and without
    -- duplicates: each = ANY scan sorts its array again (qsort, then a
    -- de-duplication pass), and a sorted array costs that sort one linear
    -- check. array_to_tsvector sorts and de-duplicates lexemes in C: a
    -- lexeme compares by memcmp, then the shorter first, which is the
    -- order of COLLATE "C". It rejects NULL and empty elements and a
    -- lexeme is at most 2,047 bytes, so other arrays are scanned as given
    -- (the answer is the same either way; only the sort is saved).
    scan_grams constant text [] := CASE
        WHEN ngrams IS NOT NULL AND pg_catalog.array_position(ngrams, NULL) IS NULL
             AND pg_catalog.array_position(ngrams, '') IS NULL
             AND pg_catalog.octet_length(pg_catalog.array_to_string(ngrams, '')) <= 2047
        THEN pg_catalog.tsvector_to_array(pg_catalog.array_to_tsvector(ngrams))
        ELSE ngrams END;
BEGIN
    RETURN dm_private.parse_query_names(match_team_id, ngrams, scan_grams, fuzzy, NULL, NULL, NULL, NULL);
END
$$;
COMMENT ON FUNCTION dm_private.match_query_names(uuid, text [], text []) IS
'What dm.parse_query reads from the authenticated team''s tables, in one call: {"entities": the result of dm_private.match_query_entities, "predicates": the result of dm_private.predicate_hints} for the same n-grams and trigram candidates (dm_private.parse_query_names with the n-grams sorted). Definer (densemem_searcher) with an explicit, checked team predicate.';
ALTER FUNCTION dm_private.match_query_names(uuid, text [], text []) OWNER TO densemem_searcher;

-- The public parse. Recall calls it once per query (request fields override
-- it); analysts call it to see how a query is read.
--
-- One PL/pgSQL call does the table-free work itself: every function call
-- costs a search_path switch and a PL/pgSQL frame (about 9 k instructions),
-- so the bodies of dm_private.parse_prepare_text, query_tokens_cased,
-- query_fuzzy_keys and parse_query_text are written out here, each the same
-- expressions as its reference function (which stays for direct use;
-- tests/python/test_parse_fast_paths.py compares the two on the corpus and
-- generated queries). The n-grams (dm_private.query_token_ngrams) are not
-- built since session 8: the team's names and phrases are read by their
-- first two words (tests/python/test_parse_first_word.py). What remains are
-- calls to dm_private.parse_anchors (only when its own first guard can
-- pass), dm_private.parse_time_words and the definer lookup
-- dm_private.parse_query_team.
CREATE OR REPLACE FUNCTION dm.parse_query(query text, team_id uuid, now timestamptz DEFAULT pg_catalog.now())
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SET search_path = ''
AS $$
DECLARE
    -- dm_private.parse_prepare_text
    capped constant text := pg_catalog.left(COALESCE(query, ''), 2000);
    prepared constant text := CASE WHEN capped !~ '[^ -~]' THEN capped ELSE pg_catalog.translate(
        capped,
        U&'\0009\000A\000B\000C\000D\00A0\2000\2001\2002\2003\2004\2005\2006\2007\2008\2009\200A\200B\202F\205F\3000\FEFF\2019\2018',
        '                      ''''') END;
    -- dm_private.query_tokens_cased and its lower-case tokens. Words of
    -- ASCII letters and digits with at most a final question mark (most
    -- questions) have no punctuation to trim but that mark: one short
    -- regular expression without lookaround instead of the trimming one.
    plain constant boolean := prepared ~ '^[A-Za-z0-9 ]*\??$';
    cased constant text [] := CASE WHEN plain
        THEN (pg_catalog.array_remove(pg_catalog.string_to_array(
            pg_catalog.rtrim(prepared, '?'), ' '), ''))[1:64]
        ELSE (pg_catalog.array_remove(pg_catalog.string_to_array(
        pg_catalog.regexp_replace(
            prepared,
            '''[sS](?![^ !"$%&''()*,./:;<=>?@[\\\]^_`{|}~“”‘«»¿¡…—–·-])|(?<![^ ])[!"$%&''()*,./:;<=>?@[\\\]^_`{|}~“”‘«»¿¡…—–·-]+|[!"$%&''()*,./:;<=>?@[\\\]^_`{|}~“”‘«»¿¡…—–·-]+(?![^ ])',
            '', 'g'),
        ' '), ''))[1:64] END;
    joined constant text := pg_catalog.array_to_string(cased, ' ');
    lowered constant text := pg_catalog.lower(joined);
    toks constant text [] := pg_catalog.string_to_array(lowered, ' ');
    n constant integer := COALESCE(pg_catalog.cardinality(toks), 0);
    fuzzy text [];
    last_capitalized integer := 0;
    pairs text [] := '{}'::text [];
    singles text [] := '{}'::text [];
    anchors jsonb := '[]'::jsonb;
    masked text := prepared;
    anchored jsonb;
    t_lower text;
    t_words text [];
    t_toks text [];
    phrases jsonb := '[]'::jsonb;
    terms text [] := '{}'::text [];
    raw text;
    phrase text;
    pos integer := 1;
    found_at integer;
    w text;
    no_time boolean;
BEGIN
    -- dm_private.query_fuzzy_keys. A token whose first character is ASCII
    -- and not A-Z is not capitalized (lower() changes no other ASCII
    -- character): the full test runs only on the others. The previous
    -- token was capitalized when the last capitalized one is i - 1 (one
    -- statement per lower-case token instead of two).
    IF joined = lowered THEN
        FOR i IN 1..n LOOP
            IF pg_catalog.length(toks[i]) >= 5
               AND NOT toks[i] = ANY ('{a,about,after,all,also,an,and,any,are,as,at,be,been,before,but,by,can,could,did,do,does,for,from,had,has,have,he,her,his,how,if,in,into,is,it,its,just,me,my,no,not,of,on,or,our,she,so,some,than,that,the,their,them,then,there,these,they,this,to,was,we,were,what,when,where,which,while,who,whom,why,will,with,would,you,your,i,im,ive,id,ill,us,him,hers,ours,theirs,does,doing,done,been,being,into,over,under,again,ever,never,yes,okay,ok,hey,hi,hello,thanks,thank,please,did,didn,doesn,isn,wasn,weren,won,dont,cant,wont,about,after,before,since,until,last,first,next,this,that,those,these,such,very,much,many,more,most,other,another}'::text []) THEN
                singles := singles || toks[i];
            END IF;
        END LOOP;
        fuzzy := singles[1:8];
    ELSE
        FOR i IN 2..n LOOP
            IF (pg_catalog.ascii(cased[i]) BETWEEN 65 AND 90 OR pg_catalog.ascii(cased[i]) > 127)
               AND pg_catalog.left(cased[i], 1) <> pg_catalog.lower(pg_catalog.left(cased[i], 1))
               AND NOT toks[i] = ANY ('{a,about,after,all,also,an,and,any,are,as,at,be,been,before,but,by,can,could,did,do,does,for,from,had,has,have,he,her,his,how,if,in,into,is,it,its,just,me,my,no,not,of,on,or,our,she,so,some,than,that,the,their,them,then,there,these,they,this,to,was,we,were,what,when,where,which,while,who,whom,why,will,with,would,you,your,i,im,ive,id,ill,us,him,hers,ours,theirs,does,doing,done,been,being,into,over,under,again,ever,never,yes,okay,ok,hey,hi,hello,thanks,thank,please,did,didn,doesn,isn,wasn,weren,won,dont,cant,wont,about,after,before,since,until,last,first,next,this,that,those,these,such,very,much,many,more,most,other,another,january,february,march,april,may,june,july,august,september,october,november,december,jan,feb,mar,apr,jun,jul,aug,sep,sept,oct,nov,dec,monday,tuesday,wednesday,thursday,friday,saturday,sunday,today,yesterday,tomorrow}'::text []) THEN
                IF last_capitalized = i - 1 THEN
                    pairs := pairs || (toks[i - 1] || ' ' || toks[i]);
                END IF;
                IF pg_catalog.length(toks[i]) >= 4 THEN
                    singles := singles || toks[i];
                END IF;
                last_capitalized := i;
            END IF;
        END LOOP;
        fuzzy := (pairs || singles)[1:8];
    END IF;

    -- dm_private.parse_query_text. Anchors: dm_private.parse_anchors skips
    -- every grammar whose needle and guard are both absent, and masks e-mail
    -- addresses only when there is an @: when the text holds none of ':\',
    -- '/', '@' and the other grammars' guards (each guard contains its
    -- needle), it returns no anchor and the text unchanged, so it is not
    -- called ("Dr. Seuss", "career-wise", "J.K. Rowling"). The UUID guard
    -- holds 7 hex digits, so the hash guard stands for both; the cheap
    -- needle test runs first (most questions have none of - : / @ .).
    IF prepared ~ '[-:/@.]|[0-9A-Fa-f]{7}'
       AND prepared ~ ':\\|/|@|[A-Za-z0-9]:[A-Za-z0-9]|[Ss][Rr][Vv]-[A-Za-z0-9]|[0-9]\.[0-9]|[A-Z0-9]-[1-9]|[0-9A-Fa-f]{7}' THEN
        anchored := dm_private.parse_anchors(prepared);
        anchors := anchored OPERATOR(pg_catalog.->) 'anchors';
        masked := anchored OPERATOR(pg_catalog.->>) 'masked';
    END IF;

    -- Quoted phrases.
    IF pg_catalog.strpos(prepared, '"') > 0 OR pg_catalog.strpos(prepared, '“') > 0 THEN
        LOOP
            found_at := pg_catalog.regexp_instr(prepared, '"[^"]+"|“[^”]+”', pos);
            EXIT WHEN found_at = 0;
            raw := pg_catalog.regexp_substr(prepared, '"[^"]+"|“[^”]+”', found_at);
            pos := found_at + pg_catalog.length(raw);
            phrase := pg_catalog.btrim(pg_catalog.regexp_replace(
                pg_catalog.substr(raw, 2, pg_catalog.length(raw) - 2), ' +', ' ', 'g'));
            CONTINUE WHEN phrase = '' OR pg_catalog.length(phrase) > 300
                OR phrases OPERATOR(pg_catalog.@>) pg_catalog.jsonb_build_array(phrase);
            phrases := phrases || pg_catalog.to_jsonb(phrase);
            EXIT WHEN pg_catalog.jsonb_array_length(phrases) >= 16;
        END LOOP;
    END IF;

    -- Content terms (one test per word; the cap is checked only when a term is added).
    -- A plain question (ASCII letters, digits, spaces, a final question
    -- mark) with no anchor guard passed and fewer than 64 tokens: its
    -- lower-case words split on the other characters are toks (empty
    -- pieces are skipped below anyway).
    FOREACH w IN ARRAY CASE WHEN plain AND anchored IS NULL AND n < 64 THEN toks
        WHEN pg_catalog.octet_length(prepared) = pg_catalog.length(prepared) THEN pg_catalog.string_to_array(pg_catalog.regexp_replace(
        pg_catalog.lower(masked), '[^ a-z0-9]+', ' ', 'g'), ' ')
        ELSE pg_catalog.regexp_split_to_array(pg_catalog.lower(masked), '[^[:alnum:]]+') END LOOP
        IF pg_catalog.length(w) >= 2 AND NOT w = ANY (terms) AND NOT w = ANY ('{about,above,after,again,against,all,am,an,and,any,are,as,at,be,because,been,before,being,below,between,both,but,by,can,could,did,do,does,doing,down,during,each,few,for,from,further,had,has,have,having,he,her,here,hers,herself,him,himself,his,how,if,in,into,is,it,its,itself,just,me,more,most,my,myself,no,nor,not,now,of,off,on,once,only,or,other,our,ours,ourselves,out,over,own,same,she,should,so,some,such,than,that,the,their,theirs,them,themselves,then,there,these,they,this,those,through,to,too,under,until,up,very,was,we,were,what,when,where,which,while,who,whom,why,will,with,would,you,your,yours,yourself,yourselves,ll,re,ve,don,didn,doesn,isn,wasn,weren,won}'::text []) THEN
            terms := terms || w;
            EXIT WHEN pg_catalog.cardinality(terms) >= 32;
        END IF;
    END LOOP;

    -- The team is checked by dm_private.match_query_names (as
    -- densemem_searcher) before any team row is read. One role per
    -- dm_private.require_team call keeps its cached plan valid: a plan that
    -- reads a table under row-level security is re-planned whenever the
    -- role changes, and checking here as the caller too made every parse
    -- plan that query twice.
    -- The team's part first (its check raises before any answer is built),
    -- then one object of six keys (no concatenation of two objects).
    -- No time hint: fewer than 64 tokens (all of them in toks), no digit
    -- and none of the words that the walker, the intent rules or the
    -- temporal-question rules start from (the union of parse_time_words'
    -- three word sets) among the tokens: parse_time_words' literal answer,
    -- without the call. For a plain question the tokens are its words. For
    -- any other question the words parse_time_words tests are the text cut
    -- at the punctuation below: a word of those 72 letters-only words that
    -- is not a token was cut out of a token by punctuation inside it, so
    -- the test also asks that the tokens hold none of that punctuation
    -- (what stood at a word's ends, and a possessive 's, is not in a
    -- token); then neither the walker's words nor its call are needed.
    no_time := n < 64 AND prepared !~ '[0-9]'
        AND NOT ('{"afternoon": true, "apr": true, "april": true, "aug": true, "august": true, "beginning": true,
            "current": true, "currently": true, "date": true, "day": true, "days": true, "dec": true,
            "december": true, "earliest": true, "evening": true, "feb": true, "february": true, "first": true,
            "firstly": true, "friday": true, "initially": true, "jan": true, "january": true, "jul": true,
            "july": true, "jun": true, "june": true, "lately": true, "latest": true, "long": true, "mar": true,
            "march": true, "may": true, "monday": true, "month": true, "months": true, "morning": true,
            "newest": true, "night": true, "nov": true, "november": true, "now": true, "nowadays": true, "oct":
            true, "october": true, "oldest": true, "original": true, "originally": true, "recent": true,
            "recently": true, "saturday": true, "season": true, "sep": true, "sept": true, "september": true,
            "still": true, "sunday": true, "thursday": true, "time": true, "today": true, "tomorrow": true,
            "tonight": true, "tuesday": true, "wednesday": true, "week": true, "weekend": true, "weeks": true,
            "when": true, "with": true, "year": true, "years": true, "yesterday": true}'::jsonb OPERATOR(pg_catalog.?|) toks)
        AND (plain OR lowered !~ '[][,.;:!?(){}"“”''/-]');
    IF NOT no_time AND NOT (plain AND n < 64) THEN
        -- dm_private.parse_time's lower-case text, words and tokens (its expressions).
        t_lower := pg_catalog.lower(prepared);
        t_words := pg_catalog.string_to_array(
            pg_catalog.regexp_replace(t_lower, '[][,.;:!?(){}"“”''/-]', ' ', 'g'), ' ');
        t_toks := pg_catalog.array_remove(CASE
            WHEN pg_catalog.strpos(t_lower, '-') = 0 AND pg_catalog.strpos(t_lower, '/') = 0 THEN t_words
            ELSE pg_catalog.string_to_array(pg_catalog.regexp_replace(t_lower, '[][,.;:!?(){}"“”'']', ' ', 'g'), ' ')
        END, '');
    END IF;

    -- The tokens, sorted in byte order without duplicates, key the index
    -- scan on the first word of the team's names and phrases (migration
    -- 0068); the n-grams are not built: dm_private.parse_query_team keeps a
    -- name or phrase of one to four words when it stands between spaces in
    -- the tokens (the same rows as n-gram equality). Tokens are never
    -- empty, and none is longer than the lower-case text, so within 2,047
    -- bytes every token is a valid lexeme (array_to_tsvector sorts and
    -- de-duplicates lexemes in byte order, as dm_private.match_query_names
    -- explains).
    -- The whole answer is built by the definer call, once.
    RETURN dm_private.parse_query_team(
        parse_query.team_id, toks,
        CASE WHEN pg_catalog.octet_length(lowered) <= 2047
             THEN pg_catalog.tsvector_to_array(pg_catalog.array_to_tsvector(toks)) ELSE toks END,
        fuzzy, anchors, phrases, pg_catalog.to_jsonb(terms),
        -- Time: words of ASCII letters and digits with at most a final
        -- question mark, fewer than 64 (all of them are in toks), are the
        -- walker's tokens and words as dm_private.parse_time splits them,
        -- and lowered reads as its lower-case text (the same digits, and no
        -- punctuation before a "when").
        -- No time hint (no_time above): parse_time_words' literal answer,
        -- without the call.
        CASE WHEN no_time
             THEN '{"window": null, "intent": null, "temporal_question": false, "expressions": []}'::jsonb
             WHEN plain AND n < 64
             THEN dm_private.parse_time_words(lowered, toks, toks, COALESCE(parse_query.now, pg_catalog.now()))
             ELSE dm_private.parse_time_words(t_lower, t_words, t_toks, COALESCE(parse_query.now, pg_catalog.now())) END);
END
$$;
COMMENT ON FUNCTION dm.parse_query(text, uuid, timestamptz) IS
'How Dense-Mem reads a query, relative to the clock `now` (UTC; NULL means now()). Returns {"anchors": [{"kind": "uuid|issue_key|semver|path|scoped_name|hash|server_id", "value", "required": true}], "phrases": [text], "terms": [text], "entities": [{"entity_id", "name", "mention", "match": "exact|alias|trigram", "similarity"}], "predicates": [text], "time": {"window": {"from": timestamptz|null, "to": timestamptz|null}|null, "intent": "latest|earliest"|null, "temporal_question": bool, "expressions": [text]}}. Deterministic for a given clock and team data; only the first 2,000 characters are read; never raises on any text. Grammar: docs/QUERY_GRAMMAR.md.';

REVOKE ALL ON FUNCTION dm_private.parse_prepare_text(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.parse_anchors(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.parse_time(text, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.parse_time_words(text, text [], text [], timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.query_tokens_cased(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.query_tokens(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.query_name_keys(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.query_ngrams(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.query_token_ngrams(text []) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.query_fuzzy_keys(text []) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.parse_query_text(text, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.match_query_entities(uuid, text [], text []) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.match_entity_trigrams(uuid, text [], uuid []) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.parse_first_ten(jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.parse_default_synonyms() FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.parse_write_default_synonyms() FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.parse_default_synonyms_changed() FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.predicate_hints(uuid, text []) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.match_query_names(uuid, text [], text []) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.parse_query_names(uuid, text [], text [], text [], jsonb, jsonb, jsonb, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm_private.parse_query_team(uuid, text [], text [], text [], jsonb, jsonb, jsonb, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION dm.parse_query(text, uuid, timestamptz) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION dm_private.parse_prepare_text(text) TO
densemem_app, densemem_analyst, densemem_operator, densemem_searcher;
GRANT EXECUTE ON FUNCTION dm_private.parse_anchors(text) TO
densemem_app, densemem_analyst, densemem_operator, densemem_searcher;
GRANT EXECUTE ON FUNCTION dm_private.parse_time(text, timestamptz) TO
densemem_app, densemem_analyst, densemem_operator, densemem_searcher;
GRANT EXECUTE ON FUNCTION dm_private.parse_time_words(text, text [], text [], timestamptz) TO
densemem_app, densemem_analyst, densemem_operator, densemem_searcher;
GRANT EXECUTE ON FUNCTION dm_private.query_tokens_cased(text) TO
densemem_app, densemem_analyst, densemem_operator, densemem_searcher;
GRANT EXECUTE ON FUNCTION dm_private.query_tokens(text) TO
densemem_app, densemem_analyst, densemem_operator, densemem_searcher;
GRANT EXECUTE ON FUNCTION dm_private.query_name_keys(text) TO
densemem_app, densemem_analyst, densemem_operator, densemem_searcher;
GRANT EXECUTE ON FUNCTION dm_private.query_ngrams(text) TO
densemem_app, densemem_analyst, densemem_operator, densemem_searcher;
GRANT EXECUTE ON FUNCTION dm_private.query_token_ngrams(text []) TO
densemem_app, densemem_analyst, densemem_operator, densemem_searcher;
GRANT EXECUTE ON FUNCTION dm_private.query_fuzzy_keys(text []) TO
densemem_app, densemem_analyst, densemem_operator, densemem_searcher;
GRANT EXECUTE ON FUNCTION dm_private.parse_query_text(text, timestamptz) TO
densemem_app, densemem_analyst, densemem_operator, densemem_searcher;
GRANT EXECUTE ON FUNCTION dm_private.match_query_entities(uuid, text [], text []) TO
densemem_app, densemem_analyst, densemem_operator, densemem_searcher;
GRANT EXECUTE ON FUNCTION dm_private.parse_first_ten(jsonb) TO
densemem_app, densemem_analyst, densemem_operator, densemem_searcher;
GRANT EXECUTE ON FUNCTION dm_private.parse_default_synonyms() TO
densemem_app, densemem_analyst, densemem_operator, densemem_searcher;
GRANT EXECUTE ON FUNCTION dm_private.match_entity_trigrams(uuid, text [], uuid []) TO
densemem_app, densemem_analyst, densemem_operator, densemem_searcher;
GRANT EXECUTE ON FUNCTION dm_private.predicate_hints(uuid, text []) TO
densemem_app, densemem_analyst, densemem_operator, densemem_searcher;
GRANT EXECUTE ON FUNCTION dm_private.match_query_names(uuid, text [], text []) TO
densemem_app, densemem_analyst, densemem_operator;
GRANT EXECUTE ON FUNCTION dm_private.parse_query_names(uuid, text [], text [], text [], jsonb, jsonb, jsonb, jsonb) TO
densemem_app, densemem_analyst, densemem_operator;
GRANT EXECUTE ON FUNCTION dm_private.parse_query_team(uuid, text [], text [], text [], jsonb, jsonb, jsonb, jsonb) TO
densemem_app, densemem_analyst, densemem_operator;
GRANT EXECUTE ON FUNCTION dm.parse_query(text, uuid, timestamptz) TO
densemem_app, densemem_analyst, densemem_operator;
