// Loaded (node --import) into the process profiled by `npm run profile`. svc's HTTP process ends with
// process.exit() after draining; clinic's collectors only flush their sample files on 'beforeExit',
// so an explicit exit leaves a truncated file ("Decoded message is not valid"). This turns the first
// process.exit() into a 'beforeExit' (the collectors flush, then call process.exit() themselves),
// with a hard exit 10 s later if nothing does. Not used outside profiling.
//
// Also: clinic's collectors are preloaded with NODE_OPTIONS -r, which worker threads (svc's crypto
// pool) load too; they name their sample file after the pid, so every thread would write the main
// thread's file and corrupt it. Worker threads copy process.env when created, so renaming here (the
// main thread's collector has already opened its file) sends theirs to separate, ignored files.
for (const tool of ['DOCTOR', 'BUBBLEPROF']) process.env[`NODE_CLINIC_${tool}_NAME`] = `${process.pid}-threads`;
const realExit = process.exit.bind(process);
let exiting = false;
process.exit = ((code?: number) => {
  if (exiting) return realExit(code);
  exiting = true;
  if (code !== undefined) process.exitCode = code;
  setTimeout(() => realExit(code), 10_000);
  process.emit('beforeExit', code ?? 0);
  return undefined as never;
}) as typeof process.exit;
