-- The recall telemetry table's keys (migration 0095): no foreign key, since
-- its check took FOR KEY SHARE on the team's row in every recall (a multixact
-- whenever recalls of one team overlapped). The behaviour that replaces it
-- (no lock; 23503 for a team without a teams row) is pinned by
-- tests/python/test_recall_telemetry_team_lock.py.
BEGIN;
SELECT plan(3);

SELECT hasnt_fk('dm_private', 'recall_telemetry', 'recall_telemetry holds no foreign key (0095)');
SELECT col_is_pk('dm_private', 'recall_telemetry', ARRAY['team_id', 'recall_id'],
                 'recall_telemetry keeps (team_id, recall_id) as its primary key');
SELECT col_not_null('dm_private', 'recall_telemetry', 'team_id', 'every telemetry row names its team');

SELECT * FROM finish();
ROLLBACK;
