-- 0035: the relationships an evidence row supports, in relationship order.
--
-- Recall's proximity signal (dm_private.entity_proximity) reads, for each
-- candidate evidence, the relationships it supports. It now reads at most
-- the discovery fan-out of them, the first by relationship_id, so one
-- evidence row that supports thousands of relationships costs no more than
-- any other. With relationship_id after (team_id, evidence_id) that bounded
-- read is one index range in order, with no sort of every link. The old
-- (team_id, evidence_id) index is a prefix of the new one and goes.

SET LOCAL ROLE densemem_owner;

CREATE INDEX relationship_evidence_by_evidence_idx_v2 ON dm_private.relationship_evidence
(team_id, evidence_id, relationship_id);
DROP INDEX dm_private.relationship_evidence_by_evidence_idx;
ALTER INDEX dm_private.relationship_evidence_by_evidence_idx_v2 RENAME TO relationship_evidence_by_evidence_idx;
COMMENT ON INDEX dm_private.relationship_evidence_by_evidence_idx IS
'The relationships an evidence row supports, in relationship_id order (proximity reads the first fan-out of them; erasure and trace read them all).';
