import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { passkeyAddressNotice } from '../../src/account/page.js';
import { bootstrap } from '../../src/bootstrap.js';
import { ClientRepository } from '../../src/store/clients.js';
import { createSql } from '../../src/sql.js';
import { testConfig, uniqueName } from '../helpers/env.js';

// npm start (ops/run.mjs) announces a local server as http://localhost:PORT, so passkeys work on the
// first try: WebAuthn refuses IP addresses, and the server's own default issuer is http://HOST:PORT.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const { localIssuer } = (await import(pathToFileURL(path.join(root, 'ops', 'local-issuer.mjs')).href)) as { localIssuer(env: Record<string, string | undefined>): string | undefined };

t.test('npm start: ISSUER http://localhost:PORT while the server listens on 127.0.0.1', async (t) => {
  t.equal(localIssuer({}), 'http://localhost:8080');
  t.equal(localIssuer({ PORT: '9090' }), 'http://localhost:9090');
  t.equal(localIssuer({ HOST: '127.0.0.1' }), 'http://localhost:8080');
  t.equal(localIssuer({ ISSUER: 'https://id.example' }), 'https://id.example', 'an ISSUER given is kept');
  t.equal(localIssuer({ HOST: '0.0.0.0' }), undefined, 'a server listening beyond loopback keeps http://HOST:PORT');
  const c = loadConfig({ ISSUER: localIssuer({}) });
  t.equal(c.host, '127.0.0.1', 'still bound to loopback');
  t.equal(c.issuer, 'http://localhost:8080');
  t.equal(c.webauthnRpId, 'localhost', 'a relying party id browsers accept');
  t.equal(passkeyAddressNotice(c.issuer), undefined, 'the account page has nothing to warn about');
});

t.test('the account page warns when the issuer is an IP address', async (t) => {
  t.match(passkeyAddressNotice('http://127.0.0.1:8080'), /127\.0\.0\.1 is an IP address.*http:\/\/localhost:8080\/account/);
  t.match(passkeyAddressNotice('http://[::1]:8080'), /::1 is an IP address/);
  t.match(passkeyAddressNotice('https://10.1.2.3'), /needs an ISSUER with a host name/);
  t.equal(passkeyAddressNotice('https://id.example'), undefined);
});

t.test('bootstrap again under the new issuer: the demo clients work at both addresses', async (t) => {
  const before = testConfig({ ISSUER: 'http://127.0.0.1:8080' });
  const after = testConfig({ ISSUER: 'http://localhost:8080' });
  const sql = createSql(before, { max: 2 });
  t.teardown(() => sql.end({ timeout: 2 }));
  const tenant = uniqueName('reboot');
  const first = await bootstrap(before, sql, tenant, { platform: false });
  const second = await bootstrap(after, sql, tenant, { platform: false });
  t.same(second.clients.web.redirect_uris, ['http://localhost:8080/demo/callback'], 'the demo URL npm start prints names the new address');
  const web = (await new ClientRepository(sql, tenant).get(first.clients.web.client_id))!;
  t.same(web.redirect_uris, ['http://127.0.0.1:8080/demo/callback', 'http://localhost:8080/demo/callback'], 'registered, after the old one');
  t.same(web.post_logout_redirect_uris, ['http://127.0.0.1:8080/demo/logged-out', 'http://localhost:8080/demo/logged-out']);
  const console = (await new ClientRepository(sql, tenant).get(first.clients.admin_console.client_id))!;
  t.same(console.allowed_audiences, ['http://127.0.0.1:8080/api/admin', 'http://localhost:8080/api/admin']);
  await bootstrap(after, sql, tenant, { platform: false });
  t.same((await new ClientRepository(sql, tenant).get(first.clients.web.client_id))!.redirect_uris.length, 2, 'a third run adds nothing');
});
