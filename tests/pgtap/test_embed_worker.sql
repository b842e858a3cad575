-- The embedding worker's SQL: privileges, claims, stale-vector rejection,
-- failures and retries, contract activation, freshness and the triggers.
BEGIN;
SELECT plan(38);

-- ---------------------------------------------------------------- privileges

SELECT is(
    (
        SELECT rolbypassrls FROM pg_catalog.pg_roles
        WHERE rolname = 'densemem_embedder'
    ), false,
    'the embedder role does not bypass row-level security (it has named policies instead)'
);
SELECT is(
    (
        SELECT rolcanlogin FROM pg_catalog.pg_roles
        WHERE rolname = 'densemem_worker'
    ), false,
    'densemem_worker is a group role, granted to the worker login'
);
SELECT ok(
    NOT has_table_privilege('densemem_worker', 'dm_private.search_documents', 'SELECT,UPDATE,INSERT,DELETE'),
    'the worker role has no privilege on search documents'
);
SELECT ok(
    NOT has_table_privilege('densemem_worker', 'dm_private.document_embeddings', 'SELECT,UPDATE,INSERT,DELETE'),
    'the worker role has no privilege on vectors'
);
SELECT ok(
    NOT has_column_privilege('densemem_embedder', 'dm_private.search_documents', 'body', 'UPDATE')
    AND NOT has_column_privilege('densemem_embedder', 'dm_private.search_documents', 'document_version', 'UPDATE')
    AND NOT has_column_privilege('densemem_embedder', 'dm_private.search_documents', 'is_recallable', 'SELECT'),
    'the embedder cannot change text or versions and cannot read the eligibility mirror'
);
SELECT ok(
    NOT has_schema_privilege('densemem_embedder', 'dm', 'CREATE')
    AND NOT has_schema_privilege('densemem_embedder', 'dm_private', 'CREATE'),
    'the embedder keeps no CREATE on the schemas after the function files ran'
);
SELECT is(
    (
        SELECT pg_catalog.array_agg(p.proname::text ORDER BY p.proname)
        FROM pg_catalog.pg_proc AS p
        WHERE p.proowner = 'densemem_embedder'::regrole AND NOT (
            p.prosecdef
            AND 'search_path=""' = ANY(p.proconfig)
        )
    ),
    NULL,
    'every function the embedder owns is security-definer with an empty search_path'
);
SELECT ok(
    has_function_privilege('densemem_worker', 'dm_private.claim_embedding_batch(integer, integer, double precision)', 'EXECUTE')
    AND NOT has_function_privilege('densemem_app', 'dm_private.claim_embedding_batch(integer, integer, double precision)', 'EXECUTE')
    AND NOT has_function_privilege('densemem_analyst', 'dm_private.claim_embedding_batch(integer, integer, double precision)', 'EXECUTE'),
    'only the worker role may claim'
);
SELECT ok(
    NOT has_function_privilege('densemem_app', 'dm.activate_embedding_contract(text, text, integer, text, integer)', 'EXECUTE')
    AND NOT has_function_privilege('densemem_worker', 'dm.activate_embedding_contract(text, text, integer, text, integer)', 'EXECUTE')
    AND NOT has_function_privilege('densemem_operator', 'dm.activate_embedding_contract(text, text, integer, text, integer)', 'EXECUTE'),
    'no Dense-Mem role may activate a contract: administrators only'
);

-- ---------------------------------------------------------------- fixtures

INSERT INTO dm_private.teams (team_id, name) VALUES
('aaaaaaaa-0000-0000-0000-000000000001', 'embed team a'),
('bbbbbbbb-0000-0000-0000-000000000002', 'embed team b');
INSERT INTO dm_private.profiles (team_id, profile_id, name) VALUES
('aaaaaaaa-0000-0000-0000-000000000001', 'aaaaaaaa-0000-0000-0000-0000000000f1', 'writer a');
INSERT INTO dm_private.search_documents (team_id, document_id, subject_kind, subject_id, body, search_vector, pending_since)
SELECT
    t.team_id,
    pg_catalog.gen_random_uuid(),
    'evidence',
    pg_catalog.gen_random_uuid(),
    'document ' || g,
    pg_catalog.to_tsvector('english', 'document ' || g),
    pg_catalog.now() - pg_catalog.make_interval(secs => 100 - g)
FROM (VALUES ('aaaaaaaa-0000-0000-0000-000000000001'::uuid), ('bbbbbbbb-0000-0000-0000-000000000002'::uuid)) AS t (team_id),
    pg_catalog.generate_series(1, 3) AS g;

CREATE TEMPORARY TABLE unit (v public.halfvec);
INSERT INTO unit VALUES (('[1' || pg_catalog.repeat(',0', 383) || ']')::public.halfvec);
GRANT SELECT ON unit TO densemem_worker;
CREATE TEMPORARY TABLE claimed (
    team_id uuid, document_id uuid, document_version integer, source_version integer, body text,
    embed_attempts integer, claim_token timestamptz
);
GRANT SELECT, INSERT, DELETE ON claimed TO densemem_worker;

-- ---------------------------------------------------------------- claims

SET LOCAL ROLE densemem_worker;
SELECT throws_ok(
    'SELECT * FROM dm_private.claim_embedding_batch(999, 10, 60)', '55000', NULL,
    'claiming for a contract that is not active is refused'
);
SELECT throws_ok(
    $$SELECT * FROM dm_private.claim_embedding_batch((SELECT contract_id FROM dm.active_embedding_contract()), 0, 60)$$,
    '22023', NULL, 'batch size is bounded'
);
INSERT INTO claimed
SELECT * FROM dm_private.claim_embedding_batch((SELECT contract_id FROM dm.active_embedding_contract()), 4, 60);
SELECT is((SELECT pg_catalog.count(*) FROM claimed), 4::bigint, 'a claim takes at most batch_size documents');
SELECT is(
    (SELECT pg_catalog.array_agg(body ORDER BY body) FROM claimed),
    ARRAY['document 1', 'document 1', 'document 2', 'document 2'],
    'across teams, oldest pending first'
);
SELECT is(
    (SELECT pg_catalog.count(*) FROM dm_private.claim_embedding_batch(
        (SELECT contract_id FROM dm.active_embedding_contract()), 10, 60
    )),
    2::bigint, 'a second claim gets only the unclaimed documents'
);
SELECT is(
    (SELECT pg_catalog.count(*) FROM dm_private.claim_embedding_batch(
        (SELECT contract_id FROM dm.active_embedding_contract()), 10, 60
    )),
    0::bigint, 'nothing is claimed twice while leases last'
);
RESET ROLE;

-- A document edited while its batch is embedded: the version changes, the
-- trigger keeps it pending and drops the claim.
UPDATE dm_private.search_documents AS d
SET body = 'document 1 edited', document_version = d.document_version + 1
WHERE (d.team_id, d.document_id) = (SELECT
    c.team_id,
    c.document_id
FROM claimed AS c
ORDER BY c.team_id, c.body LIMIT 1);
SELECT is(
    (
        SELECT d.claimed_until FROM dm_private.search_documents AS d
        WHERE d.body = 'document 1 edited'
    ), NULL,
    'a new document version drops the claim'
);

SET LOCAL ROLE densemem_worker;
SELECT throws_ok(
    $$SELECT * FROM dm_private.store_document_embeddings(
        (SELECT contract_id FROM dm.active_embedding_contract()),
        ARRAY[(SELECT team_id FROM claimed LIMIT 1)], ARRAY[(SELECT document_id FROM claimed LIMIT 1)],
        ARRAY[1], ARRAY[1], ARRAY[(SELECT claim_token FROM claimed LIMIT 1)],
        ARRAY['[1,0,0]'::public.halfvec])$$,
    '22023', NULL, 'a vector with the wrong dimensions is refused'
);
SELECT throws_ok(
    $$SELECT * FROM dm_private.store_document_embeddings(
        (SELECT contract_id FROM dm.active_embedding_contract()),
        ARRAY[(SELECT team_id FROM claimed LIMIT 1)], ARRAY[(SELECT document_id FROM claimed LIMIT 1)],
        ARRAY[1], ARRAY[1], ARRAY[(SELECT claim_token FROM claimed LIMIT 1)],
        ARRAY[('[2' || pg_catalog.repeat(',0', 383) || ']')::public.halfvec])$$,
    '22023', NULL, 'a vector that is not unit length is refused under an l2 contract'
);
CREATE TEMPORARY TABLE store_result ON COMMIT DROP AS
SELECT s.*
FROM dm_private.store_document_embeddings(
    (SELECT contract_id FROM dm.active_embedding_contract()),
    (SELECT pg_catalog.array_agg(c.team_id ORDER BY c.team_id, c.body) FROM claimed AS c),
    (SELECT pg_catalog.array_agg(c.document_id ORDER BY c.team_id, c.body) FROM claimed AS c),
    (SELECT pg_catalog.array_agg(c.document_version ORDER BY c.team_id, c.body) FROM claimed AS c),
    (SELECT pg_catalog.array_agg(c.source_version ORDER BY c.team_id, c.body) FROM claimed AS c),
    (SELECT pg_catalog.array_agg(c.claim_token ORDER BY c.team_id, c.body) FROM claimed AS c),
    (SELECT pg_catalog.array_fill(u.v, ARRAY[4]) FROM unit AS u)
) AS s;
RESET ROLE;
SELECT is(
    (SELECT pg_catalog.count(*) FILTER (WHERE stored) FROM store_result), 3::bigint,
    'three current vectors land'
);
SELECT is(
    (
        SELECT d.search_state::text FROM dm_private.search_documents AS d
        WHERE d.body = 'document 1 edited'
    ),
    'pending', 'the stale vector is rejected and the edited document stays pending'
);
SELECT is(
    (
        SELECT pg_catalog.count(*) FROM dm_private.document_embeddings AS e
        JOIN dm_private.search_documents AS d USING (team_id, document_id)
        WHERE d.body = 'document 1 edited'
    ),
    0::bigint, 'no vector exists for the edited document'
);
SELECT is(
    (
        SELECT pg_catalog.count(*) FROM dm_private.document_embeddings AS e
        JOIN dm_private.search_documents AS d USING (team_id, document_id)
        WHERE
            d.search_state = 'ready' AND e.document_version = d.document_version
            AND e.source_version = d.source_version
            AND e.contract_id = (SELECT contract_id FROM dm.active_embedding_contract())
    ),
    3::bigint, 'each stored vector records its contract and the versions it was made from'
);

-- ---------------------------------------------------------------- failures

DELETE FROM claimed;
SET LOCAL ROLE densemem_worker;
INSERT INTO claimed
SELECT * FROM dm_private.claim_embedding_batch((SELECT contract_id FROM dm.active_embedding_contract()), 1, 60);
SELECT is(
    (
        SELECT f.search_state FROM claimed AS c,
            dm_private.fail_embedding_claims(
                ARRAY[c.team_id], ARRAY[c.document_id], ARRAY[c.claim_token],
                'provider said no', 2, 0
            ) AS f
    ),
    'pending', 'a first failure keeps the document pending'
);
DELETE FROM claimed;
INSERT INTO claimed
SELECT * FROM dm_private.claim_embedding_batch((SELECT contract_id FROM dm.active_embedding_contract()), 1, 60);
SELECT is((SELECT c.body FROM claimed AS c), 'document 1 edited', 'with no retry delay it is claimable again at once');
SELECT is(
    (
        SELECT f.search_state || '/' || f.embed_attempts FROM claimed AS c,
            dm_private.fail_embedding_claims(
                ARRAY[c.team_id], ARRAY[c.document_id], ARRAY[c.claim_token],
                'provider said no again', 2, 0
            ) AS f
    ),
    'failed/2', 'after max_attempts the document is failed'
);
SELECT is(
    (SELECT pg_catalog.count(*) FROM dm_private.fail_embedding_claims(
        (SELECT pg_catalog.array_agg(team_id) FROM claimed), (SELECT pg_catalog.array_agg(document_id) FROM claimed),
        (SELECT pg_catalog.array_agg(claim_token) FROM claimed), 'late', 2, 0
    )),
    0::bigint, 'a claim token that is no longer current changes nothing'
);
RESET ROLE;
SELECT is(
    (
        SELECT d.last_error FROM dm_private.search_documents AS d
        WHERE d.body = 'document 1 edited'
    ),
    'provider said no again', 'the failed document keeps its error'
);

-- ---------------------------------------------------------------- freshness

SELECT set_config('densemem.team_id', 'aaaaaaaa-0000-0000-0000-000000000001', true);
SELECT set_config('densemem.profile_id', 'aaaaaaaa-0000-0000-0000-0000000000f1', true);
SET LOCAL ROLE densemem_app;
SELECT is(
    (
        SELECT f.pending_document_count || '/' || f.failed_document_count
        FROM dm.search_freshness('aaaaaaaa-0000-0000-0000-000000000001') AS f
    ),
    (SELECT
        pg_catalog.count(*) FILTER (WHERE d.search_state = 'pending') || '/'
        || pg_catalog.count(*) FILTER (WHERE d.search_state = 'failed')
    FROM dm_private.search_documents AS d
    WHERE d.team_id = 'aaaaaaaa-0000-0000-0000-000000000001'),
    'freshness counts the team''s pending and failed documents'
);
SELECT throws_ok(
    $$SELECT * FROM dm.search_freshness('bbbbbbbb-0000-0000-0000-000000000002')$$, '42501', NULL,
    'freshness of another team is refused'
);
SELECT is(
    (SELECT dm.retry_failed_documents('aaaaaaaa-0000-0000-0000-000000000001')), 1::bigint,
    'retry makes the failed document pending again'
);
SELECT is(
    (SELECT f.failed_document_count FROM dm.search_freshness('aaaaaaaa-0000-0000-0000-000000000001') AS f),
    0::bigint, 'no failed document is left after the retry'
);
RESET ROLE;
SELECT is(
    (
        SELECT d.embed_attempts FROM dm_private.search_documents AS d
        WHERE d.body = 'document 1 edited'
    ), 0,
    'a retried document starts over with no attempts'
);

-- ---------------------------------------------------------------- contracts

SELECT ok(
    (SELECT f.oldest_pending_age_seconds >= 0 FROM dm.search_freshness_overall() AS f),
    'overall freshness reports the age of the oldest pending document'
);
SELECT isnt(
    dm.activate_embedding_contract('hashing-test', 'densemem-hashing-test-v1', 384, 'l2', 1),
    (
        SELECT contract_id FROM dm_private.embedding_contracts
        WHERE provider = 'local'
    ),
    'activating a new contract creates it'
);
SELECT is(
    (SELECT provider FROM dm.active_embedding_contract()), 'hashing-test', 'exactly the new contract is active'
);
SELECT is(
    (
        SELECT pg_catalog.count(*) FROM dm_private.search_documents
        WHERE search_state <> 'pending'
    ), 0::bigint,
    'a contract change marks every document of every team pending'
);
SELECT is(
    dm.activate_embedding_contract('local', 'sentence-transformers/all-MiniLM-L6-v2', 384, 'l2', 1),
    (
        SELECT contract_id FROM dm_private.embedding_contracts
        WHERE provider = 'local'
    ),
    'switching back reuses the existing contract row'
);
SELECT is(
    (
        SELECT pg_catalog.count(*) FROM dm_private.search_documents
        WHERE search_state = 'ready'
    ), 3::bigint,
    'switching back makes documents with version-matched vectors of that contract ready at once'
);

SELECT * FROM finish();
ROLLBACK;
