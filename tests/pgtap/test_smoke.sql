BEGIN;
SELECT plan(2);
SELECT has_schema('dm', 'the public API schema exists');
SELECT has_table('dm_private', 'evidence', 'evidence lives in the private schema');
SELECT * FROM finish();
ROLLBACK;
