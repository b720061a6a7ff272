import fs from 'node:fs';
import type postgresType from 'postgres';

/**
 * postgres.js 3.4.9 with its write scheduler repaired (upstream issues porsager/postgres#1154, #1208, open;
 * the fix proposed in #1209). Small writes wait for a setImmediate; a connection that closes meanwhile
 * (Postgres restarted or crashed, a connection cut) leaves three traps, all seen in
 * test/hardening/faults-under-load.test.ts and test/ops/pg-restart-driver.test.ts when Postgres restarts
 * under traffic:
 * - a statement sent on the dead connection (the ROLLBACK that sql.begin sends after a failed statement)
 *   writes to a null socket from an immediate: an uncaught TypeError that ends the process;
 * - closed() cancels the pending immediate without forgetting it, so the connection never flushes again:
 *   its next statements (and a reconnect's startup message) hang until connect_timeout or forever;
 * - closed() keeps the statement that was in flight as the connection's current one: after the reconnect,
 *   replies are matched to it first and the statements behind it wait.
 * The fix: a write with no socket rejects the connection's statements with CONNECTION_CLOSED (a catchable
 * error, answered 503); teardown forgets the cancelled immediate and its buffer; closed() forgets the
 * statement it has just rejected and the error received for it.
 *
 * The package's own modules are used unchanged except connection.js and index.js (which imports it):
 * both are loaded from their source with the fix applied, their other imports pointing at the installed
 * files. If the installed version's text differs, the patch refuses to load (check whether the new
 * version fixed it, then drop this module).
 */
const FIXES: Array<[string, string]> = [
  ['  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)',
    "  function nextWrite(fn) {\n    if (!socket) {\n      chunk = nextWriteTimer = null\n      error(Errors.connection('CONNECTION_CLOSED', options))\n      return false\n    }\n    const x = socket.write(chunk, fn)"],
  ['    clearImmediate(nextWriteTimer)\n    if (socket) {', '    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null\n    if (socket) {'],
  ['    clearImmediate(nextWriteTimer)\n    socket.removeListener', '    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null\n    socket.removeListener'],
  // closed() rejected the statement in flight but kept it (and a FATAL error received for it) as current:
  // the next connection's first ReadyForQuery settled that stale statement, and statements sent meanwhile
  // queued behind it.
  ["    !hadError && (query || sent.length) && error(Errors.connection('CONNECTION_CLOSED', options, socket))\n",
    "    !hadError && (query || sent.length) && error(Errors.connection('CONNECTION_CLOSED', options, socket))\n    query = errorResponse = null\n"],
];

const entry = import.meta.resolve('postgres');
const here = (file: string) => new URL(file, entry).href;
/** A module from source text; stack traces name it by `file` (sourceURL), not by its data: URL (the whole source). */
const asModule = (source: string, file: string) => `data:text/javascript;base64,${Buffer.from(`${source}\n//# sourceURL=${here(file)}?patched\n`).toString('base64')}`;
/** Relative imports of a package module, made absolute (a data: module cannot resolve relative ones). */
const absolute = (source: string, except: Record<string, string> = {}) =>
  source.replace(/from '\.\/([a-z]+\.js)'/g, (_, f: string) => `from '${except[f] ?? here(`./${f}`)}'`);

let connection = fs.readFileSync(new URL(here('./connection.js')), 'utf8');
for (const [from, to] of FIXES) {
  if (connection.split(from).length !== 2) throw new Error(`postgres.js connection.js is not the 3.4.9 text this patch expects (${JSON.stringify(from.slice(0, 40))}): see src/store/postgres-driver.ts`);
  connection = connection.replace(from, to);
}
const index = absolute(fs.readFileSync(new URL(here('./index.js')), 'utf8'), { 'connection.js': asModule(absolute(connection), './connection.js') });

/** The postgres.js client function (same API as `import postgres from 'postgres'`), repaired as above. */
const postgres = ((await import(asModule(index, './index.js'))) as { default: typeof postgresType }).default;
export default postgres;
