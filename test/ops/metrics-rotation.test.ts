import t from 'tap';
import { migrate } from '../../src/store/migrate.js';
import { adminOf } from '../admin/helpers.js';
import { tempDatabase } from '../helpers/db.js';
import { scrape, value } from '../helpers/metrics.js';
import { waitFor } from '../helpers/processes.js';
import { startTestServer } from '../helpers/server.js';

// The lookup-key rotation is environment-wide: a database of this file's own. An operator sees the
// state the processes apply and when it last changed; platform administrators' requests are platform traffic.
const db = await tempDatabase();
await migrate(db.sql);
const srv = await startTestServer({ DATABASE_URL: db.url, LOOKUP_KEYRING_REFRESH_MS: '100' });
t.teardown(async () => { await srv.close(); await db.drop(); });
const P = '/api/admin/platform/control-plane/lookup-hmac/rotations';

t.test('svc_lookup_key_rotation_state follows a rotation from none to planned to blocked', async (t) => {
  const platform = await adminOf(srv, ['admin:*'], 'mrot', true);
  const state = async () => {
    const s = await scrape(srv.url);
    return { s, current: s.filter((x) => x.name === 'svc_lookup_key_rotation_state' && x.value === 1).map((x) => x.labels.state) };
  };
  t.same((await state()).current, ['none'], 'no rotation yet');
  const before = await scrape(srv.url);
  const started = Date.now();
  const res = await platform.call('POST', P, { operationId: 'metrics-rot' });
  t.ok(res.status === 201 || res.status === 200, `started (${res.status})`);
  t.equal(value(await scrape(srv.url), 'svc_http_requests_by_tenant_class_total', { tenant_class: 'platform', status_class: '2xx' })
    - value(before, 'svc_http_requests_by_tenant_class_total', { tenant_class: 'platform', status_class: '2xx' }), 1, 'a platform administrator\'s request');
  await waitFor(async () => (await state()).current.join() === 'planned', 10_000, 100);
  const changed = value((await state()).s, 'svc_lookup_key_rotation_last_change_timestamp_seconds');
  t.ok(changed >= Math.floor(started / 1000) - 1 && changed <= Date.now() / 1000 + 1, 'last change is the start');
  t.equal((await platform.call('POST', `${P}/metrics-rot/abort`, { reason: 'metrics test' })).status, 200);
  // Aborted before any key was distributed, nothing needs rolling back: the rotation ends at once (no live one).
  const row = (await platform.call('GET', `${P}/metrics-rot`)).body.rotation;
  const expected = row.finished_at === null ? row.state : 'none';
  await waitFor(async () => (await state()).current.join() === expected, 10_000, 100);
  t.pass(`after the abort the processes apply ${expected} (rotation ${row.state})`);
});
