-- 0068: the table dm.parse_query reads a team's names and phrases from.
--
-- Since session 8 the parse read, per call, the team's entity names by
-- their first two words (entity_names_first_word_idx), each found name's
-- canonical name by a primary-key sub-select on entities, and the team's
-- predicate synonyms by a third scan: three plan nodes to start on every
-- parse, one index descent per name found, and a synonyms scan even for the
-- teams that have none (most). Measured by removing each part (callgrind,
-- 999 LoCoMo dev questions, docs/QUERY_GRAMMAR.md session 11): the
-- canonical-name sub-select ~30 k instructions per parse, the synonyms
-- scan ~23 k, of ~500 k.
--
-- This table holds one row per entity name or alias and per team synonym,
-- as the row the parse needs ({entity id, name, 't'|'f', canonical name} or
-- {predicate, phrase, '' or ' -' when disabled, ''}), keyed by team and the
-- first two words in byte order, as entity_names_first_word_idx was: one
-- index scan reads both. Statement triggers on entity_names, entities (canonical name)
-- and predicate_synonyms (functions in sql/20_parse_query.sql, copied here
-- because the triggers need them now) keep it exact in the transaction of
-- every write; ENABLE ALWAYS, so a bulk load in replica mode cannot leave it
-- stale. No foreign key: the rows are derived, and a delete (also a
-- cascaded one) removes them through the trigger.
--
-- Write cost: one row and one btree entry per name, alias or synonym, and
-- one trigger call per writing statement (0069 drops the 0060 first-word
-- indexes of entity_names and predicate_synonyms, which nothing reads since).

SET LOCAL ROLE densemem_owner;

CREATE TABLE dm_private.parse_lexicon (
    team_id uuid NOT NULL,
    -- The first two words of the name or phrase ('' for a one-word one),
    -- compared in byte order: the lookup's keys.
    first_word text COLLATE "C" NOT NULL,
    second_word text COLLATE "C" NOT NULL,
    -- The normalized name or phrase (one to four words for a phrase).
    phrase text NOT NULL,
    -- 'n' an entity name or alias, 's' a team predicate synonym.
    kind "char" NOT NULL,
    -- The entity id (text) of a name, the predicate of a synonym.
    ref text NOT NULL,
    entry text [] NOT NULL,
    -- One index, the lookup's: the team, then the first two words (the
    -- rest makes a row's key unique; the triggers find a row by all of it).
    -- No second index to write, and none for a generic plan to prefer when
    -- the table's statistics are stale.
    CONSTRAINT parse_lexicon_pkey PRIMARY KEY (team_id, first_word, second_word, phrase, kind, ref),
    CONSTRAINT parse_lexicon_kind CHECK (kind IN ('n', 's')),
    CONSTRAINT parse_lexicon_words CHECK (
        first_word = pg_catalog.split_part(phrase, ' ', 1) AND second_word = pg_catalog.split_part(phrase, ' ', 2)
    ),
    CONSTRAINT parse_lexicon_entry CHECK (pg_catalog.cardinality(entry) = 4)
);
COMMENT ON TABLE dm_private.parse_lexicon IS
'Derived, kept by triggers: every entity name and alias ({entity id, normalized name, ''t'' canonical or ''f'' alias, the entity''s canonical name}) and every team predicate synonym ({predicate, phrase, '''' or '' -'' when disabled, ''''}) as dm.parse_query reads them, in one index scan.';
COMMENT ON INDEX dm_private.parse_lexicon_pkey IS
'Names and phrases by team and first two words in byte order (dm.parse_query: first_word = ANY (query tokens), second_word = ANY (query tokens and the empty word)).';

ALTER TABLE dm_private.parse_lexicon ENABLE ROW LEVEL SECURITY;
ALTER TABLE dm_private.parse_lexicon FORCE ROW LEVEL SECURITY;
CREATE POLICY "the service reads inside the authenticated team" ON dm_private.parse_lexicon
AS PERMISSIVE FOR SELECT TO densemem_app
USING (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid));
CREATE POLICY "analysts and operators read only their granted team" ON dm_private.parse_lexicon
AS PERMISSIVE FOR SELECT TO densemem_analyst, densemem_operator
USING (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid)
       AND (pg_catalog.pg_has_role(session_user, 'densemem_app', 'MEMBER') OR EXISTS (
           SELECT 1 FROM dm_private.team_role_grants AS g
           WHERE g.team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid)
             AND g.role_name = session_user)));
CREATE POLICY "the owner reads inside the authenticated team" ON dm_private.parse_lexicon
AS PERMISSIVE FOR SELECT TO densemem_owner
USING (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid));

REVOKE ALL ON dm_private.parse_lexicon FROM PUBLIC;
-- Only the trigger functions write it (definers owned by densemem_searcher,
-- which bypasses row-level security: a cascaded delete of an entity's names
-- runs as the table owner, with no team authenticated); they derive every
-- row they write from the rows the writing statement changed. The parse
-- reads as densemem_searcher with an explicit, checked team predicate; the
-- other roles read their team's rows under row-level security.
GRANT SELECT ON dm_private.parse_lexicon TO densemem_app, densemem_analyst, densemem_operator;
GRANT SELECT, INSERT, UPDATE, DELETE ON dm_private.parse_lexicon TO densemem_searcher;

-- ---------------------------------------------------------------- trigger functions (current definition: sql/20)

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

CREATE TRIGGER entity_names_parse_lexicon_inserted
AFTER INSERT ON dm_private.entity_names
REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION dm_private.parse_lexicon_names_inserted();
CREATE TRIGGER entity_names_parse_lexicon_deleted
AFTER DELETE ON dm_private.entity_names
REFERENCING OLD TABLE AS old_rows
FOR EACH STATEMENT EXECUTE FUNCTION dm_private.parse_lexicon_names_deleted();
CREATE TRIGGER entity_names_parse_lexicon_updated
AFTER UPDATE ON dm_private.entity_names
REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION dm_private.parse_lexicon_names_updated();
CREATE TRIGGER entity_names_parse_lexicon_truncated
AFTER TRUNCATE ON dm_private.entity_names
FOR EACH STATEMENT EXECUTE FUNCTION dm_private.parse_lexicon_truncated();
CREATE TRIGGER entities_parse_lexicon_renamed
AFTER UPDATE OF canonical_name ON dm_private.entities
FOR EACH ROW WHEN (old.canonical_name IS DISTINCT FROM new.canonical_name)
EXECUTE FUNCTION dm_private.parse_lexicon_entity_renamed();
CREATE TRIGGER predicate_synonyms_parse_lexicon_inserted
AFTER INSERT ON dm_private.predicate_synonyms
REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION dm_private.parse_lexicon_synonyms_inserted();
CREATE TRIGGER predicate_synonyms_parse_lexicon_deleted
AFTER DELETE ON dm_private.predicate_synonyms
REFERENCING OLD TABLE AS old_rows
FOR EACH STATEMENT EXECUTE FUNCTION dm_private.parse_lexicon_synonyms_deleted();
CREATE TRIGGER predicate_synonyms_parse_lexicon_updated
AFTER UPDATE ON dm_private.predicate_synonyms
REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION dm_private.parse_lexicon_synonyms_updated();
CREATE TRIGGER predicate_synonyms_parse_lexicon_truncated
AFTER TRUNCATE ON dm_private.predicate_synonyms
FOR EACH STATEMENT EXECUTE FUNCTION dm_private.parse_lexicon_truncated();
ALTER TABLE dm_private.entity_names ENABLE ALWAYS TRIGGER entity_names_parse_lexicon_inserted;
ALTER TABLE dm_private.entity_names ENABLE ALWAYS TRIGGER entity_names_parse_lexicon_deleted;
ALTER TABLE dm_private.entity_names ENABLE ALWAYS TRIGGER entity_names_parse_lexicon_updated;
ALTER TABLE dm_private.entity_names ENABLE ALWAYS TRIGGER entity_names_parse_lexicon_truncated;
ALTER TABLE dm_private.entities ENABLE ALWAYS TRIGGER entities_parse_lexicon_renamed;
ALTER TABLE dm_private.predicate_synonyms ENABLE ALWAYS TRIGGER predicate_synonyms_parse_lexicon_inserted;
ALTER TABLE dm_private.predicate_synonyms ENABLE ALWAYS TRIGGER predicate_synonyms_parse_lexicon_deleted;
ALTER TABLE dm_private.predicate_synonyms ENABLE ALWAYS TRIGGER predicate_synonyms_parse_lexicon_updated;
ALTER TABLE dm_private.predicate_synonyms ENABLE ALWAYS TRIGGER predicate_synonyms_parse_lexicon_truncated;
COMMENT ON TRIGGER entity_names_parse_lexicon_inserted ON dm_private.entity_names IS
'Keeps dm_private.parse_lexicon: adds the new names.';
COMMENT ON TRIGGER entity_names_parse_lexicon_deleted ON dm_private.entity_names IS
'Keeps dm_private.parse_lexicon: removes the deleted names.';
COMMENT ON TRIGGER entity_names_parse_lexicon_updated ON dm_private.entity_names IS
'Keeps dm_private.parse_lexicon: rewrites the updated names.';
COMMENT ON TRIGGER entity_names_parse_lexicon_truncated ON dm_private.entity_names IS
'Keeps dm_private.parse_lexicon: removes every name row.';
COMMENT ON TRIGGER entities_parse_lexicon_renamed ON dm_private.entities IS
'Keeps dm_private.parse_lexicon: a renamed entity''s names carry the new canonical name.';
COMMENT ON TRIGGER predicate_synonyms_parse_lexicon_inserted ON dm_private.predicate_synonyms IS
'Keeps dm_private.parse_lexicon: adds the new phrases.';
COMMENT ON TRIGGER predicate_synonyms_parse_lexicon_deleted ON dm_private.predicate_synonyms IS
'Keeps dm_private.parse_lexicon: removes the deleted phrases.';
COMMENT ON TRIGGER predicate_synonyms_parse_lexicon_updated ON dm_private.predicate_synonyms IS
'Keeps dm_private.parse_lexicon: rewrites the updated phrases.';
COMMENT ON TRIGGER predicate_synonyms_parse_lexicon_truncated ON dm_private.predicate_synonyms IS
'Keeps dm_private.parse_lexicon: removes every phrase row.';

-- ---------------------------------------------------------------- backfill (all teams: superuser)

RESET ROLE;
INSERT INTO dm_private.parse_lexicon (team_id, first_word, second_word, phrase, kind, ref, entry)
SELECT
    n.team_id, pg_catalog.split_part(n.normalized_name, ' ', 1), pg_catalog.split_part(n.normalized_name, ' ', 2),
    n.normalized_name, 'n', n.entity_id::text,
    ARRAY[n.entity_id::text, n.normalized_name, CASE WHEN n.is_canonical THEN 't' ELSE 'f' END, e.canonical_name]
FROM dm_private.entity_names AS n
JOIN dm_private.entities AS e ON e.team_id = n.team_id AND e.entity_id = n.entity_id;
INSERT INTO dm_private.parse_lexicon (team_id, first_word, second_word, phrase, kind, ref, entry)
SELECT
    s.team_id, pg_catalog.split_part(s.phrase, ' ', 1), pg_catalog.split_part(s.phrase, ' ', 2), s.phrase, 's',
    s.predicate, ARRAY[s.predicate, s.phrase, CASE WHEN s.enabled THEN '' ELSE ' -' END, '']
FROM dm_private.predicate_synonyms AS s;
