-- 0081: the write path may update an evidence link's copied columns in place.
--
-- Why (session 13): migration 0073's statement triggers recount an
-- evidence's evidence_link_endpoints row after every statement that changes
-- its links. An update of a relationship that stays eligible (its recorded
-- end, endpoints or owner) used to delete its links and insert them again:
-- two statements, two recounts of the same evidence (session 12: 2.8 M of a
-- 4.2 M instruction recorded-end update of one relationship). Its links keep
-- their key (team, evidence, relationship), so dm_private.relationship_links_updated
-- (sql/12) now updates them in place: one statement, one recount with both
-- transition tables.
--
-- Least privilege: UPDATE only on the four columns copied from the
-- relationship. The key columns stay out of the grant, so the service role
-- cannot move a link to another team, evidence or relationship (42501);
-- the existing policy "the service works inside the authenticated team"
-- (0038, FOR ALL, USING and WITH CHECK on the team) already keeps an update
-- to its own team's rows, so no policy is added.

SET LOCAL ROLE densemem_owner;

GRANT UPDATE (subject_entity_id, object_entity_id, owner_profile_id, known_to)
ON dm_private.evidence_entity_links TO densemem_app;
