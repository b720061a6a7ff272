import { ServiceUnavailable } from '../errors.js';
import type { JobQueues } from '../jobs/queues.js';

/** Job data: ids only; the file and the mapping stay in Postgres. */
export interface UserJobData { tenantId: string; jobId: string; kind: 'import' | 'export' }

/** Queues an import or export (`user-job` in src/jobs/table.ts); the job id is the row's, so a repeat is a no-op. */
export async function enqueueUserJob(jobs: JobQueues, d: UserJobData): Promise<void> {
  try { await jobs.add('user-job', d, { name: d.kind, jobId: d.jobId }); } catch (err) { throw new ServiceUnavailable('The job could not be queued; retry shortly.', 1, err); }
}
