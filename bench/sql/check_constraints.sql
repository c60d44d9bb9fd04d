-- The row rules of baton.deliveries as declarative CHECK constraints, added to the
-- installed schema: the "check" side of bench/row_rules.sh and of
-- `bash bench/profile.sh --after-setup bench/sql/check_constraints.sql`.
ALTER TABLE baton.deliveries
    ADD CONSTRAINT deliveries_status_check CHECK (status IN ('pending', 'claimed', 'finished', 'failed')),
    ADD CONSTRAINT deliveries_max_attempts_check CHECK (max_attempts >= 1);
