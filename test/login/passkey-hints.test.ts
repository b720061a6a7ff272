import fs from 'node:fs';
import t from 'tap';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { CHROMIUM, launchChromium } from '../helpers/browser.js';
import { closeLogin } from '../../src/login/index.js';
import { createSession } from '../../src/login/sessions.js';
import { freePort } from '../helpers/env.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { setupTenant } from '../helpers/tokens.js';
import { uniqueEmail } from './fixtures.js';

// The first pages a newcomer opens, in headless Chromium without any authenticator. The login page's
// background passkey request (autofill) must never put an error on the page, whatever the issuer; on an
// issuer that is an IP address (where browsers refuse WebAuthn) a passkey button the person presses says
// why, and the account page says so up front. On a host name (what npm start uses) none of that shows.
type Subtest = Parameters<Parameters<typeof t.test>[0]>[0];
declare const window: { __gets: Array<{ mediation: string | null; settled: boolean; error: string | null }> };

if (!fs.existsSync(CHROMIUM)) {
  t.plan(0, 'Chromium is not installed (apt-get install chromium)');
} else {
  const browser: Browser = await launchChromium();
  const servers: TestServer[] = [];
  t.teardown(async () => { await browser.close(); for (const s of servers) { await s.close(); await closeLogin(s.deps); } });

  async function server(host: 'ip' | 'name') {
    const port = await freePort();
    const srv = await startTestServer({ PORT: String(port), ISSUER: `http://${host === 'ip' ? '127.0.0.1' : 'localhost'}:${port}` });
    servers.push(srv);
    const tenant = await setupTenant(srv, `hint${host}`);
    const web = tenant.clients.web;
    const base = srv.config.issuer;
    const loginUrl = `${base}/authorize?${new URLSearchParams({ response_type: 'code', client_id: web.client_id, redirect_uri: web.redirect_uris[0]!, scope: 'openid email', state: 's' })}`;
    const email = uniqueEmail(`hint${host}`);
    const user = (await srv.deps.store.forTenant(tenant.tenant_id).users.insert({ email, emailVerified: true, loggedIn: true }))!;
    const session = await createSession(srv.deps.redis, { tenantId: tenant.tenant_id, userId: user.id, email, authTime: Math.floor(Date.now() / 1000) });
    return { srv, base, loginUrl, session: session.id };
  }

  /** A page that records every navigator.credentials.get call and how it ended. */
  async function watchedPage(context: BrowserContext): Promise<Page> {
    const page = await context.newPage();
    await page.addInitScript(() => {
      const w = window as unknown as typeof window & { navigator: { credentials: { get(o: { mediation?: string }): Promise<unknown> } } };
      w.__gets = [];
      const original = w.navigator.credentials.get.bind(w.navigator.credentials);
      w.navigator.credentials.get = (o) => {
        const rec = { mediation: o.mediation ?? null, settled: false, error: null as string | null };
        w.__gets.push(rec);
        const p = original(o);
        p.then(() => { rec.settled = true; }, (e: { name?: string }) => { rec.error = e?.name ?? 'Error'; rec.settled = true; });
        return p;
      };
    });
    return page;
  }

  async function statusText(page: Page): Promise<string | null> {
    return page.$eval('#passkey-status', (el) => ((el as unknown as { hidden: boolean }).hidden ? null : el.textContent));
  }

  async function noErrorOnLoad(t: Subtest, page: Page, waitForSettled: boolean) {
    if (waitForSettled) await page.waitForFunction(() => window.__gets.some((g) => g.mediation === 'conditional' && g.settled));
    else await page.waitForFunction(() => window.__gets.some((g) => g.mediation === 'conditional'));
    t.equal(await statusText(page), null, 'no passkey message on the page');
    t.notMatch(await page.textContent('main'), /did not complete|error/i);
    t.equal(await page.locator('[role=alert]:visible').count(), 0, 'nothing announced as an alert');
  }

  t.test('issuer on an IP address: a quiet login page, a hint on the button, a notice on the account page', async (t) => {
    const s = await server('ip');
    const context = await browser.newContext();
    const page = await watchedPage(context);
    await page.goto(s.loginUrl);
    t.equal(await page.title(), 'Sign in');
    await noErrorOnLoad(t, page, true);
    const background = await page.evaluate(() => window.__gets.find((g) => g.mediation === 'conditional')!.error);
    t.equal(background, 'SecurityError', 'the background request did fail (browsers refuse WebAuthn on an IP address)');

    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await page.waitForSelector('#passkey-status:not([hidden])');
    const hint = (await statusText(page))!;
    t.match(hint, /host name/i, 'the person learns passkeys need a host name');
    t.match(hint, /IP address/i);
    t.notMatch(hint, /did not complete/);

    await context.addCookies([{ name: 'svc_session', value: s.session, url: s.base }]);
    await page.goto(`${s.base}/account`);
    t.equal(await page.title(), 'Your account');
    t.match(await page.textContent('main'), /127\.0\.0\.1 is an IP address.*host name/s, 'the account page says why passkeys cannot work here');
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await page.waitForSelector('#passkey-status:not([hidden])');
    t.match((await statusText(page))!, /host name/i, 'adding a passkey says why it failed');
    await context.close();
  });

  t.test('issuer on a host name (localhost): no error and no IP notice', async (t) => {
    const s = await server('name');
    const context = await browser.newContext();
    const page = await watchedPage(context);
    await page.goto(s.loginUrl);
    t.equal(await page.title(), 'Sign in');
    await noErrorOnLoad(t, page, false);
    await context.addCookies([{ name: 'svc_session', value: s.session, url: s.base }]);
    await page.goto(`${s.base}/account`);
    t.equal(await page.title(), 'Your account');
    t.notMatch(await page.textContent('main'), /IP address/);
    await context.close();
  });
}
