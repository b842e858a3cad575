-- 0034: equivalent relationships are one index range from either end.
--
-- Corroboration looks up, for each candidate edge, the relationships with the
-- same subject, predicate, object and polarity (0032 made that one range of
-- relationships_outgoing_idx). The planner estimates such a lookup at about
-- one row whichever index it takes, and after an ANALYZE of the 1M benchmark
-- graph it preferred the smaller relationships_incoming_idx (team_id,
-- object_entity_id, predicate): for an edge into a hub that read every
-- relationship into the hub with that predicate (thousands of heap rows per
-- edge, twice the CPU of the whole discovery call). With subject_entity_id
-- after its (team_id, object_entity_id, predicate) prefix the incoming index
-- is an exact range for the lookup too, so neither choice reads more than the
-- equivalents. The walk's incoming fan-out and every other user of the
-- prefix are served as before.

SET LOCAL ROLE densemem_owner;

DROP INDEX dm_private.relationships_incoming_idx;
CREATE INDEX relationships_incoming_idx ON dm_private.relationships
(team_id, object_entity_id, predicate, subject_entity_id)
WHERE object_entity_id IS NOT NULL;
COMMENT ON INDEX dm_private.relationships_incoming_idx IS
'Incoming edges of an entity by predicate, and (with subject_entity_id) equivalent relationships seen from the object.';
