-- 0037: corroboration reads equivalent relationships from the index alone.
--
-- Discovery counts other authors' equivalent relationships (same subject,
-- predicate, object and polarity) per candidate edge: one range of
-- relationships_outgoing_idx (0032). The range's keys were in the index but
-- its relationship_id and owner_profile_id were not, so every equivalent
-- was a heap visit, even the (usual) ones of the same author that are then
-- discarded; on the 1M bench graph, ~18 heap rows per edge and a third of a
-- discovery call's buffer hits. The same index with those two columns
-- included answers the range index-only. Same keys, same order.

SET LOCAL ROLE densemem_owner;

CREATE INDEX relationships_outgoing_idx_v2 ON dm_private.relationships
(team_id, subject_entity_id, predicate, object_entity_id, polarity)
INCLUDE (owner_profile_id, relationship_id);
DROP INDEX dm_private.relationships_outgoing_idx;
ALTER INDEX dm_private.relationships_outgoing_idx_v2 RENAME TO relationships_outgoing_idx;
COMMENT ON INDEX dm_private.relationships_outgoing_idx IS
'Outgoing edges of an entity by predicate (discovery walk, conflict detection), and equivalent relationships (same subject, predicate, object, polarity) with their owner for corroboration, index-only.';
