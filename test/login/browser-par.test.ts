import fs from 'node:fs';
import type { webcrypto } from 'node:crypto';
import t from 'tap';
import { generateKeyPair } from 'jose';
import * as oidc from 'openid-client';
import type { Browser } from 'playwright-core';
import { CHROMIUM, launchChromium } from '../helpers/browser.js';
import { decodeJwt } from 'jose';
import { codeFor, startLoginEnv, uniqueEmail } from './fixtures.js';

// The FAPI-style code flow as a person meets it, in headless Chromium: openid-client pushes the request
// to /par with a DPoP proof, the browser carries only client_id and request_uri, the person signs in
// (reloading the login page on the way), and openid-client redeems and refreshes DPoP-bound tokens.
if (!fs.existsSync(CHROMIUM)) {
  t.plan(0, 'Chromium is not installed (apt-get install chromium)');
} else {
  const env = await startLoginEnv();
  const browser: Browser = await launchChromium();
  t.teardown(async () => { await browser.close(); await env.close(); });
  const { srv, sink, tenant } = env;
  const web = tenant.clients.web;

  t.test('PAR + PKCE + DPoP code flow in Chromium, then a DPoP refresh', async (t) => {
    const config = await oidc.discovery(new URL(srv.url), web.client_id, web.client_secret, oidc.ClientSecretBasic(web.client_secret), { execute: [oidc.allowInsecureRequests] });
    const dpop = oidc.getDPoPHandle(config, await generateKeyPair('ES256', { extractable: true }) as webcrypto.CryptoKeyPair);
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = await oidc.buildAuthorizationUrlWithPAR(config, {
      redirect_uri: web.redirect_uris[0]!, scope: 'openid email offline_access', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state,
    }, { DPoP: dpop });
    const page = await (await browser.newContext()).newPage();
    await page.goto(url.href);
    t.equal(await page.title(), 'Sign in');
    await page.reload();
    t.equal(await page.title(), 'Sign in', 'a reload of the login page still finds the pushed request');
    const email = uniqueEmail('par-browser');
    await page.getByLabel('Email address').fill(email);
    await page.getByRole('button', { name: 'Email me a code' }).click();
    await page.waitForSelector('#code');
    await page.getByLabel('One-time code').fill(await codeFor(sink, email));
    await Promise.all([page.waitForURL(/\/demo\/callback\?/), page.getByRole('button', { name: 'Sign in' }).click()]);
    const callback = new URL(page.url());
    t.equal(callback.searchParams.get('iss'), srv.url, 'iss in the authorization response');
    const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state }, undefined, { DPoP: dpop });
    t.equal(tokens.token_type, 'dpop');
    t.type((decodeJwt(tokens.access_token).cnf as { jkt?: string }).jkt, 'string', 'the access token is bound');
    t.ok(tokens.refresh_token, 'a refresh token');
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!, undefined, { DPoP: dpop });
    t.equal(refreshed.token_type, 'dpop', 'refresh through the library with the same key');
    const info = await oidc.fetchUserInfo(config, refreshed.access_token, oidc.skipSubjectCheck, { DPoP: dpop });
    t.equal(info.email, email, 'userinfo with the DPoP-bound token');
    const again = await page.goto(url.href);
    t.equal(again?.status(), 400, 'the request_uri is spent once its code was issued');
  });
}
