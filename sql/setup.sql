CREATE EXTENSION pg_baton;
-- Run ids come from gen_random_uuid(), and the messages of refusals name the run: the
-- tests number their runs instead (00000000-0000-4000-8000-000000000001, ...), so that
-- the expected output can show those messages.
CREATE SEQUENCE regress_run_ids;
ALTER TABLE baton.runs ALTER COLUMN id
    SET DEFAULT ('00000000-0000-4000-8000-' || lpad(nextval('regress_run_ids')::text, 12, '0'))::uuid;
