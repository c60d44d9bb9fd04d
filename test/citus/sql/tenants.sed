# tenants' Citus form.
#
# A COPY into a fenced tenant's shard is refused on the worker, and Citus (13.2 and 14.0)
# reports a COPY's error without the worker's SQLSTATE (XX000, its message and detail
# kept), while psql 15 leaves LAST_ERROR_SQLSTATE as it was after a failed COPY FROM
# STDIN and psql 18 sets it: after each COPY, instead of the SQLSTATE, the count of the
# rows it stored (none), the same on both.
/^COPY baton.deliveries (tenant, target, dedup_key) FROM stdin;$/,/^\\echo :LAST_ERROR_SQLSTATE$/s/^\\echo :LAST_ERROR_SQLSTATE$/SELECT count(*) AS copied FROM baton.deliveries WHERE tenant = :'t2' AND dedup_key = 'copied';/
