import { createPublicKey, verify as cryptoVerify } from 'node:crypto';
import t from 'tap';
import * as oidc from 'openid-client';
import { j } from '../helpers/http.js';
import { codeFor, sessionCookieFrom, startLoginEnv, uniqueEmail } from './fixtures.js';

// A real OpenID Connect relying party (openid-client v6) completes the authorization code flow with
// PKCE against discovery; the ID token is then verified independently against the published JWKS.
const env = await startLoginEnv();
t.teardown(() => env.close());
const { srv, sink, tenant } = env;
const web = tenant.clients.web;
const redirectUri = web.redirect_uris[0]!;

t.test('openid-client: discovery, authorization code + PKCE, ID token, userinfo', async (t) => {
  const config = await oidc.discovery(new URL(srv.url), web.client_id, web.client_secret, oidc.ClientSecretBasic(web.client_secret), { execute: [oidc.allowInsecureRequests] });
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri, scope: 'openid email', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state, nonce,
  });
  // The user's part, as an API client: login_required -> code by email -> verify -> continue.
  let res = await fetch(url, { headers: { accept: 'application/json' } });
  const { interaction } = await j(res);
  const email = uniqueEmail('rp');
  res = await fetch(`${srv.url}/email-code/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, interaction }) });
  t.equal(res.status, 200);
  res = await fetch(`${srv.url}/email-code/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, code: await codeFor(sink, email), interaction }) });
  const verified = await j(res);
  t.match(verified.continue, `${srv.url}/authorize/resume?interaction=`);
  res = await fetch(verified.continue, { headers: { cookie: sessionCookieFrom(res)! }, redirect: 'manual' });
  t.equal(res.status, 303);
  const callback = new URL(res.headers.get('location')!);

  const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce, idTokenExpected: true });
  const claims = tokens.claims()!;
  t.equal(claims.iss, srv.url);
  t.equal(claims.aud, web.client_id);
  t.equal(claims.sub, verified.sub);
  t.equal(claims.nonce, nonce);
  t.equal(claims.email, email);
  t.type(claims.auth_time, 'number');

  // Independent signature check of the ID token with the key the JWKS publishes under its kid.
  const [h, p, s] = tokens.id_token!.split('.') as [string, string, string];
  const header = JSON.parse(Buffer.from(h, 'base64url').toString());
  const jwks = await j(await fetch(`${srv.url}/.well-known/jwks.json`));
  const jwk = jwks.keys.find((k: { kid: string }) => k.kid === header.kid);
  t.ok(jwk, 'the signing key is published');
  t.equal(header.alg, 'RS256');
  t.ok(cryptoVerify('sha256', Buffer.from(`${h}.${p}`), createPublicKey({ key: jwk, format: 'jwk' }), Buffer.from(s, 'base64url')), 'ID token signature verifies against the JWKS');

  const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
  t.equal(info.email, email);

  // Discovery now names the login endpoints and the grant.
  const meta = config.serverMetadata();
  t.equal(meta.authorization_endpoint, `${srv.url}/authorize`);
  t.equal(meta.userinfo_endpoint, `${srv.url}/userinfo`);
  t.equal(meta.end_session_endpoint, `${srv.url}/logout`);
  t.ok(meta.grant_types_supported?.includes('authorization_code'));

  // RP-initiated logout URL built by the library is accepted.
  const logoutUrl = oidc.buildEndSessionUrl(config, { id_token_hint: tokens.id_token!, post_logout_redirect_uri: `${srv.url}/demo/logged-out`, state: 'x' });
  res = await fetch(logoutUrl, { redirect: 'manual' });
  t.equal(res.status, 302);
  t.equal(res.headers.get('location'), `${srv.url}/demo/logged-out?state=x`);
});
