import { inflateSync } from 'node:zlib';
import t from 'tap';
import { createLocalJWKSet, decodeJwt, jwtVerify } from 'jose';
import { j } from '../helpers/http.js';
import { waitFor } from '../helpers/processes.js';
import { startTestServer } from '../helpers/server.js';
import { postForm, setupTenant } from '../helpers/tokens.js';

// Token status lists (draft-ietf-oauth-status-list): a resource server validates svc's JWTs locally and
// learns of revocations from a signed, compressed list instead of introspecting every request.
const srv = await startTestServer();
t.teardown(() => srv.close());
const on = await setupTenant(srv, 'statuslist');
await srv.deps.sql`update tenants set settings = settings || ${srv.deps.sql.json({ status_list: true })} where id = ${on.tenant_id}`;
await srv.deps.tokens.tenantSettings.changed(on.tenant_id);
const off = await setupTenant(srv, 'nostatuslist');
const jwks = createLocalJWKSet(await j(await fetch(`${srv.url}/.well-known/jwks.json`)));

const issue = async (b = on) => (await j(await postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials' }))).access_token as string;
interface StatusClaim { status_list: { idx: number; uri: string } }

/** The list as a resource server reads it: fetched, signature verified with the JWKS, bits inflated. */
async function readList(uri: string): Promise<{ bit(i: number): number; ttl: number }> {
  const res = await fetch(uri);
  if (res.status !== 200) throw new Error(`status list answered ${res.status}`);
  if (!res.headers.get('content-type')?.startsWith('application/statuslist+jwt')) throw new Error(`content-type ${res.headers.get('content-type')}`);
  const { payload } = await jwtVerify(await res.text(), jwks, { typ: 'statuslist+jwt', issuer: undefined });
  if (payload.sub !== uri) throw new Error(`sub ${payload.sub} is not the list's URI`);
  const sl = payload.status_list as { bits: number; lst: string };
  if (sl.bits !== 1) throw new Error(`bits ${sl.bits}`);
  const bytes = inflateSync(Buffer.from(sl.lst, 'base64url'));
  return { bit: (i) => (bytes[i >> 3]! >> (i & 7)) & 1, ttl: Number(payload.ttl) };
}

t.test('tokens of a tenant with status lists carry a status claim with distinct indices', async (t) => {
  const tokens = await Promise.all(Array.from({ length: 20 }, () => issue()));
  const claims = tokens.map((x) => decodeJwt(x).status as StatusClaim);
  t.ok(claims.every((c) => typeof c?.status_list?.idx === 'number'), 'every token has status.status_list.idx');
  t.equal(new Set(claims.map((c) => c.status_list.idx)).size, 20, 'indices are distinct');
  t.equal(claims[0]!.status_list.uri, `${srv.url}/statuslists/${on.tenant_id}/0`);
  t.equal(decodeJwt(await issue(off)).status, undefined, 'a tenant without status lists: no claim');
  t.equal((await fetch(`${srv.url}/statuslists/${off.tenant_id}/0`)).status, 404, 'and no list');
  t.equal((await fetch(`${srv.url}/statuslists/${on.tenant_id}/7`)).status, 404, 'a list never handed out');
});

t.test('a revoked token\'s bit flips in the next list; the others stay valid', async (t) => {
  const [victim, bystander] = [await issue(), await issue()];
  const v = (decodeJwt(victim).status as StatusClaim).status_list;
  const b = (decodeJwt(bystander).status as StatusClaim).status_list;
  const before = await readList(v.uri);
  t.equal(before.bit(v.idx), 0, 'valid before the revocation');
  t.equal(before.ttl, 10, 'ttl tells resource servers how long to keep it');
  const revoked = await postForm(`${srv.url}/revoke`, on.clients.exchanger, { token: victim });
  t.equal(revoked.status, 200);
  const t0 = Date.now();
  let after = before;
  await waitFor(async () => { after = await readList(v.uri); return after.bit(v.idx) === 1; }, 10_000, 50);
  t.comment(`the bit flipped ${Date.now() - t0} ms after the revocation answered`);
  t.equal(after.bit(v.idx), 1, 'revoked');
  t.equal(after.bit(b.idx), 0, 'the other token is untouched');
  t.same(await j(await postForm(`${srv.url}/introspect`, on.clients.resource_server, { token: victim })), { active: false }, 'introspection agrees');
});

t.test('a token revoked by id elsewhere (refresh families, code replays, elevation grants) shows in the list too', async (t) => {
  // Tokens revoked by id anywhere (here the store's revoke, as families, code replays and elevation grants do) carry their index.
  const token = await issue();
  const s = (decodeJwt(token).status as StatusClaim).status_list;
  const { jti, exp } = decodeJwt(token);
  await srv.deps.tokens.revocations.revoke(on.tenant_id, jti!, exp!);
  await waitFor(async () => (await readList(s.uri)).bit(s.idx) === 1, 10_000, 50);
  t.pass('the bit is set');
});
