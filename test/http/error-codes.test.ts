import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { AppError, ERROR_CODES, NotFound, OAuthError, toErrorReply, type ErrorCode } from '../../src/errors.js';

// The Errors part of the interface spec (interface-spec.md), copied as written: the spec is not part of
// the repository, and a change to it should show up here as a diff someone reads.
const SPEC_ERRORS = `
| 400 | \`invalid_request\` (invalid request format), \`invalid_json\`, \`flow_inactive\`, \`job_cancelled\` |
| 401 | \`unauthorized\`, \`token_expired\`, \`token_revoked\` |
| 403 | \`forbidden\`, \`insufficient_scope\`, \`user_suspended\`, \`user_locked\`, \`client_disabled\` |
| 404 | \`not_found\`, \`user_not_found\`, \`client_not_found\`, \`organization_not_found\`, \`role_not_found\`, \`policy_not_found\`, \`flow_not_found\`, \`job_not_found\` |
| 409 | \`conflict\`, \`email_already_exists\`, \`client_id_already_exists\`, \`role_already_assigned\` |
| 422 | \`validation_error\` (with \`details\` keyed by field), \`invalid_email\`, \`invalid_password\`, \`import_failed\` |
| 429 | \`rate_limit_exceeded\` |
| 500 | \`internal_error\`, \`job_failed\`, \`export_failed\`, \`database_error\` |
| 503 | \`service_unavailable\` |
| 504 | \`timeout\` |
`;

function specCodes(): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of SPEC_ERRORS.trim().split('\n')) {
    const [, status, codes] = /^\| (\d{3}) \| (.*) \|$/.exec(line) ?? [];
    // Only the codes themselves: `details` inside a parenthesis is a field name, not a code.
    for (const m of (codes ?? '').replace(/\([^)]*\)/g, '').matchAll(/`([a-z_]+)`/g)) out.set(m[1]!, Number(status));
  }
  return out;
}

const table = ERROR_CODES as Record<string, { status: number; description: string; source: string }>;

t.test('every code the spec lists is in the table, with the spec\'s status', async (t) => {
  const spec = specCodes();
  t.equal(spec.size, 35, 'the copy of the spec\'s table parsed completely');
  for (const [code, status] of spec) {
    t.ok(code in table, `${code} is in ERROR_CODES`);
    t.equal(table[code]?.status, status, `${code} is answered with ${status}`);
    t.equal(table[code]?.source, 'spec', `${code} is marked as the spec's`);
  }
});

t.test('every code in the table marked as the spec\'s is in the spec; the others name their RFC', async (t) => {
  const spec = specCodes();
  for (const [code, info] of Object.entries(table)) {
    if (info.source === 'spec') t.ok(spec.has(code), `${code} is in the spec's table`);
    else t.match(info.source, /^(RFC \d+|OpenID Connect Core)$/, `${code} comes from ${info.source}`);
    t.ok(info.description.length > 0, `${code} has a description`);
  }
});

/** Every .ts file under src/, read from the repository (the test runs from dist/test/http). */
function sources(): Array<{ file: string; text: string }> {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../src');
  const out: Array<{ file: string; text: string }> = [];
  // src/console/ is the browser console (its files are .ts/.tsx run in the page): its error objects never reach a client of svc.
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const p = path.join(dir, name);
      if (statSync(p).isDirectory()) { if (name !== 'generated' && name !== 'console') walk(p); } else if (name.endsWith('.ts')) out.push({ file: path.relative(root, p), text: readFileSync(p, 'utf8') });
    }
  };
  walk(root);
  return out;
}

t.test('codes we emit are in the table, and the table has no OAuth code nothing emits', async (t) => {
  // Error classes take an ErrorCode (the compiler holds them to the table); OAuth error redirects
  // carry the code as a query parameter, which only a look at the source finds.
  const emitted = new Set<string>();
  const mentioned = new Set<string>();
  for (const { file, text } of sources()) {
    for (const m of text.matchAll(/\berror: '([a-z_]+)'/g)) emitted.add(m[1]!);
    if (file === 'errors.ts') continue;
    for (const m of text.matchAll(/'([a-z_]+)'/g)) mentioned.add(m[1]!);
  }
  t.ok(emitted.has('login_required') && emitted.has('access_denied'), 'the scan finds the error redirects');
  for (const code of emitted) t.ok(code in table, `${code} (sent in an error redirect) is in ERROR_CODES`);
  for (const [code, info] of Object.entries(table)) {
    if (info.source !== 'spec') t.ok(mentioned.has(code), `${code} (${info.source}) is used somewhere in src/`);
  }
});

t.test('the typed classes and toErrorReply draw on the table', async (t) => {
  const nf = new NotFound('role_not_found');
  t.equal(nf.status, 404);
  t.equal(nf.message, ERROR_CODES.role_not_found.description, 'the table\'s text when none is given');
  const oauth = new OAuthError('invalid_client', 'nope');
  t.equal(oauth.status, 401);
  t.match(oauth.headers, { 'WWW-Authenticate': /^Basic / });
  t.equal(new OAuthError('unauthorized_client', 'x', 403).status, 403, 'a class may answer a code with another status');
  const reply = toErrorReply(new Error('boom'), 'oauth');
  t.same(reply.body, { error: 'internal_error', error_description: ERROR_CODES.internal_error.description });
  t.equal(reply.status, 500);
  const v = toErrorReply(new AppError(422, 'validation_error' satisfies ErrorCode), 'oauth');
  t.equal(v.status, 400, 'OAuth endpoints answer schema violations with invalid_request');
  t.equal(v.body.error, 'invalid_request');
});

t.test('an unreachable Postgres or Redis is 503 service_unavailable, not 500', async (t) => {
  const pgGone = Object.assign(new Error('write CONNECTION_CLOSED 127.0.0.1:5432'), { code: 'CONNECTION_CLOSED' });
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
  const shutdown = Object.assign(new Error('terminating connection due to administrator command'), { name: 'PostgresError', code: '57P01' });
  const link = Object.assign(new Error('connection failure'), { name: 'PostgresError', code: '08006' });
  const redisClosed = new Error('Connection is closed.');
  for (const err of [pgGone, refused, shutdown, link, redisClosed]) {
    for (const iface of ['oauth', 'admin', 'public'] as const) {
      const r = toErrorReply(err, iface);
      t.equal(r.status, 503, `${err.message} (${iface})`);
      t.equal(r.body.error, 'service_unavailable');
      t.equal(r.headers?.['Retry-After'], '1');
      t.equal(r.unexpected, true, 'still logged');
    }
  }
  t.equal(toErrorReply(Object.assign(new Error('duplicate key'), { name: 'PostgresError', code: '23505' }), 'admin').status, 500, 'a constraint violation that escaped is a bug: 500');
  t.equal(toErrorReply(new TypeError('x is undefined'), 'admin').status, 500);
});
