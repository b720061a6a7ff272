import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import t from 'tap';

// The installed postgres.js carries patches/postgres+3.4.9.patch (applied by patch-package at install):
// each line the patch adds is in the module that `import 'postgres'` loads, and that module is the
// package's own file (so stack traces name node_modules/postgres/src/connection.js). Without the patch
// (an install that skipped the postinstall script) this fails before the slow fault tests would.
const root = new URL('../../../', import.meta.url);
const patch = fs.readFileSync(new URL('patches/postgres+3.4.9.patch', root), 'utf8');
const entry = fileURLToPath(import.meta.resolve('postgres'));

t.test('import "postgres" loads the patched connection.js from node_modules', async (t) => {
  t.match(entry, /node_modules\/postgres\/src\/index\.js$/);
  const version = (JSON.parse(fs.readFileSync(new URL('node_modules/postgres/package.json', root), 'utf8')) as { version: string }).version;
  t.equal(version, '3.4.9', 'the version the patch was made for');
  const installed = fs.readFileSync(new URL('./connection.js', import.meta.resolve('postgres')), 'utf8');
  const added = patch.split('\n').filter((l) => l.startsWith('+') && !l.startsWith('+++')).map((l) => l.slice(1));
  t.ok(added.length >= 8, 'the patch adds lines');
  const missing = added.filter((l) => l.trim() && !installed.includes(l));
  t.same(missing, [], 'every added line is installed');
});
