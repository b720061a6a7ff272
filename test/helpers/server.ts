import type { Config } from '../../src/config.js';
import { startHttp, type RunningHttp } from '../../src/http-process.js';
import { createLogger } from '../../src/log.js';
import { freePort, testConfig } from './env.js';

export interface TestServer extends RunningHttp {
  url: string;
  config: Config;
}

/**
 * Starts a real uWS HTTP process in this test's process, on a free port, with its own Redis prefix.
 * With `jobsWorker`, a jobs worker (workers/jobs-worker.ts) runs beside it, as the supervisor would
 * start one: the periodic sweeps, tenant purges, imports and rotations run there, never in HTTP processes.
 */
export async function startTestServer(overrides: Record<string, string> = {}, opts: { jobsWorker?: boolean } = {}): Promise<TestServer> {
  // The issuer must be the real address, so pick the port before configuring.
  const port = overrides.PORT ?? String(await freePort());
  const config = testConfig({ PORT: port, ISSUER: `http://127.0.0.1:${port}`, ...overrides });
  const running = await startHttp(config, createLogger(config.logLevel, { role: 'test' }));
  if (!opts.jobsWorker) return { ...running, config, url: `http://127.0.0.1:${running.port}` };
  const { startJobsWorker } = await import('../../workers/jobs-worker.js');
  const worker = await startJobsWorker(config, createLogger(config.logLevel, { role: 'jobs-worker' }));
  return {
    ...running, config, url: `http://127.0.0.1:${running.port}`,
    close: async () => { await worker.close(); return running.close(); },
  };
}
