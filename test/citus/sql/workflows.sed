# workflows' Citus form.
#
# snap(), the digest of a run's rows, is a LANGUAGE sql function whose parameter (the
# run id) filters distributed tables: Citus 13.2 cannot plan that ("could not create
# distributed plan", difference k) and Citus 14 on PostgreSQL 18 can, so the file would
# print differently on the two. Here its statement is built with the run id as a
# literal (PL/pgSQL EXECUTE), which both plan: the same digest, and every check of the
# file that compares one (unchanged) runs on both.
/^CREATE FUNCTION pg_temp.snap(r uuid) RETURNS text LANGUAGE sql AS \$\$$/,/^\$\$;$/c\
CREATE FUNCTION pg_temp.snap(r uuid) RETURNS text LANGUAGE plpgsql AS $$\
DECLARE d text;\
BEGIN\
  EXECUTE format('SELECT md5((SELECT x::text FROM baton.runs x WHERE x.id = %1$L) || ''|'' || '\
                 'coalesce((SELECT string_agg(s::text, '';'' ORDER BY s.id) FROM baton.stages s '\
                 'WHERE s.run_id = %1$L), ''''))', r) INTO d;\
  RETURN d;\
END $$;
