-- 0020: recall core. Search-index profiles, per-team vector indexes, the
-- composite types the recall stages pass to one another, the searcher's
-- privileges, and ranking profile 'default' v2.
--
-- The first part runs as the migrating superuser: the searcher role must be
-- able to own functions in dm_private (ALTER FUNCTION ... OWNER needs CREATE
-- on the schema for the new owner) and must read the analyst grants so that
-- its candidate functions can apply dm_private.require_team themselves.

GRANT CREATE ON SCHEMA dm_private TO densemem_searcher;

SET LOCAL ROLE densemem_owner;

-- The searcher's candidate functions call dm_private.require_team, which
-- reads the grants that name the session's login role.
GRANT SELECT ON dm_private.team_role_grants TO densemem_searcher;
CREATE POLICY "the searcher sees the grants that name the login role" ON dm_private.team_role_grants
AS PERMISSIVE FOR SELECT TO densemem_searcher
USING (role_name = session_user);
-- Features for reranking (usage snapshot counts, support tiers) are read by
-- the searcher as well, so that a rerank needs no second RLS pass.
GRANT SELECT ON dm_private.usage_snapshots, dm_private.usage_snapshot_counts TO densemem_searcher;

-- ---------------------------------------------------------------- search-index profiles

CREATE TABLE dm_private.search_index_profiles (
    search_index_profile_id integer GENERATED ALWAYS AS IDENTITY,
    version integer NOT NULL,
    is_active boolean NOT NULL DEFAULT false,
    settings jsonb NOT NULL,
    description text,
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT search_index_profiles_pkey PRIMARY KEY (search_index_profile_id),
    CONSTRAINT search_index_profiles_version_key UNIQUE (version),
    CONSTRAINT search_index_profiles_settings_is_object CHECK (pg_catalog.jsonb_typeof(settings) = 'object')
);
CREATE UNIQUE INDEX search_index_profiles_one_active_idx ON dm_private.search_index_profiles ((true)) WHERE is_active;
COMMENT ON TABLE dm_private.search_index_profiles IS
'How the vector branch reaches vectors: the team size under which it scans exactly, the team size from which a team gets its own partial HNSW index, and the HNSW build and search settings. Global configuration; exactly one is active; rows are never updated, a change is a new version.';

ALTER TABLE dm_private.search_index_profiles ENABLE ROW LEVEL SECURITY;
ALTER TABLE dm_private.search_index_profiles FORCE ROW LEVEL SECURITY;
CREATE POLICY "every dense-mem role reads search-index profiles" ON dm_private.search_index_profiles
AS PERMISSIVE FOR SELECT TO densemem_app, densemem_analyst, densemem_operator, densemem_owner, densemem_searcher
USING (true);
REVOKE ALL ON dm_private.search_index_profiles FROM PUBLIC;
GRANT SELECT ON dm_private.search_index_profiles TO densemem_app, densemem_analyst, densemem_operator, densemem_searcher;

-- One row per team that has its own partial HNSW index over its vectors of
-- one contract. The vector branch uses the index named here; a team without
-- a row is scanned exactly (always correct, slower for a large team).
CREATE TABLE dm_private.team_vector_indexes (
    team_id uuid NOT NULL,
    contract_id integer NOT NULL,
    index_name name NOT NULL,
    dimensions integer NOT NULL,
    search_index_profile_version integer NOT NULL,
    vector_count bigint NOT NULL,
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT team_vector_indexes_pkey PRIMARY KEY (team_id, contract_id),
    CONSTRAINT team_vector_indexes_team_fkey FOREIGN KEY (team_id) REFERENCES dm_private.teams (team_id),
    CONSTRAINT team_vector_indexes_contract_fkey FOREIGN KEY (contract_id)
    REFERENCES dm_private.embedding_contracts (contract_id),
    -- Index names are unique per schema anyway; team_id leads so the table distributes by team.
    CONSTRAINT team_vector_indexes_index_name_key UNIQUE (team_id, index_name)
);
COMMENT ON TABLE dm_private.team_vector_indexes IS
'Teams large enough to have their own partial HNSW index (WHERE team_id = ... AND contract_id = ...) on document_embeddings. Written by dm.refresh_vector_indexes (administrator); read by the vector branch to choose its access path.';

ALTER TABLE dm_private.team_vector_indexes ENABLE ROW LEVEL SECURITY;
ALTER TABLE dm_private.team_vector_indexes FORCE ROW LEVEL SECURITY;
CREATE POLICY "the searcher reads the vector index of the authenticated team" ON dm_private.team_vector_indexes
AS PERMISSIVE FOR SELECT TO densemem_searcher, densemem_analyst, densemem_operator, densemem_app
USING (team_id = (SELECT NULLIF(pg_catalog.current_setting('densemem.team_id', true), '')::uuid));
REVOKE ALL ON dm_private.team_vector_indexes FROM PUBLIC;
GRANT SELECT ON dm_private.team_vector_indexes TO densemem_searcher, densemem_analyst, densemem_operator, densemem_app;

-- Global configuration rows are written by the migrating superuser (no
-- Dense-Mem role has a policy to insert or update them).
RESET ROLE;
INSERT INTO dm_private.search_index_profiles (version, is_active, settings, description)
VALUES (
    1, true,
    '{
      "exact_scan_max_rows": 10000,
      "partial_index_min_rows": 10000,
      "hnsw": {"m": 16, "ef_construction": 64, "ef_search": 200, "iterative_scan": "relaxed_order",
               "max_scan_tuples": 20000}
    }'::jsonb,
    'Exact scan below 10,000 usable vectors; a per-team partial HNSW index (m 16, ef_construction 64) from 10,000; ef_search 200 with relaxed iterative scans.'
);

SET LOCAL ROLE densemem_owner;

-- ---------------------------------------------------------------- indexes recall needs

-- Legacy rows without created_at age by sequence distance from the team's
-- newest evidence: one index probe.
CREATE INDEX search_documents_sequence_idx
ON dm_private.search_documents (team_id, sequence_number)
WHERE subject_kind = 'evidence';

-- ---------------------------------------------------------------- types passed between stages

CREATE TYPE dm_private.recall_branch_hit AS (
    branch text,
    document_id uuid,
    evidence_id uuid,
    branch_rank integer,
    branch_score double precision
);
COMMENT ON TYPE dm_private.recall_branch_hit IS
'One candidate of one retrieval branch (fulltext, vector, exact): its rank inside the branch (1 = best) and the branch''s own score (ts_rank_cd, cosine distance, anchor count). An evidence appears at most once per branch.';

CREATE TYPE dm_private.recall_fused AS (
    document_id uuid,
    evidence_id uuid,
    fused_score double precision,
    relevance double precision,
    fulltext_rank integer,
    vector_rank integer,
    exact_rank integer,
    fusion_rank integer
);
COMMENT ON TYPE dm_private.recall_fused IS
'One candidate after fusion: the RRF (or branch-priority) score, relevance normalised to [0,1], and its rank in each branch (NULL when absent).';

CREATE TYPE dm_private.recall_scored AS (
    document_id uuid,
    evidence_id uuid,
    relevance double precision,
    recency double precision,
    importance double precision,
    frequency double precision,
    proximity double precision,
    confidence double precision,
    support double precision,
    phrase double precision,
    exact_terms double precision,
    temporal double precision,
    score double precision,
    body_bytes integer,
    body_key text,
    fulltext_rank integer,
    vector_rank integer,
    exact_rank integer,
    fusion_rank integer,
    score_rank integer
);
COMMENT ON TYPE dm_private.recall_scored IS
'One candidate after the composite rerank: every signal in [0,1], the weighted score, its rank by score, the byte size of its text and a normalised text key for duplicate collapsing.';

-- ---------------------------------------------------------------- ranking profile 'default' v2

-- v2 keeps seed 002's weights and half-lives and adds what the recall core
-- reads: the full-text query shape and scan cap, the relevance mix (phrase
-- and exact-term signals), the bounded support (tier) weight, the temporal
-- intent weight, the usage prior and the MMR pool.
RESET ROLE;
UPDATE dm_private.ranking_profiles SET is_default = false WHERE name = 'default' AND version = 1;
INSERT INTO dm_private.ranking_profiles (name, version, is_default, settings, description)
VALUES (
    'default', 2, true,
    '{
      "fusion": {"method": "rrf", "rrf_k": 60, "branch_weights": {"fulltext": 1.0, "vector": 1.0, "exact": 1.0},
                 "branch_priority": ["exact", "fulltext", "vector"]},
      "required_branches": ["fulltext"],
      "optional_branches": ["vector"],
      "weights": {"relevance": 0.55, "recency": 0.20, "importance": 0.15, "frequency": 0.05,
                  "proximity": 0.05, "confidence": 0.0},
      "relevance_mix": {"fusion": 0.8, "phrase": 0.1, "exact_terms": 0.1},
      "support_weight": 0.05,
      "temporal_intent_weight": 0.25,
      "half_life_days": {"conversation": 2, "workflow": 14, "episodic": 90, "semantic": null,
                         "organizational": null},
      "frequency_prior": {"used": 1, "retrieved": 2},
      "proximity": {"max_hops": 2},
      "fulltext": {"config": "english", "or_terms": true, "scan_cap": 1000, "rank_normalization": 1},
      "mmr": {"lambda": 0.7, "duplicate_similarity": 0.97, "pool": 30},
      "candidates": {"fulltext": 100, "vector": 100, "exact": 50, "fused": 100},
      "budgets": {"default_limit": 10, "max_limit": 50, "max_context_bytes": 16000, "max_query_bytes": 10000},
      "discovery": {"seed_count": 5, "fan_out": 20, "max_edges": 200, "max_depth": 2,
                    "max_paths": 5, "max_path_bytes": 4000, "time_budget_ms": 20},
      "hypotheses": {"enabled": false, "limit": 3},
      "communities": {"enabled": false}
    }'::jsonb,
    'Seed 002 weights and half-lives; hybrid full-text (AND and OR-of-terms) plus optional vector branch, RRF k=60; phrase and exact-term signals inside relevance; bounded support weight; MMR lambda 0.7 over a pool of 30.'
);
