import { ServiceUnavailable } from '../../errors.js';
import type { JobQueues } from '../../jobs/queues.js';

/** `work`: run what the state holds (reindex, verify, rollback, drop); `grace`: complete once grace has expired. */
export interface RotationJobData { operationId: string; kind: 'work' | 'grace' }

/** Queues rotation work (`lookup-rotation` in src/jobs/table.ts), after `delayMs`. */
export async function enqueueRotation(jobs: JobQueues, d: RotationJobData, delayMs = 0): Promise<void> {
  try { await jobs.add('lookup-rotation', d, { name: d.kind, delay: Math.max(0, delayMs) }); } catch (err) { throw new ServiceUnavailable('The rotation job could not be queued; retry shortly.', 1, err); }
}
