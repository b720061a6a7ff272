import type { Config } from '../../src/config.js';
import { startHttp, type RunningHttp } from '../../src/http-process.js';
import { createLogger } from '../../src/log.js';
import { freePort, testConfig } from './env.js';

export interface TestServer extends RunningHttp {
  url: string;
  config: Config;
}

/** Starts a real uWS HTTP process in this test's process, on a free port, with its own Redis prefix. */
export async function startTestServer(overrides: Record<string, string> = {}): Promise<TestServer> {
  // The issuer must be the real address, so pick the port before configuring.
  const port = overrides.PORT ?? String(await freePort());
  const config = testConfig({ PORT: port, ISSUER: `http://127.0.0.1:${port}`, ...overrides });
  const running = await startHttp(config, createLogger(config.logLevel, { role: 'test' }));
  return { ...running, config, url: `http://127.0.0.1:${running.port}` };
}
