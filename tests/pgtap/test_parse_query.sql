BEGIN;
SELECT plan(30);

-- ---------------------------------------------------------------- definitions

SELECT has_function('dm', 'parse_query', ARRAY['text', 'uuid', 'timestamp with time zone'], 'dm.parse_query exists');
SELECT has_function('dm_private', 'parse_query_text', ARRAY['text', 'timestamp with time zone'],
    'the pure part exists');
SELECT volatility_is('dm_private', 'parse_query_text', ARRAY['text', 'timestamp with time zone'], 'immutable',
    'the pure parse is IMMUTABLE');
SELECT volatility_is('dm_private', 'parse_anchors', ARRAY['text'], 'immutable', 'anchor parsing is IMMUTABLE');
SELECT volatility_is('dm_private', 'parse_time', ARRAY['text', 'timestamp with time zone'], 'immutable',
    'time parsing is IMMUTABLE');
SELECT volatility_is('dm', 'parse_query', ARRAY['text', 'uuid', 'timestamp with time zone'], 'stable',
    'dm.parse_query reads team tables: STABLE');
SELECT is_definer('dm_private', 'match_query_entities', ARRAY['uuid', 'text[]', 'text[]'],
    'the entity lookup is a definer function');
SELECT function_owner_is('dm_private', 'match_query_entities', ARRAY['uuid', 'text[]', 'text[]'],
    'densemem_searcher', 'owned by the searcher role, not the owner');
SELECT is_empty($$
    SELECT p.oid::regprocedure::text FROM pg_catalog.pg_proc AS p
    WHERE p.proname IN ('parse_query', 'parse_query_text', 'parse_anchors', 'parse_time', 'parse_prepare_text',
                        'query_tokens', 'query_tokens_cased', 'query_name_keys', 'query_ngrams',
                        'match_query_entities', 'match_entity_trigrams', 'predicate_hints')
      AND p.pronamespace IN ('dm'::regnamespace, 'dm_private'::regnamespace)
      AND (p.proconfig IS NULL OR NOT 'search_path=""' = ANY (p.proconfig)
           OR pg_catalog.obj_description(p.oid, 'pg_proc') IS NULL
           OR EXISTS (SELECT 1 FROM pg_catalog.aclexplode(p.proacl) AS a WHERE a.grantee = 0)
           OR p.proacl IS NULL)
$$, 'every parse function has search_path = '''', a comment and no PUBLIC execute');

-- ---------------------------------------------------------------- the synonyms tables

SELECT col_is_pk('dm_private', 'predicate_synonyms', ARRAY['team_id', 'phrase', 'predicate'],
    'team_id leads the synonyms key');
SELECT ok((SELECT c.relrowsecurity AND c.relforcerowsecurity FROM pg_catalog.pg_class AS c
           WHERE c.oid = 'dm_private.predicate_synonyms'::regclass), 'team synonyms: RLS enabled and forced');
SELECT policies_are('dm_private', 'predicate_synonyms', ARRAY[
    'the service works inside the authenticated team',
    'analysts and operators read only their granted team',
    'the owner works inside the authenticated team'], 'team synonyms carry the three team policies');
SELECT ok((SELECT c.relrowsecurity AND c.relforcerowsecurity FROM pg_catalog.pg_class AS c
           WHERE c.oid = 'dm_private.predicate_synonym_defaults'::regclass), 'defaults: RLS enabled and forced');
SELECT ok((SELECT pg_catalog.count(*) >= 50 FROM dm_private.predicate_synonym_defaults), 'defaults are seeded');
SELECT throws_ok($$INSERT INTO dm_private.predicate_synonym_defaults (phrase, predicate) VALUES ('Works  On', 'x')$$,
    '23514', NULL, 'phrases are stored normalized');

-- ---------------------------------------------------------------- the pure parse

SELECT is(dm_private.parse_query_text('Did ABC-123 touch src/app/main.py in abc1234f?', '2024-03-15T12:00:00Z') -> 'anchors',
    '[{"kind": "path", "value": "src/app/main.py", "required": true},
      {"kind": "issue_key", "value": "ABC-123", "required": true},
      {"kind": "hash", "value": "abc1234f", "required": true}]'::jsonb,
    'anchors in grammar order');
SELECT is(dm_private.parse_query_text('the facade of a decade: deadbeef, cafe, added, accede', now()) -> 'anchors',
    '[]'::jsonb, 'hex-looking words are not hashes');
SELECT is(dm_private.parse_query_text('What did Melanie do last weekend?', '2024-03-15T12:00:00Z') #> '{time,window}',
    '{"from": "2024-03-09T00:00:00+00:00", "to": "2024-03-11T00:00:00+00:00"}'::jsonb, 'last weekend');
SELECT is(dm_private.parse_query_text('When did Caroline go to the support group?', now()) #> '{time,temporal_question}',
    'true'::jsonb, 'a temporal question');
-- The word after "when", "what" or "how" may be past the end of the query:
-- the flag is still a boolean, never null.
SELECT is(dm_private.parse_query_text('Really? when', now()) #> '{time,temporal_question}',
    'true'::jsonb, 'a clause-opening "when" as the last word');
SELECT is(dm_private.parse_query_text('tell me when', now()) #> '{time,temporal_question}',
    'false'::jsonb, 'a trailing "when" that opens no clause is not a temporal question, and not null');
SELECT is(dm_private.parse_query_text('the year was what', now()) #> '{time,temporal_question}',
    'false'::jsonb, 'a trailing "what" leaves the flag false, not null');
SELECT is(dm_private.parse_query_text('What is her current job?', now()) #>> '{time,intent}', 'latest', 'recency intent');
SELECT is(dm_private.parse_query_text('Where did he originally live?', now()) #>> '{time,intent}', 'earliest',
    'oldest intent');
SELECT is(dm_private.parse_query_text('what did "the big move" mean', now()) -> 'phrases', '["the big move"]'::jsonb,
    'quoted phrase');

SET LOCAL TimeZone = 'Pacific/Auckland';
SELECT is(dm_private.parse_query_text('since May 2023, before 2024, on 8 May 2023', '2024-03-15T12:00:00Z') #> '{time,window}',
    '{"from": "2023-05-08T00:00:00+00:00", "to": "2023-05-09T00:00:00+00:00"}'::jsonb,
    'windows are UTC whatever the session time zone');
RESET TimeZone;

-- ---------------------------------------------------------------- team lookups

INSERT INTO dm_private.teams (team_id, name) VALUES
('aaaaaaaa-0000-0000-0000-000000000001', 'parse-a'), ('bbbbbbbb-0000-0000-0000-000000000002', 'parse-b');
INSERT INTO dm_private.profiles (team_id, profile_id, name) VALUES
('bbbbbbbb-0000-0000-0000-000000000002', 'bbbbbbbb-0000-0000-0000-0000000000b1', 'writer');
SET LOCAL densemem.team_id = 'bbbbbbbb-0000-0000-0000-000000000002';
SET LOCAL densemem.profile_id = 'bbbbbbbb-0000-0000-0000-0000000000b1';
SET LOCAL ROLE densemem_app;
SELECT is(pg_catalog.cardinality(dm.upsert_entities('bbbbbbbb-0000-0000-0000-000000000002', '[{"name": "Zephyr Quill"}]')),
    1, 'team B stores an entity');
SELECT is(
    dm.parse_query('Who is Zephyr Quill?', 'bbbbbbbb-0000-0000-0000-000000000002') #>> '{entities,0,name}',
    'Zephyr Quill', 'team B finds its entity');
SET LOCAL densemem.team_id = 'aaaaaaaa-0000-0000-0000-000000000001';
SELECT is(dm.parse_query('Who is Zephyr Quill?', 'aaaaaaaa-0000-0000-0000-000000000001') -> 'entities', '[]'::jsonb,
    'team A never sees team B''s entity');
SELECT throws_ok($$SELECT dm.parse_query('Who is Zephyr Quill?', 'bbbbbbbb-0000-0000-0000-000000000002')$$, '42501',
    NULL, 'another team''s id is refused');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
