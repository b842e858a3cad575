-- 0053: evidence documents of a team in heap order, for the full-text
-- branch's dense passes.
--
-- The full-text passes keep the first fulltext.scan_budget eligible matches
-- in heap (TID) order: a bitmap scan of the team-qualified lexeme keys
-- (migration 0025) returns them in that order. For a lexeme most of a large
-- team's documents hold (on the 1M bench "residence" is in 119,045 of the
-- 134,072 documents of one team), the bitmap scan decodes the whole posting
-- list and builds a bitmap of every holder only to read the first 500 of
-- them: 15 M of the 29 M instructions of such a recall's full-text branch.
--
-- A btree whose key is the same for every evidence document of a team keeps
-- them in heap TID order (nbtree breaks ties on the heap TID), so an index
-- scan of this index reads the team's documents in the order the bitmap
-- scan returns them, and a LIMIT stops it after the first budget matches:
-- the same rows, after about budget x (team size / lexeme frequency) heap
-- reads instead of the whole posting list. The key is
-- dm_private.search_team_order_key(team_id), an expression no other index
-- has, so a query on it cannot be served by an index in another order (the
-- primary key orders by document_id); its value is the team id.
--
-- Write cost: one more btree entry per evidence document written (about 8
-- bytes with deduplication: every key of a team is equal). The function is
-- IMMUTABLE and must never change while the index exists.

SET LOCAL ROLE densemem_owner;

CREATE FUNCTION dm_private.search_team_order_key(team_id uuid)
RETURNS uuid
LANGUAGE sql
IMMUTABLE
STRICT
PARALLEL SAFE
SET search_path = ''
RETURN team_id;
COMMENT ON FUNCTION dm_private.search_team_order_key(uuid) IS
'Index expression of search_documents_team_order_idx: the team id, through a function that is never inlined, so that only that index serves a query on it and the team''s evidence documents come in heap order. Never change it while the index exists.';
REVOKE ALL ON FUNCTION dm_private.search_team_order_key(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dm_private.search_team_order_key(uuid)
TO densemem_app, densemem_analyst, densemem_operator, densemem_searcher, densemem_embedder, densemem_worker;

CREATE INDEX search_documents_team_order_idx ON dm_private.search_documents
USING btree (dm_private.search_team_order_key(team_id))
WHERE subject_kind = 'evidence';
COMMENT ON INDEX dm_private.search_documents_team_order_idx IS
'Evidence documents of a team in heap (TID) order (every key of a team is equal): the full-text branch''s dense passes read the first scan_budget matches of a lexeme most of the team holds without building a bitmap of all of them.';
