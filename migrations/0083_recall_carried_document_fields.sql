-- 0083: the document fields the ranking scores, carried with each
-- candidate from the branch that read the document; the body's duplicate
-- key stored with the document.
--
-- Why (session 14, "ranking 100 candidates p95 <= 1 ms"): the ranking
-- (dm_private.recall_rank, sql/50) read every fused candidate's search
-- document again by its id (100 hash-index probes per call on the bench's
-- inputs, about 0.45 M of 3.9 M instructions) for fields the vector branch
-- had just read from the same row to test its eligibility: memory type,
-- creation time, sequence number, source group, document and source
-- versions, importance, confidence, and the body for MMR's duplicate key.
-- The branch now puts them in its hits (dm_private.recall_branch_hit),
-- fusion keeps them per candidate (dm_private.recall_fused), and the
-- ranking scores a carried candidate from them without reading its
-- document (docs/RECALL.md, session 14). A hit or fused row without them
-- (document_version NULL: another branch, a hand-made list) is read as
-- before.
--
-- body_hash is hashtextextended(body, 0), the duplicate key MMR compares
-- (sql/50), stored so that no branch hashes a body at query time: a stored
-- generated column, recomputed by every write of the body. Adding it
-- rewrites the table once.

SET LOCAL ROLE densemem_owner;

ALTER TABLE dm_private.search_documents
ADD COLUMN body_hash bigint GENERATED ALWAYS AS (pg_catalog.hashtextextended(body, 0)) STORED;
COMMENT ON COLUMN dm_private.search_documents.body_hash IS
'hashtextextended(body, 0): MMR''s duplicate key of the text (dm_private.recall_rank), stored so that it is carried with a vector hit rather than computed per ranking.';

ALTER TYPE dm_private.recall_branch_hit
ADD ATTRIBUTE memory_type dm_private.memory_type,
ADD ATTRIBUTE source_created_at timestamptz,
ADD ATTRIBUTE sequence_number bigint,
ADD ATTRIBUTE source_group text,
ADD ATTRIBUTE document_version integer,
ADD ATTRIBUTE source_version integer,
ADD ATTRIBUTE importance real,
ADD ATTRIBUTE confidence real,
ADD ATTRIBUTE search_vector tsvector,
ADD ATTRIBUTE body_hash bigint;
COMMENT ON TYPE dm_private.recall_branch_hit IS
'One candidate of one retrieval branch (fulltext, vector, exact): its rank inside the branch (1 = best) and the branch''s own score (ts_rank_cd, cosine distance, anchor count). An evidence appears at most once per branch. memory_type .. body_hash: the document''s ranking fields as the branch read them with its eligibility test (document_version NULL: not carried; the ranking reads the document).';

ALTER TYPE dm_private.recall_fused
ADD ATTRIBUTE memory_type dm_private.memory_type,
ADD ATTRIBUTE source_created_at timestamptz,
ADD ATTRIBUTE sequence_number bigint,
ADD ATTRIBUTE source_group text,
ADD ATTRIBUTE document_version integer,
ADD ATTRIBUTE source_version integer,
ADD ATTRIBUTE importance real,
ADD ATTRIBUTE confidence real,
ADD ATTRIBUTE search_vector tsvector,
ADD ATTRIBUTE body_hash bigint;
COMMENT ON TYPE dm_private.recall_fused IS
'One candidate after fusion: the RRF (or branch-priority) score, relevance normalised to [0,1], and its rank in each branch (NULL when absent). memory_type .. body_hash: the ranking fields a branch carried for it (document_version NULL: none; the ranking reads the document).';
