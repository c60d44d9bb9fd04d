-- The user_deletion workflow of the demo: the application's own code, not pg_baton's.
--
-- A request {"user": "u-42", "communities": ["c1", "c2", "c3"]} deletes one user from
-- every community of an inventory that a person approved (the approval is bound to the
-- digest of exactly these inputs). The stages:
--
--   gate_user      once, first: checks the user and blocks their sign-in
--   purge_db       per community: deletes the user's rows there, and says in its result
--                  whether the user has agents there: {"has_agents": true|false}
--   purge_agents   per community, only after a purge_db that found agents
--
-- The decide function routes between them. It keeps the run's progress in the run's
-- `state`, {"remaining": [...], "done": [...]} (a community stays in `remaining` until
-- it is fully purged), and gives each stage its inputs, {"community": "c2"}. The run
-- completes when `remaining` is empty.
--
-- Run with psql as a superuser (or a role with CREATE on the database), after
-- CREATE EXTENSION pg_baton.

CREATE SCHEMA app;

-- ctx: {"run": {"id", "workflow", "version", "inputs", "state"},
--       "stage": {"id", "name", "entry_seq", "attempt", "inputs", "result"}}
-- returns {"next": "<stage>", "inputs": {...}, "state": {...}}
--      or {"finish": "completed", "reason": "...", "state": {...}}
CREATE FUNCTION app.user_deletion_decide(ctx jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
    stage     text  := ctx->'stage'->>'name';
    result    jsonb := ctx->'stage'->'result';
    community text  := ctx->'stage'->'inputs'->>'community';
    remaining jsonb := ctx->'run'->'state'->'remaining';
    done      jsonb := ctx->'run'->'state'->'done';
BEGIN
    IF stage = 'gate_user' THEN
        -- The approved inventory is the run's inputs: start with its first community.
        remaining := ctx->'run'->'inputs'->'communities';
        IF jsonb_typeof(remaining) IS DISTINCT FROM 'array' OR jsonb_array_length(remaining) = 0 THEN
            RAISE EXCEPTION 'user_deletion: the request has no communities to purge';
        END IF;
        RETURN jsonb_build_object(
            'next',   'purge_db',
            'inputs', jsonb_build_object('community', remaining->0),
            'state',  jsonb_build_object('remaining', remaining, 'done', '[]'::jsonb));
    END IF;

    IF stage = 'purge_db' THEN
        IF jsonb_typeof(result->'has_agents') IS DISTINCT FROM 'boolean' THEN
            RAISE EXCEPTION 'user_deletion: purge_db of % saved no boolean has_agents', community;
        END IF;
        IF (result->>'has_agents')::boolean THEN
            -- Same community, next stage; the progress does not change.
            RETURN jsonb_build_object(
                'next',   'purge_agents',
                'inputs', jsonb_build_object('community', community));
        END IF;
    ELSIF stage <> 'purge_agents' THEN
        RAISE EXCEPTION 'user_deletion: unknown stage %', stage;
    END IF;

    -- purge_db without agents, or purge_agents: this community is done.
    remaining := remaining - community;
    done := done || to_jsonb(community);
    IF jsonb_array_length(remaining) = 0 THEN
        RETURN jsonb_build_object(
            'finish', 'completed',
            'reason', format('%s deleted from %s communities', ctx->'run'->'inputs'->>'user',
                             jsonb_array_length(done)),
            'state',  jsonb_build_object('remaining', remaining, 'done', done));
    END IF;
    RETURN jsonb_build_object(
        'next',   'purge_db',
        'inputs', jsonb_build_object('community', remaining->0),
        'state',  jsonb_build_object('remaining', remaining, 'done', done));
END
$$;

SELECT baton.define_workflow('user_deletion', '{
    "start": "gate_user",
    "requires_approval": true,
    "decide": "app.user_deletion_decide",
    "stages": {
        "gate_user":    { "next": ["purge_db"] },
        "purge_db":     { "next": ["purge_agents", "purge_db", "@finish"],
                          "max_attempts": 5, "retry_delay": "3 seconds" },
        "purge_agents": { "next": ["purge_db", "@finish"] } } }') AS version;
