-- team_id leads every primary key, foreign key and index of every table that
-- has a team_id column, so every row, join and index range stays inside one
-- team and the tables can be distributed by team_id (Citus) without change.
-- Read from the catalogs: tables added by later migrations are checked too.
BEGIN;
SELECT plan(14);

-- The documented global tables, which hold no team data and so have no team_id:
--   dm_private.embedding_contracts   how vectors are made; one active contract
--                                    for the whole installation (a Citus
--                                    reference table, copied to every node).
--   dm_private.ranking_profiles      versioned ranking settings shared by all
--                                    teams (a team's choice and overrides live
--                                    in team_ranking_overrides, which has team_id).
--   dm_private.predicate_synonym_defaults
--                                    the default phrase-to-predicate mapping
--                                    of dm.parse_query for every team (0010);
--                                    a team's own rows are in predicate_synonyms.
--   dm_private.predicate_cardinality_defaults
--                                    the default single / multi-valued
--                                    predicates (0031); a team's own rows
--                                    are in predicate_cardinalities.
--   dm_private.search_index_profiles versioned vector-index settings of the
--                                    installation (0020), like ranking_profiles.
--   dm_private.recall_settings_resolved
--                                    each ranking profile's settings resolved
--                                    against the active search-index profile
--                                    (0088), derived from the two above.
--   dm_migrations.applied_migrations, dm_migrations.applied_function_files
--                                    the migration runner's ledger: one per
--                                    database, about the schema, not the data.
CREATE TEMPORARY VIEW global_tables (table_name) AS
VALUES
    ('dm_private.embedding_contracts'),
    ('dm_private.ranking_profiles'),
    ('dm_private.predicate_synonym_defaults'),
    ('dm_private.predicate_cardinality_defaults'),
    ('dm_private.search_index_profiles'),
    ('dm_private.recall_settings_resolved'),
    ('dm_migrations.applied_migrations'),
    ('dm_migrations.applied_function_files');

-- Indexes of team tables that do not lead with team_id, on purpose:
--   dm_private.teams_name_key  teams is the tenant directory (one row per
--                              team, a Citus reference table), and a team
--                              name is unique across the installation.
--   dm_private.search_documents_claim_order_idx
--                              the embedding worker claims the oldest pending
--                              documents of all teams (0015). A non-unique
--                              partial index of pending rows: Citus builds it
--                              per shard, where it still serves the claim.
--   dm_private.search_documents_team_lexemes_idx
--                              a GIN index whose every key begins with the
--                              team id's first 8 hex digits (0025): the team
--                              leads each key rather than the column list,
--                              and recall keeps its explicit team_id
--                              predicate for prefix collisions.
--   dm_private.search_documents_team_order_idx
--                              a btree on search_team_order_key(team_id)
--                              (0053), whose value is the team id: the team
--                              leads the key through a function no other
--                              index has, so the team's evidence comes in
--                              heap order (full-text dense passes).
--   dm_private.search_documents_document_hash_idx
--                              a hash index (one key column) on document_id
--                              (0072): the ranking's probe of each fused
--                              candidate by its id; every reader keeps its
--                              explicit team_id predicate, and Citus builds
--                              it per shard, where it still serves the probe.
--   dm_private.evidence_link_endpoints_evidence_hash_idx
--                              the same (0073): proximity's probe of each
--                              candidate's link endpoints by evidence_id; the
--                              reader keeps its explicit team_id predicate.
--   dm_private.evidence_evidence_hash_idx,
--   dm_private.sources_source_hash_idx,
--   dm_private.source_revisions_revision_hash_idx
--                              the same (0089): hydration's probes of each
--                              result's evidence, source and revision by id;
--                              every reader keeps its team_id predicate.
--   dm_private.document_embeddings_document_hash_idx
--                              the same (0090): the ranking's probe of each
--                              MMR pool member's vector by document_id; the
--                              reader keeps its team_id predicate. It is an
--                              index of the partitioned table: each
--                              partition's copy of it (attached to it, same
--                              keys) is checked as the parent index, below.
--   dm_private.entity_names_team_trigram_idx,
--   dm_private.search_documents_entity_team_lexemes_idx
--                              the same for entity name trigrams (0055) and
--                              entity document lexemes (0056): discovery's
--                              seed lookups keep their team_id predicate.
CREATE TEMPORARY VIEW index_exceptions (index_name) AS
VALUES
    ('dm_private.teams_name_key'),
    ('dm_private.search_documents_claim_order_idx'),
    ('dm_private.search_documents_team_lexemes_idx'),
    ('dm_private.search_documents_team_order_idx'),
    ('dm_private.search_documents_document_hash_idx'),
    ('dm_private.evidence_link_endpoints_evidence_hash_idx'),
    ('dm_private.evidence_evidence_hash_idx'),
    ('dm_private.sources_source_hash_idx'),
    ('dm_private.source_revisions_revision_hash_idx'),
    ('dm_private.document_embeddings_document_hash_idx'),
    ('dm_private.entity_names_team_trigram_idx'),
    ('dm_private.search_documents_entity_team_lexemes_idx');

CREATE TEMPORARY VIEW dm_tables AS
SELECT c.oid AS table_oid,
       pg_catalog.format('%I.%I', n.nspname, c.relname) COLLATE "default" AS table_name,
       (SELECT a.attnum FROM pg_catalog.pg_attribute AS a
        WHERE a.attrelid = c.oid AND a.attname = 'team_id' AND NOT a.attisdropped) AS team_attnum
FROM pg_catalog.pg_class AS c
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
WHERE n.nspname IN ('dm', 'dm_private', 'dm_migrations') AND c.relkind IN ('r', 'p');

CREATE TEMPORARY VIEW team_tables AS
SELECT * FROM dm_tables WHERE team_attnum IS NOT NULL;

CREATE TEMPORARY VIEW team_id_not_uuid_not_null AS
SELECT t.table_name FROM team_tables AS t
JOIN pg_catalog.pg_attribute AS a ON a.attrelid = t.table_oid AND a.attnum = t.team_attnum
WHERE a.atttypid <> 'uuid'::regtype OR NOT a.attnotnull;

CREATE TEMPORARY VIEW primary_key_offenders AS
SELECT t.table_name FROM team_tables AS t
WHERE NOT EXISTS (
    SELECT 1 FROM pg_catalog.pg_constraint AS k
    WHERE k.conrelid = t.table_oid AND k.contype = 'p' AND k.conkey[1] = t.team_attnum);

-- A foreign key of a team table leads with team_id on both sides (so it can
-- only point inside the row's own team), unless it points at a global table.
CREATE TEMPORARY VIEW foreign_key_offenders AS
SELECT t.table_name, k.conname::text COLLATE "default" AS constraint_name
FROM team_tables AS t
JOIN pg_catalog.pg_constraint AS k ON k.conrelid = t.table_oid AND k.contype = 'f'
JOIN dm_tables AS referenced ON referenced.table_oid = k.confrelid
WHERE referenced.table_name NOT IN (SELECT table_name FROM global_tables)
  AND NOT (k.conkey[1] = t.team_attnum AND k.confkey[1] = referenced.team_attnum)
UNION ALL
-- A foreign key to a table outside the Dense-Mem schemas cannot be checked for team scope.
SELECT t.table_name, k.conname::text COLLATE "default"
FROM team_tables AS t
JOIN pg_catalog.pg_constraint AS k ON k.conrelid = t.table_oid AND k.contype = 'f'
WHERE NOT EXISTS (SELECT 1 FROM dm_tables AS d WHERE d.table_oid = k.confrelid);

-- Global tables hold no team data, so they reference no team table.
CREATE TEMPORARY VIEW global_to_team_references AS
SELECT g.table_name, k.conname::text COLLATE "default" AS constraint_name
FROM dm_tables AS g
JOIN pg_catalog.pg_constraint AS k ON k.conrelid = g.table_oid AND k.contype = 'f'
JOIN team_tables AS referenced ON referenced.table_oid = k.confrelid
WHERE g.team_attnum IS NULL;

-- A partition's index attached to an index of its partitioned table has that
-- index's keys: it is checked (and documented) as the parent index.
CREATE TEMPORARY VIEW index_offenders AS
SELECT pg_catalog.format('%I.%I', n.nspname, ic.relname) COLLATE "default" AS index_name
FROM team_tables AS t
JOIN pg_catalog.pg_index AS i ON i.indrelid = t.table_oid
JOIN pg_catalog.pg_class AS ic ON ic.oid = i.indexrelid
JOIN pg_catalog.pg_namespace AS n ON n.oid = ic.relnamespace
WHERE i.indkey[0] <> t.team_attnum
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_inherits AS h
                  JOIN pg_catalog.pg_index AS parent ON parent.indexrelid = h.inhparent
                  WHERE h.inhrelid = i.indexrelid);

SELECT cmp_ok((SELECT count(*) FROM team_tables)::integer, '>=', 20,
              'the catalog query sees the team tables (guards against a vacuous pass)');
SELECT set_eq('SELECT table_name FROM dm_tables WHERE team_attnum IS NULL',
              'SELECT table_name FROM global_tables',
              'the tables without team_id are exactly the documented global tables');
SELECT is_empty('SELECT * FROM team_id_not_uuid_not_null', 'team_id is a NOT NULL uuid wherever it appears');
SELECT is_empty('SELECT * FROM primary_key_offenders',
                'every team table has a primary key whose first column is team_id');
SELECT is_empty('SELECT * FROM foreign_key_offenders',
                'every foreign key between team tables leads with team_id on both sides');
SELECT is_empty('SELECT * FROM global_to_team_references', 'no global table references a team table');
SELECT is_empty(
    $$SELECT index_name FROM index_offenders EXCEPT SELECT index_name FROM index_exceptions$$,
    'every index of a team table leads with team_id, except the documented ones');
SELECT is_empty(
    $$SELECT index_name FROM index_exceptions EXCEPT SELECT index_name FROM index_offenders$$,
    'every documented index exception still exists and still needs to be one');

-- The checks catch offenders (each probe looks only at its own objects).
CREATE TABLE dm_private.zz_pgtap_probe (
    item_id uuid NOT NULL,
    team_id uuid,
    profile_id uuid NOT NULL,
    CONSTRAINT zz_pgtap_probe_pkey PRIMARY KEY (item_id, team_id),
    CONSTRAINT zz_pgtap_probe_profile_fkey FOREIGN KEY (profile_id, team_id)
    REFERENCES dm_private.profiles (profile_id, team_id)
);
CREATE INDEX zz_pgtap_probe_profile_idx ON dm_private.zz_pgtap_probe (profile_id);
CREATE INDEX zz_pgtap_probe_expression_idx ON dm_private.zz_pgtap_probe ((team_id::text));
SELECT results_eq('SELECT * FROM primary_key_offenders WHERE table_name LIKE ''%zz\_pgtap%''',
                  $$VALUES ('dm_private.zz_pgtap_probe')$$,
                  'the primary key check catches a key that does not lead with team_id');
SELECT results_eq('SELECT * FROM foreign_key_offenders WHERE table_name LIKE ''%zz\_pgtap%''',
                  $$VALUES ('dm_private.zz_pgtap_probe', 'zz_pgtap_probe_profile_fkey')$$,
                  'the foreign key check catches a key that does not lead with team_id');
SELECT set_eq($$SELECT index_name FROM index_offenders WHERE index_name LIKE '%zz\_pgtap%'$$,
              $$VALUES ('dm_private.zz_pgtap_probe_pkey'), ('dm_private.zz_pgtap_probe_profile_idx'),
                       ('dm_private.zz_pgtap_probe_expression_idx')$$,
              'the index check catches indexes (and expression indexes) that do not lead with team_id');
CREATE TABLE dm_private.zz_pgtap_text_team (team_id text NOT NULL);
SELECT results_eq('SELECT * FROM team_id_not_uuid_not_null WHERE table_name LIKE ''%zz\_pgtap%''',
                  $$VALUES ('dm_private.zz_pgtap_text_team')$$,
                  'the column check catches a team_id that is not a uuid');
ALTER TABLE dm_private.ranking_profiles ADD COLUMN zz_pgtap_team uuid;
ALTER TABLE dm_private.ranking_profiles ADD CONSTRAINT zz_pgtap_team_fkey FOREIGN KEY (zz_pgtap_team)
REFERENCES dm_private.teams (team_id);
SELECT results_eq($$SELECT * FROM global_to_team_references WHERE constraint_name LIKE 'zz\_pgtap%'$$,
                  $$VALUES ('dm_private.ranking_profiles', 'zz_pgtap_team_fkey')$$,
                  'the check catches a global table referencing team data');
CREATE TABLE dm_private.zz_pgtap_global (setting text NOT NULL);
SELECT results_eq(
    $$SELECT table_name FROM dm_tables WHERE team_attnum IS NULL AND table_name LIKE '%zz\_pgtap%'
      EXCEPT SELECT table_name FROM global_tables$$,
    $$VALUES ('dm_private.zz_pgtap_global')$$,
    'a new table without team_id fails until it is documented as global');

SELECT * FROM finish();
ROLLBACK;
