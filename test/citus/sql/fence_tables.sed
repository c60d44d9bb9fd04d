# fence_tables' Citus form.
#
# A distributed install refuses key limits (0A000, docs/guide/limits.md): fill() limits no key
# and enqueues no keyed delivery there, so the fence's checks of key_limits, key_slots and
# key_waiting find their tables empty (r).
/PERFORM baton.limit_key(t, 'fence-bound', 1, 'one');/d
/PERFORM baton.enqueue_keyed(t, 'fence-bound', 'kk' || i, 'one') FROM generate_series(1, 2) i;/d
