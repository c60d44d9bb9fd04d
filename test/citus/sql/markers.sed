# markers' Citus form.
#
# The count of colliding ids across tenants joins stages and step_entries on id alone,
# not on the distribution column: Citus runs that join only as a repartition join,
# which is off by default (difference j). On for that one statement, so the count is
# made over every node.
/^SELECT count(\*) AS colliding_ids_any_tenant$/i\
SET citus.enable_repartition_joins = on;
/^  FROM baton.stages s JOIN baton.step_entries e ON e.id = s.id;$/a\
RESET citus.enable_repartition_joins;
# The takeover after A's lease expires. On one node the lease is 10 ms and lasts until
# COMMIT because now() is one value for the whole transaction; on Citus each node's
# transaction has its own now() (difference i), so a 10 ms lease may run out before B
# asks, by how long the statements take. Here the lease lasts 5 seconds, longer than
# the transaction's four statements take, and the wait after COMMIT outlasts it: the
# same checks (B refused while the lease lasts, none in doubt; B takes the run after
# it expired, with a newer generation), without relying on one now().
s/^-- (In one transaction now() stands still, so A's short lease lasts until COMMIT.)$/-- (On Citus each node has its own now(): A's lease lasts 5 seconds, and the wait outlasts it.)/
s/^\(SELECT baton.acquire_run(:'a', :'r2', 'A', \)'10 milliseconds'\() AS h1 \\gset\)$/\1'5 seconds'\2/
s/^SELECT pg_sleep(0.05);$/SELECT pg_sleep(5.1);/
