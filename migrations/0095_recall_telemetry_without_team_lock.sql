-- 0095: a recall no longer locks its team's row.
--
-- Why (session 20, docs/RECALL.md "Telemetry without a lock on the team"):
-- the telemetry row every recall writes had a foreign key to teams (0002).
-- Its check runs `SELECT 1 FROM ONLY teams ... FOR KEY SHARE`, so every
-- recall, a read for its caller, locked the team's row: a WAL record and a
-- dirtied teams page per recall, and, when recalls of one team overlap, a
-- multixact for the row's lockers. Measured on the 1M / 1,000-team bench
-- database (`/tmp/s20/conc.py`: C clients recalling one 1k-10k team, one
-- transaction per recall, 10 s): 4 clients made 3,063 multixacts in 4,134
-- recalls and 8 clients 3,768 in 3,969; without the key, none. Multixact ids
-- are a finite space that anti-wraparound vacuums must reclaim, and every
-- one writes the multixact SLRUs: a steady recall load on one busy team would
-- have spent them at hundreds per second.
--
-- What the key guaranteed stays guaranteed without a lock:
-- dm_private.write_recall_telemetry writes a row only for the authenticated
-- team (require_team) and now refuses, with the key's SQLSTATE (23503), a
-- team with no teams row, in the statement that already reads the search
-- freshness figures (sql/95). No function deletes a team, and a team's
-- profiles, keys and evidence still hold foreign keys to it; the telemetry
-- rows of a team deleted by hand age out with the retention prune (sql/96).

ALTER TABLE dm_private.recall_telemetry DROP CONSTRAINT recall_telemetry_team_fkey;

COMMENT ON COLUMN dm_private.recall_telemetry.team_id IS
'The recalling team. No foreign key (0095): its check locked the teams row on every recall; dm_private.write_recall_telemetry refuses a team without a teams row (23503) instead.';
