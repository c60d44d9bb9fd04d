-- Prepares runs with history, through the real protocol: :count runs whose
-- idempotency keys are ':prefix-1' ... ':prefix-N', each submitted (the workflow needs no
-- approval), acquired by owner 'bench', then walked :steps times through
-- transition_stage + start_stage + complete_stage.
--
-- A COMMIT every :commit_every steps (0: one transaction for everything). In ONE
-- transaction every superseded current stage stays in the stages_current index as a
-- version that only a later transaction can prune, so each probe walks all of them
-- (quadratic in the steps of that transaction); bench/history.sh commits every 100 steps,
-- with ANALYZE every 1000 steps.
-- With :analyze_every > 0, ANALYZE baton.stages every that many steps, so that the plans
-- of this session see the runs grow (see bench/history.sh, "Statistics").
-- psql variables: tenant, prefix, count, steps, commit_every, analyze_every.
SELECT pg_catalog.set_config('bench.tenant', :'tenant', false),
       pg_catalog.set_config('bench.prefix', :'prefix', false),
       pg_catalog.set_config('bench.count', :'count', false),
       pg_catalog.set_config('bench.steps', :'steps', false),
       pg_catalog.set_config('bench.commit_every', :'commit_every', false),
       pg_catalog.set_config('bench.analyze_every', :'analyze_every', false) \gset
DO $$
DECLARE
    t uuid := current_setting('bench.tenant');
    prefix text := current_setting('bench.prefix');
    runs int := current_setting('bench.count');
    steps int := current_setting('bench.steps');
    commit_every int := current_setting('bench.commit_every');
    analyze_every int := current_setting('bench.analyze_every');
    r uuid;
    g bigint;
    s bigint;
    done bigint := 0;
BEGIN
    FOR k IN 1..runs LOOP
        r := baton.submit(t, 'history_bench', '{}', prefix || '-' || k);
        g := baton.acquire_run(t, r, 'bench', '1 day');
        FOR i IN 1..steps LOOP
            SELECT stage_id INTO s FROM baton.transition_stage(t, r, g);
            PERFORM baton.start_stage(t, r, g, s);
            PERFORM baton.complete_stage(t, r, g, s, '{"ok": true}');
            done := done + 1;
            IF commit_every > 0 AND done % commit_every = 0 THEN
                COMMIT;
            END IF;
            IF analyze_every > 0 AND done % analyze_every = 0 THEN
                ANALYZE baton.stages;
            END IF;
        END LOOP;
    END LOOP;
END $$;
