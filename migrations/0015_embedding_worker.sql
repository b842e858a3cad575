-- 0015: the embedding worker's roles, policies, indexes and triggers.
--
-- The worker is cross-team infrastructure: it claims pending search documents
-- of every team, embeds them and writes their vectors. It never acts for a
-- team, so it cannot run under the team policies of 0003. Two roles keep its
-- privileges small:
--
--   densemem_worker    what a worker login is granted (GRANT densemem_worker
--                      TO <login>). It holds no table privilege at all, only
--                      EXECUTE on the worker functions of sql/70-79.
--   densemem_embedder  owns those SECURITY DEFINER functions (search_path '').
--                      NOBYPASSRLS: it reaches other teams' rows only through
--                      the policies below, which name it and only the three
--                      tables it needs, and its column grants let it change
--                      nothing but the embedding bookkeeping of a document.
--
-- A policy is preferred over the BYPASSRLS attribute because the attribute is
-- cluster-wide and covers every table the role may ever be granted; a policy
-- covers one table and is visible in pg_policies.
--
-- Roles are cluster-wide, so they are created only when missing; this part
-- runs as the migrating superuser, the rest as densemem_owner.

DO $roles$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'densemem_worker') THEN
        CREATE ROLE densemem_worker NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'densemem_embedder') THEN
        CREATE ROLE densemem_embedder NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS;
    END IF;
END
$roles$;

COMMENT ON ROLE densemem_worker IS
'Dense-Mem embedding worker: EXECUTE on the worker functions only (claim, store, fail, release, backlog). Grant it to the login that runs `densemem embed`.';
COMMENT ON ROLE densemem_embedder IS
'Dense-Mem: owns the embedding worker''s SECURITY DEFINER functions. Reaches search documents of every team through its own named policies; never a login.';

-- The owner creates (CREATE OR REPLACE) the functions the embedder owns.
GRANT densemem_embedder TO densemem_owner;

SET LOCAL ROLE densemem_owner;

GRANT USAGE ON SCHEMA dm_private TO densemem_embedder;
GRANT USAGE ON SCHEMA dm TO densemem_worker;
GRANT USAGE ON SCHEMA dm_private TO densemem_worker;

-- Column grants: the embedder reads what it embeds and the bookkeeping it
-- checks, and may update only the bookkeeping (never body, versions or the
-- eligibility mirror).
GRANT SELECT (
    team_id, document_id, subject_kind, document_version, source_version, body, search_state,
    embed_attempts, last_error, claimed_until, pending_since
)
ON dm_private.search_documents TO densemem_embedder;
GRANT UPDATE (search_state, embed_attempts, last_error, claimed_until, pending_since, updated_at)
ON dm_private.search_documents TO densemem_embedder;
GRANT SELECT, INSERT, UPDATE, DELETE ON dm_private.document_embeddings TO densemem_embedder;
GRANT SELECT ON dm_private.embedding_contracts TO densemem_embedder;

CREATE POLICY "the embedding worker reads and updates search documents of every team"
ON dm_private.search_documents
AS PERMISSIVE FOR ALL TO densemem_embedder USING (true) WITH CHECK (true);
CREATE POLICY "the embedding worker writes vectors of every team"
ON dm_private.document_embeddings
AS PERMISSIVE FOR ALL TO densemem_embedder USING (true) WITH CHECK (true);
-- embedding_contracts already has "every dense-mem role reads embedding contracts";
-- the embedder is added by a policy of its own rather than by editing 0003.
CREATE POLICY "the embedding worker reads embedding contracts"
ON dm_private.embedding_contracts
AS PERMISSIVE FOR SELECT TO densemem_embedder USING (true);

-- Claims take the oldest pending documents of all teams. The team-leading
-- pending index of 0002 serves per-team freshness; a fair cross-team claim
-- order needs pending_since first. It is a plain (non-unique) partial index
-- holding pending rows only, so it stays small and distributes per shard.
CREATE INDEX search_documents_claim_order_idx
ON dm_private.search_documents (pending_since)
WHERE search_state = 'pending';

-- Freshness counts failed documents per team.
CREATE INDEX search_documents_failed_idx
ON dm_private.search_documents (team_id)
WHERE search_state = 'failed';

-- ---------------------------------------------------------------- triggers

-- A new document version always needs a new vector: whatever the writer
-- set, a change of document_version or source_version makes the document
-- pending again, resets its attempts and error, and drops any claim, so that
-- the next claim (not a claim expiry) picks the new version up. An in-flight
-- vector of the old version is then rejected by the version check on store.
CREATE FUNCTION dm_private.search_document_version_changed()
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

CREATE TRIGGER search_documents_version_changed
BEFORE UPDATE OF document_version, source_version ON dm_private.search_documents
FOR EACH ROW
WHEN (
    OLD.document_version IS DISTINCT FROM NEW.document_version
    OR OLD.source_version IS DISTINCT FROM NEW.source_version
)
EXECUTE FUNCTION dm_private.search_document_version_changed();

-- Workers LISTEN on channel densemem_embed; a document that becomes pending
-- (new, new version, contract change, retry) wakes them at commit. NOTIFY
-- folds identical notifications of one transaction into one, so a bulk
-- ingest sends one message. The payload is empty: workers claim from the
-- table, never from the message.
CREATE FUNCTION dm_private.notify_embedding_workers()
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

CREATE TRIGGER search_documents_notify_inserted
AFTER INSERT ON dm_private.search_documents
FOR EACH ROW
WHEN (NEW.search_state = 'pending')
EXECUTE FUNCTION dm_private.notify_embedding_workers();

CREATE TRIGGER search_documents_notify_pending
AFTER UPDATE ON dm_private.search_documents
FOR EACH ROW
WHEN (NEW.search_state = 'pending' AND (
    OLD.search_state IS DISTINCT FROM NEW.search_state
    OR OLD.document_version IS DISTINCT FROM NEW.document_version
    OR OLD.source_version IS DISTINCT FROM NEW.source_version
))
EXECUTE FUNCTION dm_private.notify_embedding_workers();
