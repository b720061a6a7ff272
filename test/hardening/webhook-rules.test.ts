import t from 'tap';
import { startTestServer } from '../helpers/server.js';
import { adminOf } from '../admin/helpers.js';

// Issue 21 item 6: a roles filter on an event that carries no roles could never match; it is refused.
const srv = await startTestServer({ WEBHOOK_ALLOW_PRIVATE: 'true' });
t.teardown(() => srv.close());
const A = await adminOf(srv, ['admin:*'], 'whrules');

t.test('roles filters only on role events', async (t) => {
  for (const event of ['user.created', 'auth.login', 'policy.created']) {
    const r = await A.call('POST', '/api/admin/webhooks', { name: 'x', url: 'http://127.0.0.1:9/x', events: [event], filters: { [event]: { roles: ['admin'] } } });
    t.equal(r.status, 422, event);
    t.match(r.body.details[`filters.${event}.roles`][0], /can never match/);
  }
  const ok = await A.call('POST', '/api/admin/webhooks', { name: 'y', url: 'http://127.0.0.1:9/y', events: ['role.assigned', 'user.created'], filters: { 'role.assigned': { roles: ['admin'] } } });
  t.equal(ok.status, 201, 'role events take roles filters');
  const put = await A.call('PUT', `/api/admin/webhooks/${ok.body.id}`, { filters: { 'user.created': { roles: ['admin'] } } });
  t.equal(put.status, 422, 'also on update');
});
