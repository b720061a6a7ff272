import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { TenantStore } from '../../src/store/index.js';

// Every repository of the tenant-bound store must be covered by a two-tenant test (test/store/two-tenants-*.test.ts),
// so a repository added later without one fails the build.
const here = path.dirname(fileURLToPath(import.meta.url));
const sources = path.resolve(here, '../../../test/store');

t.test('every TenantStore repository has a two-tenant test', async (t) => {
  const repos = Object.entries(Object.getOwnPropertyDescriptors(TenantStore.prototype)).filter(([, d]) => d.get).map(([name]) => name);
  t.ok(repos.length >= 2, `found ${repos.length} repositories`);
  const tests = fs.readdirSync(sources).filter((f) => /^two-tenants-.+\.test\.ts$/.test(f) && f !== 'two-tenants-coverage.test.ts')
    .map((f) => fs.readFileSync(path.join(sources, f), 'utf8')).join('\n');
  for (const r of repos) t.match(tests, new RegExp(`\\.${r}\\b`), `${r} is exercised by a two-tenant test`);
});
