-- 0063: dm_private.document_embeddings becomes PARTITION BY HASH (team_id),
-- 16 partitions, and each team's partial HNSW index lives on the team's own
-- partition.
--
-- Why: every plan of a statement on the table opened every index of the
-- table and tested every partial predicate. With search-index profile v3
-- (0062) the 1M / 1,000-team bench has 133 partial HNSW indexes (one per
-- team of 1,000+ vectors): about 3.6 us per index per plan, so a team's
-- first recall on a connection paid about 2 ms of planning, and every
-- embedding insert opened all 133 indexes. With the team as a constant, a
-- plan now prunes to one partition at plan time and sees only that
-- partition's indexes (about 133 / 16); an insert opens only the indexes of
-- the partition its row goes to. Statements with the team as a parameter
-- (generic plans) prune at executor start-up. docs/RECALL.md (vector
-- branch, session 10) has the measurements and the choice of 16.
--
-- Everything of the table is kept on the parent: columns, defaults, the
-- primary key (team_id first), the foreign keys, the comment, the grants of
-- 0003 and 0015 and the row-level security policies (0003's loop, 0015's
-- embedder policy). Partitions are reached only through the parent: they
-- have row-level security enabled and forced with no policy and no grant, so
-- a role that named a partition directly would see and change nothing.
--
-- The registered partial indexes (dm_private.team_vector_indexes) are built
-- again, with the same names and definitions (pg_get_indexdef of the old
-- index), on the partition that holds their team, so the registry and the
-- walk functions stay valid and no team falls back to the exact path.
-- dm.refresh_vector_indexes builds later ones on the team's partition too.
-- Time on the 1M bench: docs/RECALL.md.

-- The registered partial indexes as they are now, to be built again on the
-- partitions (read as the migrating superuser: the registry forces RLS).
CREATE TEMPORARY TABLE document_embeddings_0063_indexes (
    team_id uuid NOT NULL,
    index_name name NOT NULL,
    definition text NOT NULL
) ON COMMIT DROP;
DO $capture$
DECLARE
    previous constant text := pg_catalog.current_setting('search_path');
    setting text;
BEGIN
    -- An empty search_path makes pg_get_indexdef qualify every name.
    setting := pg_catalog.set_config('search_path', '', true);
    INSERT INTO pg_temp.document_embeddings_0063_indexes (team_id, index_name, definition)
    SELECT
        tvi.team_id,
        tvi.index_name,
        pg_catalog.pg_get_indexdef(i.indexrelid)
    FROM dm_private.team_vector_indexes AS tvi
    INNER JOIN pg_catalog.pg_class AS ic
        ON ic.relname = tvi.index_name
        AND ic.relnamespace = 'dm_private'::regnamespace
    INNER JOIN pg_catalog.pg_index AS i ON i.indexrelid = ic.oid
    WHERE i.indrelid = 'dm_private.document_embeddings'::regclass;
    setting := pg_catalog.set_config('search_path', previous, true);
END
$capture$;

SET LOCAL ROLE densemem_owner;

ALTER TABLE dm_private.document_embeddings RENAME TO document_embeddings_0062;
ALTER TABLE dm_private.document_embeddings_0062
RENAME CONSTRAINT document_embeddings_pkey TO document_embeddings_0062_pkey;

-- The not-null constraints are named as 0002's were (the old table still
-- holds those names here, so PostgreSQL would otherwise add a suffix).
CREATE TABLE dm_private.document_embeddings (
    team_id uuid CONSTRAINT document_embeddings_team_id_not_null NOT NULL,
    document_id uuid CONSTRAINT document_embeddings_document_id_not_null NOT NULL,
    contract_id integer CONSTRAINT document_embeddings_contract_id_not_null NOT NULL,
    document_version integer CONSTRAINT document_embeddings_document_version_not_null NOT NULL,
    source_version integer CONSTRAINT document_embeddings_source_version_not_null NOT NULL,
    embedding public.halfvec CONSTRAINT document_embeddings_embedding_not_null NOT NULL,
    created_at timestamptz CONSTRAINT document_embeddings_created_at_not_null NOT NULL DEFAULT pg_catalog.now()
) PARTITION BY HASH (team_id);
COMMENT ON TABLE dm_private.document_embeddings IS
'Vectors by contract (half precision). A vector is usable only while its document_version and source_version equal the document''s and its contract is active.';

DO $partitions$
DECLARE
    modulus constant integer := 16;
    part text;
    r integer;
BEGIN
    FOR r IN 0..modulus - 1 LOOP
        part := pg_catalog.format('document_embeddings_p%s', pg_catalog.lpad(r::text, 2, '0'));
        EXECUTE pg_catalog.format(
            'CREATE TABLE dm_private.%I PARTITION OF dm_private.document_embeddings '
            'FOR VALUES WITH (MODULUS %s, REMAINDER %s)', part, modulus, r);
        EXECUTE pg_catalog.format('ALTER TABLE dm_private.%I ENABLE ROW LEVEL SECURITY', part);
        EXECUTE pg_catalog.format('ALTER TABLE dm_private.%I FORCE ROW LEVEL SECURITY', part);
        EXECUTE pg_catalog.format(
            'COMMENT ON TABLE dm_private.%I IS %L', part,
            pg_catalog.format('Hash partition %s of %s of dm_private.document_embeddings (by team_id). Reached only '
                              'through the parent: no grant, row-level security forced with no policy.', r, modulus));
    END LOOP;
END
$partitions$;

-- The rows, as the migrating superuser (the owner's policies would show it
-- no team); physical order kept within each team.
RESET ROLE;
INSERT INTO dm_private.document_embeddings
(team_id, document_id, contract_id, document_version, source_version, embedding, created_at)
SELECT
    e.team_id,
    e.document_id,
    e.contract_id,
    e.document_version,
    e.source_version,
    e.embedding,
    e.created_at
FROM dm_private.document_embeddings_0062 AS e;

SET LOCAL ROLE densemem_owner;
DROP TABLE dm_private.document_embeddings_0062;

ALTER TABLE dm_private.document_embeddings
ADD CONSTRAINT document_embeddings_pkey PRIMARY KEY (team_id, document_id, contract_id);
ALTER TABLE dm_private.document_embeddings
ADD CONSTRAINT document_embeddings_document_fkey FOREIGN KEY (team_id, document_id)
REFERENCES dm_private.search_documents (team_id, document_id) ON DELETE CASCADE;
ALTER TABLE dm_private.document_embeddings
ADD CONSTRAINT document_embeddings_contract_fkey FOREIGN KEY (contract_id)
REFERENCES dm_private.embedding_contracts (contract_id);

-- Row-level security and policies of 0003 and 0015, on the parent.
ALTER TABLE dm_private.document_embeddings ENABLE ROW LEVEL SECURITY;
ALTER TABLE dm_private.document_embeddings FORCE ROW LEVEL SECURITY;
CREATE POLICY "the service works inside the authenticated team" ON dm_private.document_embeddings
AS PERMISSIVE FOR ALL TO densemem_app
USING (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid))
WITH CHECK (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid));
CREATE POLICY "analysts and operators read only their granted team" ON dm_private.document_embeddings
AS PERMISSIVE FOR SELECT TO densemem_analyst, densemem_operator
USING (
    team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid)
    AND (
        pg_catalog.pg_has_role(session_user, 'densemem_app', 'MEMBER')
        OR EXISTS (
            SELECT 1 FROM dm_private.team_role_grants AS g
            WHERE
                g.team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid)
                AND g.role_name = session_user
        )
    )
);
CREATE POLICY "the owner works inside the authenticated team" ON dm_private.document_embeddings
AS PERMISSIVE FOR ALL TO densemem_owner
USING (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid))
WITH CHECK (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid));
CREATE POLICY "the embedding worker writes vectors of every team"
ON dm_private.document_embeddings
AS PERMISSIVE FOR ALL TO densemem_embedder USING (true) WITH CHECK (true);

-- Grants of 0003 and 0015, on the parent only.
GRANT SELECT, INSERT, UPDATE, DELETE ON dm_private.document_embeddings TO densemem_app;
GRANT SELECT ON dm_private.document_embeddings TO densemem_analyst, densemem_operator, densemem_searcher;
GRANT SELECT, INSERT, UPDATE, DELETE ON dm_private.document_embeddings TO densemem_embedder;

-- The registered partial indexes, each on its team's partition, same name
-- and definition.
-- (As the migrating superuser, like the index builds of dm.refresh_vector_indexes.)
RESET ROLE;
DO $indexes$
DECLARE
    ix record;
    part regclass;
    built text;
BEGIN
    FOR ix IN SELECT t.team_id, t.index_name, t.definition
              FROM pg_temp.document_embeddings_0063_indexes AS t ORDER BY t.index_name LOOP
        SELECT inh.inhrelid::regclass INTO STRICT part
        FROM pg_catalog.pg_inherits AS inh
        INNER JOIN pg_catalog.pg_class AS c ON c.oid = inh.inhrelid
        CROSS JOIN LATERAL pg_catalog.regexp_match(pg_catalog.pg_get_expr(c.relpartbound, c.oid),
                                                   'modulus (\d+), remainder (\d+)') AS m (b)
        WHERE inh.inhparent = 'dm_private.document_embeddings'::regclass
          AND pg_catalog.satisfies_hash_partition('dm_private.document_embeddings'::regclass,
                                                  m.b[1]::integer, m.b[2]::integer, ix.team_id);
        built := pg_catalog.replace(ix.definition, ' ON dm_private.document_embeddings USING ',
                                    pg_catalog.format(' ON %s USING ', part));
        IF built = ix.definition THEN
            RAISE EXCEPTION 'unexpected index definition: %', ix.definition;
        END IF;
        EXECUTE built;
    END LOOP;
END
$indexes$;

ANALYZE dm_private.document_embeddings;
