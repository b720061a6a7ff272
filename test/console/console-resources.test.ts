import { createHmac, generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import t from 'tap';
import type { Browser, Page } from 'playwright-core';
import { createLogger } from '../../src/log.js';
import { createSession, readSession } from '../../src/login/sessions.js';
import { storeRefreshToken } from '../../src/tokens/refresh-tokens.js';
import { startJobsWorker } from '../../workers/jobs-worker.js';
import { startWebhookWorker } from '../../workers/webhook-worker.js';
import { CHROMIUM, launchChromium } from '../helpers/browser.js';
import { consoleAdministrator, consoleDriver } from '../helpers/console.js';
import { uniqueName } from '../helpers/env.js';
import { j } from '../helpers/http.js';
import { waitFor } from '../helpers/processes.js';
import { adminToken, postForm, setupTenant } from '../helpers/tokens.js';
import { startLoginEnv, uniqueEmail } from '../login/fixtures.js';
import { isolatedDatabase, startReceiver } from '../webhooks/fixtures.js';

// The console's resource screens (issue 33) in Debian's Chromium against the real server: what an
// operator sees when editing clients, running a tenant's lifecycle, and working on users; every screen
// passes axe. A database of this file's own: the webhook relay serves every tenant of its database.
// Seven browser journeys of 10 to 30 s each: more than the runner's 120 s a file.
t.setTimeout(300_000);
const db = await isolatedDatabase();
const env = await startLoginEnv({ DATABASE_URL: db.url, WEBHOOK_ALLOW_PRIVATE: 'true', PII_PARTITIONS: 'eu' });
const { srv, sink } = env;
const jobs = await startJobsWorker(srv.config, createLogger('silent'));
const hooks = await startWebhookWorker(srv.config, createLogger('silent'), { relay: { pollMs: 100 } });
t.teardown(async () => { await hooks.close(); await jobs.close(); await env.close(); await db.drop(); });
const base = srv.url;
const tenant = env.tenant;
const browser: Browser | null = fs.existsSync(CHROMIUM) ? await launchChromium() : null;
t.teardown(() => browser?.close());

/** The admin API as a test-side operator of the tenant (to arrange what the screens then show). */
async function arrange(tenantId: string, method: string, path: string, body?: unknown): Promise<any> {
  const token = await adminToken(srv, { tenantId, permissions: ['admin:*'] });
  const res = await fetch(`${base}/api/admin${path}`, { method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) });
  return res.status === 204 ? null : j(res);
}

/** The field's own error text (Mantine links it by aria-describedby), asserting the field is marked invalid. */
async function errorOf(page: Page, label: string | RegExp): Promise<string> {
  const field = page.getByLabel(label, { exact: typeof label === 'string' });
  await field.and(page.locator('[aria-invalid="true"]')).waitFor();
  const ids = (await field.getAttribute('aria-describedby')) ?? '';
  const texts = await Promise.all(ids.split(/\s+/).filter(Boolean).map((id) => page.locator(`[id="${id}"]`).textContent()));
  return texts.join(' ');
}

if (!browser) {
  t.comment('Chromium is not installed (apt-get install chromium): browser checks skipped');
} else {
  const drive = consoleDriver(browser, base, sink);

  t.test('a platform operator creates a tenant, meets a settings error at its field, suspends, unsuspends and deletes it while the purge is followed', async (t) => {
    const platform = await setupTenant(srv, 'cr-platform', true);
    const email = await consoleAdministrator(srv, platform.tenant_id, ['admin:tenants:read', 'admin:tenants:write', 'admin:clients:read']);
    const { page, problems } = await drive.watchedPage();
    await drive.signIn(page, platform.tenant_id, email);
    await page.getByRole('link', { name: 'Tenants' }).click();
    await page.getByRole('link', { name: 'New tenant' }).click();
    const id = uniqueName('made-in-console').toLowerCase().replace(/[^a-z0-9-]/g, '-');
    await page.getByLabel('Id').fill(id);
    await page.getByLabel('Name', { exact: true }).fill('Made in the console');
    await page.getByLabel('Also create the tenant\'s first admin client').check();
    await drive.checkScreen(t, page, 'tenant-create');
    await page.getByRole('button', { name: 'Create tenant' }).click();
    const secret = (await page.getByTestId('tenant-admin-secret').textContent())!;
    t.ok(secret.length >= 32, 'the new admin client\'s secret is shown');
    await page.getByRole('link', { name: 'Go to the tenant' }).click();
    const status = page.getByTestId('tenant-status');
    await status.filter({ hasText: 'active' }).waitFor();
    t.notOk((await page.content()).includes(secret), 'and never again');

    await page.getByRole('button', { name: 'Edit settings' }).click();
    await page.getByLabel('Access token lifetime (seconds)').fill('5');
    await page.getByRole('button', { name: 'Save settings' }).click();
    t.match(await errorOf(page, 'Access token lifetime (seconds)'), /must be >= 30/, 'the server\'s bound stands at its field');
    await drive.checkScreen(t, page, 'tenant-settings-error');
    await page.getByLabel('Access token lifetime (seconds)').fill('600');
    await page.getByLabel('Token exchange enabled').check();
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByText('"access_token_ttl": 600').waitFor();
    const [stored] = await srv.deps.sql<{ settings: object }[]>`select settings from tenants where id = ${id}`;
    t.match(stored!.settings, { access_token_ttl: 600, token_exchange_enabled: true }, 'the settings are saved');

    await page.getByRole('button', { name: 'Suspend tenant' }).click();
    await page.getByRole('dialog', { name: 'Suspend this tenant?' }).waitFor();
    await drive.checkScreen(t, page, 'tenant-suspend-confirm');
    await page.getByRole('button', { name: 'Suspend', exact: true }).click();
    await status.filter({ hasText: 'suspended' }).waitFor();
    await page.getByRole('button', { name: 'Unsuspend tenant' }).click();
    await status.filter({ hasText: 'active' }).waitFor();
    t.pass('suspended after a confirmation, then unsuspended');

    await page.getByRole('button', { name: 'Delete tenant' }).click();
    await page.getByRole('dialog', { name: 'Delete this tenant?' }).getByRole('button', { name: 'Delete tenant' }).click();
    // The purge runs in the jobs worker; the screen asks for the status until it is done.
    await status.filter({ hasText: 'deleted' }).waitFor({ timeout: 30_000 });
    await page.getByText('The tenant is deleted: all its data is purged.').waitFor();
    t.equal(await page.getByRole('button', { name: 'Edit settings' }).count(), 0, 'a deleted tenant offers no actions');
    await drive.checkScreen(t, page, 'tenant-deleted');
    t.same(problems, [], 'no console error, no CSP violation');
    await page.context().close();
  });

  t.test('a tenant administrator edits a client (validation error at its field), rotates its secret (shown once), disables and enables it', async (t) => {
    const made = await arrange(tenant.tenant_id, 'POST', '/clients', { name: 'Edited in the console', token_endpoint_auth_method: 'client_secret_basic', grant_types: ['client_credentials'] });
    const email = await consoleAdministrator(srv, tenant.tenant_id, ['admin:clients:read', 'admin:clients:write']);
    const { page, problems } = await drive.watchedPage();
    await drive.signIn(page, tenant.tenant_id, email);
    await page.getByRole('link', { name: 'Clients' }).click();
    await page.getByRole('table', { name: 'Clients' }).getByRole('link', { name: made.client_id }).click();
    await page.getByRole('link', { name: 'Edit client' }).click();
    await page.getByLabel('Redirect URIs', { exact: true }).fill('https://app.example/cb\nnot a uri');
    await page.getByLabel('Allowed audiences').fill('https://api.example/orders');
    await page.getByRole('button', { name: 'Save client' }).click();
    t.match(await errorOf(page, 'Redirect URIs'), /must match format "uri"/, 'the server\'s message stands at the Redirect URIs field');
    await drive.checkScreen(t, page, 'client-edit-error');
    await page.getByLabel('Redirect URIs', { exact: true }).fill('https://app.example/cb');
    await page.getByLabel('Authorization code').check();
    await page.getByRole('button', { name: 'Save client' }).click();
    const details = page.getByRole('table', { name: 'Client details' });
    await details.getByText('https://api.example/orders').waitFor();
    t.ok(await details.getByText('client_credentials, authorization_code').isVisible(), 'the grant types are saved');
    await drive.checkScreen(t, page, 'client-edited');

    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByRole('dialog', { name: 'Rotate the secret?' }).getByRole('button', { name: 'Rotate secret' }).click();
    const secret = (await page.getByTestId('rotated-secret').textContent())!;
    await drive.checkScreen(t, page, 'client-secret-rotated');
    const token = (s: string) => postForm(`${base}/token`, { client_id: made.client_id, client_secret: s }, { grant_type: 'client_credentials' });
    t.equal((await token(secret)).status, 200, 'the shown secret authenticates the client');
    t.equal((await token(made.client_secret)).status, 401, 'the old one no longer does');
    await page.getByRole('link', { name: 'Clients' }).click();
    await page.getByRole('table', { name: 'Clients' }).getByRole('link', { name: made.client_id }).click();
    await details.waitFor();
    t.notOk((await page.content()).includes(secret), 'the secret is not shown again');

    await page.getByRole('button', { name: 'Disable client' }).click();
    await page.getByRole('dialog', { name: 'Disable this client?' }).getByRole('button', { name: 'Disable' }).click();
    await details.getByRole('cell', { name: 'disabled', exact: true }).waitFor();
    t.equal((await token(secret)).status >= 400, true, 'a disabled client gets no token');
    await page.getByRole('button', { name: 'Enable client' }).click();
    await details.getByRole('cell', { name: 'active', exact: true }).waitFor();
    t.same(problems, [], 'no console error, no CSP violation');
    await page.context().close();
  });

  t.test('a reader sees no edit, rotate or delete actions', async (t) => {
    const email = await consoleAdministrator(srv, tenant.tenant_id, ['admin:clients:read', 'admin:users:read', 'admin:roles:read', 'admin:webhooks:read', 'admin:check-api-keys:read']);
    const { page, problems } = await drive.watchedPage();
    await drive.signIn(page, tenant.tenant_id, email);
    await page.getByRole('link', { name: 'Clients' }).click();
    await page.getByRole('table', { name: 'Clients' }).getByRole('link', { name: tenant.clients.web.client_id }).click();
    await page.getByRole('table', { name: 'Client details' }).waitFor();
    for (const name of ['Edit client', 'Rotate secret', 'Disable client', 'Delete client']) t.equal(await page.getByRole('button', { name }).or(page.getByRole('link', { name })).count(), 0, `no ${name}`);
    for (const [section, create] of [['Roles', 'New role'], ['Webhooks', 'New webhook'], ['Check API keys', 'New key']] as const) {
      await page.getByRole('link', { name: section, exact: true }).click();
      await page.getByRole('heading', { name: section }).waitFor();
      t.equal(await page.getByRole('link', { name: create }).count(), 0, `no ${create}`);
    }
    t.equal(await page.getByRole('link', { name: 'Admin policies' }).count(), 0, 'no policies section without admin:policies:read');
    t.same(problems, [], 'no console error, no CSP violation');
    await page.context().close();
  });

  t.test('a user\'s detail: roles assigned and removed, the personal data moved to another partition, locked after a confirmation', async (t) => {
    const someone = uniqueEmail('detail');
    const user = await arrange(tenant.tenant_id, 'POST', '/users', { email: someone });
    const role = await arrange(tenant.tenant_id, 'POST', '/roles', { name: uniqueName('readers'), permissions: ['documents:read'] });
    // A sign-in of the user at the web client (a refresh token family) and their consent to it, as the login would leave them.
    const web = tenant.clients.web.client_id;
    await storeRefreshToken(srv.deps.sql, { tenantId: tenant.tenant_id, clientId: web, sub: user.id, scope: 'openid email', accessJti: null, authTime: null, ttlSeconds: 3600, generation: { generation: 1, shardCount: 16 } });
    await srv.deps.store.forTenant(tenant.tenant_id).consents.upsert({ userId: user.id, clientId: web, scopes: ['openid', 'email'], policy: { privacyPolicyVersion: '1', tosVersion: '1', consentVersion: 1 } });
    // And a sign-in at svc itself (its session cookie), as the login's createSession leaves it.
    const login = await createSession(srv.deps.redis, { tenantId: tenant.tenant_id, userId: user.id, email: someone, authTime: Math.floor(Date.now() / 1000) });
    const email = await consoleAdministrator(srv, tenant.tenant_id, ['admin:users:read', 'admin:users:write', 'admin:roles:read', 'admin:roles:write', 'admin:settings:read']);
    const { page, problems } = await drive.watchedPage();
    await drive.signIn(page, tenant.tenant_id, email);
    await page.getByRole('link', { name: 'Users' }).click();
    await page.getByLabel('Email starts with').fill(someone);
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('table', { name: 'Users' }).getByRole('link', { name: someone }).click();
    await page.getByRole('table', { name: 'User details' }).getByText(user.id).waitFor();

    await page.getByLabel('Role to assign').selectOption({ label: role.name });
    await page.getByRole('button', { name: 'Assign role' }).click();
    const roles = page.getByRole('table', { name: 'Roles of the user' });
    await roles.getByRole('cell', { name: 'documents:read' }).waitFor();
    await drive.checkScreen(t, page, 'user-detail');
    await page.getByRole('button', { name: `Remove role ${role.name}` }).click();
    await page.getByText('No roles.').waitFor();
    t.pass('a role assigned and removed');

    const sessions = page.getByRole('table', { name: 'Sessions of the user' });
    await sessions.getByRole('cell', { name: web, exact: true }).waitFor();
    await page.getByRole('table', { name: 'Consents of the user' }).getByRole('row').filter({ hasText: web }).waitFor();
    await page.getByRole('button', { name: `End session at ${web}` }).click();
    await page.getByRole('dialog', { name: 'End this session?' }).getByRole('button', { name: 'End session' }).click();
    await page.getByText('No sessions.').waitFor();
    const live = await srv.deps.sql<{ n: number }[]>`select count(*)::int as n from refresh_tokens where tenant_id = ${tenant.tenant_id} and sub = ${user.id} and status = 'active'`;
    t.equal(live[0]!.n, 0, 'the session\'s refresh token is revoked');
    await page.getByRole('button', { name: `Withdraw consent to ${web}` }).click();
    await page.getByRole('dialog', { name: 'Withdraw this consent?' }).getByRole('button', { name: 'Withdraw consent' }).click();
    await page.getByText('No consents.').waitFor();
    t.same(await srv.deps.store.forTenant(tenant.tenant_id).consents.listForUser(user.id), [], 'the consent is withdrawn');
    const logins = page.getByRole('table', { name: 'Login sessions of the user' });
    const loginRow = logins.getByRole('row').filter({ hasText: /lses_/ });
    await loginRow.waitFor();
    await drive.checkScreen(t, page);
    await loginRow.getByRole('button', { name: /^End login session lses_/ }).click();
    await page.getByRole('dialog', { name: 'End this login session?' }).getByRole('button', { name: 'End login session' }).click();
    await page.getByText('No login sessions.').waitFor();
    t.equal(await readSession(srv.deps, login.id), null, 'the login session is ended: its cookie no longer signs in');

    await page.getByLabel('Move to partition').selectOption('eu');
    await page.getByRole('button', { name: 'Move data' }).click();
    await page.getByRole('status').filter({ hasText: 'Moved from default to eu.' }).waitFor();
    const [row] = await srv.deps.sql<{ pii_partition: string }[]>`select pii_partition from users where tenant_id = ${tenant.tenant_id} and id = ${user.id}`;
    t.equal(row!.pii_partition, 'eu', 'the user\'s data now lives in eu');

    await page.getByRole('button', { name: 'Lock user' }).click();
    await page.getByRole('dialog', { name: 'Lock this user?' }).getByRole('button', { name: 'Lock user' }).click();
    await page.getByRole('table', { name: 'User details' }).getByRole('cell', { name: 'locked', exact: true }).waitFor();
    await page.getByRole('button', { name: 'Unlock user' }).click();
    await page.getByRole('table', { name: 'User details' }).getByRole('cell', { name: 'active', exact: true }).waitFor();
    t.same(problems, [], 'no console error, no CSP violation');
    await page.context().close();
  });
}

if (browser) {
  const drive = consoleDriver(browser, base, sink);

  t.test('webhooks: created with a validation error at its field, the secret shown once, a test send, deliveries in the log, a failed one retried, the signing secret rotated, deactivated and deleted', async (t) => {
    const good = await startReceiver();
    const bad = await startReceiver(() => ({ status: 500, body: 'nope' }));
    t.teardown(async () => { await good.close(); await bad.close(); });
    const owner = await setupTenant(srv, 'cr-hooks');
    const email = await consoleAdministrator(srv, owner.tenant_id, ['admin:webhooks:read', 'admin:webhooks:write']);
    const { page, problems } = await drive.watchedPage();
    await drive.signIn(page, owner.tenant_id, email);
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('link', { name: 'New webhook' }).click();
    await page.getByLabel('Name').fill('Orders');
    await page.getByLabel('URL').fill('ftp://example.test/hook');
    await page.getByLabel('user.created').check();
    await page.getByLabel('Automatic retries').fill('0');
    await page.getByRole('button', { name: 'Create webhook' }).click();
    t.match(await errorOf(page, 'URL'), /must match pattern/, 'the server\'s message stands at the URL field');
    await drive.checkScreen(t, page, 'webhook-create-error');
    await page.getByLabel('URL').fill(`${good.url}/hook`);
    await page.getByRole('button', { name: 'Create webhook' }).click();
    const secret = (await page.getByTestId('webhook-secret').textContent())!;
    t.match(secret, /^whsec_/, 'the generated signing secret is shown');
    await drive.checkScreen(t, page, 'webhook-created');
    await page.getByRole('link', { name: 'Go to the webhook' }).click();
    await page.getByRole('table', { name: 'Webhook details' }).waitFor();
    t.notOk((await page.content()).includes(secret), 'and never again');

    // A test send: the receiver's answer on screen, and the request signed with the webhook's secret.
    await page.getByRole('button', { name: 'Send a test' }).click();
    await page.getByTestId('test-result').filter({ hasText: 'Delivered: answered 200' }).waitFor();
    const signed = (r: { headers: Record<string, string | string[] | undefined>; body: string }, key: string) =>
      r.headers['x-svc-signature'] === `sha256=${createHmac('sha256', key).update(`${String(r.headers['x-svc-timestamp'])}.${r.body}`).digest('hex')}`;
    t.equal(good.received.length, 1, 'the receiver got the test');
    t.ok(signed(good.received[0]!, secret), 'signed with the secret shown at creation');

    // A real event: its delivery appears in the log (which the screen asks for again while it is open).
    await arrange(owner.tenant_id, 'POST', '/users', { email: uniqueEmail('hooked') });
    const log = page.getByRole('table', { name: 'Delivery log' });
    await log.getByRole('row').filter({ hasText: 'user.created' }).filter({ hasText: 'success' }).waitFor({ timeout: 20_000 });
    await drive.checkScreen(t, page, 'webhook-detail');

    // The signing secret rotated: shown once, and the next test is signed with it.
    await page.getByRole('button', { name: 'Rotate signing secret' }).click();
    await page.getByRole('dialog', { name: 'Rotate the signing secret?' }).getByRole('button', { name: 'Rotate secret' }).click();
    const rotated = (await page.getByTestId('rotated-signing-secret').textContent())!;
    t.not(rotated, secret, 'a new secret');
    await drive.checkScreen(t, page, 'webhook-secret-rotated');
    await page.getByLabel('Event to send').selectOption('user.updated');
    await page.getByRole('button', { name: 'Send a test' }).click();
    await page.getByTestId('test-result').filter({ hasText: 'Delivered: answered 200' }).waitFor();
    await waitFor(() => good.received.length === 3);
    const last = good.received[2]!;
    t.equal(last.headers['x-svc-event'], 'user.updated', 'of the chosen event');
    t.ok(signed(last, rotated) && !signed(last, secret), 'signed with the rotated secret, not the old one');

    // A receiver that fails: its delivery is retried from the screen and the new attempt is shown.
    const failing = await arrange(owner.tenant_id, 'POST', '/webhooks', { name: 'Failing', url: `${bad.url}/hook`, events: ['user.deleted'], retry_policy: { max_retries: 0 } });
    const victim = await arrange(owner.tenant_id, 'POST', '/users', { email: uniqueEmail('gone') });
    await arrange(owner.tenant_id, 'DELETE', `/users/${victim.id}`);
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('table', { name: 'Webhooks' }).getByRole('link', { name: 'Failing' }).click();
    const failed = log.getByRole('row').filter({ hasText: 'user.deleted' });
    await failed.filter({ hasText: 'failed' }).filter({ hasText: '500' }).waitFor({ timeout: 20_000 });
    t.equal(await failed.getByRole('cell', { name: '1', exact: true }).count(), 1, 'the first attempt failed');
    await failed.getByRole('button', { name: /^Retry delivery/ }).click();
    await failed.getByRole('cell', { name: '2', exact: true }).waitFor({ timeout: 20_000 });
    await failed.filter({ hasText: 'failed' }).waitFor({ timeout: 20_000 });
    t.equal(bad.received.length, 2, 'the receiver was asked again');
    await failed.getByRole('button', { name: /^Attempts of user.deleted/ }).click();
    const attempts = page.getByRole('dialog', { name: 'Delivery attempts' }).getByRole('table', { name: 'Attempts' });
    await attempts.getByRole('row').nth(2).waitFor();
    t.equal(await attempts.getByRole('row').count(), 3, 'both attempts are listed');
    await drive.checkScreen(t, page, 'webhook-delivery-attempts');
    await page.getByRole('button', { name: 'Close' }).click();

    await page.getByRole('button', { name: 'Deactivate' }).click();
    await page.getByTestId('webhook-status').filter({ hasText: 'inactive' }).waitFor();
    await page.getByRole('button', { name: 'Delete webhook' }).click();
    await page.getByRole('dialog', { name: 'Delete this webhook?' }).getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('table', { name: 'Webhooks' }).getByRole('link', { name: 'Orders' }).waitFor();
    t.equal(await page.getByRole('table', { name: 'Webhooks' }).getByRole('link', { name: 'Failing' }).count(), 0, 'the deleted webhook is gone from the list');
    t.equal((await fetch(`${base}/api/admin/webhooks/${failing.id}`, { headers: { authorization: `Bearer ${await adminToken(srv, { tenantId: owner.tenant_id, permissions: ['admin:*'] })}` } })).status, 404);
    await drive.checkScreen(t, page, 'webhooks');
    t.same(problems, [], 'no console error, no CSP violation');
    await page.context().close();
  });
}

/** A fresh P-256 key pair's public (or, asked, private) JWK as JSON. */
function jwk(withPrivate = false): string {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return JSON.stringify((withPrivate ? privateKey : publicKey).export({ format: 'jwk' }));
}

if (browser) {
  const drive = consoleDriver(browser, base, sink);

  t.test('roles and admin policies: created (a validation error at its field), edited, activated and deleted', async (t) => {
    const owner = await setupTenant(srv, 'cr-roles');
    const email = await consoleAdministrator(srv, owner.tenant_id, ['admin:roles:read', 'admin:roles:write', 'admin:policies:read', 'admin:policies:write']);
    const { page, problems } = await drive.watchedPage();
    await drive.signIn(page, owner.tenant_id, email);
    await page.getByRole('link', { name: 'Roles' }).click();
    await page.getByRole('link', { name: 'New role' }).click();
    await page.getByLabel('Name').fill('Document readers');
    await page.getByLabel('Permissions').fill('documents:read\nnot|a-permission');
    await page.getByRole('button', { name: 'Create role' }).click();
    t.match(await errorOf(page, 'Permissions'), /item 2: must match pattern/, 'the server\'s message names the item, at the Permissions field');
    await drive.checkScreen(t, page, 'role-create-error');
    await page.getByLabel('Permissions').fill('documents:read\ndocuments:list');
    await page.getByRole('button', { name: 'Create role' }).click();
    const details = page.getByRole('table', { name: 'Role details' });
    await details.getByText('documents:read documents:list').waitFor();
    await page.getByLabel('Description').fill('Reads every document');
    await page.getByRole('button', { name: 'Save role' }).click();
    await details.getByText('Reads every document').waitFor();
    await drive.checkScreen(t, page, 'role-detail');
    await page.getByRole('button', { name: 'Delete role' }).click();
    await page.getByRole('dialog', { name: 'Delete this role?' }).getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('table', { name: 'Roles' }).waitFor();
    await page.getByText('Nothing here yet.').or(page.getByRole('table', { name: 'Roles' }).getByRole('row').nth(1)).first().waitFor();
    t.equal(await page.getByRole('table', { name: 'Roles' }).getByRole('link', { name: 'Document readers' }).count(), 0, 'the deleted role is not listed');
    await drive.checkScreen(t, page, 'roles');

    await page.getByRole('link', { name: 'Admin policies' }).click();
    await page.getByRole('link', { name: 'New policy' }).click();
    await page.getByLabel('Name').fill('No user writes from outside');
    await page.getByLabel('Actions').fill('write');
    await page.getByLabel('Conditions').fill('[{"type": "ip_range"');
    await page.getByRole('button', { name: 'Create policy' }).click();
    t.match(await errorOf(page, 'Conditions'), /is not JSON/, 'conditions that are not JSON are caught at their field');
    await page.getByLabel('Conditions').fill('[{"type": "ip_range", "params": {"cidrs": ["10.0.0.0/8"], "negate": true}}]');
    await page.getByRole('button', { name: 'Create policy' }).click();
    t.match(await errorOf(page, 'Resource types'), /fewer than 1 items/, 'the server\'s message stands at Resource types');
    await drive.checkScreen(t, page, 'policy-create-error');
    await page.getByLabel('Resource types').fill('users');
    await page.getByRole('button', { name: 'Create policy' }).click();
    const state = page.getByTestId('policy-state');
    await state.filter({ hasText: 'inactive' }).waitFor();
    t.ok(await page.getByRole('table', { name: 'Policy details' }).getByText('10.0.0.0/8', { exact: false }).isVisible(), 'its condition is shown');
    await page.getByRole('button', { name: 'Activate' }).click();
    await state.filter({ hasText: /^active$/ }).waitFor();
    await drive.checkScreen(t, page, 'policy-detail');
    await page.getByRole('button', { name: 'Delete policy' }).click();
    await page.getByRole('dialog', { name: 'Delete this policy?' }).getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('table', { name: 'Admin policies' }).waitFor();
    t.equal(await page.getByRole('link', { name: 'No user writes from outside' }).count(), 0, 'the deleted policy is not listed');
    await drive.checkScreen(t, page, 'policies');
    t.same(problems, [], 'no console error, no CSP violation');
    await page.context().close();
  });

  t.test('machine principals and their keys (a private key refused at its field, rotation, revocation), and check API keys (shown once, revoked)', async (t) => {
    const owner = await setupTenant(srv, 'cr-machines');
    const email = await consoleAdministrator(srv, owner.tenant_id, ['admin:machine-principals:read', 'admin:machine-principals:write', 'admin:check-api-keys:read', 'admin:check-api-keys:write', 'admin:users:read']);
    const { page, problems } = await drive.watchedPage();
    await drive.signIn(page, owner.tenant_id, email);
    await page.getByRole('link', { name: 'Machine principals' }).click();
    await page.getByRole('link', { name: 'New principal' }).click();
    await page.getByLabel('Display name').fill('Nightly sync');
    await page.getByLabel('Type').selectOption('ci');
    await page.getByLabel('Token lifetime (seconds)').fill('10');
    await page.getByLabel('Permissions').fill('admin:users:read');
    await page.getByRole('button', { name: 'Create principal' }).click();
    t.match(await errorOf(page, 'Token lifetime (seconds)'), /must be >= 60/, 'the server\'s bound stands at its field');
    await page.getByLabel('Token lifetime (seconds)').fill('600');
    await page.getByRole('button', { name: 'Create principal' }).click();
    await page.getByRole('table', { name: 'Principal details' }).getByText('admin:users:read').waitFor();

    await page.getByLabel('Key name').fill('first');
    await page.getByLabel('Public key (JWK)').fill(jwk(true));
    await page.getByRole('button', { name: 'Add key' }).click();
    t.match(await errorOf(page, 'Public key (JWK)'), /private key material/, 'a private key is refused, at the key field');
    await drive.checkScreen(t, page, 'principal-key-error');
    await page.getByLabel('Public key (JWK)').fill(jwk());
    await page.getByRole('button', { name: 'Add key' }).click();
    const keys = page.getByRole('table', { name: 'Keys' });
    await keys.getByRole('row').filter({ hasText: 'first' }).filter({ hasText: 'active' }).waitFor();

    await page.getByRole('button', { name: 'Rotate key first' }).click();
    const dialog = page.getByRole('dialog', { name: 'Rotate key first' });
    await dialog.getByLabel('Key name').fill('second');
    await dialog.getByLabel('Public key (JWK)').fill(jwk());
    await drive.checkScreen(t, page, 'principal-key-rotate');
    await dialog.getByRole('button', { name: 'Rotate key' }).click();
    await keys.getByRole('row').filter({ hasText: 'first' }).filter({ hasText: 'rotating' }).waitFor();
    await keys.getByRole('row').filter({ hasText: 'second' }).filter({ hasText: 'active' }).waitFor();
    t.pass('the old key is rotating, its successor active');
    await page.getByRole('button', { name: 'Revoke key second' }).click();
    await page.getByRole('dialog', { name: 'Revoke this key?' }).getByRole('button', { name: 'Revoke key' }).click();
    await keys.getByRole('row').filter({ hasText: 'second' }).filter({ hasText: 'revoked' }).waitFor();
    await drive.checkScreen(t, page, 'principal-detail');
    await page.getByRole('button', { name: 'Disable principal' }).click();
    await page.getByRole('dialog', { name: 'Disable this principal?' }).getByRole('button', { name: 'Disable' }).click();
    await page.getByTestId('principal-status').filter({ hasText: 'disabled' }).waitFor();
    await page.getByRole('link', { name: 'Machine principals' }).click();
    await page.getByRole('table', { name: 'Machine principals' }).getByRole('row').filter({ hasText: 'Nightly sync' }).filter({ hasText: 'disabled' }).waitFor();
    await drive.checkScreen(t, page, 'principals');

    await page.getByRole('link', { name: 'Check API keys' }).click();
    await page.getByRole('link', { name: 'New key' }).click();
    await page.getByLabel('Name').fill('Orders service');
    await page.getByLabel('Client id').fill('no-such-client');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('alert').filter({ hasText: 'No such client.' }).waitFor();
    await page.getByLabel('Client id').fill(owner.clients.web.client_id);
    await page.getByLabel('Rate limit').selectOption('strict');
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = (await page.getByTestId('check-key').textContent())!;
    await drive.checkScreen(t, page, 'check-key-created');
    await page.getByRole('link', { name: 'Back to the keys' }).click();
    const row = page.getByRole('table', { name: 'Check API keys' }).getByRole('row').filter({ hasText: 'Orders service' });
    await row.filter({ hasText: 'active' }).waitFor();
    const prefix = (await row.locator('code').textContent())!;
    t.ok(key.startsWith(prefix), 'the list names the key by its prefix');
    t.notOk((await page.content()).includes(key), 'and never shows the key again');
    await page.getByRole('button', { name: 'Revoke Orders service' }).click();
    await page.getByRole('dialog', { name: 'Revoke this key?' }).getByRole('button', { name: 'Revoke key' }).click();
    await row.filter({ hasText: 'revoked' }).waitFor();
    await drive.checkScreen(t, page, 'check-keys');
    t.same(problems, [], 'no console error, no CSP violation');
    await page.context().close();
  });
}
