-- ===========================================================================
-- Recurring schedules (0.8.0): baton.schedule(tenant, name, target, spec, payload,
-- binding, time_zone), baton.unschedule(tenant, name), the view baton.schedules and
-- baton.fire_schedules(max_rows). Every refusal; create, replace and remove; slots read
-- in a time zone, daylight-saving time included; firing: one delivery per slot, with
-- its dedup key and cause, never twice, only the latest missed slot after a pause, a
-- fenced tenant's schedules skipped until it is active again; the grants.
-- next_fire_at depends on now(): it is checked against values computed from now() by
-- Postgres' own timestamptz arithmetic.
-- ===========================================================================
\set a '00000000-0000-0000-05c0-00000000000a'
\set b '00000000-0000-0000-05c0-00000000000b'
\set f '00000000-0000-0000-05c0-00000000000f'
\set u '00000000-0000-0000-05c0-0000000000ff'
SELECT baton.create_tenant(:'a');
SELECT baton.create_tenant(:'b');
SELECT baton.create_tenant(:'f');
SELECT baton.set_tenant_state(:'f', 'fenced');

-- What schedule() returns: the schedule's next_fire_at, as the view shows it after the call.
CREATE FUNCTION pg_temp.returns_next(returned timestamptz, t uuid, n text) RETURNS text
    LANGUAGE sql AS $$
    SELECT CASE WHEN returned IS NOT DISTINCT FROM s.next_fire_at THEN 'its next_fire_at'
                ELSE 'not its next_fire_at: ' || coalesce(returned::text, 'NULL') END
      FROM baton.schedules s WHERE s.tenant = t AND s.name = n $$;

-- The view's columns, in the contract's order.
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'baton.schedules'::regclass AND attnum > 0 ORDER BY attnum;

-- ---------------------------------------------------------------------------
-- Refusals. NULLs: 22004 naming the argument.
-- ---------------------------------------------------------------------------
SELECT baton.schedule(NULL, 'n', 't', '@daily');
SELECT baton.schedule(:'a', NULL, 't', '@daily');
SELECT baton.schedule(:'a', 'n', NULL, '@daily');
SELECT baton.schedule(:'a', 'n', 't', NULL);
SELECT baton.schedule(:'a', 'n', 't', '@daily', NULL);
SELECT baton.schedule(:'a', 'n', 't', '@daily', '{}', NULL);
SELECT baton.schedule(:'a', 'n', 't', '@daily', time_zone => NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.unschedule(NULL, 'n');
SELECT baton.unschedule(:'a', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.fire_schedules(NULL);
\echo :LAST_ERROR_SQLSTATE
-- Lengths: a name has 1 to 200 characters (as a target), so does a target.
SELECT baton.schedule(:'a', '', 't', '@daily');
SELECT baton.schedule(:'a', repeat('n', 201), 't', '@daily');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.schedule(:'a', 'n', repeat('t', 201), '@daily');
SELECT baton.unschedule(:'a', repeat('n', 201));
SELECT baton.fire_schedules(0);
SELECT baton.fire_schedules(100001);
\echo :LAST_ERROR_SQLSTATE
-- A spec that is not one: 22023 naming "spec", the detail naming the field and why.
SELECT baton.schedule(:'a', 'n', 't', '0 24 * * *');
SELECT baton.schedule(:'a', 'n', 't', '0 0 * FOO *');
SELECT baton.schedule(:'a', 'n', 't', '*/0 * * * *');
SELECT baton.schedule(:'a', 'n', 't', '* * * *');
SELECT baton.schedule(:'a', 'n', 't', '0 0 30 2 *');
SELECT baton.schedule(:'a', 'n', 't', '@every 366 days');
SELECT baton.schedule(:'a', 'n', 't', '@fortnightly');
SELECT baton.schedule(:'a', 'n', 't', '');
SELECT baton.schedule(:'a', 'n', 't', repeat(' ', 201));
\echo :LAST_ERROR_SQLSTATE
-- A time zone Postgres does not know: 22023 naming "time_zone".
SELECT baton.schedule(:'a', 'n', 't', '@daily', time_zone => 'Mars/Olympus_Mons');
SELECT baton.schedule(:'a', 'n', 't', '@daily', time_zone => '');
SELECT baton.schedule(:'a', 'n', 't', '@daily', time_zone => repeat('x', 300));
\echo :LAST_ERROR_SQLSTATE
-- Payload and binding: objects within the size limit, as enqueue's; a binding carries
-- no cause (fire_schedules sets it).
SELECT baton.schedule(:'a', 'n', 't', '@daily', '[1]');
SELECT baton.schedule(:'a', 'n', 't', '@daily', '{}', '"b"');
SELECT baton.schedule(:'a', 'n', 't', '@daily', '{}', '{"cause": {"event": "e"}}');
SELECT baton.schedule(:'a', 'n', 't', '@daily', '{}', '{"cause": 7}');
SELECT baton.schedule(:'a', 'n', 't', '@daily', jsonb_build_object('x', repeat('x', 1100000)));
\echo :LAST_ERROR_SQLSTATE
-- Tenants: unknown or fenced is DU002, for schedule and unschedule.
SELECT baton.schedule(:'u', 'n', 't', '@daily');
SELECT baton.schedule(:'f', 'n', 't', '@daily');
SELECT baton.unschedule(:'f', 'n');
\echo :LAST_ERROR_SQLSTATE
-- Nothing was written.
SELECT count(*) AS schedules FROM baton.schedules;

-- ---------------------------------------------------------------------------
-- Create: next_fire_at is the first slot after now.
-- ---------------------------------------------------------------------------
-- One transaction (one now()) from the creates to the checks.
BEGIN;
SELECT pg_temp.returns_next(baton.schedule(:'a', 'hourly', 'reports', '@every 1 hour', '{"kind": "hourly"}'), :'a', 'hourly');
SELECT pg_temp.returns_next(baton.schedule(:'a', 'daily', 'reports', '@daily'), :'a', 'daily');
SELECT pg_temp.returns_next(baton.schedule(:'a', 'kolkata', 'reports', '30 2 * * *', time_zone => 'Asia/Kolkata'), :'a', 'kolkata');
SELECT pg_temp.returns_next(baton.schedule(:'a', 'new_york', 'reports', '30 2 * * *', time_zone => 'America/New_York'), :'a', 'new_york');
SELECT pg_temp.returns_next(baton.schedule(:'b', 'hourly', 'other', '@HOURLY'), :'b', 'hourly');
-- @every 1 hour: on the hour UTC; @daily in UTC (the default zone): midnight UTC.
SELECT name, target, spec, time_zone, last_fired_at, last_delivery_id,
       next_fire_at = date_trunc('hour', now()) + interval '1 hour' AS next_hour
  FROM baton.schedules WHERE tenant = :'a' AND name = 'hourly';
SELECT next_fire_at = (date_trunc('day', now() AT TIME ZONE 'UTC') + interval '1 day') AT TIME ZONE 'UTC'
       AS next_midnight_utc
  FROM baton.schedules WHERE tenant = :'a' AND name = 'daily';
-- 02:30 in Asia/Kolkata (no daylight-saving time): the first 02:30 there after now.
SELECT next_fire_at = (SELECT min((d::date + time '02:30') AT TIME ZONE 'Asia/Kolkata')
                         FROM generate_series((now() AT TIME ZONE 'Asia/Kolkata')::date - 1,
                                              (now() AT TIME ZONE 'Asia/Kolkata')::date + 2, interval '1 day') d
                        WHERE (d::date + time '02:30') AT TIME ZONE 'Asia/Kolkata' > now()) AS first_0230_kolkata
  FROM baton.schedules WHERE tenant = :'a' AND name = 'kolkata';
-- 02:30 in America/New_York: within a day (and an hour) from now, at 02:30 there, or at
-- 03:00 on a day of 23 hours (the clocks jump from 02:00 to 03:00: the gap's slot).
SELECT next_fire_at > now() AND next_fire_at <= now() + interval '25 hours' AS within_a_day,
       local::time = '02:30'
       OR (local::time = '03:00' AND ((local::date + 1)::timestamp AT TIME ZONE 'America/New_York')
                                     - (local::date::timestamp AT TIME ZONE 'America/New_York') = interval '23 hours')
       AS at_0230_local
  FROM (SELECT next_fire_at, next_fire_at AT TIME ZONE 'America/New_York' AS local
          FROM baton.schedules WHERE tenant = :'a' AND name = 'new_york') s;
SELECT tenant = :'b' AS b, name, spec, next_fire_at = date_trunc('hour', now()) + interval '1 hour' AS next_hour
  FROM baton.schedules WHERE tenant = :'b';

COMMIT;
-- ---------------------------------------------------------------------------
-- Daylight-saving time, by value: zones given as POSIX rules (what SET TimeZone
-- accepts too) whose clocks change three days from now. "<-05>5<-04>,N/2,M/2" is
-- UTC-5, and UTC-4 from day N at 02:00 to day M at 02:00 (N, M: days of the year from 0).
-- The specs name that day of the month, so their next slot is on it.
-- ---------------------------------------------------------------------------
SELECT (now() AT TIME ZONE 'UTC')::date + 3 AS day,
       extract(day FROM (now() AT TIME ZONE 'UTC')::date + 3) AS dom,
       extract(doy FROM (now() AT TIME ZONE 'UTC')::date + 3)::int - 1 AS n \gset
SELECT format('<-05>5<-04>,%s/2,%s/2', :n, (:n + 100) % 365) AS jump_zone,
       format('<-05>5<-04>,%s/2,%s/2', (:n + 265) % 365, :n) AS back_zone \gset
-- The zone as Postgres reads it: 01:59:59 then 03:00:00 on the day of the jump, 01:59:59
-- twice on the day the clocks go back (times of day, all four on that day).
SELECT to_char(j.before_jump, 'HH24:MI:SS') AS before_jump, to_char(j.after_jump, 'HH24:MI:SS') AS after_jump,
       to_char(j.before_back, 'HH24:MI:SS') AS before_back, to_char(j.after_back, 'HH24:MI:SS') AS after_back,
       ARRAY[j.before_jump::date, j.after_jump::date, j.before_back::date, j.after_back::date]
         = array_fill(:'day'::date, ARRAY[4]) AS on_the_day
  FROM (SELECT (:'day'::date + time '06:59:59') AT TIME ZONE 'UTC' AT TIME ZONE :'jump_zone' AS before_jump,
               (:'day'::date + time '07:00:00') AT TIME ZONE 'UTC' AT TIME ZONE :'jump_zone' AS after_jump,
               (:'day'::date + time '05:59:59') AT TIME ZONE 'UTC' AT TIME ZONE :'back_zone' AS before_back,
               (:'day'::date + time '06:59:59') AT TIME ZONE 'UTC' AT TIME ZONE :'back_zone' AS after_back) j;
-- 02:30 does not exist that day: a fixed-time spec fires once at the jump, 03:00 new
-- time (07:00 UTC); a wildcard spec has no slot in the gap and goes on on the next day
-- of its month, at 02:00 (06:00 UTC, in daylight-saving time).
SELECT pg_temp.returns_next(baton.schedule(:'a', 'gap_fixed', 'dst', format('30 2 %s * *', :dom), time_zone => :'jump_zone'), :'a', 'gap_fixed');
SELECT pg_temp.returns_next(baton.schedule(:'a', 'gap_wildcard', 'dst', format('*/30 2 %s * *', :dom), time_zone => :'jump_zone'), :'a', 'gap_wildcard');
-- 01:30 exists twice on the day the clocks go back: a fixed-time spec fires at the first
-- occurrence, 01:30 daylight-saving time (05:30 UTC), not at 01:30 standard (06:30 UTC).
SELECT pg_temp.returns_next(baton.schedule(:'a', 'twice_fixed', 'dst', format('30 1 %s * *', :dom), time_zone => :'back_zone'), :'a', 'twice_fixed');
SELECT name, next_fire_at = (:'day'::date + time '07:00') AT TIME ZONE 'UTC' AS at_jump
  FROM baton.schedules WHERE tenant = :'a' AND name = 'gap_fixed';
SELECT name, next_fire_at = (SELECT (min(d)::date + time '06:00') AT TIME ZONE 'UTC'
                               FROM generate_series(:'day'::date + 1, :'day'::date + 62, interval '1 day') d
                              WHERE extract(day FROM d) = :dom) AS next_month_0200
  FROM baton.schedules WHERE tenant = :'a' AND name = 'gap_wildcard';
SELECT name, next_fire_at = (:'day'::date + time '05:30') AT TIME ZONE 'UTC' AS first_0130
  FROM baton.schedules WHERE tenant = :'a' AND name = 'twice_fixed';

-- ---------------------------------------------------------------------------
-- Replace: the new target, spec, zone, payload and binding. With the same spec and
-- zone, the slot the schedule waits for stays (here one made due by hand, as after a
-- stop of the server); with another spec, next_fire_at is the new spec's next slot.
-- ---------------------------------------------------------------------------
UPDATE baton.schedule_rows SET next_fire_at = '2026-01-01 00:00+00' WHERE tenant = :'a' AND name = 'daily';
SELECT pg_temp.returns_next(baton.schedule(:'a', 'daily', 'reports2', '@daily', '{"v": 2}'), :'a', 'daily');
SELECT target, next_fire_at = '2026-01-01 00:00+00' AS kept_due FROM baton.schedules
 WHERE tenant = :'a' AND name = 'daily';
BEGIN;
SELECT pg_temp.returns_next(baton.schedule(:'a', 'daily', 'reports2', '@every 1 hour', '{"v": 3}'), :'a', 'daily');
SELECT target, spec, next_fire_at = date_trunc('hour', now()) + interval '1 hour' AS next_hour,
       (SELECT payload FROM baton.schedule_rows WHERE tenant = :'a' AND name = 'daily') AS payload
  FROM baton.schedules WHERE tenant = :'a' AND name = 'daily';
COMMIT;
-- The same zone written otherwise is another zone text: next_fire_at is computed again.
SELECT pg_temp.returns_next(baton.schedule(:'a', 'daily', 'reports2', '@every 1 hour', time_zone => 'utc'), :'a', 'daily');
SELECT time_zone FROM baton.schedules WHERE tenant = :'a' AND name = 'daily';

-- ---------------------------------------------------------------------------
-- Unschedule: true once, then false; another tenant's schedule of the same name stays.
-- ---------------------------------------------------------------------------
SELECT baton.unschedule(:'a', 'hourly');
SELECT baton.unschedule(:'a', 'hourly');
SELECT baton.unschedule(:'a', 'no such schedule');
SELECT tenant = :'b' AS b, name FROM baton.schedules WHERE name = 'hourly';

-- ---------------------------------------------------------------------------
-- Firing. Only the schedules below exist from here on.
-- ---------------------------------------------------------------------------
SELECT count(*) AS removed FROM (SELECT baton.unschedule(tenant, name) FROM baton.schedules) s;
-- Nothing is due: nothing fires.
SELECT baton.fire_schedules();
-- @every 1 second: after a second, its slot (the whole second at or before now) is
-- enqueued once: a second call in the same transaction (the same now()) finds nothing due.
SELECT pg_temp.returns_next(baton.schedule(:'a', 'tick', 'ticks', '@every 1 second', '{"p": 1}', '{"k": "v"}'), :'a', 'tick');
SELECT pg_sleep(1.1);
BEGIN;
SELECT baton.fire_schedules() AS fired;
SELECT baton.fire_schedules() AS fired_again;
SELECT last_fired_at = date_trunc('second', now()) AS slot_is_now_floored,
       next_fire_at = date_trunc('second', now()) + interval '1 second' AS next_second,
       last_delivery_id IS NOT NULL AS has_delivery
  FROM baton.schedules WHERE tenant = :'a' AND name = 'tick';
-- The delivery: the schedule's target and payload, dedup key schedule:<name>:<slot>,
-- its binding with cause {"schedule": "<slot>"}, pending, due now.
SELECT d.target, d.payload, d.status, d.run_after = now() AS due_now,
       d.dedup_key = 'schedule:tick:' || to_char(s.last_fired_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS key,
       d.binding = jsonb_build_object('k', 'v', 'cause',
                     jsonb_build_object('schedule', to_char(s.last_fired_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')))
         AS binding
  FROM baton.schedules s JOIN baton.deliveries d ON d.tenant = s.tenant AND d.id = s.last_delivery_id
 WHERE s.tenant = :'a' AND s.name = 'tick';
COMMIT;
-- The slot's delivery is claimed like any other.
SELECT dedup_key LIKE 'schedule:tick:%' AS scheduled, payload FROM baton.claim(:'a', 'ticks', '1 minute');

-- After a pause of three seconds (three slots missed), only the latest slot fires, once.
SELECT count(*) AS before FROM baton.deliveries WHERE tenant = :'a' AND target = 'ticks' \gset
SELECT pg_sleep(3.2);
BEGIN;
SELECT baton.fire_schedules() AS fired;
SELECT count(*) - :before AS new_deliveries,
       max(created_at) = now() AS created_now
  FROM baton.deliveries WHERE tenant = :'a' AND target = 'ticks';
SELECT last_fired_at = date_trunc('second', now()) AS latest_slot FROM baton.schedules WHERE name = 'tick';
COMMIT;
-- A slot whose delivery is there already (enqueued by hand with its key) is not
-- enqueued again: the schedule advances and points at that delivery.
SELECT pg_sleep(1.1);
BEGIN;
SELECT baton.enqueue(:'a', 'ticks', 'schedule:tick:' || to_char(date_trunc('second', now()) AT TIME ZONE 'UTC',
                     'YYYY-MM-DD"T"HH24:MI:SS"Z"'), '{"by": "hand"}') AS by_hand \gset
SELECT baton.fire_schedules() AS fired;
SELECT last_delivery_id = :by_hand AS points_at_it, last_fired_at = date_trunc('second', now()) AS advanced
  FROM baton.schedules WHERE name = 'tick';
COMMIT;
SELECT baton.unschedule(:'a', 'tick');

-- max_rows: at most that many schedules fire per call, the longest due first.
SELECT pg_temp.returns_next(baton.schedule(:'a', 'm' || i, 'many', '@every 1 second'), :'a', 'm' || i) FROM generate_series(1, 3) i;
SELECT pg_sleep(1.1);
BEGIN;
SELECT baton.fire_schedules(2) AS fired;
SELECT baton.fire_schedules(2) AS fired;
COMMIT;
SELECT count(*) AS deliveries FROM baton.deliveries WHERE tenant = :'a' AND target = 'many';
SELECT count(*) AS removed FROM (SELECT baton.unschedule(:'a', 'm' || i) FROM generate_series(1, 3) i) s;

-- ---------------------------------------------------------------------------
-- A fenced tenant's schedules are skipped (not an error) and stay due; once the tenant
-- is active again, the latest missed slot fires, once.
-- ---------------------------------------------------------------------------
SELECT baton.set_tenant_state(:'f', 'active');
SELECT pg_temp.returns_next(baton.schedule(:'f', 'tick', 'ticks', '@every 1 second'), :'f', 'tick');
SELECT baton.set_tenant_state(:'f', 'fenced');
SELECT pg_sleep(2.2);
SELECT baton.fire_schedules() AS fired_while_fenced;
SELECT next_fire_at < now() AS still_due, last_fired_at FROM baton.schedules WHERE tenant = :'f';
SELECT baton.set_tenant_state(:'f', 'active');
BEGIN;
SELECT baton.fire_schedules() AS fired_when_active;
-- (the floored now() read alone first: on Citus a join with deliveries may be run on
-- the tenant's node, whose transaction began later)
SELECT date_trunc('second', now()) AS slot_now \gset
SELECT count(*) AS deliveries, bool_and(d.id = s.last_delivery_id) AS its_delivery,
       bool_and(s.last_fired_at = :'slot_now') AS latest_slot
  FROM baton.deliveries d, baton.schedules s WHERE d.tenant = :'f' AND s.tenant = :'f';
COMMIT;
SELECT baton.unschedule(:'f', 'tick');

-- ---------------------------------------------------------------------------
-- Direct writes to baton.schedule_rows pass the tenant fence like every tenant table;
-- it cannot be truncated.
-- ---------------------------------------------------------------------------
SELECT baton.set_tenant_state(:'f', 'fenced');
INSERT INTO baton.schedule_rows (tenant, name, target, spec, time_zone) VALUES (:'f', 'x', 't', '@daily', 'UTC');
\echo :LAST_ERROR_SQLSTATE
TRUNCATE baton.schedule_rows;
-- A row whose stored spec cannot be read (written by hand) is stopped with a WARNING
-- when it comes due, and fires no more; the others fire.
INSERT INTO baton.schedule_rows (tenant, name, target, spec, time_zone, next_fire_at)
VALUES (:'a', 'broken', 't', 'every day', 'UTC', now() - interval '1 minute');
SELECT baton.fire_schedules() AS fired;
SELECT name, next_fire_at FROM baton.schedules WHERE name = 'broken';
SELECT baton.unschedule(:'a', 'broken');

-- ---------------------------------------------------------------------------
-- Grants: producers and admins schedule and unschedule; only admins fire and read the
-- view; workers do neither.
-- ---------------------------------------------------------------------------
CREATE ROLE baton_sched_producer;
CREATE ROLE baton_sched_worker;
CREATE ROLE baton_sched_admin;
SELECT baton.grant_producer('baton_sched_producer');
SELECT baton.grant_worker('baton_sched_worker');
SELECT baton.grant_admin('baton_sched_admin');
SELECT r.rolname, p.proname, has_function_privilege(r.oid, p.oid, 'EXECUTE') AS may
  FROM pg_roles r CROSS JOIN pg_proc p
 WHERE r.rolname LIKE 'baton_sched_%' AND p.pronamespace = 'baton'::regnamespace
   AND p.proname IN ('schedule', 'unschedule', 'fire_schedules')
 ORDER BY 1, 2;
SELECT r.rolname, has_table_privilege(r.oid, 'baton.schedules', 'SELECT') AS view,
       has_table_privilege(r.oid, 'baton.schedule_rows', 'SELECT') AS table
  FROM pg_roles r WHERE r.rolname LIKE 'baton_sched_%' ORDER BY 1;
SET ROLE baton_sched_producer;
SELECT baton.schedule(:'a', 'by_producer', 't', '@daily') > now() AS next_slot_ahead;
SELECT baton.fire_schedules();
SELECT count(*) FROM baton.schedules;
SELECT baton.unschedule(:'a', 'by_producer');
RESET ROLE;
SET ROLE baton_sched_worker;
SELECT baton.schedule(:'a', 'by_worker', 't', '@daily');
RESET ROLE;
SET ROLE baton_sched_admin;
SELECT pg_temp.returns_next(baton.schedule(:'a', 'by_admin', 't', '@daily'), :'a', 'by_admin');
SELECT baton.fire_schedules();
SELECT name FROM baton.schedules;
SELECT baton.unschedule(:'a', 'by_admin');
RESET ROLE;
DROP OWNED BY baton_sched_producer, baton_sched_worker, baton_sched_admin;
DROP ROLE baton_sched_producer, baton_sched_worker, baton_sched_admin;
