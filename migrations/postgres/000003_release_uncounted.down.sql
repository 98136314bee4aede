-- Back to migration 000002: the function gone, and readpast_pin_functions'
-- list as that migration left it.
DROP FUNCTION readpast_release_uncounted;

CREATE OR REPLACE FUNCTION readpast_pin_functions() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
              WHERE p.pronamespace = current_schema()::regnamespace
                AND p.proname IN ('readpast_claim', 'readpast_enqueue', 'readpast_end_attempts',
                                  'readpast_cancel', 'readpast_retry', 'readpast_mark_committed') LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = %I, pg_temp', f, current_schema());
    END LOOP;
END
$$;

SELECT readpast_pin_functions();
