-- 0036: index-only reads of an evidence row's eligible relationship endpoints.
--
-- Recall's proximity signal (dm_private.entity_proximity) and discovery's
-- seeds from the returned evidence both go from evidence IDs to the
-- endpoints of the eligible relationships they support: for 100 candidate
-- evidence that is ~500 relationship_evidence rows and ~500 relationships,
-- each a heap visit behind an index probe (`accepted` and status, tier,
-- endpoints, owner and recorded time live only in the heap). These two
-- partial covering indexes answer both steps from the index alone:
-- accepted links of an evidence in relationship_id order (the first fan-out
-- of them is what proximity reads), and the endpoints, owner and recorded
-- end of an eligible (active, validated_claim or fact) relationship.

SET LOCAL ROLE densemem_owner;

CREATE INDEX relationship_evidence_accepted_by_evidence_idx ON dm_private.relationship_evidence
(team_id, evidence_id, relationship_id)
WHERE accepted;
COMMENT ON INDEX dm_private.relationship_evidence_accepted_by_evidence_idx IS
'Accepted links of an evidence row in relationship_id order, index-only: proximity and discovery seeds read the first fan-out of them.';

CREATE INDEX relationships_eligible_endpoints_idx ON dm_private.relationships
(team_id, relationship_id)
INCLUDE (subject_entity_id, object_entity_id, owner_profile_id, known_to)
WHERE status = 'active'::dm_private.relationship_status
AND tier IN ('validated_claim'::dm_private.relationship_tier, 'fact'::dm_private.relationship_tier);
COMMENT ON INDEX dm_private.relationships_eligible_endpoints_idx IS
'Endpoints, owner and recorded end of eligible (active, validated_claim or fact) relationships, index-only: proximity and discovery seeds from evidence.';
