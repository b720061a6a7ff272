import fs from 'node:fs';
import { AxeBuilder } from '@axe-core/playwright';
import type { Browser, Page } from 'playwright-core';
import { uniqueName } from '../helpers/env.js';
import { j } from '../helpers/http.js';
import type { TestServer } from '../helpers/server.js';
import { adminToken } from '../helpers/tokens.js';
import { codeFor, uniqueEmail } from '../login/fixtures.js';
import type { SmtpSink } from '../../src/mail/dev-sink.js';

/**
 * The console's browser steps shared by its test files: a watched page, axe per screen (with a
 * screenshot for README.md under CONSOLE_SCREENSHOTS=1), sign-in through svc's real login, and a person
 * whose role grants given admin permissions.
 */
export const SHOTS = process.env.CONSOLE_SCREENSHOTS === '1' ? 'docs/console' : '.data/screenshots/console';

export function consoleBrowser(browser: Browser, srv: TestServer, sink: SmtpSink) {
  const base = srv.url;
  fs.mkdirSync(SHOTS, { recursive: true });

  /** A page in a fresh context that records console errors, failed requests and CSP violations. */
  async function watchedPage(): Promise<{ page: Page; problems: string[] }> {
    const page = await (await browser.newContext({ viewport: { width: 1200, height: 760 }, reducedMotion: 'reduce' })).newPage();
    const problems: string[] = [];
    page.on('console', (m) => {
      // Chromium logs every 4xx a fetch gets; the admin API's answers are checked on screen instead.
      if (m.text().startsWith('Failed to load resource') && /\/api\/admin\/|\/favicon\.ico$|\/token$/.test(m.location().url)) return;
      if (m.type() === 'error' || /Content Security Policy/i.test(m.text())) problems.push(`console: ${m.text()} (${m.location().url})`);
    });
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    page.on('response', (r) => { if (r.status() >= 400 && !/\/api\/admin\/|\/favicon\.ico$|\/token$/.test(r.url())) problems.push(`${r.status()} ${r.url()}`); });
    await page.addInitScript("document.addEventListener('securitypolicyviolation', (e) => console.error('CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI))");
    return { page, problems };
  }

  /** axe on the screen as it is now: no serious or critical violation; a screenshot when named. */
  async function checkScreen(t: { same: (a: unknown, b: unknown, m: string) => unknown }, page: Page, shot?: string): Promise<void> {
    const axe = await new AxeBuilder({ page }).analyze();
    t.same(axe.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`), [], `${shot ?? page.url()}: no serious or critical axe violation`);
    if (shot) await page.screenshot({ path: `${SHOTS}/${shot}.png` });
  }

  /** Signs a person in through the console: the tenant, svc's login page, the emailed code, back to the console. */
  async function signIn(page: Page, tenantId: string, email: string, path = ''): Promise<void> {
    await page.goto(`${base}/console${path}?tenant=${encodeURIComponent(tenantId)}`);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByLabel('Email address').fill(email);
    await page.getByRole('button', { name: 'Email me a code' }).click();
    await page.getByLabel('One-time code').fill(await codeFor(sink, email));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByTestId('signed-in-as').filter({ hasText: email }).waitFor();
  }

  /** Calls the admin API as a machine administrator of the tenant (everything allowed). */
  async function call(tenantId: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
    const token = await adminToken(srv, { tenantId, permissions: ['admin:*'] });
    const res = await fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, body: res.status === 204 ? null : await j(res) };
  }

  /** A person of the tenant whose role grants these admin permissions: their email and user id. */
  async function administrator(tenantId: string, permissions: string[], label = 'operator'): Promise<{ email: string; id: string }> {
    const email = uniqueEmail(label);
    const user = await call(tenantId, 'POST', '/api/admin/users', { email });
    const role = await call(tenantId, 'POST', '/api/admin/roles', { name: uniqueName('console-role'), permissions });
    await call(tenantId, 'POST', `/api/admin/users/${user.body.id}/roles`, { role_id: role.body.id });
    return { email, id: user.body.id as string };
  }

  return { base, watchedPage, checkScreen, signIn, call, administrator };
}
