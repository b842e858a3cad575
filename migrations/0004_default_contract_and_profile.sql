-- 0004: the default embedding contract and the first ranking profile.
--
-- The local provider (all-MiniLM-L6-v2, 384 dimensions, unit length) is the
-- default so that a fresh install recalls by meaning with no API key.
-- Global configuration rows are written by the migrating superuser: no
-- Dense-Mem role may insert them.

INSERT INTO dm_private.embedding_contracts (provider, model, dimensions, normalization, version, is_active)
VALUES ('local', 'sentence-transformers/all-MiniLM-L6-v2', 384, 'l2', 1, true);

INSERT INTO dm_private.ranking_profiles (name, version, is_default, settings, description)
VALUES (
    'default', 1, true,
    '{
      "fusion": {"method": "rrf", "rrf_k": 60, "branch_weights": {"fulltext": 1.0, "vector": 1.0},
                 "branch_priority": ["fulltext", "vector"]},
      "required_branches": ["fulltext"],
      "optional_branches": ["vector"],
      "weights": {"relevance": 0.55, "recency": 0.20, "importance": 0.15, "frequency": 0.05,
                  "proximity": 0.05, "confidence": 0.0},
      "half_life_days": {"conversation": 2, "workflow": 14, "episodic": 90, "semantic": null,
                         "organizational": null},
      "mmr": {"lambda": 0.7, "duplicate_similarity": 0.97},
      "candidates": {"fulltext": 100, "vector": 100, "fused": 100},
      "budgets": {"default_limit": 10, "max_limit": 50, "max_context_bytes": 16000},
      "vector": {"exact_scan_max_rows": 20000, "hnsw_ef_search": 100},
      "discovery": {"seed_count": 5, "fan_out": 20, "max_edges": 200, "max_depth": 2,
                    "max_paths": 5, "max_path_bytes": 4000, "time_budget_ms": 20},
      "hypotheses": {"enabled": false, "limit": 3},
      "communities": {"enabled": false}
    }'::jsonb,
    'Seed 002 composite weights and half-lives; RRF k=60; vector branch optional.'
);
