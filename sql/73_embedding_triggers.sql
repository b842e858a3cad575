-- Stage 73: the current definition of the embedding triggers' functions.
--
-- Migration 0015 creates these functions (its triggers need them) and the
-- triggers themselves; this file is their current definition, so a change
-- lands here, not in the migration. The triggers are described first: on a
-- database that has not run 0015 yet this file then fails and waits for it.

COMMENT ON TRIGGER search_documents_version_changed ON dm_private.search_documents IS
'A new document or source version makes the document pending and drops its claim (the old vector is then stale).';
COMMENT ON TRIGGER search_documents_notify_inserted ON dm_private.search_documents IS
'NOTIFY densemem_embed when a pending search document is inserted.';
COMMENT ON TRIGGER search_documents_notify_pending ON dm_private.search_documents IS
'NOTIFY densemem_embed when a search document becomes pending or changes version.';

-- A new document version always needs a new vector: whatever the writer
-- set, a change of document_version or source_version makes the document
-- pending again, resets its attempts and error, and drops any claim, so that
-- the next claim (not a claim expiry) picks the new version up. An in-flight
-- vector of the old version is then rejected by the version check on store.
CREATE OR REPLACE FUNCTION dm_private.search_document_version_changed()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
    NEW.search_state := 'pending';
    NEW.pending_since := COALESCE(NEW.pending_since, pg_catalog.now());
    NEW.embed_attempts := 0;
    NEW.last_error := NULL;
    NEW.claimed_until := NULL;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION dm_private.search_document_version_changed() IS
'Trigger: a new document or source version makes the search document pending, with no attempts, error or claim.';
REVOKE ALL ON FUNCTION dm_private.search_document_version_changed() FROM PUBLIC;

-- Workers LISTEN on channel densemem_embed; a document that becomes pending
-- (new, new version, contract change, retry) wakes them at commit. NOTIFY
-- folds identical notifications of one transaction into one, so a bulk
-- ingest sends one message. The payload is empty: workers claim from the
-- table, never from the message.
CREATE OR REPLACE FUNCTION dm_private.notify_embedding_workers()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
    PERFORM pg_catalog.pg_notify('densemem_embed', '');
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION dm_private.notify_embedding_workers() IS
'Trigger: wakes embedding workers (NOTIFY densemem_embed) when a search document becomes pending.';
REVOKE ALL ON FUNCTION dm_private.notify_embedding_workers() FROM PUBLIC;
