-- pg_baton 0.5.0 -> 0.6.0: baton.distribute(), which hands pg_baton's tables and
-- functions to Citus (docs/guide/scale-out.md); the fence triggers name the table they guard,
-- so that the triggers Citus copies to the shards (deliveries_102008, ...) know it too.
\echo Use "ALTER EXTENSION pg_baton UPDATE TO '0.6.0'" to load this file. \quit

-- The same triggers, with the logical table as their argument.
CREATE OR REPLACE TRIGGER fence BEFORE INSERT OR UPDATE OR DELETE ON baton.deliveries
    FOR EACH ROW EXECUTE FUNCTION baton.fence_row('deliveries');
CREATE OR REPLACE TRIGGER fence BEFORE INSERT OR UPDATE OR DELETE ON baton.runs
    FOR EACH ROW EXECUTE FUNCTION baton.fence_row('runs');
CREATE OR REPLACE TRIGGER fence BEFORE INSERT OR UPDATE OR DELETE ON baton.target_bindings
    FOR EACH ROW EXECUTE FUNCTION baton.fence_row('target_bindings');
CREATE OR REPLACE TRIGGER fence BEFORE INSERT OR UPDATE OR DELETE ON baton.stages
    FOR EACH ROW EXECUTE FUNCTION baton.fence_row('stages');
CREATE OR REPLACE TRIGGER fence BEFORE INSERT OR UPDATE OR DELETE ON baton.markers
    FOR EACH ROW EXECUTE FUNCTION baton.fence_row('markers');
CREATE OR REPLACE TRIGGER fence BEFORE INSERT OR UPDATE OR DELETE ON baton.step_entries
    FOR EACH ROW EXECUTE FUNCTION baton.fence_row('step_entries');

-- Distributes pg_baton with Citus: run once on the coordinator after its workers are
-- added; idempotent.
CREATE FUNCTION baton.distribute() RETURNS void
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_distribute';
REVOKE ALL ON FUNCTION baton.distribute() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION baton.distribute() TO @extowner@ WITH GRANT OPTION;
