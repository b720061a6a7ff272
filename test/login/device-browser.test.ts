import fs from 'node:fs';
import type { webcrypto } from 'node:crypto';
import t from 'tap';
import { decodeJwt, generateKeyPair } from 'jose';
import * as oidc from 'openid-client';
import type { Browser } from 'playwright-core';
import { api } from '../admin/helpers.js';
import { CHROMIUM, launchChromium } from '../helpers/browser.js';
import { freePort } from '../helpers/env.js';
import { adminToken } from '../helpers/tokens.js';
import { codeFor, startLoginEnv, uniqueEmail } from './fixtures.js';

// The device authorization grant (RFC 8628) as a person meets it: openid-client is the device (a public
// client with a DPoP key) and polls while a person in headless Chromium opens verification_uri_complete,
// signs in with the emailed code and allows the device; then the same person, still signed in, types a
// second device's code by hand and denies it; a third device is allowed after a passkey sign-in (CDP
// virtual authenticator). The polling interval is 1 s here (DEVICE_POLL_INTERVAL_SECONDS); the issuer is
// http://localhost:<port> because WebAuthn needs a host name.
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

if (!fs.existsSync(CHROMIUM)) {
  t.plan(0, 'Chromium is not installed (apt-get install chromium)');
} else {
  const port = await freePort();
  const env = await startLoginEnv({ DEVICE_POLL_INTERVAL_SECONDS: '1', PORT: String(port), ISSUER: `http://localhost:${port}` });
  const browser: Browser = await launchChromium();
  t.teardown(async () => { await browser.close(); await env.close(); });
  const { srv, sink, tenant } = env;
  const base = srv.config.issuer;
  const call = api(srv, await adminToken(srv, { tenantId: tenant.tenant_id, permissions: ['admin:*'] }));
  const created = await call('POST', '/api/admin/clients', {
    name: 'Kitchen display', token_endpoint_auth_method: 'none', grant_types: [DEVICE_GRANT, 'refresh_token'], scopes: ['openid', 'email', 'offline_access'],
  });
  const clientId = created.body.client_id as string;
  const config = await oidc.discovery(new URL(base), clientId, undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });
  const dpop = oidc.getDPoPHandle(config, await generateKeyPair('ES256', { extractable: true }) as webcrypto.CryptoKeyPair);
  const context = await browser.newContext();

  t.test('a person allows the device in Chromium while openid-client polls; DPoP-bound tokens, then a refresh', async (t) => {
    t.equal(created.status, 201, 'the admin API registers a public device client');
    const da = await oidc.initiateDeviceAuthorization(config, { scope: 'openid email offline_access' });
    t.match(da.user_code, /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    t.equal(da.interval, 1);
    const polling = oidc.pollDeviceAuthorizationGrant(config, da, undefined, { DPoP: dpop });
    const page = await context.newPage();
    const entry = await page.goto(da.verification_uri_complete!);
    t.equal(await page.title(), 'Connect a device');
    t.match(entry!.headers()['content-security-policy'], /^default-src 'none'; style-src 'self';.*form-action 'self'; frame-ancestors 'none'/, 'the login pages\' CSP');
    t.equal(await page.getByLabel('Code').inputValue(), da.user_code, 'verification_uri_complete prefills the code');
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForSelector('#email');
    t.equal(await page.title(), 'Sign in');
    t.match(await page.textContent('main'), /Kitchen display/, 'the login page names the device\'s application');
    const email = uniqueEmail('device-browser');
    await page.getByLabel('Email address').fill(email);
    await page.getByRole('button', { name: 'Email me a code' }).click();
    await page.waitForSelector('#code');
    await page.getByLabel('One-time code').fill(await codeFor(sink, email));
    await Promise.all([page.waitForURL(/\/device\/confirm\?/), page.getByRole('button', { name: 'Sign in' }).click()]);
    t.equal(await page.title(), 'Allow this device?');
    t.match(await page.textContent('main'), da.user_code, 'the consent page shows the code to compare');
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.locator('h1', { hasText: 'Device connected' }).waitFor();
    const tokens = await polling;
    t.equal(tokens.token_type, 'dpop');
    const at = decodeJwt(tokens.access_token);
    t.type((at.cnf as { jkt?: string }).jkt, 'string', 'the access token is bound to the device\'s key');
    t.equal(at.email, email);
    t.equal(tokens.claims()?.email, email, 'an ID token for the person');
    t.ok(tokens.refresh_token);
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!, undefined, { DPoP: dpop });
    t.equal(refreshed.token_type, 'dpop', 'the bound refresh token works with the same key');
    await page.close();
  });

  t.test('signed in already, the person types another device\'s code by hand and denies it: access_denied', async (t) => {
    const da = await oidc.initiateDeviceAuthorization(config, { scope: 'openid' });
    // Its refusal is read after the page's steps, but may come while they run: caught at once, so it is
    // never an unhandled rejection.
    const polling = oidc.pollDeviceAuthorizationGrant(config, da, undefined, { DPoP: dpop }).catch((e: unknown) => e);
    const page = await context.newPage();
    await page.goto(`${base}/device`);
    t.equal(await page.getByLabel('Code').inputValue(), '');
    await page.getByLabel('Code').fill('ZZZZ-ZZZZ');
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForSelector('.error');
    t.match(await page.textContent('.error'), /not valid/, 'a wrong code is explained on the form');
    await page.getByLabel('Code').fill(da.user_code.replace('-', '').toLowerCase());
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.locator('h1', { hasText: 'Allow this device?' }).waitFor();
    await page.getByRole('button', { name: 'Deny' }).click();
    await page.locator('h1', { hasText: 'Access denied' }).waitFor();
    const err = await polling as { error?: string };
    t.equal(err.error, 'access_denied', 'openid-client stops polling with access_denied');
    await page.close();
  });

  t.test('a passkey sign-in behind /device: the device gets its tokens', async (t) => {
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    const cdp = await ctx.newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    await cdp.send('WebAuthn.addVirtualAuthenticator', { options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true } });
    // A person of this tenant with a passkey: signed in by email on /account, passkey added, signed out.
    const email = uniqueEmail('device-passkey');
    await page.goto(`${base}/account?tenant=${encodeURIComponent(tenant.tenant_id)}`);
    await page.getByLabel('Email address').fill(email);
    await page.getByRole('button', { name: 'Email me a code' }).click();
    await page.waitForSelector('#code');
    await page.getByLabel('One-time code').fill(await codeFor(sink, email));
    await Promise.all([page.waitForURL(/\/account$/), page.getByRole('button', { name: 'Sign in' }).click()]);
    await Promise.all([page.waitForURL(/\/account\?done=added/), page.getByRole('button', { name: 'Add a passkey' }).click()]);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.locator('h1', { hasText: 'Signed out' }).waitFor();
    // The button rather than the email field's autofill, which the virtual authenticator would answer at once.
    await page.addInitScript('Object.defineProperty(PublicKeyCredential, "isConditionalMediationAvailable", { value: undefined })');

    const da = await oidc.initiateDeviceAuthorization(config, { scope: 'openid email' });
    const polling = oidc.pollDeviceAuthorizationGrant(config, da, undefined, { DPoP: dpop });
    await page.goto(da.verification_uri_complete!);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('button', { name: 'Sign in with a passkey' }).waitFor();
    await Promise.all([page.waitForURL(/\/device\/confirm\?/), page.getByRole('button', { name: 'Sign in with a passkey' }).click()]);
    t.equal(await page.title(), 'Allow this device?');
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.locator('h1', { hasText: 'Device connected' }).waitFor();
    const tokens = await polling;
    t.equal(decodeJwt(tokens.access_token).email, email, 'tokens for the person who signed in with the passkey');
    const logins = await srv.deps.sql<{ method: string }[]>`select data->>'method' as method from event_outbox where tenant_id = ${tenant.tenant_id} and event = 'auth.login' order by id desc limit 1`;
    t.equal(logins[0]?.method, 'passkey', 'the sign-in was by passkey');
    await ctx.close();
  });
}
