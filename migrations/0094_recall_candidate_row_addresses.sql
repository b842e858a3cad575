-- 0094: a branch hit and a fused candidate carry the heap address (ctid) at
-- which the branch read the candidate's search document.
--
-- Why (sessions 17 and 18, docs/RECALL.md "Ranking (session 17)" and
-- "Ranking (session 18)"): the ranking read
-- each of its ~100 fused candidates' search_documents rows again by the
-- document's id through the hash index of migration 0072. The branches had
-- just read those rows, but not through that index: on the 1M bench its
-- bucket pages were cold in the CPU caches on every call (reading the same
-- rows through it just before the ranking, /tmp/s17/rankprewarm2.py, took
-- the ranking's p50 from 0.71-0.79 ms to 0.51-0.52; reading only their heap
-- pages first, to 0.62-0.69). With the address, the ranking fetches each row
-- by a Tid Scan: no index, and a heap page the branch has just read.
--
-- An address is a hint, not a key: the ranking uses the row at it only when
-- that row is visible to its snapshot and is the candidate's document in
-- the team (a row visible to a snapshot is the one version of it that
-- snapshot sees: the row the document id would find); otherwise (the
-- document was updated since the branch read it, or a caller built the list
-- without addresses) it reads the document by id as before.
-- Cost and gain (session 18, 1M bench, one server): the ranking alone
-- (the bench's 200 inputs, 12 rotated rounds, /tmp/s18/rankab.py) p50
-- 0.714 -> 0.635 ms and p95 0.828 -> 0.739 ms (medians of the rounds);
-- carrying the addresses costs a recall +0.25 to +0.33 M instructions
-- (callgrind, 20 queries per team-size bucket, +2 %), and the whole recall
-- measured no slower in wall-clock time (one server, the branch and ranking
-- files swapped, 40 bench queries per bucket: eight rotated A/B runs, five
-- with session 17's fetch and three with session 18's, /tmp/s18/abswitch2.py
-- and abswitch3.py; overall p50 -0.30 to 0.00 ms).
-- Carrying the scoring features themselves instead was measured and not
-- kept: computing them for the ~200 branch hits cost every recall more than
-- the ranking saved (1M bench: +1.5 M instructions and +0.1-0.35 ms p50 per
-- recall).
ALTER TYPE dm_private.recall_branch_hit ADD ATTRIBUTE row_tid tid;
ALTER TYPE dm_private.recall_fused ADD ATTRIBUTE row_tid tid;
COMMENT ON TYPE dm_private.recall_branch_hit IS
'One candidate of one retrieval branch (fulltext, vector, exact): its rank inside the branch (1 = best), the branch''s own score (ts_rank_cd, cosine distance, anchor count) and the heap address at which the branch read its document (a hint for the ranking; NULL: none). An evidence appears at most once per branch.';
COMMENT ON TYPE dm_private.recall_fused IS
'One candidate after fusion: the RRF (or branch-priority) score, relevance normalised to [0,1], its rank in each branch (NULL when absent) and the heap address at which a branch read its document (a hint for the ranking, which checks it; NULL: none).';
