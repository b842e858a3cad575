-- 0032: one outgoing index that also finds equivalent relationships.
--
-- Discovery counts, for every candidate edge, the other authors' equivalent
-- relationships (same subject, predicate, object and polarity). With
-- relationships_endpoints_idx (team_id, subject_entity_id, object_entity_id)
-- of 0030 that lookup read every relationship between the two endpoints and
-- filtered predicate and polarity on the heap: between two hubs of the 1M
-- benchmark graph that is about 320 heap rows per edge, 3,900 buffer hits per
-- recall, most of discovery's CPU time. The planner also could not be made
-- to prefer a wider sibling index, because it estimates the endpoint pair as
-- unique.
--
-- relationships_outgoing_idx is redefined with object_entity_id and polarity
-- after its (team_id, subject_entity_id, predicate) prefix: the walk's
-- per-entity fan-out (subject, predicate hints) and the write path's conflict
-- detection (subject, predicate) use the same prefix as before, and the
-- equivalence lookup becomes four equality conditions on one index range.
-- The 0030 endpoints index, used by nothing else, is dropped.

SET LOCAL ROLE densemem_owner;

DROP INDEX dm_private.relationships_endpoints_idx;
DROP INDEX dm_private.relationships_outgoing_idx;
CREATE INDEX relationships_outgoing_idx ON dm_private.relationships
(team_id, subject_entity_id, predicate, object_entity_id, polarity);
COMMENT ON INDEX dm_private.relationships_outgoing_idx IS
'Outgoing edges of an entity by predicate (discovery walk, conflict detection), and equivalent relationships (same subject, predicate, object, polarity) for corroboration.';
