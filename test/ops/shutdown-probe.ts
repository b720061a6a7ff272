/**
 * Preloaded (node --import) into the HTTP process that shutdown.test.ts stops. At exit it reports on
 * stderr whether the process ended by itself or was made to (process.exit), which intervals were
 * started and never cleared (with where they were started: an unref'd one does not hold the process,
 * but it is still work nobody stops), and what libuv still held beyond what the process had before the
 * service started (its stdout and stderr).
 */
// The process's own stdio handles exist from the start (creating them here, before anything else runs).
void process.stdout.fd; void process.stderr.fd;
const baseline = process.getActiveResourcesInfo();
const live = new Map<unknown, string>();
const { setInterval: realSetInterval, clearInterval: realClearInterval, clearTimeout: realClearTimeout } = globalThis;

globalThis.setInterval = ((fn: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) => {
  const timer = realSetInterval(fn, ms, ...args);
  live.set(timer, (new Error().stack ?? '').split('\n').slice(2, 5).map((l) => l.trim()).join(' | '));
  return timer;
}) as typeof setInterval;
globalThis.clearInterval = ((timer?: NodeJS.Timeout | string | number) => { live.delete(timer); realClearInterval(timer); }) as typeof clearInterval;
globalThis.clearTimeout = ((timer?: NodeJS.Timeout | string | number) => { live.delete(timer); realClearTimeout(timer); }) as typeof clearTimeout;

let forced = false;
const realExit = process.exit.bind(process);
process.exit = ((code?: number) => { forced = true; return realExit(code); }) as typeof process.exit;

process.on('exit', (code) => {
  const resources = process.getActiveResourcesInfo();
  for (const r of baseline) { const i = resources.indexOf(r); if (i >= 0) resources.splice(i, 1); }
  const report = { code, forced, intervals: [...live.values()], resources };
  process.stderr.write(`svc-shutdown-probe ${JSON.stringify(report)}\n`);
});
