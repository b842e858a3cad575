-- 0033: the discovery walk reads eligible edges only.
--
-- The walk's per-entity fan-out is `LATERAL (... LIMIT fan_out)` over the
-- outgoing and incoming relationship indexes. Those indexes hold every
-- relationship, so status and tier were heap filters: on a hub whose first
-- edges in index order are candidates or retracted (a large unverified
-- import, say) the LIMIT read and discarded every one of them before it found
-- fan_out eligible edges, and the deadline is only checked between entities.
-- With these partial indexes the status / tier eligibility is the index's own
-- predicate: the scan reads eligible edges only, so a fan-out of 20 reads
-- about 20 index entries and heap rows whatever the hub holds. The remaining
-- filters (recorded time, valid time, inactive owners, excluded IDs) reject
-- few rows. The full indexes stay: conflict detection, corroboration and
-- the predicate skip scan look at relationships of any status.

SET LOCAL ROLE densemem_owner;

CREATE INDEX relationships_eligible_outgoing_idx ON dm_private.relationships
(team_id, subject_entity_id, predicate)
WHERE status = 'active'::dm_private.relationship_status
AND tier IN ('validated_claim'::dm_private.relationship_tier, 'fact'::dm_private.relationship_tier);
COMMENT ON INDEX dm_private.relationships_eligible_outgoing_idx IS
'Eligible (active, validated_claim or fact) outgoing edges of an entity by predicate: the discovery walk''s fan-out reads only these.';

CREATE INDEX relationships_eligible_incoming_idx ON dm_private.relationships
(team_id, object_entity_id, predicate)
WHERE object_entity_id IS NOT NULL
AND status = 'active'::dm_private.relationship_status
AND tier IN ('validated_claim'::dm_private.relationship_tier, 'fact'::dm_private.relationship_tier);
COMMENT ON INDEX dm_private.relationships_eligible_incoming_idx IS
'Eligible (active, validated_claim or fact) incoming edges of an entity by predicate: the discovery walk''s fan-out reads only these.';
