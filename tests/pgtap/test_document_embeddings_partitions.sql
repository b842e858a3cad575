-- dm_private.document_embeddings is hash-partitioned by team_id (0063):
-- the parent keeps every constraint, policy and grant; partitions are
-- reachable only through it (row-level security forced, no policy, no
-- grant); a plan with the team as a constant reads one partition; a team's
-- partial HNSW index is built on the team's partition only.
BEGIN;
SELECT plan(26);

CREATE TEMPORARY VIEW embedding_partitions AS
SELECT c.oid AS part, c.relname::text AS part_name, c.relrowsecurity, c.relforcerowsecurity, c.relacl, c.relowner
FROM pg_catalog.pg_inherits AS i
JOIN pg_catalog.pg_class AS c ON c.oid = i.inhrelid
WHERE i.inhparent = 'dm_private.document_embeddings'::regclass;

-- ---------------------------------------------------------------- shape

SELECT is(
    (SELECT pt.partstrat::text || ':' || (SELECT a.attname::text FROM pg_catalog.pg_attribute AS a
                                           WHERE a.attrelid = pt.partrelid AND a.attnum = pt.partattrs[0])
     FROM pg_catalog.pg_partitioned_table AS pt
     WHERE pt.partrelid = 'dm_private.document_embeddings'::regclass),
    'h:team_id', 'document_embeddings is partitioned by hash of team_id'
);
SELECT is((SELECT pg_catalog.count(*)::integer FROM embedding_partitions), 16, 'sixteen partitions');
SELECT is(
    (SELECT pg_catalog.array_agg(pg_catalog.pg_get_expr(c.relpartbound, c.oid) ORDER BY c.relname)
     FROM pg_catalog.pg_class AS c JOIN embedding_partitions AS p ON p.part = c.oid),
    (SELECT pg_catalog.array_agg(pg_catalog.format('FOR VALUES WITH (modulus 16, remainder %s)', r) ORDER BY r)
     FROM pg_catalog.generate_series(0, 15) AS r),
    'the partitions cover every remainder of modulus 16, p00..p15 in order'
);
SELECT is(
    (SELECT pg_catalog.array_agg(con.conname::text || ' ' || pg_catalog.pg_get_constraintdef(con.oid) ORDER BY con.conname)
     FROM pg_catalog.pg_constraint AS con
     WHERE con.conrelid = 'dm_private.document_embeddings'::regclass AND con.contype IN ('p', 'f')),
    ARRAY[
        'document_embeddings_contract_fkey FOREIGN KEY (contract_id) REFERENCES dm_private.embedding_contracts(contract_id)',
        'document_embeddings_document_fkey FOREIGN KEY (team_id, document_id) REFERENCES dm_private.search_documents(team_id, document_id) ON DELETE CASCADE',
        'document_embeddings_pkey PRIMARY KEY (team_id, document_id, contract_id)'
    ],
    'the parent keeps its named primary key (team_id first) and foreign keys'
);
SELECT is(
    (SELECT pg_catalog.array_agg(con.conname::text ORDER BY con.conname)
     FROM pg_catalog.pg_constraint AS con
     WHERE con.conrelid = 'dm_private.document_embeddings'::regclass AND con.contype = 'n'),
    ARRAY['document_embeddings_contract_id_not_null', 'document_embeddings_created_at_not_null',
          'document_embeddings_document_id_not_null', 'document_embeddings_document_version_not_null',
          'document_embeddings_embedding_not_null', 'document_embeddings_source_version_not_null',
          'document_embeddings_team_id_not_null'],
    'every column stays NOT NULL under the constraint names 0002 gave them'
);
SELECT is(
    (SELECT pg_catalog.array_agg(p.polname::text ORDER BY p.polname)
     FROM pg_catalog.pg_policy AS p WHERE p.polrelid = 'dm_private.document_embeddings'::regclass),
    ARRAY['analysts and operators read only their granted team', 'the embedding worker writes vectors of every team',
          'the owner works inside the authenticated team', 'the service works inside the authenticated team'],
    'the parent keeps the policies of 0003 and 0015'
);
SELECT ok(
    (SELECT c.relrowsecurity AND c.relforcerowsecurity FROM pg_catalog.pg_class AS c
     WHERE c.oid = 'dm_private.document_embeddings'::regclass),
    'the parent has row-level security enabled and forced'
);
SELECT ok(
    has_table_privilege('densemem_app', 'dm_private.document_embeddings', 'SELECT,INSERT,UPDATE,DELETE')
    AND has_table_privilege('densemem_embedder', 'dm_private.document_embeddings', 'SELECT,INSERT,UPDATE,DELETE')
    AND has_table_privilege('densemem_searcher', 'dm_private.document_embeddings', 'SELECT')
    AND has_table_privilege('densemem_analyst', 'dm_private.document_embeddings', 'SELECT')
    AND has_table_privilege('densemem_operator', 'dm_private.document_embeddings', 'SELECT')
    AND NOT has_table_privilege('densemem_searcher', 'dm_private.document_embeddings', 'INSERT')
    AND NOT has_table_privilege('densemem_analyst', 'dm_private.document_embeddings', 'INSERT'),
    'the parent keeps the grants of 0003 and 0015'
);

-- ---------------------------------------------------------------- partitions reachable only through the parent

SELECT is_empty(
    $$SELECT part_name FROM embedding_partitions WHERE NOT (relrowsecurity AND relforcerowsecurity)$$,
    'every partition has row-level security enabled and forced'
);
SELECT is_empty(
    $$SELECT p.part_name FROM embedding_partitions AS p JOIN pg_catalog.pg_policy AS pol ON pol.polrelid = p.part$$,
    'no partition has a policy (nothing passes its row-level security)'
);
SELECT is_empty(
    $$SELECT part_name FROM embedding_partitions WHERE relacl IS NOT NULL OR relowner <> 'densemem_owner'::regrole$$,
    'every partition is owned by densemem_owner and has no grant'
);
SELECT is_empty(
    $$SELECT p.part_name, r.role, priv.name
      FROM embedding_partitions AS p
      CROSS JOIN (VALUES ('densemem_app'), ('densemem_analyst'), ('densemem_operator'), ('densemem_embedder'),
                         ('densemem_searcher'), ('densemem_worker')) AS r (role)
      CROSS JOIN (VALUES ('SELECT'), ('INSERT'), ('UPDATE'), ('DELETE'), ('TRUNCATE'), ('REFERENCES'), ('TRIGGER'))
          AS priv (name)
      WHERE has_table_privilege(r.role, p.part, priv.name)$$,
    'no Dense-Mem role has any privilege on any partition'
);

-- ---------------------------------------------------------------- fixtures: two teams in two partitions

INSERT INTO dm_private.teams (team_id, name) VALUES
('aaaaaaaa-0000-0000-0000-0000000000a1', 'partition team a'),
('bbbbbbbb-0000-0000-0000-0000000000b2', 'partition team b');
INSERT INTO dm_private.search_documents (team_id, document_id, subject_kind, subject_id, body, search_vector)
SELECT
    t.team_id,
    pg_catalog.gen_random_uuid(),
    'evidence',
    pg_catalog.gen_random_uuid(),
    'document ' || g,
    pg_catalog.to_tsvector('english', 'document ' || g)
FROM (VALUES ('aaaaaaaa-0000-0000-0000-0000000000a1'::uuid), ('bbbbbbbb-0000-0000-0000-0000000000b2'::uuid)) AS t (team_id)
CROSS JOIN pg_catalog.generate_series(1, 40) AS g;
INSERT INTO dm_private.document_embeddings (team_id, document_id, contract_id, document_version, source_version, embedding)
SELECT
    d.team_id,
    d.document_id,
    c.contract_id,
    d.document_version,
    d.source_version,
    (SELECT pg_catalog.array_agg(pg_catalog.sin(k * 1.0 + pg_catalog.hashtext(d.document_id::text) % 1000))::public.vector
     FROM pg_catalog.generate_series(1, 384) AS k)::public.halfvec
FROM dm_private.search_documents AS d
CROSS JOIN dm_private.embedding_contracts AS c
WHERE c.is_active AND d.team_id IN ('aaaaaaaa-0000-0000-0000-0000000000a1', 'bbbbbbbb-0000-0000-0000-0000000000b2');

SELECT isnt(
    dm_private.document_embeddings_partition('aaaaaaaa-0000-0000-0000-0000000000a1'),
    dm_private.document_embeddings_partition('bbbbbbbb-0000-0000-0000-0000000000b2'),
    'the two fixture teams hash to different partitions'
);
SELECT is(
    (SELECT pg_catalog.array_agg(DISTINCT e.tableoid::regclass::text)
     FROM dm_private.document_embeddings AS e WHERE e.team_id = 'aaaaaaaa-0000-0000-0000-0000000000a1'),
    ARRAY[dm_private.document_embeddings_partition('aaaaaaaa-0000-0000-0000-0000000000a1')::text],
    'document_embeddings_partition names the partition that holds the team''s rows'
);

-- ---------------------------------------------------------------- pruning

CREATE TEMPORARY TABLE plan_text (line text);
CREATE FUNCTION pg_temp.plan_of(statement text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE r record; t text := '';
BEGIN
    FOR r IN EXECUTE 'EXPLAIN (COSTS OFF) ' || statement LOOP t := t || r."QUERY PLAN" || E'\n'; END LOOP;
    RETURN t;
END $f$;
SELECT is(
    (SELECT pg_catalog.array_agg(m[1] ORDER BY m[1])
     FROM pg_catalog.regexp_matches(
         pg_temp.plan_of($$SELECT e.document_id FROM dm_private.document_embeddings AS e
                           WHERE e.team_id = 'aaaaaaaa-0000-0000-0000-0000000000a1'::uuid$$),
         '(document_embeddings_p\d\d)', 'g') AS m),
    (SELECT ARRAY[c.relname::text, c.relname::text] FROM pg_catalog.pg_class AS c
     WHERE c.oid = dm_private.document_embeddings_partition('aaaaaaaa-0000-0000-0000-0000000000a1')),
    'a plan with the team as a constant reads the team''s partition only'
);
PREPARE by_team (uuid) AS SELECT e.document_id FROM dm_private.document_embeddings AS e WHERE e.team_id = $1;
SET LOCAL plan_cache_mode = force_generic_plan;
SELECT matches(
    pg_temp.plan_of($$EXECUTE by_team ('aaaaaaaa-0000-0000-0000-0000000000a1')$$),
    'Subplans Removed: 15',
    'a generic plan with the team as a parameter prunes the other fifteen partitions at executor start-up'
);
RESET plan_cache_mode;

-- ---------------------------------------------------------------- a team's partial index on its own partition

SELECT is(
    (SELECT pg_catalog.count(*)::integer FROM dm.refresh_vector_indexes(30)),
    2, 'refresh_vector_indexes builds one partial index per team of 30+ vectors'
);
SELECT is(
    (SELECT pg_catalog.array_agg(i.indrelid::regclass::text ORDER BY tvi.team_id)
     FROM dm_private.team_vector_indexes AS tvi
     JOIN pg_catalog.pg_class AS ic ON ic.relname = tvi.index_name AND ic.relnamespace = 'dm_private'::regnamespace
     JOIN pg_catalog.pg_index AS i ON i.indexrelid = ic.oid
     WHERE tvi.team_id IN ('aaaaaaaa-0000-0000-0000-0000000000a1', 'bbbbbbbb-0000-0000-0000-0000000000b2')),
    ARRAY[dm_private.document_embeddings_partition('aaaaaaaa-0000-0000-0000-0000000000a1')::text,
          dm_private.document_embeddings_partition('bbbbbbbb-0000-0000-0000-0000000000b2')::text],
    'each team''s partial HNSW index is on the team''s own partition, not on the parent'
);
SELECT is_empty(
    $$SELECT i.indexrelid::regclass FROM pg_catalog.pg_index AS i
      WHERE i.indrelid = 'dm_private.document_embeddings'::regclass AND i.indpred IS NOT NULL$$,
    'no partial index on the parent (every plan of the parent would test it)'
);

-- ---------------------------------------------------------------- cross-team isolation through the parent

-- the partitions' names, for the roles that cannot call the helper
SELECT pg_catalog.set_config('dm_test.part_a', dm_private.document_embeddings_partition('aaaaaaaa-0000-0000-0000-0000000000a1')::text, true);
SELECT pg_catalog.set_config('dm_test.part_b', dm_private.document_embeddings_partition('bbbbbbbb-0000-0000-0000-0000000000b2')::text, true);
SET LOCAL ROLE densemem_app;
SELECT set_config('densemem.team_id', 'aaaaaaaa-0000-0000-0000-0000000000a1', true);
SELECT is(
    (SELECT pg_catalog.array_agg(DISTINCT e.team_id) FROM dm_private.document_embeddings AS e),
    ARRAY['aaaaaaaa-0000-0000-0000-0000000000a1'::uuid],
    'through the parent the service sees its team''s vectors only'
);
SELECT is(
    (SELECT pg_catalog.count(*)::integer FROM dm_private.document_embeddings AS e
     WHERE e.team_id = 'bbbbbbbb-0000-0000-0000-0000000000b2'),
    0, 'another team''s vectors are invisible even with its team_id (pruned to its partition) as a constant'
);
SELECT throws_ok(
    pg_catalog.format('SELECT pg_catalog.count(*) FROM %s',
                      pg_catalog.current_setting('dm_test.part_b')),
    '42501', NULL, 'the service cannot read a partition directly'
);
SELECT throws_ok(
    pg_catalog.format('DELETE FROM %s', pg_catalog.current_setting('dm_test.part_a')),
    '42501', NULL, 'the service cannot change a partition directly, even its own team''s'
);
SELECT throws_ok(
    $$INSERT INTO dm_private.document_embeddings (team_id, document_id, contract_id, document_version, source_version, embedding)
      SELECT 'bbbbbbbb-0000-0000-0000-0000000000b2', d.document_id, 1, 1, 1, ('[1' || pg_catalog.repeat(',0', 383) || ']')::public.halfvec
      FROM (VALUES (pg_catalog.gen_random_uuid())) AS d (document_id)$$,
    '42501', NULL, 'the service cannot insert a vector of another team through the parent'
);
RESET ROLE;
SET LOCAL ROLE densemem_analyst;
SELECT set_config('densemem.team_id', 'aaaaaaaa-0000-0000-0000-0000000000a1', true);
SELECT throws_ok(
    pg_catalog.format('SELECT pg_catalog.count(*) FROM %s', pg_catalog.current_setting('dm_test.part_a')),
    '42501', NULL, 'an analyst cannot read a partition directly'
);
RESET ROLE;
SET LOCAL ROLE densemem_embedder;
SELECT is(
    (SELECT pg_catalog.count(DISTINCT e.team_id)::integer FROM dm_private.document_embeddings AS e
     WHERE e.team_id IN ('aaaaaaaa-0000-0000-0000-0000000000a1', 'bbbbbbbb-0000-0000-0000-0000000000b2')),
    2, 'the embedder still reaches every team through the parent''s policy'
);
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
