-- 0002: the memory schema.
--
-- team_id leads every primary key, foreign key and index of team data, so
-- that every row, join and index range stays inside one team: a user who
-- outgrows one machine can distribute these tables by team_id with Citus.
-- Global configuration (embedding contracts, default ranking profiles) is
-- keyed by its own id and holds no team data.

SET LOCAL ROLE densemem_owner;

-- ---------------------------------------------------------------- enums

CREATE TYPE dm_private.profile_state AS ENUM ('active', 'disabled');
COMMENT ON TYPE dm_private.profile_state IS
'active: the profile may write and its evidence is recallable; disabled: its evidence and relationships leave default recall (kept, still traceable by ID).';

CREATE TYPE dm_private.memory_type AS ENUM ('conversation', 'workflow', 'episodic', 'semantic', 'organizational');
COMMENT ON TYPE dm_private.memory_type IS
'conversation: chat turns (recency half-life 2 days by default); workflow: task and process state (14 days); episodic: events that happened (90 days); semantic: durable facts, policies, docs (no decay); organizational: who-owns-what knowledge (no decay).';

CREATE TYPE dm_private.evidence_state AS ENUM (
    'active', 'quarantined', 'supersession_pending', 'superseded', 'retracted', 'erased'
);
COMMENT ON TYPE dm_private.evidence_state IS
'active: recallable; quarantined: held out of recall pending review; supersession_pending: a replacement is being verified, held out of recall; superseded: replaced by newer evidence; retracted: withdrawn by its author; erased: text removed under the erasure path, only a tombstone remains.';

CREATE TYPE dm_private.relationship_tier AS ENUM ('observation', 'candidate', 'validated_claim', 'fact');
COMMENT ON TYPE dm_private.relationship_tier IS
'observation: seen once, unverified; candidate: asserted and awaiting verification (never eligible for discovery); validated_claim: a verifier accepted it with evidence; fact: verified and authoritative.';

CREATE TYPE dm_private.relationship_status AS ENUM (
    'pending_evidence', 'active', 'retracted', 'superseded', 'rejected', 'quarantined', 'disputed', 'review_held'
);
COMMENT ON TYPE dm_private.relationship_status IS
'pending_evidence: asserted, not yet verified; active: eligible when its tier is validated_claim or fact; retracted: withdrawn by its author; superseded: replaced by a correction; rejected: a verifier refused it; quarantined: held out pending investigation; disputed: contradicted and under review; review_held: held for human review.';

CREATE TYPE dm_private.relationship_polarity AS ENUM ('+', '-');
COMMENT ON TYPE dm_private.relationship_polarity IS
'+: the relationship holds; -: the relationship is asserted not to hold.';

CREATE TYPE dm_private.verification_decision AS ENUM ('validated_claim', 'fact', 'rejected');
COMMENT ON TYPE dm_private.verification_decision IS
'validated_claim: accept as a validated claim (status active); fact: accept as a fact (status active); rejected: refuse (status rejected).';

CREATE TYPE dm_private.subject_kind AS ENUM ('evidence', 'relationship', 'entity');
COMMENT ON TYPE dm_private.subject_kind IS
'evidence: a stored evidence row; relationship: a relationship between entities; entity: a named entity.';

CREATE TYPE dm_private.search_state AS ENUM ('pending', 'ready', 'failed');
COMMENT ON TYPE dm_private.search_state IS
'pending: text is searchable, the vector for the current document version and contract is not written yet; ready: a matching vector exists; failed: embedding failed after the allowed attempts (the error is kept).';

CREATE TYPE dm_private.hypothesis_status AS ENUM ('proposed', 'supported', 'refuted', 'retired');
COMMENT ON TYPE dm_private.hypothesis_status IS
'proposed: new; supported: evidence points for it; refuted: evidence points against it; retired: no longer considered (hidden from recall).';

CREATE TYPE dm_private.conflict_kind AS ENUM ('object_mismatch', 'polarity_mismatch');
COMMENT ON TYPE dm_private.conflict_kind IS
'object_mismatch: same subject and predicate, different object; polarity_mismatch: same subject, predicate and object, opposite polarity.';

CREATE TYPE dm_private.feedback_judgment AS ENUM ('used', 'not_used', 'relevant', 'irrelevant');
COMMENT ON TYPE dm_private.feedback_judgment IS
'used: the caller used the result in its answer (frequency goes up); not_used: retrieved but unused (frequency goes down); relevant / irrelevant: an explicit relevance judgment for evaluation.';

-- ---------------------------------------------------------------- teams, profiles, keys

CREATE TABLE dm_private.teams (
    team_id uuid NOT NULL,
    name text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT teams_pkey PRIMARY KEY (team_id),
    CONSTRAINT teams_name_key UNIQUE (name),
    CONSTRAINT teams_name_not_blank CHECK (pg_catalog.btrim(name) <> '' AND pg_catalog.length(name) <= 200)
);
COMMENT ON TABLE dm_private.teams IS 'Tenants. Every other team row carries team_id and is invisible outside its team.';

CREATE TABLE dm_private.profiles (
    team_id uuid NOT NULL,
    profile_id uuid NOT NULL,
    name text NOT NULL,
    state dm_private.profile_state NOT NULL DEFAULT 'active',
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT profiles_pkey PRIMARY KEY (team_id, profile_id),
    CONSTRAINT profiles_team_name_key UNIQUE (team_id, name),
    CONSTRAINT profiles_team_fkey FOREIGN KEY (team_id) REFERENCES dm_private.teams (team_id),
    CONSTRAINT profiles_name_not_blank CHECK (pg_catalog.btrim(name) <> '' AND pg_catalog.length(name) <= 200)
);
COMMENT ON TABLE dm_private.profiles IS 'Authors inside a team (people, agents, integrations). Evidence of a disabled profile leaves default recall.';

CREATE TABLE dm_private.api_keys (
    team_id uuid NOT NULL,
    api_key_id uuid NOT NULL,
    profile_id uuid NOT NULL,
    key_hash bytea NOT NULL,
    scopes text[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    revoked_at timestamptz,
    CONSTRAINT api_keys_pkey PRIMARY KEY (team_id, api_key_id),
    CONSTRAINT api_keys_profile_fkey FOREIGN KEY (team_id, profile_id) REFERENCES dm_private.profiles (team_id, profile_id),
    CONSTRAINT api_keys_hash_is_sha256 CHECK (pg_catalog.length(key_hash) = 32)
);
COMMENT ON TABLE dm_private.api_keys IS
'API keys, stored as SHA-256 of the secret. A key reads dm_<team hex>_<key hex>_<secret>, so authentication is a primary-key lookup inside the team.';

-- Login roles allowed to act for a team when they call dm functions directly
-- (analysts from psql). The service role is trusted to set the team itself.
CREATE TABLE dm_private.team_role_grants (
    team_id uuid NOT NULL,
    role_name name NOT NULL,
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT team_role_grants_pkey PRIMARY KEY (team_id, role_name),
    CONSTRAINT team_role_grants_team_fkey FOREIGN KEY (team_id) REFERENCES dm_private.teams (team_id)
);
COMMENT ON TABLE dm_private.team_role_grants IS
'Which database login roles (analysts, operators) may set densemem.team_id to this team. Members of densemem_app (the service) are trusted to set any team after authenticating an API key.';

-- ---------------------------------------------------------------- sources and evidence

CREATE TABLE dm_private.sources (
    team_id uuid NOT NULL,
    source_id uuid NOT NULL,
    external_id text NOT NULL,
    kind text NOT NULL,
    title text,
    uri text,
    source_group text,
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT sources_pkey PRIMARY KEY (team_id, source_id),
    CONSTRAINT sources_team_external_id_key UNIQUE (team_id, external_id),
    CONSTRAINT sources_team_fkey FOREIGN KEY (team_id) REFERENCES dm_private.teams (team_id),
    CONSTRAINT sources_external_id_not_blank CHECK (pg_catalog.btrim(external_id) <> '' AND pg_catalog.length(external_id) <= 1000),
    CONSTRAINT sources_kind_not_blank CHECK (pg_catalog.btrim(kind) <> '' AND pg_catalog.length(kind) <= 100)
);
COMMENT ON TABLE dm_private.sources IS
'Where evidence came from (a conversation, a document, a ticket). external_id is the caller''s stable handle; source_id is ours.';

CREATE TABLE dm_private.source_revisions (
    team_id uuid NOT NULL,
    source_id uuid NOT NULL,
    revision_id uuid NOT NULL,
    revision_label text NOT NULL,
    revision_number integer NOT NULL,
    is_current boolean NOT NULL,
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT source_revisions_pkey PRIMARY KEY (team_id, source_id, revision_id),
    CONSTRAINT source_revisions_label_key UNIQUE (team_id, source_id, revision_label),
    CONSTRAINT source_revisions_number_key UNIQUE (team_id, source_id, revision_number),
    CONSTRAINT source_revisions_source_fkey FOREIGN KEY (team_id, source_id) REFERENCES dm_private.sources (team_id, source_id)
);
-- At most one current revision per source; the write path keeps at least one.
CREATE UNIQUE INDEX source_revisions_one_current_idx
ON dm_private.source_revisions (team_id, source_id) WHERE is_current;
COMMENT ON TABLE dm_private.source_revisions IS
'Versions of a source. Exactly one is current; evidence of older revisions leaves default recall.';

CREATE TABLE dm_private.evidence (
    team_id uuid NOT NULL,
    evidence_id uuid NOT NULL,
    source_id uuid NOT NULL,
    revision_id uuid NOT NULL,
    owner_profile_id uuid NOT NULL,
    text text,
    content_hash bytea NOT NULL,
    source_group text,
    memory_type dm_private.memory_type NOT NULL DEFAULT 'semantic',
    importance real NOT NULL DEFAULT 0.5,
    confidence real NOT NULL DEFAULT 1.0,
    labels jsonb NOT NULL DEFAULT '{}',
    valid_from timestamptz,
    valid_to timestamptz,
    known_from timestamptz NOT NULL DEFAULT pg_catalog.now(),
    known_to timestamptz,
    created_at timestamptz,
    sequence_number bigint GENERATED ALWAYS AS IDENTITY,
    state dm_private.evidence_state NOT NULL DEFAULT 'active',
    updated_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT evidence_pkey PRIMARY KEY (team_id, evidence_id),
    CONSTRAINT evidence_revision_fkey FOREIGN KEY (team_id, source_id, revision_id)
    REFERENCES dm_private.source_revisions (team_id, source_id, revision_id),
    CONSTRAINT evidence_owner_fkey FOREIGN KEY (team_id, owner_profile_id) REFERENCES dm_private.profiles (team_id, profile_id),
    CONSTRAINT evidence_importance_range CHECK (importance BETWEEN 0 AND 1),
    CONSTRAINT evidence_confidence_range CHECK (confidence BETWEEN 0 AND 1),
    CONSTRAINT evidence_labels_is_object CHECK (pg_catalog.jsonb_typeof(labels) = 'object'),
    CONSTRAINT evidence_valid_range CHECK (valid_to IS NULL OR valid_from IS NULL OR valid_from < valid_to),
    CONSTRAINT evidence_known_range CHECK (known_to IS NULL OR known_from < known_to),
    CONSTRAINT evidence_text_present_unless_erased CHECK ((state = 'erased') = (text IS NULL)),
    CONSTRAINT evidence_text_size CHECK (text IS NULL OR pg_catalog.octet_length(text) BETWEEN 1 AND 65536)
);
CREATE INDEX evidence_source_idx ON dm_private.evidence (team_id, source_id, revision_id);
CREATE INDEX evidence_owner_idx ON dm_private.evidence (team_id, owner_profile_id);
COMMENT ON TABLE dm_private.evidence IS
'What was said or written: the unit of recall. valid_* is when it is true in the world, known_* when we recorded it; created_at is when it was said (recency uses it; NULL falls back to sequence_number and never matches a time window).';
COMMENT ON COLUMN dm_private.evidence.text IS 'The evidence text; NULL only after erasure.';
COMMENT ON COLUMN dm_private.evidence.content_hash IS 'SHA-256 of the text; kept in the tombstone after erasure.';
COMMENT ON COLUMN dm_private.evidence.labels IS 'Content attributes for the policy filter, e.g. {"pii": true} hides the row from principals without the pii scope.';
COMMENT ON COLUMN dm_private.evidence.sequence_number IS 'Insertion order; the recency fallback for rows without created_at.';

CREATE TABLE dm_private.erasure_tombstones (
    team_id uuid NOT NULL,
    evidence_id uuid NOT NULL,
    content_hash bytea NOT NULL,
    erased_by_profile_id uuid,
    reason text,
    erased_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT erasure_tombstones_pkey PRIMARY KEY (team_id, evidence_id),
    CONSTRAINT erasure_tombstones_evidence_fkey FOREIGN KEY (team_id, evidence_id) REFERENCES dm_private.evidence (team_id, evidence_id)
);
COMMENT ON TABLE dm_private.erasure_tombstones IS
'Proof that evidence was erased: its content hash, who and when. The text itself is gone from every table.';

-- ---------------------------------------------------------------- entities and relationships

CREATE TABLE dm_private.entities (
    team_id uuid NOT NULL,
    entity_id uuid NOT NULL,
    canonical_name text NOT NULL,
    normalized_name text NOT NULL,
    kind text NOT NULL DEFAULT 'thing',
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    updated_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT entities_pkey PRIMARY KEY (team_id, entity_id),
    CONSTRAINT entities_team_name_kind_key UNIQUE (team_id, normalized_name, kind),
    CONSTRAINT entities_team_fkey FOREIGN KEY (team_id) REFERENCES dm_private.teams (team_id),
    CONSTRAINT entities_name_not_blank CHECK (pg_catalog.btrim(canonical_name) <> '' AND pg_catalog.length(canonical_name) <= 500),
    CONSTRAINT entities_kind_not_blank CHECK (pg_catalog.btrim(kind) <> '' AND pg_catalog.length(kind) <= 100)
);
COMMENT ON TABLE dm_private.entities IS 'Named things in a team''s graph. The same name in two teams is two unrelated entities.';

CREATE TABLE dm_private.entity_names (
    team_id uuid NOT NULL,
    entity_id uuid NOT NULL,
    name text NOT NULL,
    normalized_name text NOT NULL,
    is_canonical boolean NOT NULL,
    CONSTRAINT entity_names_pkey PRIMARY KEY (team_id, entity_id, normalized_name),
    CONSTRAINT entity_names_entity_fkey FOREIGN KEY (team_id, entity_id) REFERENCES dm_private.entities (team_id, entity_id) ON DELETE CASCADE,
    CONSTRAINT entity_names_not_blank CHECK (pg_catalog.btrim(name) <> '' AND pg_catalog.length(name) <= 500)
);
CREATE INDEX entity_names_lookup_idx ON dm_private.entity_names (team_id, normalized_name);
CREATE INDEX entity_names_trgm_idx ON dm_private.entity_names USING gin (team_id, normalized_name public.gin_trgm_ops);
COMMENT ON TABLE dm_private.entity_names IS 'Canonical name and aliases of each entity, normalized (lower case, single spaces) for exact and trigram lookup.';

CREATE TABLE dm_private.relationships (
    team_id uuid NOT NULL,
    relationship_id uuid NOT NULL,
    subject_entity_id uuid NOT NULL,
    predicate text NOT NULL,
    object_entity_id uuid,
    object_value text,
    polarity dm_private.relationship_polarity NOT NULL DEFAULT '+',
    owner_profile_id uuid NOT NULL,
    tier dm_private.relationship_tier NOT NULL DEFAULT 'candidate',
    status dm_private.relationship_status NOT NULL DEFAULT 'pending_evidence',
    valid_from timestamptz,
    valid_to timestamptz,
    known_from timestamptz NOT NULL DEFAULT pg_catalog.now(),
    known_to timestamptz,
    semantic_group text,
    superseded_by_relationship_id uuid,
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    updated_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT relationships_pkey PRIMARY KEY (team_id, relationship_id),
    CONSTRAINT relationships_subject_fkey FOREIGN KEY (team_id, subject_entity_id) REFERENCES dm_private.entities (team_id, entity_id),
    CONSTRAINT relationships_object_fkey FOREIGN KEY (team_id, object_entity_id) REFERENCES dm_private.entities (team_id, entity_id),
    CONSTRAINT relationships_owner_fkey FOREIGN KEY (team_id, owner_profile_id) REFERENCES dm_private.profiles (team_id, profile_id),
    CONSTRAINT relationships_superseded_by_fkey FOREIGN KEY (team_id, superseded_by_relationship_id)
    REFERENCES dm_private.relationships (team_id, relationship_id),
    CONSTRAINT relationships_one_object CHECK ((object_entity_id IS NULL) <> (object_value IS NULL)),
    CONSTRAINT relationships_predicate_format CHECK (predicate ~ '^[a-z][a-z0-9_]{0,99}$'),
    CONSTRAINT relationships_object_value_size CHECK (object_value IS NULL OR pg_catalog.length(object_value) BETWEEN 1 AND 2000),
    CONSTRAINT relationships_valid_range CHECK (valid_to IS NULL OR valid_from IS NULL OR valid_from < valid_to),
    CONSTRAINT relationships_known_range CHECK (known_to IS NULL OR known_from < known_to)
);
CREATE INDEX relationships_outgoing_idx ON dm_private.relationships (team_id, subject_entity_id, predicate);
CREATE INDEX relationships_incoming_idx ON dm_private.relationships (team_id, object_entity_id, predicate)
WHERE object_entity_id IS NOT NULL;
CREATE INDEX relationships_owner_idx ON dm_private.relationships (team_id, owner_profile_id);
COMMENT ON TABLE dm_private.relationships IS
'Assertions between entities (or an entity and a literal value), each authored by one profile. Only status active with tier validated_claim or fact is eligible for discovery paths.';
COMMENT ON COLUMN dm_private.relationships.semantic_group IS 'Groups equivalent relationships from different authors; each stays independently traceable.';

CREATE TABLE dm_private.relationship_evidence (
    team_id uuid NOT NULL,
    relationship_id uuid NOT NULL,
    evidence_id uuid NOT NULL,
    span_start integer,
    span_end integer,
    accepted boolean NOT NULL DEFAULT true,
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT relationship_evidence_pkey PRIMARY KEY (team_id, relationship_id, evidence_id),
    CONSTRAINT relationship_evidence_relationship_fkey FOREIGN KEY (team_id, relationship_id)
    REFERENCES dm_private.relationships (team_id, relationship_id),
    CONSTRAINT relationship_evidence_evidence_fkey FOREIGN KEY (team_id, evidence_id) REFERENCES dm_private.evidence (team_id, evidence_id),
    CONSTRAINT relationship_evidence_span_valid CHECK (
        (span_start IS NULL AND span_end IS NULL) OR (span_start >= 0 AND span_end > span_start)
    )
);
CREATE INDEX relationship_evidence_by_evidence_idx ON dm_private.relationship_evidence (team_id, evidence_id);
COMMENT ON TABLE dm_private.relationship_evidence IS
'Evidence supporting a relationship, with the accepted character span [span_start, span_end) of the evidence text.';

CREATE TABLE dm_private.verification_events (
    team_id uuid NOT NULL,
    verification_event_id uuid NOT NULL,
    relationship_id uuid NOT NULL,
    decision dm_private.verification_decision NOT NULL,
    rationale text,
    actor_profile_id uuid NOT NULL,
    created_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    CONSTRAINT verification_events_pkey PRIMARY KEY (team_id, verification_event_id),
    CONSTRAINT verification_events_relationship_fkey FOREIGN KEY (team_id, relationship_id)
    REFERENCES dm_private.relationships (team_id, relationship_id),
    CONSTRAINT verification_events_actor_fkey FOREIGN KEY (team_id, actor_profile_id) REFERENCES dm_private.profiles (team_id, profile_id),
    CONSTRAINT verification_events_rationale_size CHECK (rationale IS NULL OR pg_catalog.length(rationale) <= 10000)
);
CREATE INDEX verification_events_relationship_idx ON dm_private.verification_events (team_id, relationship_id, created_at);
COMMENT ON TABLE dm_private.verification_events IS 'Verifier decisions on relationships. Shown by trace, never by recall.';

CREATE TABLE dm_private.lifecycle_transitions (
    team_id uuid NOT NULL,
    transition_id uuid NOT NULL,
    subject_kind dm_private.subject_kind NOT NULL,
    subject_id uuid NOT NULL,
    from_status text,
    to_status text NOT NULL,
    from_tier text,
    to_tier text,
    actor_profile_id uuid,
    reason text,
    created_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    CONSTRAINT lifecycle_transitions_pkey PRIMARY KEY (team_id, transition_id),
    CONSTRAINT lifecycle_transitions_actor_fkey FOREIGN KEY (team_id, actor_profile_id) REFERENCES dm_private.profiles (team_id, profile_id),
    CONSTRAINT lifecycle_transitions_reason_size CHECK (reason IS NULL OR pg_catalog.length(reason) <= 10000)
);
CREATE INDEX lifecycle_transitions_subject_idx ON dm_private.lifecycle_transitions (team_id, subject_kind, subject_id, created_at);
COMMENT ON TABLE dm_private.lifecycle_transitions IS
'Every status or tier change of evidence and relationships: from, to, who, when, why. Append-only.';

CREATE TABLE dm_private.conflicts (
    team_id uuid NOT NULL,
    conflict_id uuid NOT NULL,
    relationship_id uuid NOT NULL,
    conflicting_relationship_id uuid NOT NULL,
    kind dm_private.conflict_kind NOT NULL,
    preferred_relationship_id uuid,
    detected_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT conflicts_pkey PRIMARY KEY (team_id, conflict_id),
    CONSTRAINT conflicts_pair_key UNIQUE (team_id, relationship_id, conflicting_relationship_id),
    CONSTRAINT conflicts_relationship_fkey FOREIGN KEY (team_id, relationship_id)
    REFERENCES dm_private.relationships (team_id, relationship_id),
    CONSTRAINT conflicts_conflicting_fkey FOREIGN KEY (team_id, conflicting_relationship_id)
    REFERENCES dm_private.relationships (team_id, relationship_id),
    CONSTRAINT conflicts_preferred_fkey FOREIGN KEY (team_id, preferred_relationship_id)
    REFERENCES dm_private.relationships (team_id, relationship_id),
    CONSTRAINT conflicts_ordered_pair CHECK (relationship_id < conflicting_relationship_id)
);
CREATE INDEX conflicts_conflicting_idx ON dm_private.conflicts (team_id, conflicting_relationship_id);
COMMENT ON TABLE dm_private.conflicts IS
'Pairs of relationships that disagree (same subject and predicate). Neither is deleted or changed; preferred_relationship_id marks a correction that ranks higher.';

CREATE TABLE dm_private.hypotheses (
    team_id uuid NOT NULL,
    hypothesis_id uuid NOT NULL,
    statement text NOT NULL,
    status dm_private.hypothesis_status NOT NULL DEFAULT 'proposed',
    owner_profile_id uuid NOT NULL,
    source_id uuid,
    revision_id uuid,
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT hypotheses_pkey PRIMARY KEY (team_id, hypothesis_id),
    CONSTRAINT hypotheses_owner_fkey FOREIGN KEY (team_id, owner_profile_id) REFERENCES dm_private.profiles (team_id, profile_id),
    CONSTRAINT hypotheses_revision_fkey FOREIGN KEY (team_id, source_id, revision_id)
    REFERENCES dm_private.source_revisions (team_id, source_id, revision_id),
    CONSTRAINT hypotheses_statement_size CHECK (pg_catalog.length(statement) BETWEEN 1 AND 10000),
    CONSTRAINT hypotheses_source_pair CHECK ((source_id IS NULL) = (revision_id IS NULL))
);
COMMENT ON TABLE dm_private.hypotheses IS
'Unverified ideas (dreaming output), linked to the source revision they came from. Never evidence, never a relationship, never a tier.';

-- ---------------------------------------------------------------- search documents and embeddings

CREATE TABLE dm_private.embedding_contracts (
    contract_id integer GENERATED ALWAYS AS IDENTITY,
    provider text NOT NULL,
    model text NOT NULL,
    dimensions integer NOT NULL,
    normalization text NOT NULL DEFAULT 'l2',
    version integer NOT NULL DEFAULT 1,
    is_active boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT embedding_contracts_pkey PRIMARY KEY (contract_id),
    CONSTRAINT embedding_contracts_identity_key UNIQUE (provider, model, dimensions, normalization, version),
    CONSTRAINT embedding_contracts_dimensions_range CHECK (dimensions BETWEEN 1 AND 4000),
    CONSTRAINT embedding_contracts_normalization_known CHECK (normalization IN ('l2', 'none'))
);
CREATE UNIQUE INDEX embedding_contracts_one_active_idx ON dm_private.embedding_contracts ((true)) WHERE is_active;
COMMENT ON TABLE dm_private.embedding_contracts IS
'How vectors are made (provider, model, dimensions, normalization, version). Global configuration, no team data; exactly one is active and recall uses only its vectors.';

CREATE TABLE dm_private.search_documents (
    team_id uuid NOT NULL,
    document_id uuid NOT NULL,
    subject_kind dm_private.subject_kind NOT NULL,
    subject_id uuid NOT NULL,
    document_version integer NOT NULL DEFAULT 1,
    source_version integer NOT NULL DEFAULT 1,
    body text NOT NULL,
    search_vector tsvector NOT NULL,
    search_state dm_private.search_state NOT NULL DEFAULT 'pending',
    embed_attempts integer NOT NULL DEFAULT 0,
    last_error text,
    claimed_until timestamptz,
    pending_since timestamptz DEFAULT pg_catalog.now(),
    updated_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    -- Eligibility mirror of the evidence row (NULL for other kinds), kept by
    -- the write path in the same transaction, so that candidate generation
    -- filters one table; hydration re-checks the authoritative evidence row.
    is_recallable boolean NOT NULL DEFAULT false,
    owner_profile_id uuid,
    memory_type dm_private.memory_type,
    source_group text,
    source_created_at timestamptz,
    sequence_number bigint,
    valid_from timestamptz,
    valid_to timestamptz,
    known_from timestamptz,
    known_to timestamptz,
    importance real,
    confidence real,
    policy_labels text[] NOT NULL DEFAULT '{}',
    CONSTRAINT search_documents_pkey PRIMARY KEY (team_id, document_id),
    CONSTRAINT search_documents_subject_key UNIQUE (team_id, subject_kind, subject_id),
    CONSTRAINT search_documents_team_fkey FOREIGN KEY (team_id) REFERENCES dm_private.teams (team_id),
    CONSTRAINT search_documents_body_size CHECK (pg_catalog.octet_length(body) <= 70000),
    CONSTRAINT search_documents_pending_since_set CHECK ((search_state = 'pending') = (pending_since IS NOT NULL))
);
CREATE INDEX search_documents_fulltext_idx ON dm_private.search_documents USING gin (team_id, search_vector);
CREATE INDEX search_documents_pending_idx ON dm_private.search_documents (team_id, pending_since)
WHERE search_state = 'pending';
COMMENT ON COLUMN dm_private.search_documents.is_recallable IS
'Evidence only: state active and source revision current. Owner profile state, time and policy are checked at query time.';
COMMENT ON COLUMN dm_private.search_documents.policy_labels IS
'Evidence only: the label keys whose value is true (e.g. {pii}); a principal needs a scope of the same name to see the row.';
COMMENT ON COLUMN dm_private.search_documents.source_created_at IS 'Evidence only: evidence.created_at (NULL when unknown).';
COMMENT ON TABLE dm_private.search_documents IS
'Derived search rows: one per evidence, relationship and entity, changed in the same transaction as their source. document_version counts text changes; source_version is the source revision number (evidence) or 1. Authoritative data stays in the source tables.';

CREATE TABLE dm_private.document_embeddings (
    team_id uuid NOT NULL,
    document_id uuid NOT NULL,
    contract_id integer NOT NULL,
    document_version integer NOT NULL,
    source_version integer NOT NULL,
    embedding public.halfvec NOT NULL,
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT document_embeddings_pkey PRIMARY KEY (team_id, document_id, contract_id),
    CONSTRAINT document_embeddings_document_fkey FOREIGN KEY (team_id, document_id)
    REFERENCES dm_private.search_documents (team_id, document_id) ON DELETE CASCADE,
    CONSTRAINT document_embeddings_contract_fkey FOREIGN KEY (contract_id) REFERENCES dm_private.embedding_contracts (contract_id)
);
COMMENT ON TABLE dm_private.document_embeddings IS
'Vectors by contract (half precision). A vector is usable only while its document_version and source_version equal the document''s and its contract is active.';

-- ---------------------------------------------------------------- ranking, feedback, usage, telemetry

CREATE TABLE dm_private.ranking_profiles (
    ranking_profile_id integer GENERATED ALWAYS AS IDENTITY,
    name text NOT NULL,
    version integer NOT NULL,
    is_default boolean NOT NULL DEFAULT false,
    settings jsonb NOT NULL,
    description text,
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT ranking_profiles_pkey PRIMARY KEY (ranking_profile_id),
    CONSTRAINT ranking_profiles_name_version_key UNIQUE (name, version),
    CONSTRAINT ranking_profiles_settings_is_object CHECK (pg_catalog.jsonb_typeof(settings) = 'object')
);
CREATE UNIQUE INDEX ranking_profiles_one_default_idx ON dm_private.ranking_profiles ((true)) WHERE is_default;
COMMENT ON TABLE dm_private.ranking_profiles IS
'Versioned ranking profiles: fusion method, rrf_k, branch weights, required branches, composite weights, half-lives, MMR lambda, caps and budgets. Rows are never updated; a change is a new version.';

CREATE TABLE dm_private.team_ranking_overrides (
    team_id uuid NOT NULL,
    ranking_profile_id integer NOT NULL,
    settings jsonb NOT NULL DEFAULT '{}',
    updated_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT team_ranking_overrides_pkey PRIMARY KEY (team_id),
    CONSTRAINT team_ranking_overrides_team_fkey FOREIGN KEY (team_id) REFERENCES dm_private.teams (team_id),
    CONSTRAINT team_ranking_overrides_profile_fkey FOREIGN KEY (ranking_profile_id)
    REFERENCES dm_private.ranking_profiles (ranking_profile_id),
    CONSTRAINT team_ranking_overrides_settings_is_object CHECK (pg_catalog.jsonb_typeof(settings) = 'object')
);
COMMENT ON TABLE dm_private.team_ranking_overrides IS
'A team''s choice of ranking profile and its overrides of weights and half-lives, merged over the profile settings.';

CREATE TABLE dm_private.recall_feedback (
    team_id uuid NOT NULL,
    feedback_id uuid NOT NULL,
    recall_id uuid,
    query text NOT NULL,
    evidence_id uuid NOT NULL,
    result_rank integer,
    ranking_profile_version text,
    judgment dm_private.feedback_judgment NOT NULL,
    actor_profile_id uuid NOT NULL,
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT recall_feedback_pkey PRIMARY KEY (team_id, feedback_id),
    CONSTRAINT recall_feedback_evidence_fkey FOREIGN KEY (team_id, evidence_id) REFERENCES dm_private.evidence (team_id, evidence_id),
    CONSTRAINT recall_feedback_actor_fkey FOREIGN KEY (team_id, actor_profile_id) REFERENCES dm_private.profiles (team_id, profile_id),
    CONSTRAINT recall_feedback_query_size CHECK (pg_catalog.length(query) <= 10000),
    CONSTRAINT recall_feedback_rank_positive CHECK (result_rank IS NULL OR result_rank >= 1)
);
CREATE INDEX recall_feedback_evidence_idx ON dm_private.recall_feedback (team_id, evidence_id);
COMMENT ON TABLE dm_private.recall_feedback IS
'What callers said about results: query, result, rank, ranking version, judgment, actor. It feeds usage counters; it never changes weights or relationship state.';

CREATE TABLE dm_private.usage_counters (
    team_id uuid NOT NULL,
    evidence_id uuid NOT NULL,
    retrieved_count bigint NOT NULL DEFAULT 0,
    used_count bigint NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT usage_counters_pkey PRIMARY KEY (team_id, evidence_id),
    CONSTRAINT usage_counters_evidence_fkey FOREIGN KEY (team_id, evidence_id) REFERENCES dm_private.evidence (team_id, evidence_id),
    CONSTRAINT usage_counters_non_negative CHECK (retrieved_count >= 0 AND used_count >= 0)
);
COMMENT ON TABLE dm_private.usage_counters IS 'Live retrieved and used counts per evidence. Ranking reads a snapshot, never these live counts.';

CREATE TABLE dm_private.usage_snapshots (
    team_id uuid NOT NULL,
    usage_snapshot_id bigint GENERATED ALWAYS AS IDENTITY,
    taken_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT usage_snapshots_pkey PRIMARY KEY (team_id, usage_snapshot_id),
    CONSTRAINT usage_snapshots_team_fkey FOREIGN KEY (team_id) REFERENCES dm_private.teams (team_id)
);
COMMENT ON TABLE dm_private.usage_snapshots IS
'Frozen copies of the usage counters. Ranking uses the latest (or a requested) snapshot so a replayed query reproduces its historical order.';

CREATE TABLE dm_private.usage_snapshot_counts (
    team_id uuid NOT NULL,
    usage_snapshot_id bigint NOT NULL,
    evidence_id uuid NOT NULL,
    retrieved_count bigint NOT NULL,
    used_count bigint NOT NULL,
    CONSTRAINT usage_snapshot_counts_pkey PRIMARY KEY (team_id, usage_snapshot_id, evidence_id),
    CONSTRAINT usage_snapshot_counts_snapshot_fkey FOREIGN KEY (team_id, usage_snapshot_id)
    REFERENCES dm_private.usage_snapshots (team_id, usage_snapshot_id) ON DELETE CASCADE
);
COMMENT ON TABLE dm_private.usage_snapshot_counts IS 'The counts of one usage snapshot.';

CREATE TABLE dm_private.recall_telemetry (
    team_id uuid NOT NULL,
    recall_id uuid NOT NULL,
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    ranking_profile_version text NOT NULL,
    search_index_profile_version text NOT NULL,
    degraded_branches text[] NOT NULL DEFAULT '{}',
    query_embedding_contract_version text,
    pending_document_count bigint NOT NULL DEFAULT 0,
    failed_document_count bigint NOT NULL DEFAULT 0,
    oldest_pending_age_seconds double precision,
    result_count integer NOT NULL DEFAULT 0,
    duration_ms double precision,
    CONSTRAINT recall_telemetry_pkey PRIMARY KEY (team_id, recall_id),
    CONSTRAINT recall_telemetry_team_fkey FOREIGN KEY (team_id) REFERENCES dm_private.teams (team_id)
);
CREATE INDEX recall_telemetry_time_idx ON dm_private.recall_telemetry (team_id, created_at);
COMMENT ON TABLE dm_private.recall_telemetry IS
'One internal row per recall: profile versions, degraded branches, query embedding contract and search freshness. Operators only; never in a public answer.';
