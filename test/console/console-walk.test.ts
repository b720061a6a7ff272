import fs from 'node:fs';
import t from 'tap';
import type { Browser, Page } from 'playwright-core';
import { createLogger } from '../../src/log.js';
import { startJobsWorker } from '../../workers/jobs-worker.js';
import { startWebhookWorker } from '../../workers/webhook-worker.js';
import { CHROMIUM, launchChromium } from '../helpers/browser.js';
import { uniqueName } from '../helpers/env.js';
import { j } from '../helpers/http.js';
import { adminToken, setupTenant } from '../helpers/tokens.js';
import { startLoginEnv, uniqueEmail } from '../login/fixtures.js';
import { isolatedDatabase, startReceiver } from '../webhooks/fixtures.js';
import { consoleBrowser } from './browser.js';

// Issue 33's operator walk, end to end in Debian's Chromium against the real server, jobs and webhook
// workers: a platform operator creates a tenant, a client and a webhook, sends a test and sees a delivery
// in the log, retries a failed one; an approval filed by them is approved by a second operator and its
// grant revoked; each action is found in the audit log; 1,000 users are imported and the job watched to
// the end; the operator signs out. A database of this file's own (the webhook relay serves all of its tenants).
t.setTimeout(300_000);
const db = await isolatedDatabase();
const env = await startLoginEnv({ DATABASE_URL: db.url, WEBHOOK_ALLOW_PRIVATE: 'true', USER_JOB_LOCK_MS: '2000' });
const { srv, sink } = env;
const jobs = await startJobsWorker(srv.config, createLogger('silent'));
const hooks = await startWebhookWorker(srv.config, createLogger('silent'), { relay: { pollMs: 100 } });
t.teardown(async () => { await hooks.close(); await jobs.close(); await env.close(); await db.drop(); });
const base = srv.url;
const browser: Browser | null = fs.existsSync(CHROMIUM) ? await launchChromium() : null;
t.teardown(() => browser?.close());

if (!browser) {
  t.comment('Chromium is not installed (apt-get install chromium): browser checks skipped');
} else {
  const { watchedPage, checkScreen, signIn, call, administrator } = consoleBrowser(browser, srv, sink);

  /** Picks the tenant every screen acts on in the header's switcher. */
  async function switchTo(page: Page, tenantId: string): Promise<void> {
    const box = page.getByRole('textbox', { name: 'Tenant' });
    await box.click();
    await box.fill(tenantId);
    await page.getByRole('option', { name: tenantId }).first().click();
  }

  /** Loads a console address afresh: the tokens (memory only) are gone, svc's session signs the person in again. */
  async function reopen(page: Page, path: string): Promise<void> {
    await page.goto(`${base}/console${path}`);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByTestId('signed-in-as').waitFor();
  }

  /** The audit log filtered by action: the entry's row, by the operator, is there. */
  async function audited(page: Page, action: string, actor: string): Promise<void> {
    await page.getByRole('link', { name: 'Audit log' }).click();
    await page.getByLabel('Action').fill(action);
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByRole('table', { name: 'Audit log' }).getByRole('row').filter({ hasText: action }).filter({ hasText: actor }).first().waitFor();
  }

  t.test('a platform operator\'s day in the console', async (t) => {
    const good = await startReceiver();
    const bad = await startReceiver(() => ({ status: 500, body: 'nope' }));
    t.teardown(async () => { await good.close(); await bad.close(); });
    const platform = await setupTenant(srv, 'walk-platform', true);
    const a = await administrator(platform.tenant_id, ['admin:*'], 'operator-a');
    const b = await administrator(platform.tenant_id, ['admin:*'], 'operator-b');
    const { page, problems } = await watchedPage();
    await signIn(page, platform.tenant_id, a.email);

    // A tenant.
    await page.getByRole('link', { name: 'Tenants' }).click();
    await page.getByRole('link', { name: 'New tenant' }).click();
    const tenantId = uniqueName('walk').toLowerCase().replace(/[^a-z0-9-]/g, '-');
    await page.getByLabel('Id').fill(tenantId);
    await page.getByLabel('Name', { exact: true }).fill('Walk tenant');
    await page.getByRole('button', { name: 'Create tenant' }).click();
    await page.getByRole('link', { name: 'Go to the tenant' }).click();
    await page.getByTestId('tenant-status').filter({ hasText: 'active' }).waitFor();
    await audited(page, 'tenant.created', a.email);
    t.pass('the tenant is created, and its creation is in the platform tenant\'s audit log');

    // Everything else acts on the new tenant.
    await reopen(page, '/clients');
    await switchTo(page, tenantId);
    await page.getByRole('link', { name: 'New client' }).click();
    await page.getByLabel('Name').fill('Walk client');
    await page.getByRole('button', { name: 'Create client' }).click();
    t.ok(((await page.getByTestId('client-secret').textContent()) ?? '').length >= 32, 'a client, its secret shown once');
    await page.getByRole('link', { name: 'Go to the client' }).click();
    await page.getByRole('link', { name: 'Edit client' }).click();
    await page.getByLabel('Allowed audiences').fill('https://api.walk.example');
    await page.getByRole('button', { name: 'Save client' }).click();
    await page.getByRole('table', { name: 'Client details' }).getByText('https://api.walk.example').waitFor();

    // A webhook, a test send, a delivery in its log.
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('link', { name: 'New webhook' }).click();
    await page.getByLabel('Name').fill('Walk hook');
    await page.getByLabel('URL').fill(`${good.url}/hook`);
    await page.getByLabel('user.deleted').check();
    await page.getByRole('button', { name: 'Create webhook' }).click();
    await page.getByRole('link', { name: 'Go to the webhook' }).click();
    await page.getByRole('button', { name: 'Send a test' }).click();
    await page.getByTestId('test-result').filter({ hasText: 'Delivered: answered 200' }).waitFor();
    t.equal(good.received.length, 1, 'the receiver got the test');
    const log = page.getByRole('table', { name: 'Delivery log' });
    await log.getByRole('row').filter({ hasText: 'webhook.test' }).filter({ hasText: 'success' }).filter({ hasText: '200' }).waitFor();
    t.pass('the test send is in the delivery log');
    const someone = await call(tenantId, 'POST', '/api/admin/users', { email: uniqueEmail('leaver') });
    await call(tenantId, 'DELETE', `/api/admin/users/${someone.body.id}`);
    await log.getByRole('row').filter({ hasText: 'user.deleted' }).filter({ hasText: 'success' }).waitFor({ timeout: 20_000 });
    t.pass('an event\'s delivery is in the log');

    // A receiver that fails: the delivery is retried from the log.
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('link', { name: 'New webhook' }).click();
    await page.getByLabel('Name').fill('Failing hook');
    await page.getByLabel('URL').fill(`${bad.url}/hook`);
    await page.getByLabel('user.deleted').check();
    await page.getByLabel('Automatic retries').fill('0');
    await page.getByRole('button', { name: 'Create webhook' }).click();
    await page.getByRole('link', { name: 'Go to the webhook' }).click();
    const other = await call(tenantId, 'POST', '/api/admin/users', { email: uniqueEmail('leaver') });
    await call(tenantId, 'DELETE', `/api/admin/users/${other.body.id}`);
    const failed = log.getByRole('row').filter({ hasText: 'user.deleted' });
    await failed.filter({ hasText: 'failed' }).waitFor({ timeout: 20_000 });
    await failed.getByRole('button', { name: /^Retry delivery/ }).click();
    await failed.getByRole('cell', { name: '2', exact: true }).waitFor({ timeout: 20_000 });
    t.equal(bad.received.length, 2, 'the failed delivery is sent again');
    await checkScreen(t, page, 'walk-webhook');

    // An approval filed by this operator, approved by another, its grant revoked.
    await page.getByRole('link', { name: 'Approvals' }).click();
    await page.getByRole('link', { name: 'Request access' }).click();
    await page.getByLabel('Action').fill('read_profile');
    await page.getByLabel('User id').fill(someone.body.id);
    await page.getByLabel('Audience').fill('https://api.walk.example');
    await page.getByLabel('Reason code').fill('support_case');
    await page.getByRole('button', { name: 'File request' }).click();
    const requestId = (await page.getByRole('table', { name: 'Request details' }).getByRole('row', { name: /^Request / }).getByRole('cell').textContent())!;
    const second = await watchedPage();
    const pb = second.page;
    await signIn(pb, platform.tenant_id, b.email);
    await pb.getByRole('link', { name: 'Approvals' }).click();
    await switchTo(pb, tenantId);
    await pb.getByRole('table', { name: 'Requests waiting for me' }).getByRole('link', { name: requestId }).click();
    await pb.getByRole('button', { name: 'Approve operator' }).click();
    const grants = page.getByRole('table', { name: 'Elevation grants' });
    await page.reload();
    await page.getByRole('button', { name: 'Sign in' }).click();
    await switchTo(page, tenantId);
    await grants.getByText('active', { exact: true }).waitFor();
    t.pass('the second operator\'s approval gives the first a grant');
    await page.getByRole('button', { name: 'Revoke grant' }).click();
    await page.getByRole('dialog', { name: 'Revoke this grant?' }).getByRole('button', { name: 'Revoke', exact: true }).click();
    await grants.getByText('revoked', { exact: true }).waitFor();
    await pb.context().close();

    // Each action in the tenant's audit log.
    for (const [action, by] of [['client.create', a.email], ['webhook.create', a.email], ['webhook.test', a.email], ['webhook_delivery.retry', a.email],
      ['approval_request.create', a.email], ['approval_step.approve', b.email], ['elevation_grant.revoke', a.email]] as const) {
      await audited(page, action, by);
      t.pass(`${action} is in the audit log`);
    }
    await checkScreen(t, page, 'walk-audit');

    // 1,000 users imported, the job followed to the end.
    const lines = ['email,name'];
    for (let i = 0; i < 1000; i++) lines.push(`walker.${i}@walk.example,Walker ${i}`);
    await page.getByRole('link', { name: 'Imports' }).click();
    await page.getByRole('link', { name: 'Import users' }).click();
    await page.locator('input[type=file]').setInputFiles({ name: 'walkers.csv', mimeType: 'text/csv', buffer: Buffer.from(lines.join('\n') + '\n') });
    await page.getByRole('button', { name: 'Start import' }).click();
    await page.getByTestId('job-status').filter({ hasText: 'succeeded' }).waitFor({ timeout: 60_000 });
    t.equal(await page.getByRole('table', { name: 'Import counts' }).getByRole('row', { name: /^Created/ }).getByRole('cell').textContent(), '1,000', '1,000 users created');
    await checkScreen(t, page, 'walk-import');

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Signed out' }).waitFor();
    t.same([...problems, ...second.problems], [], 'no console error, no CSP violation');
    await page.context().close();
  });

  // Environment-wide, so here with this file's own database: a rotation started, its state shown, aborted.
  t.test('a platform operator starts a lookup-key rotation, follows its state and aborts it', async (t) => {
    const platform = await setupTenant(srv, 'walk-keys', true);
    const op = await administrator(platform.tenant_id, ['admin:control-plane:read', 'admin:control-plane:write'], 'keys');
    const { page, problems } = await watchedPage();
    await signIn(page, platform.tenant_id, op.email);
    await page.getByRole('link', { name: 'Lookup keys' }).click();
    const id = uniqueName('rotation').replace(/[^a-zA-Z0-9._:-]/g, '-');
    await page.getByLabel('Operation id').fill(id);
    await page.getByRole('button', { name: 'Start a rotation with this id' }).click();
    const state = page.getByTestId('rotation-state');
    await state.filter({ hasText: 'planned' }).waitFor();
    t.equal(await page.getByRole('progressbar', { name: 'Rotation progress' }).getAttribute('aria-valuenow'), '0', 'at the first state');
    await checkScreen(t, page, 'lookup-rotation');
    await page.getByRole('button', { name: 'Abort rotation' }).click();
    await page.getByRole('dialog', { name: 'Abort this rotation?' }).getByRole('button', { name: 'Abort', exact: true }).click();
    await state.filter({ hasText: 'blocked' }).waitFor();
    // The 2-second poll keeps running: the state must stay blocked, and the move go.
    await page.getByRole('button', { name: 'Move to the next state' }).waitFor({ state: 'detached', timeout: 5000 }).catch(() => {});
    t.equal(await page.getByRole('button', { name: 'Move to the next state' }).count(), 0, 'a blocked rotation offers no move');
    t.equal(await state.textContent(), 'blocked', 'and stays blocked');
    const token = await adminToken(srv, { tenantId: platform.tenant_id, permissions: ['admin:control-plane:read'], platform: true });
    const stored = await j(await fetch(`${base}/api/admin/platform/control-plane/lookup-hmac/rotations/${id}`, { headers: { authorization: `Bearer ${token}` } }));
    t.equal(stored.rotation.state, 'blocked', 'as the server says');
    t.same(problems, [], 'no console error, no CSP violation');
    await page.context().close();
  });
}
