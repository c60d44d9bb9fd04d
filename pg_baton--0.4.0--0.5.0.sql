-- pg_baton 0.4.0 -> 0.5.0: the row rules of baton.deliveries described where \d+,
-- \dt+ and \dd show them. No table, index, trigger or function changes; no row changes.
\echo Use "ALTER EXTENSION pg_baton UPDATE TO '0.5.0'" to load this file. \quit

-- The rules of a delivery row are checked by the table's trigger "fence" (the one \d
-- baton.deliveries lists), not by CHECK constraints (docs/internals/performance.md, "What made
-- each gain", 11.): a row that breaks one is refused with 23514 naming the column, the
-- value and the delivery, whatever wrote it.
COMMENT ON TABLE baton.deliveries IS
    'pg_baton deliveries. Row rules, checked on every row written by the trigger "fence" (SQLSTATE 23514): status is one of pending, claimed, finished, failed; max_attempts is at least 1. The tenant must be writable (DU002).';
COMMENT ON COLUMN baton.deliveries.status IS
    'Row rule (trigger "fence", 23514): one of pending, claimed, finished, failed.';
COMMENT ON COLUMN baton.deliveries.max_attempts IS
    'Row rule (trigger "fence", 23514): at least 1.';
COMMENT ON TRIGGER fence ON baton.deliveries IS
    'The tenant write fence (DU002) and the row rules of baton.deliveries (23514): status is one of pending, claimed, finished, failed; max_attempts is at least 1.';
