import fs from 'node:fs';
import t from 'tap';
import type { Browser, Page } from 'playwright-core';
import { createLogger } from '../../src/log.js';
import { startJobsWorker } from '../../workers/jobs-worker.js';
import { CHROMIUM, launchChromium } from '../helpers/browser.js';
import { j } from '../helpers/http.js';
import { waitFor } from '../helpers/processes.js';
import { adminToken, setupTenant } from '../helpers/tokens.js';
import { startLoginEnv, uniqueEmail } from '../login/fixtures.js';
import { consoleBrowser } from './browser.js';

// The console's operations screens (issue 33): the dashboard's charts, approvals between two
// administrators, a 1,000-row import watched to the end, logging, sharding and lookup-key rotation;
// what a tenant administrator cannot see; a 403 said plainly; an expired access token renewed without
// a sign-in, and a session that cannot renew said to have expired. Real server, jobs worker and Chromium.
// Six browser walks with a real import: more than the runner's default two minutes.
t.setTimeout(300_000);
const env = await startLoginEnv({ USER_JOB_LOCK_MS: '2000' });
const jobs = await startJobsWorker(env.srv.config, createLogger('silent'));
t.teardown(async () => { await jobs.close(); await env.close(); });
const { srv, sink } = env;
const base = srv.url;
const browser: Browser | null = fs.existsSync(CHROMIUM) ? await launchChromium() : null;
t.teardown(() => browser?.close());

t.test('the dashboard endpoint: request totals by route group for platform administrators only', async (t) => {
  const platform = await setupTenant(srv, 'dash-platform', true);
  const other = await setupTenant(srv, 'dash-tenant');
  const get = async (token: string) => fetch(`${base}/api/admin/dashboard`, { headers: { authorization: `Bearer ${token}` } });
  const operator = await adminToken(srv, { tenantId: platform.tenant_id, permissions: ['admin:metrics:read'], platform: true });
  const before = await j(await get(operator));
  for (let i = 0; i < 3; i++) await fetch(`${base}/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=client_credentials' });
  const res = await get(operator);
  t.equal(res.status, 200);
  const after = await j(res);
  const token = (d: any) => d.groups.find((g: any) => g.name === 'token');
  t.ok(token(after).requests >= token(before).requests + 3, 'the three /token requests are counted');
  t.ok(token(after).client_errors >= token(before).client_errors + 3, 'as client errors (no client authentication)');
  t.ok(token(after).latency.le.length > 0 && token(after).latency.count >= 3, 'with their latency buckets');
  t.ok(after.at >= before.at);
  const tenantAdmin = await adminToken(srv, { tenantId: other.tenant_id, permissions: ['admin:*'] });
  const refused = await get(tenantAdmin);
  t.equal(refused.status, 403, 'a tenant administrator may not read the deployment\'s metrics');
  t.equal((await j(refused)).error, 'forbidden');
  const noPermission = await get(await adminToken(srv, { tenantId: platform.tenant_id, permissions: ['admin:tenants:read'], platform: true }));
  t.equal(noPermission.status, 403, 'nor a platform administrator without admin:metrics:read');
});

if (!browser) {
  t.comment('Chromium is not installed (apt-get install chromium): browser checks skipped');
} else {
  const ui = consoleBrowser(browser, srv, sink);
  const { watchedPage, checkScreen, signIn, call, administrator } = ui;

  /** Waits until the response to a request matching `match` arrives (started before the action that causes it). */
  const answered = (page: Page, match: (url: string, body: string) => boolean) =>
    page.waitForResponse((r) => match(r.url(), r.request().postData() ?? ''), { timeout: 20_000 });

  t.test('a platform operator\'s dashboard charts request rates, errors and latency', async (t) => {
    const platform = await setupTenant(srv, 'console-dash', true);
    const { email } = await administrator(platform.tenant_id, ['admin:metrics:read', 'admin:tenants:read', 'admin:control-plane:read', 'admin:settings:read']);
    const { page, problems } = await watchedPage();
    await signIn(page, platform.tenant_id, email);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    // Two readings make the first interval: a line for each route group is drawn.
    await page.getByText('Collecting the first interval…').waitFor({ state: 'detached', timeout: 20_000 });
    await page.locator('.recharts-line-curve').first().waitFor({ state: 'attached' });
    t.equal(await page.getByRole('img', { name: /Requests per second/ }).locator('.recharts-line-curve').count(), 5, 'a line per route group');
    t.ok(await page.getByRole('img', { name: /Requests per second/ }).isVisible(), 'the request rate chart');
    t.ok(await page.getByRole('img', { name: /Latency, 95th percentile/ }).isVisible(), 'the latency chart');
    t.ok(Number((await page.getByTestId('stat-Requests answered').textContent())!.replace(/\D/g, '')) > 0, 'requests answered so far');
    await checkScreen(t, page, 'dashboard');

    // Lookup-key rotation, platform only: started here, its state and progress shown.
    await page.getByRole('link', { name: 'Lookup keys' }).click();
    await page.getByRole('heading', { name: 'Lookup-key rotation' }).waitFor();
    t.equal(await page.getByRole('button', { name: 'Start a rotation with this id' }).count(), 0, 'no start button without admin:control-plane:write');
    await checkScreen(t, page, 'lookup-keys');

    // Sharding: the global generation and its history.
    await page.getByRole('link', { name: 'Sharding' }).click();
    await page.getByRole('table', { name: 'Current sharding' }).getByRole('cell', { name: 'global' }).waitFor();
    await checkScreen(t, page, 'sharding');
    t.same(problems, [], 'no console error, no CSP violation');
    await page.context().close();
  });

  t.test('an approval filed by one administrator waits in another\'s queue; approving it makes a grant, which is revoked', async (t) => {
    const tenant = await setupTenant(srv, 'console-approvals');
    const perms = ['admin:approvals:read', 'admin:approvals:write', 'admin:approvals:approve', 'admin:audit-log:read'];
    const a = await administrator(tenant.tenant_id, perms, 'requester');
    const b = await administrator(tenant.tenant_id, perms, 'approver');
    const target = await call(tenant.tenant_id, 'POST', '/api/admin/users', { email: uniqueEmail('customer') });

    const { page, problems } = await watchedPage();
    await signIn(page, tenant.tenant_id, a.email);
    await page.getByRole('link', { name: 'Approvals' }).click();
    await page.getByRole('link', { name: 'Request access' }).click();
    await page.getByLabel('Action').fill('read_profile');
    await page.getByLabel('User id').fill(target.body.id);
    await page.getByLabel('Audience').fill(tenant.clients.resource_server.audience);
    await page.getByLabel('Reason code').fill('support_case');
    await checkScreen(t, page, 'approval-create');
    await page.getByRole('button', { name: 'File request' }).click();
    await page.getByRole('heading', { name: 'Approval request' }).waitFor();
    const requestId = (await page.getByRole('table', { name: 'Request details' }).getByRole('row', { name: /^Request / }).getByRole('cell').textContent())!;
    t.match(requestId, /^apr_/, 'the request is filed');
    t.ok(await page.getByText('No grant yet').isVisible(), 'and has no grant yet');
    await page.getByRole('link', { name: 'Approvals' }).click();
    await page.getByRole('table', { name: 'Requests waiting for me' }).waitFor();
    await page.getByText('Nothing here yet.').waitFor();
    t.pass('the requester\'s own request is not waiting for them');

    const second = await watchedPage();
    const pb = second.page;
    await signIn(pb, tenant.tenant_id, b.email);
    await pb.getByRole('link', { name: 'Approvals' }).click();
    const queue = pb.getByRole('table', { name: 'Requests waiting for me' });
    await queue.getByRole('link', { name: requestId }).waitFor();
    await checkScreen(t, pb, 'approvals-queue');
    await queue.getByRole('link', { name: requestId }).click();
    await pb.getByRole('button', { name: 'Approve operator' }).click();
    const grants = pb.getByRole('table', { name: 'Elevation grants' });
    await grants.getByText('active', { exact: true }).waitFor();
    t.pass('approving the only step makes an active grant');
    await checkScreen(t, pb, 'approval-detail');
    await pb.getByRole('button', { name: 'Revoke grant' }).click();
    await pb.getByRole('dialog', { name: 'Revoke this grant?' }).waitFor();
    await checkScreen(t, pb, 'approval-revoke-confirm');
    await pb.getByRole('button', { name: 'Revoke', exact: true }).click();
    await grants.getByText('revoked', { exact: true }).waitFor();
    t.pass('the grant is revoked');
    const grantId = (await grants.getByRole('cell').first().textContent())!;
    const stored = await call(tenant.tenant_id, 'GET', `/api/admin/approvals/${requestId}`);
    t.equal(stored.body.grants.find((g: any) => g.public_grant_id === grantId).status, 'revoked', 'as the server says too');
    await pb.getByRole('link', { name: 'Approvals' }).click();
    await pb.getByText('Nothing here yet.').waitFor();
    t.pass('the request no longer waits for the approver');
    t.same([...problems, ...second.problems], [], 'no console error, no CSP violation');
    await page.context().close();
    await pb.context().close();
  });

  t.test('a 1,000-row CSV import: the mapping table, the dry run, the progress bar to the end, the rows held for review', async (t) => {
    const tenant = await setupTenant(srv, 'console-import');
    const { email } = await administrator(tenant.tenant_id, ['admin:users:read', 'admin:users:write', 'admin:field-mapping:read', 'admin:field-mapping:write']);
    // Two people already there under other names: their rows conflict and wait for a review.
    for (const i of [7, 8]) await call(tenant.tenant_id, 'POST', '/api/admin/users', { email: `person.${i}@import.example`, name: `Earlier Name ${i}` });
    const lines = ['Email,Full name,Team'];
    for (let i = 0; i < 1000; i++) lines.push(`${i === 999 ? 'not-an-address' : `Person.${i}@Import.Example`},Person ${i},${i % 2 ? 'red' : 'blue'}`);
    const file = { name: 'people.csv', mimeType: 'text/csv', buffer: Buffer.from(lines.join('\n') + '\n') };

    const { page, problems } = await watchedPage();
    await signIn(page, tenant.tenant_id, email);
    await page.getByRole('link', { name: 'Imports' }).click();
    await page.getByRole('link', { name: 'Import users' }).click();
    await page.locator('input[type=file]').setInputFiles(file);
    const mapping = page.getByRole('table', { name: 'Column mapping' });
    await mapping.waitFor();
    t.equal(await page.getByLabel('Import Email as').inputValue(), 'email', 'the Email column is taken for the address');
    t.equal(await page.getByLabel('Import Full name as').inputValue(), 'name', 'Full name for the name');
    await page.getByLabel('Import Team as').selectOption('metadata');
    await page.getByRole('button', { name: 'Check the first 100 rows' }).click();
    await page.getByText('100 rows checked: 100 import cleanly').waitFor();
    await checkScreen(t, page, 'import-mapping');
    await page.getByRole('button', { name: 'Start import' }).click();
    await page.getByRole('heading', { name: /^Import imp_/ }).waitFor();
    await page.getByTestId('job-status').filter({ hasText: 'succeeded' }).waitFor({ timeout: 60_000 });
    t.equal(await page.getByRole('progressbar', { name: 'Import progress' }).getAttribute('aria-valuenow'), '100', 'the progress bar reaches the end');
    const counts = page.getByRole('table', { name: 'Import counts' });
    t.equal(await counts.getByRole('row', { name: /^Created/ }).getByRole('cell').textContent(), '997', '997 people created');
    t.equal(await counts.getByRole('row', { name: /^Rejected/ }).getByRole('cell').textContent(), '1', 'the row without an address rejected');
    t.equal(await counts.getByRole('row', { name: /^Held for review/ }).getByRole('cell').textContent(), '2', 'the two that would rename someone held back');
    await checkScreen(t, page, 'import-done');
    await page.getByRole('link', { name: 'Review the 2 rows held back' }).click();
    const tasks = page.getByRole('table', { name: 'Review tasks' });
    await tasks.getByRole('button', { name: 'Approve row 8' }).waitFor();
    await checkScreen(t, page, 'import-review');
    await tasks.getByRole('button', { name: 'Approve row 8' }).click();
    await tasks.getByRole('button', { name: 'Approve row 8' }).waitFor({ state: 'detached' });
    const renamed = await call(tenant.tenant_id, 'GET', `/api/admin/users?email=${encodeURIComponent('person.7@import.example')}`);
    t.equal(renamed.body.items[0].name, 'Person 7', 'approving the row applies its change');
    t.same(problems, [], 'no console error, no CSP violation');
    await page.context().close();
  });

  t.test('a tenant administrator sees no platform screens and cannot open another tenant\'s data; a 403 is said plainly', async (t) => {
    const tenant = await setupTenant(srv, 'console-scoped');
    const other = await setupTenant(srv, 'console-elsewhere');
    const elsewhere = await call(other.tenant_id, 'POST', '/api/admin/approvals', {
      request_surface: 'test', requested_action: 'read_profile', target_subject_type: 'user', target_subject_id: 'usr_x', resource_class: 'user_profile',
      reason_code: 'case', audience: other.clients.resource_server.audience, approvals: [{ step_key: 'op', side: 'admin_operator', subject_type: 'admin', method: 'portal_confirm' }],
    });
    t.equal(elsewhere.status, 201);
    const { email } = await administrator(tenant.tenant_id, ['admin:*']);
    // The server decides: a policy of this tenant refuses reading logging, which the role allows.
    const policy = await call(tenant.tenant_id, 'POST', '/api/admin/admin-policies', { name: 'no logging', priority: 10, effect: 'deny', enabled: true, conditions: [], resource_types: ['logging'], actions: ['read'] });
    t.equal(policy.status, 201);

    const { page, problems } = await watchedPage();
    await signIn(page, tenant.tenant_id, email);
    for (const name of ['Tenants', 'Lookup keys']) t.equal(await page.getByRole('link', { name }).count(), 0, `no ${name} screen`);
    t.equal(await page.getByRole('img', { name: /Requests per second/ }).count(), 0, 'no deployment charts on the dashboard');
    await page.getByRole('link', { name: 'Approvals' }).click();
    await page.getByText('All requests', { exact: true }).click();
    await page.getByRole('table', { name: 'Approval requests' }).waitFor();
    await page.getByText('Nothing here yet.').waitFor();
    t.pass('the other tenant\'s request is not listed');
    await page.goto(`${base}/console/approvals/${elsewhere.body.public_request_id}`);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'No such approval request.' }).waitFor();
    t.pass('nor found by its address');
    await page.goto(`${base}/console/lookup-keys`);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    t.equal(await page.getByRole('heading', { name: 'Lookup-key rotation' }).count(), 0, 'the platform screen sends a tenant administrator to the start');

    await page.getByRole('link', { name: 'Logging' }).click();
    const refusal = page.getByRole('alert').filter({ hasText: 'You are not allowed to do this.' });
    await refusal.waitFor();
    t.match(await refusal.textContent(), /policy/i, 'with the server\'s reason');
    await checkScreen(t, page, 'forbidden');
    t.same(problems, [], 'no console error, no CSP violation');
    await page.context().close();
  });

  t.test('logging: a destination\'s credential rotated, quota policies and usage', async (t) => {
    const tenant = await setupTenant(srv, 'console-logging');
    const { email } = await administrator(tenant.tenant_id, ['admin:logging:read', 'admin:logging:write']);
    const { page, problems } = await watchedPage();
    await signIn(page, tenant.tenant_id, email);
    await page.getByRole('link', { name: 'Logging' }).click();
    await page.getByRole('button', { name: 'New destination' }).click();
    await page.getByRole('dialog').getByLabel('Name').fill('Archive sink');
    await page.getByRole('dialog').getByLabel('URL').fill('https://logs.example.com/ingest');
    await page.getByRole('dialog').getByRole('button', { name: 'Create' }).click();
    t.ok(((await page.getByTestId('destination-secret').textContent()) ?? '').length >= 16, 'the generated credential is shown once');
    await page.getByRole('button', { name: 'Done' }).click();
    const list = page.getByRole('table', { name: 'Log destinations' });
    await list.getByRole('cell', { name: 'version 1, idle' }).waitFor();
    await checkScreen(t, page, 'logging-destinations');
    await page.getByRole('button', { name: 'Rotate the credential of Archive sink' }).click();
    await page.getByLabel('New credential').fill('a-new-credential-of-enough-length');
    await page.getByRole('button', { name: 'Prepare' }).click();
    await page.getByRole('button', { name: 'Activate the new credential of Archive sink' }).click();
    await list.getByRole('cell', { name: 'version 2, overlap' }).waitFor();
    t.pass('the new credential is current, the old one in its overlap');

    await page.getByRole('tab', { name: 'Chunks' }).click();
    await page.getByRole('table', { name: 'Log chunks' }).waitFor();
    await checkScreen(t, page, 'logging-chunks');
    await page.getByRole('tab', { name: 'Quotas' }).click();
    await page.getByLabel('Hard limit').fill('5000');
    await page.getByRole('button', { name: 'Add policy' }).click();
    await page.getByRole('table', { name: 'Quota policies' }).getByRole('cell', { name: 'hard 5,000' }).waitFor();
    await checkScreen(t, page, 'logging-quotas');
    await page.getByRole('tab', { name: 'Usage' }).click();
    await page.getByLabel('Window').waitFor();
    await checkScreen(t, page, 'logging-usage');
    t.same(problems, [], 'no console error, no CSP violation');
    await page.context().close();
  });

  t.test('an access token that expired meanwhile is renewed on the next screen; a session that cannot renew says so', async (t) => {
    const tenant = await setupTenant(srv, 'console-expiry');
    const { email } = await administrator(tenant.tenant_id, ['admin:approvals:read', 'admin:users:read']);
    // Access tokens of 4 s: the console renews them after 3 s.
    await srv.deps.sql`update clients set access_token_ttl = 4 where tenant_id = ${tenant.tenant_id} and client_id = ${tenant.clients.console.client_id}`;
    await srv.deps.tokens.clients.changed(tenant.clients.console.client_id);
    const { page, problems } = await watchedPage();
    let access = '';
    let refresh = '';
    page.on('response', (r) => {
      if (!r.url().endsWith('/token') || r.status() !== 200) return;
      void r.json().then((b: { access_token: string; refresh_token?: string }) => { access = b.access_token; refresh = b.refresh_token ?? refresh; }).catch(() => undefined);
    });
    // The first renewal is lost on the way (a dropped connection), so the access token runs out.
    let dropped = false;
    await page.route('**/token', async (route) => {
      if (!dropped && (route.request().postData() ?? '').includes('grant_type=refresh_token')) { dropped = true; await route.abort('connectionreset'); return; }
      await route.continue();
    });
    await signIn(page, tenant.tenant_id, email);
    await waitFor(() => dropped, 15_000);
    const stale = access;
    await waitFor(async () => (await fetch(`${base}/api/admin/users?limit=1`, { headers: { authorization: `Bearer ${stale}` } })).status === 401, 15_000);
    t.pass('the access token the console holds has expired');
    const renewal = answered(page, (url, body) => url.endsWith('/token') && body.includes('grant_type=refresh_token'));
    await page.getByRole('link', { name: 'Approvals' }).click();
    t.equal((await renewal).status(), 200, 'the console renews when the server says the token expired');
    await page.getByRole('table', { name: 'Requests waiting for me' }).waitFor();
    t.equal(await page.getByRole('button', { name: 'Sign in' }).count(), 0, 'and the screen loads without a sign-in');

    // The refresh token is used elsewhere (stolen and replayed): svc revokes the family, the console cannot renew.
    await waitFor(() => refresh !== '', 5000);
    await fetch(`${base}/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refresh, client_id: tenant.clients.console.client_id }) });
    await fetch(`${base}/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refresh, client_id: tenant.clients.console.client_id }) });
    await page.getByText('Your session expired and could not be renewed. Sign in again.').waitFor({ timeout: 20_000 });
    await checkScreen(t, page, 'session-expired');
    // The dropped renewal and the refused one are this test's doing: any other problem counts.
    t.same(problems.filter((p) => !/\/token\b/.test(p)), [], 'no console error, no CSP violation');
    await page.context().close();
  });
}
