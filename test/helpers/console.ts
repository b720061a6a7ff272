import fs from 'node:fs';
import { AxeBuilder } from '@axe-core/playwright';
import type { Browser, Page } from 'playwright-core';
import type { SmtpSink } from '../../src/mail/dev-sink.js';
import { codeFor, uniqueEmail } from '../login/fixtures.js';
import { uniqueName } from './env.js';
import { j } from './http.js';
import type { TestServer } from './server.js';
import { adminToken } from './tokens.js';

/**
 * Driving the admin console (issue 33) in Chromium: a watched page, axe with a screenshot, and the
 * sign-in through svc's real login. Screenshots go to docs/console/ only when asked (CONSOLE_SCREENSHOTS=1),
 * so a test run leaves the tree unchanged; otherwise to .data/screenshots/console/ (not tracked).
 */
export const SHOTS = process.env.CONSOLE_SCREENSHOTS === '1' ? 'docs/console' : '.data/screenshots/console';

/** Requests the page makes whose 4xx answers the screens show themselves (and the login pages' missing favicon). */
const SHOWN = /\/api\/admin\/|\/favicon\.ico$/;

export interface ConsoleDriver {
  /** A page in a fresh context that records console errors, failed requests and CSP violations. */
  watchedPage(): Promise<{ page: Page; problems: string[] }>;
  /** axe on the screen as it is now: no serious or critical violation; a screenshot when named. */
  checkScreen(t: { same: (a: unknown, b: unknown, m: string) => unknown }, page: Page, shot?: string): Promise<void>;
  /** Signs a person in through the console: the tenant, svc's login page, the emailed code, back to the console. */
  signIn(page: Page, tenantId: string, email: string): Promise<void>;
}

export function consoleDriver(browser: Browser, base: string, sink: SmtpSink): ConsoleDriver {
  fs.mkdirSync(SHOTS, { recursive: true });
  return {
    async watchedPage() {
      // axe needs a page of its own context (it opens a blank page beside it to finish its run).
      const page = await (await browser.newContext({ viewport: { width: 1200, height: 760 }, reducedMotion: 'reduce' })).newPage();
      const problems: string[] = [];
      page.on('console', (m) => {
        if (m.text().startsWith('Failed to load resource') && SHOWN.test(m.location().url)) return;
        if (m.type() === 'error' || /Content Security Policy/i.test(m.text())) problems.push(`console: ${m.text()} (${m.location().url})`);
      });
      page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
      page.on('response', (r) => { if (r.status() >= 400 && !SHOWN.test(r.url())) problems.push(`${r.status()} ${r.url()}`); });
      // Runs in the page (a string: test files are compiled without the DOM's types).
      await page.addInitScript("document.addEventListener('securitypolicyviolation', (e) => console.error('CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI))");
      return { page, problems };
    },
    async checkScreen(t, page, shot) {
      const axe = await new AxeBuilder({ page }).analyze();
      t.same(axe.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`), [], `${shot ?? page.url()}: no serious or critical axe violation`);
      if (shot) await page.screenshot({ path: `${SHOTS}/${shot}.png` });
    },
    async signIn(page, tenantId, email) {
      await page.goto(`${base}/console?tenant=${encodeURIComponent(tenantId)}`);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByLabel('Email address').fill(email);
      await page.getByRole('button', { name: 'Email me a code' }).click();
      await page.getByLabel('One-time code').fill(await codeFor(sink, email));
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByTestId('signed-in-as').filter({ hasText: email }).waitFor();
    },
  };
}

/** A person of the tenant (email returned) whose role grants these admin permissions. */
export async function consoleAdministrator(srv: TestServer, tenantId: string, permissions: string[]): Promise<string> {
  const token = await adminToken(srv, { tenantId, permissions: ['admin:*'] });
  const call = async (path: string, body: unknown) => j(await fetch(`${srv.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }));
  const email = uniqueEmail('operator');
  const user = await call('/api/admin/users', { email });
  const role = await call('/api/admin/roles', { name: uniqueName('console-role'), permissions });
  await call(`/api/admin/users/${user.id}/roles`, { role_id: role.id });
  return email;
}
