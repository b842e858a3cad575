-- The write path as the service role under row-level security: input
-- validation and its SQLSTATEs, sources and revisions, search documents
-- (same transaction, versions, pending state, eligibility mirror), entities,
-- relationships and conflicts, hypotheses, feedback and usage snapshots.
BEGIN;
SELECT no_plan();

GRANT ALL ON ALL TABLES IN SCHEMA pg_temp TO densemem_app;
GRANT ALL ON ALL SEQUENCES IN SCHEMA pg_temp TO densemem_app;

CREATE TEMP TABLE fixture AS SELECT dm.ensure_team('write-team') AS team_id;
ALTER TABLE fixture ADD COLUMN profile_id uuid;
UPDATE fixture SET profile_id = dm.ensure_profile(team_id, 'writer');
GRANT ALL ON fixture TO densemem_app;

SELECT set_config('role', 'densemem_app', true),
       set_config('densemem.team_id', (SELECT team_id::text FROM fixture), true),
       set_config('densemem.profile_id', '', true);
SELECT throws_ok(
    $$SELECT dm.ingest_evidence(f.team_id, '{"text": "x", "source": {"external_id": "s", "kind": "k"}}') FROM fixture AS f$$,
    '28000', NULL, 'a write without an acting profile is 28000');
SELECT set_config('densemem.profile_id', (SELECT profile_id::text FROM fixture), true);

-- ---------------------------------------------------------------- validation

CREATE FUNCTION pg_temp.ingest_one(item jsonb) RETURNS uuid[] LANGUAGE sql AS $$
    SELECT dm.ingest_evidence(f.team_id, jsonb_build_array(item)) FROM fixture AS f
$$;
GRANT EXECUTE ON FUNCTION pg_temp.ingest_one(jsonb) TO densemem_app;

SELECT throws_ok($$SELECT pg_temp.ingest_one('{"text": "x", "source": {"external_id": "s", "kind": "k"}, "importance": 1.5}')$$,
                 '22023', 'importance must be in [0, 1], not 1.5', 'importance above 1 is 22023');
SELECT throws_ok($$SELECT pg_temp.ingest_one('{"text": "x", "source": {"external_id": "s", "kind": "k"}, "importance": -0.1}')$$,
                 '22023', NULL, 'negative importance is 22023');
SELECT throws_ok($$SELECT pg_temp.ingest_one('{"text": "x", "source": {"external_id": "s", "kind": "k"}, "importance": "high"}')$$,
                 '22023', NULL, 'non-numeric importance is 22023');
SELECT throws_ok($$SELECT pg_temp.ingest_one('{"text": "x", "source": {"external_id": "s", "kind": "k"}, "confidence": 2}')$$,
                 '22023', NULL, 'confidence above 1 is 22023');
SELECT throws_ok($$SELECT pg_temp.ingest_one('{"text": "x", "source": {"external_id": "s", "kind": "k"}, "memory_type": "dream"}')$$,
                 '22023', NULL, 'an unknown memory_type is 22023');
SELECT throws_ok($$SELECT pg_temp.ingest_one('{"text": "x", "source": {"external_id": "s", "kind": "k"}, "labels": ["pii"]}')$$,
                 '22023', NULL, 'labels that are not an object are 22023');
SELECT throws_ok($$SELECT pg_temp.ingest_one('{"txt": "x", "source": {"external_id": "s", "kind": "k"}}')$$,
                 '22023', NULL, 'an unknown field is 22023');
SELECT throws_ok($$SELECT pg_temp.ingest_one('{"source": {"external_id": "s", "kind": "k"}}')$$,
                 '22023', NULL, 'missing text is 22023');
SELECT throws_ok($$SELECT pg_temp.ingest_one('{"text": "   ", "source": {"external_id": "s", "kind": "k"}}')$$,
                 '22023', NULL, 'blank text is 22023');
SELECT throws_ok($$SELECT pg_temp.ingest_one('{"text": "x"}')$$, '22023', NULL, 'a missing source is 22023');
SELECT throws_ok($$SELECT pg_temp.ingest_one('{"text": "x", "source": {"external_id": "s"}}')$$,
                 '22023', NULL, 'a source without kind is 22023');
SELECT throws_ok($$SELECT pg_temp.ingest_one('{"text": "x", "source": {"external_id": "s", "kind": "k"}, "created_at": "last tuesday-ish"}')$$,
                 '22007', NULL, 'a malformed timestamp is 22007');
SELECT throws_ok($$SELECT pg_temp.ingest_one('{"text": "x", "source": {"external_id": "s", "kind": "k"}, "valid_from": "2024-02-01", "valid_to": "2024-01-01"}')$$,
                 '22023', NULL, 'valid_from after valid_to is 22023');
SELECT throws_ok($$SELECT pg_temp.ingest_one(jsonb_build_object('text', repeat('a', 65537), 'source', '{"external_id": "s", "kind": "k"}'::jsonb))$$,
                 'DM413', NULL, 'text over 65536 bytes is DM413');
SELECT throws_ok(
    $$SELECT dm.ingest_evidence(f.team_id, (SELECT jsonb_agg(jsonb_build_object('text', 'item ' || i, 'source', '{"external_id": "s", "kind": "k"}'::jsonb))
                                           FROM generate_series(1, 1001) AS i)) FROM fixture AS f$$,
    'DM413', 'a batch holds at most 1000 evidence items, not 1001', 'a batch of 1001 items is DM413');
SELECT throws_ok($$SELECT dm.ingest_evidence(f.team_id, '"just text"') FROM fixture AS f$$,
                 '22023', NULL, 'items that are neither object nor array are 22023');
SELECT is((SELECT count(*)::int FROM dm_private.evidence), 0, 'no rejected item left a row behind');
SELECT throws_ok(
    $$INSERT INTO dm_private.evidence (team_id, evidence_id, source_id, revision_id, owner_profile_id, text, content_hash, importance)
      SELECT f.team_id, gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), f.profile_id, 'x', sha256('x'), 2 FROM fixture AS f$$,
    '23514', NULL, 'the table itself refuses importance outside [0, 1] (23514)');

-- ---------------------------------------------------------------- ingest, sources, revisions

CREATE TEMP TABLE batch1 AS
SELECT dm.ingest_evidence(f.team_id, $j$[
  {"text": "Ada Lovelace wrote the first program.", "source": {"external_id": "doc:ada", "kind": "document", "title": "Ada notes", "source_group": "history"},
   "memory_type": "semantic", "importance": 0.9, "confidence": 0.8, "labels": {"pii": true, "reviewed": "yes", "internal": false},
   "created_at": "2024-03-01T10:00:00Z", "valid_from": "1843-01-01T00:00:00Z"},
  {"text": "The Analytical Engine was never finished.", "source": {"external_id": "doc:ada", "kind": "document"}},
  {"text": "Charles Babbage designed the engine.", "source": {"external_id": "doc:babbage", "kind": "document"}, "memory_type": "episodic"}
]$j$) AS ids
FROM fixture AS f;

SELECT is((SELECT cardinality(ids) FROM batch1), 3, 'a batch returns one id per item');
SELECT results_eq(
    $$SELECT e.text FROM batch1 AS b, unnest(b.ids) WITH ORDINALITY AS u (id, n)
      JOIN dm_private.evidence AS e ON e.evidence_id = u.id ORDER BY u.n$$,
    $$VALUES ('Ada Lovelace wrote the first program.'), ('The Analytical Engine was never finished.'), ('Charles Babbage designed the engine.')$$,
    'ids come back in input order');
SELECT results_eq(
    $$SELECT e.owner_profile_id = f.profile_id, e.content_hash = sha256(convert_to(e.text, 'UTF8')), e.source_group,
             e.memory_type::text, e.importance, e.confidence, e.created_at, e.state::text
      FROM dm_private.evidence AS e, batch1 AS b, fixture AS f WHERE e.evidence_id = b.ids[1]$$,
    $$VALUES (true, true, 'history', 'semantic', 0.9::real, 0.8::real, '2024-03-01T10:00:00Z'::timestamptz, 'active')$$,
    'the evidence row carries owner, hash and attributes');
SELECT results_eq(
    $$SELECT s.external_id, s.kind, s.title, r.revision_label, r.revision_number, r.is_current
      FROM dm_private.sources AS s JOIN dm_private.source_revisions AS r USING (team_id, source_id) ORDER BY s.external_id$$,
    $$VALUES ('doc:ada', 'document', 'Ada notes', '1', 1, true), ('doc:babbage', 'document', NULL, '1', 1, true)$$,
    'each new source gets one current revision; items of one source share it');
SELECT is((SELECT e.source_group FROM dm_private.evidence AS e, batch1 AS b WHERE e.evidence_id = b.ids[2]), 'history',
          'evidence inherits the source group of its source');

-- search documents: written in the same transaction, from the authoritative row
SELECT results_eq(
    $$SELECT d.body, d.search_vector = to_tsvector('english', e.text), d.document_version, d.source_version,
             d.search_state::text, d.pending_since IS NOT NULL, d.embed_attempts
      FROM dm_private.search_documents AS d JOIN dm_private.evidence AS e ON e.evidence_id = d.subject_id, batch1 AS b
      WHERE d.subject_kind = 'evidence' AND d.subject_id = b.ids[1]$$,
    $$VALUES ('Ada Lovelace wrote the first program.', true, 1, 1, 'pending', true, 0)$$,
    'the evidence document holds the text, its tsvector, version 1 and pending state');
SELECT results_eq(
    $$SELECT d.is_recallable, d.owner_profile_id = e.owner_profile_id, d.memory_type = e.memory_type, d.source_group,
             d.source_created_at = e.created_at, d.sequence_number = e.sequence_number, d.valid_from = e.valid_from,
             d.valid_to IS NULL, d.known_from = e.known_from, d.known_to IS NULL, d.importance, d.confidence, d.policy_labels
      FROM dm_private.search_documents AS d JOIN dm_private.evidence AS e ON e.evidence_id = d.subject_id, batch1 AS b
      WHERE d.subject_id = b.ids[1]$$,
    $$VALUES (true, true, true, 'history', true, true, true, true, true, true, 0.9::real, 0.8::real, ARRAY['pii'])$$,
    'the eligibility mirror matches the evidence row; policy_labels holds only keys whose value is true');
SELECT is((SELECT count(*)::int FROM dm_private.search_documents WHERE subject_kind = 'evidence'), 3,
          'one document per evidence row');

-- a worker has embedded the documents (simulated)
INSERT INTO dm_private.document_embeddings (team_id, document_id, contract_id, document_version, source_version, embedding)
SELECT d.team_id, d.document_id, c.contract_id, d.document_version, d.source_version,
       array_fill(0.1::real, ARRAY[384])::public.vector::public.halfvec
FROM dm_private.search_documents AS d, dm_private.embedding_contracts AS c WHERE c.is_active;
UPDATE dm_private.search_documents SET search_state = 'ready', pending_since = NULL;

-- a new revision label: old evidence leaves recall, new evidence is current
CREATE TEMP TABLE batch2 AS
SELECT dm.ingest_evidence(f.team_id,
    '{"text": "Ada Lovelace wrote notes on the engine (revised).", "source": {"external_id": "doc:ada", "kind": "document", "revision": "2024-edition"}}') AS ids
FROM fixture AS f;
SELECT results_eq(
    $$SELECT r.revision_label, r.revision_number, r.is_current FROM dm_private.source_revisions AS r
      JOIN dm_private.sources AS s USING (team_id, source_id) WHERE s.external_id = 'doc:ada' ORDER BY r.revision_number$$,
    $$VALUES ('1', 1, false), ('2024-edition', 2, true)$$,
    'a new revision label becomes the one current revision');
SELECT results_eq(
    $$SELECT d.is_recallable, d.search_state::text, d.document_version FROM dm_private.search_documents AS d, batch1 AS b
      WHERE d.subject_id IN (b.ids[1], b.ids[2]) ORDER BY d.sequence_number$$,
    $$VALUES (false, 'ready', 1), (false, 'ready', 1)$$,
    'old-revision documents become non-recallable in the same transaction; their text and vectors are unchanged');
SELECT results_eq(
    $$SELECT d.is_recallable, d.source_version, d.search_state::text FROM dm_private.search_documents AS d, batch2 AS b
      WHERE d.subject_id = b.ids[1]$$,
    $$VALUES (true, 2, 'pending')$$,
    'the new revision''s evidence is recallable with source_version 2');
SELECT is((SELECT d.is_recallable FROM dm_private.search_documents AS d, batch1 AS b WHERE d.subject_id = b.ids[3]), true,
          'another source is untouched by the revision change');
CREATE TEMP TABLE late AS
SELECT (pg_temp.ingest_one('{"text": "A late addition to the first edition.", "source": {"external_id": "doc:ada", "kind": "document", "revision": "1"}}'))[1] AS id;
SELECT is((SELECT d.is_recallable FROM dm_private.search_documents AS d, late WHERE d.subject_id = late.id), false,
          'evidence added to an older revision is stored but not recallable');

-- evidence moves update the mirror, not the text version
SELECT lives_ok($$SELECT dm.move_evidence(f.team_id, b.ids[3], 'quarantine', 'check') FROM fixture AS f, batch1 AS b$$, 'quarantine');
SELECT results_eq(
    $$SELECT d.is_recallable, d.document_version, d.search_state::text FROM dm_private.search_documents AS d, batch1 AS b
      WHERE d.subject_id = b.ids[3]$$,
    $$VALUES (false, 1, 'ready')$$, 'quarantined evidence leaves recall; its vector stays valid');
SELECT lives_ok($$SELECT dm.move_evidence(f.team_id, b.ids[3], 'release') FROM fixture AS f, batch1 AS b$$, 'release');
SELECT is((SELECT d.is_recallable FROM dm_private.search_documents AS d, batch1 AS b WHERE d.subject_id = b.ids[3]), true,
          'released evidence is recallable again');

-- ---------------------------------------------------------------- entities

CREATE TEMP TABLE ents AS
SELECT dm.upsert_entities(f.team_id,
    '[{"name": " Ada   Lovelace ", "aliases": ["Countess of Lovelace", "ADA"], "kind": "Person"},
      {"name": "Analytical Engine", "kind": "machine"},
      {"name": "ada lovelace", "aliases": ["Augusta Ada King"], "kind": "person"}]') AS ids
FROM fixture AS f;
SELECT is((SELECT ids[1] = ids[3] FROM ents), true, 'the same normalized name and kind is one entity');
SELECT results_eq(
    $$SELECT en.canonical_name, en.normalized_name, en.kind FROM dm_private.entities AS en, ents WHERE en.entity_id = ents.ids[1]$$,
    $$VALUES ('Ada Lovelace', 'ada lovelace', 'person')$$, 'canonical name trimmed and single-spaced; kind normalized');
SELECT results_eq(
    $$SELECT n.name, n.normalized_name, n.is_canonical FROM dm_private.entity_names AS n, ents
      WHERE n.entity_id = ents.ids[1] ORDER BY n.normalized_name$$,
    $$VALUES ('ADA', 'ada', false), ('Ada Lovelace', 'ada lovelace', true), ('Augusta Ada King', 'augusta ada king', false),
             ('Countess of Lovelace', 'countess of lovelace', false)$$,
    'aliases are added and normalized, never replaced');
SELECT results_eq(
    $$SELECT d.body, d.document_version, d.search_state::text FROM dm_private.search_documents AS d, ents WHERE d.subject_id = ents.ids[1]$$,
    $$VALUES ('Ada Lovelace (person). Also known as: ADA, Augusta Ada King, Countess of Lovelace', 1, 'pending')$$,
    'the entity document holds canonical name, kind and aliases');
SELECT throws_ok($$SELECT dm.upsert_entities(f.team_id, '[{"name": ""}]') FROM fixture AS f$$, '22023', NULL, 'a blank name is 22023');
SELECT throws_ok($$SELECT dm.upsert_entities(f.team_id, '[{"name": "X", "aliases": "Y"}]') FROM fixture AS f$$, '22023', NULL,
                 'aliases that are not an array are 22023');
SELECT throws_ok($$SELECT dm.upsert_entities(f.team_id, '[{"name": "X", "nickname": "Y"}]') FROM fixture AS f$$, '22023', NULL,
                 'an unknown entity field is 22023');

-- the entity document is embedded; a new alias makes it pending with a new version, the old vector stale
INSERT INTO dm_private.document_embeddings (team_id, document_id, contract_id, document_version, source_version, embedding)
SELECT d.team_id, d.document_id, c.contract_id, d.document_version, d.source_version,
       array_fill(0.1::real, ARRAY[384])::public.vector::public.halfvec
FROM dm_private.search_documents AS d, dm_private.embedding_contracts AS c, ents
WHERE c.is_active AND d.subject_id = ents.ids[1];
UPDATE dm_private.search_documents AS d SET search_state = 'ready', pending_since = NULL FROM ents WHERE d.subject_id = ents.ids[1];
SELECT lives_ok($$SELECT dm.upsert_entities(f.team_id, '[{"name": "Ada Lovelace", "kind": "person"}]') FROM fixture AS f$$,
                'an upsert that adds nothing');
SELECT results_eq(
    $$SELECT d.document_version, d.search_state::text FROM dm_private.search_documents AS d, ents WHERE d.subject_id = ents.ids[1]$$,
    $$VALUES (1, 'ready')$$, 'an unchanged body keeps its version and vector');
SELECT lives_ok($$SELECT dm.upsert_entities(f.team_id, '[{"name": "Ada Lovelace", "kind": "person", "aliases": ["Enchantress of Numbers"]}]') FROM fixture AS f$$,
                'an upsert that adds an alias');
SELECT results_eq(
    $$SELECT d.document_version, d.search_state::text, d.pending_since IS NOT NULL, d.body LIKE '%Enchantress of Numbers%',
             d.search_vector = to_tsvector('english', d.body), v.document_version < d.document_version
      FROM dm_private.search_documents AS d
      JOIN dm_private.document_embeddings AS v ON v.document_id = d.document_id, ents
      WHERE d.subject_id = ents.ids[1]$$,
    $$VALUES (2, 'pending', true, true, true, true)$$,
    'a changed body bumps document_version, becomes pending, and leaves the old vector version-mismatched');

-- ---------------------------------------------------------------- relationships and conflicts

CREATE TEMP TABLE rels (name text PRIMARY KEY, id uuid);
INSERT INTO rels
SELECT 'designed', dm.assert_relationship(f.team_id, jsonb_build_object(
    'subject_entity_id', ents.ids[1], 'predicate', 'designed', 'object_entity_id', ents.ids[2], 'semantic_group', 'g-design',
    'valid_from', '1842-01-01T00:00:00Z',
    'evidence_ids', jsonb_build_array(jsonb_build_object('evidence_id', b.ids[3], 'span_start', 0, 'span_end', 15))))
FROM fixture AS f, ents, batch1 AS b;
SELECT lives_ok($$SELECT dm.record_verification(f.team_id, r.id, 'fact', 'SECRET-RATIONALE-TEXT') FROM fixture AS f, rels AS r WHERE r.name = 'designed'$$,
                'verified with a rationale');
SELECT results_eq(
    $$SELECT d.body FROM dm_private.search_documents AS d, rels AS r WHERE r.name = 'designed' AND d.subject_id = r.id$$,
    $$VALUES ('Ada Lovelace designed Analytical Engine [predicate designed; polarity +; valid from 1842-01-01T00:00:00Z; group g-design]')$$,
    'the relationship document holds endpoint names, predicate, polarity, valid time and group');
SELECT is((SELECT count(*)::int FROM dm_private.search_documents AS d
           WHERE d.subject_kind = 'relationship' AND (d.body LIKE '%SECRET-RATIONALE-TEXT%' OR d.body LIKE '%Charles Babbage%')),
          0, 'no relationship document holds evidence text or verifier rationale');
SELECT results_eq(
    $$SELECT re.span_start, re.span_end, re.accepted FROM dm_private.relationship_evidence AS re, rels AS r
      WHERE r.name = 'designed' AND re.relationship_id = r.id$$,
    $$VALUES (0, 15, true)$$, 'the evidence link keeps its span');

INSERT INTO rels
SELECT 'designed-other', dm.assert_relationship(f.team_id, jsonb_build_object(
    'subject_entity_id', ents.ids[1], 'predicate', 'designed', 'object_value', 'the Difference Engine'))
FROM fixture AS f, ents;
INSERT INTO rels
SELECT 'designed-negated', dm.assert_relationship(f.team_id, jsonb_build_object(
    'subject_entity_id', ents.ids[1], 'predicate', 'designed', 'object_entity_id', ents.ids[2], 'polarity', '-'))
FROM fixture AS f, ents;
INSERT INTO rels
SELECT 'designed-again', dm.assert_relationship(f.team_id, jsonb_build_object(
    'subject_entity_id', ents.ids[1], 'predicate', 'designed', 'object_entity_id', ents.ids[2], 'semantic_group', 'g-design'))
FROM fixture AS f, ents;
INSERT INTO rels
SELECT 'designed-earlier', dm.assert_relationship(f.team_id, jsonb_build_object(
    'subject_entity_id', ents.ids[1], 'predicate', 'designed', 'object_value', 'a flying machine',
    'valid_from', '1828-01-01T00:00:00Z', 'valid_to', '1829-01-01T00:00:00Z'))
FROM fixture AS f, ents;

SELECT set_eq(
    $$SELECT least(a.name, b.name), greatest(a.name, b.name), c.kind::text FROM dm_private.conflicts AS c
      JOIN rels AS a ON a.id = c.relationship_id JOIN rels AS b ON b.id = c.conflicting_relationship_id$$,
    $$SELECT least(x, y), greatest(x, y), k FROM (VALUES
        ('designed', 'designed-other', 'object_mismatch'),
        ('designed', 'designed-negated', 'polarity_mismatch'),
        ('designed-other', 'designed-negated', 'object_mismatch'),
        ('designed-other', 'designed-again', 'object_mismatch'),
        ('designed-negated', 'designed-again', 'polarity_mismatch'),
        ('designed-earlier', 'designed-other', 'object_mismatch'),
        ('designed-earlier', 'designed-negated', 'object_mismatch'),
        ('designed-earlier', 'designed-again', 'object_mismatch')) AS v (x, y, k)$$,
    'conflicts: a different object or the opposite polarity over overlapping time; agreement and disjoint time are no conflict');

SELECT throws_ok($$SELECT dm.assert_relationship(f.team_id, jsonb_build_object('subject_entity_id', 'not-a-uuid', 'predicate', 'p', 'object_value', 'v')) FROM fixture AS f$$,
                 '22P02', NULL, 'a malformed uuid is 22P02');
SELECT throws_ok($$SELECT dm.assert_relationship(f.team_id, jsonb_build_object('subject_entity_id', ents.ids[1], 'predicate', 'Works On', 'object_value', 'v')) FROM fixture AS f, ents$$,
                 '22023', NULL, 'a predicate that is not lower_snake_case is 22023');
SELECT throws_ok($$SELECT dm.assert_relationship(f.team_id, jsonb_build_object('subject_entity_id', ents.ids[1], 'predicate', 'p', 'object_value', 'v', 'object_entity_id', ents.ids[2])) FROM fixture AS f, ents$$,
                 '22023', NULL, 'both object forms at once is 22023');
SELECT throws_ok($$SELECT dm.assert_relationship(f.team_id, jsonb_build_object('subject_entity_id', ents.ids[1], 'predicate', 'p', 'object_value', 'v', 'polarity', '?')) FROM fixture AS f, ents$$,
                 '22023', NULL, 'a bad polarity is 22023');
SELECT throws_ok($$SELECT dm.assert_relationship(f.team_id, jsonb_build_object('subject_entity_id', gen_random_uuid(), 'predicate', 'p', 'object_value', 'v')) FROM fixture AS f$$,
                 '23503', 'subject_entity_id is not an entity of this team', 'an unknown subject is 23503');
SELECT throws_ok($$SELECT dm.assert_relationship(f.team_id, jsonb_build_object('subject_entity_id', ents.ids[1], 'predicate', 'p', 'object_value', 'v', 'evidence_ids', jsonb_build_array(gen_random_uuid()))) FROM fixture AS f, ents$$,
                 '23503', NULL, 'unknown evidence is 23503');
SELECT throws_ok($$SELECT dm.assert_relationship(f.team_id, jsonb_build_object('subject_entity_id', ents.ids[1], 'predicate', 'p', 'object_value', 'v',
                     'evidence_ids', jsonb_build_array(jsonb_build_object('evidence_id', b.ids[3], 'span_start', 10, 'span_end', 500)))) FROM fixture AS f, ents, batch1 AS b$$,
                 '23514', NULL, 'a span past the end of the text is 23514');
SELECT throws_ok($$SELECT dm.assert_relationship(f.team_id, jsonb_build_object('subject_entity_id', ents.ids[1], 'predicate', 'p', 'object_value', 'v',
                     'evidence_ids', jsonb_build_array(jsonb_build_object('evidence_id', b.ids[3], 'span_start', 5, 'span_end', 5)))) FROM fixture AS f, ents, batch1 AS b$$,
                 '23514', NULL, 'an empty span is 23514');
SELECT throws_ok($$SELECT dm.assert_relationship(f.team_id, jsonb_build_object('subject_entity_id', ents.ids[1], 'predicate', 'p', 'object_value', 'v', 'valid_from', 'soon')) FROM fixture AS f, ents$$,
                 '22007', NULL, 'a malformed valid_from is 22007');

-- ---------------------------------------------------------------- hypotheses

CREATE TEMP TABLE hyp AS
SELECT dm.add_hypothesis(f.team_id, '{"statement": "Ada may have debugged the first program.", "source_external_id": "doc:ada"}') AS id
FROM fixture AS f;
SELECT results_eq(
    $$SELECT h.statement, h.status::text, h.owner_profile_id = f.profile_id, r.revision_label
      FROM dm_private.hypotheses AS h JOIN dm_private.source_revisions AS r USING (team_id, source_id, revision_id), fixture AS f, hyp
      WHERE h.hypothesis_id = hyp.id$$,
    $$VALUES ('Ada may have debugged the first program.', 'proposed', true, '2024-edition')$$,
    'a hypothesis is proposed, owned by the actor and linked to its source''s current revision');
SELECT throws_ok($$SELECT dm.add_hypothesis(f.team_id, '{"statement": " "}') FROM fixture AS f$$, '22023', NULL, 'a blank statement is 22023');
SELECT throws_ok($$SELECT dm.add_hypothesis(f.team_id, '{"statement": "x", "source_external_id": "doc:nowhere"}') FROM fixture AS f$$,
                 '23503', NULL, 'an unknown source is 23503');

-- ---------------------------------------------------------------- feedback and usage snapshots

SELECT lives_ok($$SELECT dm.record_feedback(f.team_id, jsonb_build_object('query', 'who wrote the first program', 'evidence_id', b.ids[3], 'judgment', 'used', 'rank', 1))
                  FROM fixture AS f, batch1 AS b$$, 'used');
SELECT lives_ok($$SELECT dm.record_feedback(f.team_id, jsonb_build_object('query', 'engine', 'evidence_id', b.ids[3], 'judgment', 'not_used', 'rank', 4))
                  FROM fixture AS f, batch1 AS b$$, 'not_used');
SELECT lives_ok($$SELECT dm.record_feedback(f.team_id, jsonb_build_object('query', 'engine', 'evidence_id', b.ids[3], 'judgment', 'relevant'))
                  FROM fixture AS f, batch1 AS b$$, 'relevant');
SELECT results_eq(
    $$SELECT u.retrieved_count, u.used_count FROM dm_private.usage_counters AS u, batch1 AS b WHERE u.evidence_id = b.ids[3]$$,
    $$VALUES (2::bigint, 1::bigint)$$, 'used counts as retrieved and used; not_used as retrieved; relevant changes no counter');
SELECT is((SELECT count(*)::int FROM dm_private.recall_feedback), 3, 'every judgment is recorded');
CREATE TEMP TABLE snap AS SELECT dm.take_usage_snapshot(f.team_id) AS id FROM fixture AS f;
SELECT lives_ok($$SELECT dm.record_feedback(f.team_id, jsonb_build_object('query', 'engine', 'evidence_id', b.ids[3], 'judgment', 'used'))
                  FROM fixture AS f, batch1 AS b$$, 'more feedback after the snapshot');
SELECT results_eq(
    $$SELECT c.retrieved_count, c.used_count FROM dm_private.usage_snapshot_counts AS c, snap, batch1 AS b
      WHERE c.usage_snapshot_id = snap.id AND c.evidence_id = b.ids[3]$$,
    $$VALUES (2::bigint, 1::bigint)$$, 'a snapshot is frozen: later feedback does not change it');
SELECT throws_ok($$SELECT dm.record_feedback(f.team_id, jsonb_build_object('query', 'q', 'evidence_id', b.ids[3], 'judgment', 'meh')) FROM fixture AS f, batch1 AS b$$,
                 '22023', NULL, 'an unknown judgment is 22023');
SELECT throws_ok($$SELECT dm.record_feedback(f.team_id, jsonb_build_object('query', 'q', 'evidence_id', b.ids[3], 'judgment', 'used', 'rank', 0)) FROM fixture AS f, batch1 AS b$$,
                 '22023', NULL, 'rank 0 is 22023');
SELECT throws_ok($$SELECT dm.record_feedback(f.team_id, jsonb_build_object('query', 'q', 'evidence_id', gen_random_uuid(), 'judgment', 'used')) FROM fixture AS f$$,
                 '23503', NULL, 'feedback on unknown evidence is 23503');
SELECT throws_ok($$SELECT dm.record_feedback(f.team_id, '{"query": "q", "evidence_id": "12345", "judgment": "used"}') FROM fixture AS f$$,
                 '22P02', NULL, 'a malformed evidence uuid is 22P02');

SELECT * FROM finish();
ROLLBACK;
