import { postgresDuration } from './metrics.js';
import type { StatementHook } from './sql-statements.js';

/**
 * Times every statement into svc_postgres_query_duration_seconds, from when postgres.js sends it to
 * its result, failures included. Every statement, not a sample: hot paths run none per request
 * (caches and Redis serve them), and one observe is small beside a round trip.
 */
export const timeStatement: StatementHook = () => {
  const t0 = performance.now();
  return () => postgresDuration.observe((performance.now() - t0) / 1000);
};
