import t from 'tap';
import { HEADER, importEnv, mapping } from './fixtures.js';

// A file the import cannot take is refused when it is sent, with what is wrong and where, instead of
// being accepted (202) and failing later in the worker: a malformed header or body (422, line and
// column), more than 100,000 rows (413), text that is not UTF-8 (422). No job is created for any of
// them. 202 stays for files whose rows parse, whatever their values.
const env = await importEnv('imprefuse');
const { call, srv, token } = env;

/** The import request as raw bytes, to send what JSON.stringify never produces (invalid UTF-8). */
function rawImport(csvJsonText: Buffer): Promise<Response> {
  const body = Buffer.concat([Buffer.from(`{"mapping":${JSON.stringify(mapping)},"csv":"`), csvJsonText, Buffer.from('"}')]);
  return fetch(`${srv.url}/api/admin/user-imports`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body });
}

async function jobCount(): Promise<number> {
  return (await call('GET', '/api/admin/user-imports?limit=100')).body.items.length;
}

type Subtest = Parameters<Parameters<typeof t.test>[0]>[0];

function refused(t: Subtest, r: { status: number; body: any }, status: number, description: RegExp) {
  t.equal(r.status, status, `answered ${status}, not 202`);
  t.equal(r.body.error, 'import_failed');
  t.match(r.body.error_description, description);
  t.equal(r.body.message, r.body.error_description, 'the admin error body');
}

t.test('a malformed header: 422 naming line and column', async (t) => {
  const stray = await call('POST', '/api/admin/user-imports', { mapping, csv: `E-Mail,Fi"rst,Last,Phone,Verified,Team\nx@example.org,A,B,,yes,red\n` });
  refused(t, stray, 422, /header.*line 1, column 2/);
  const closing = await call('POST', '/api/admin/user-imports', { mapping, csv: `"E-Mail"x,First,Last,Phone,Verified,Team\nx@example.org,A,B,,yes,red\n` });
  refused(t, closing, 422, /header.*line 1, column 1/);
  const twice = await call('POST', '/api/admin/user-imports', { mapping, csv: `E-Mail,First,Last,Phone,First,Verified,Team\nx@example.org,A,B,,C,yes,red\n` });
  refused(t, twice, 422, /header.*line 1, column 5.*First.*twice/);
  t.notMatch(stray.body.error_description, /no CSV header line/);
  t.equal(await jobCount(), 0, 'no job was created');
});

t.test('a body that does not parse: 422 naming line and column, never a value', async (t) => {
  const unclosed = await call('POST', '/api/admin/user-imports', { mapping, csv: `${HEADER}\nok@example.org,A,B,,yes,red\n"unclosed@example.org,A,B,,yes,red\n` });
  refused(t, unclosed, 422, /line 3, column 1/);
  t.notMatch(unclosed.body.error_description, /unclosed@/);
  const short = await call('POST', '/api/admin/user-imports', { mapping, csv: `${HEADER}\nok@example.org,A,B,,yes,red\nshort@example.org,A\n` });
  refused(t, short, 422, /line 3.*2 fields.*6/);
  t.notMatch(short.body.error_description, /short@/);
  t.equal(await jobCount(), 0);
});

t.test('more than 100,000 rows: 413 before anything is stored', async (t) => {
  const row = 'bulk@example.org,A,B,,yes,red\n';
  const over = await call('POST', '/api/admin/user-imports', { mapping, csv: `${HEADER}\n${row.repeat(100_001)}` });
  refused(t, over, 413, /more than 100,000 rows/);
  t.equal(await jobCount(), 0);
});

t.test('text that is not UTF-8: 422 with where it is', async (t) => {
  // A Latin-1 "é" (0xE9) sent as a raw byte in the JSON body.
  const latin1 = await rawImport(Buffer.concat([Buffer.from(`${HEADER}\\nrene@example.org,Ren`), Buffer.from([0xe9]), Buffer.from(',B,,yes,red\\n')]));
  refused(t, { status: latin1.status, body: await latin1.json() }, 422, /not valid UTF-8.*line 2, character 21/);
  // A lone surrogate escape, which no UTF-8 text can carry, is refused before the route by the input
  // check every request passes (src/http/input-bounds.ts): 422 naming the field.
  const surrogate = await rawImport(Buffer.from(`${HEADER}\\nx@example.org,A\\udc80,B,,yes,red\\n`));
  const sBody = (await surrogate.json()) as { error: string; details?: Record<string, string[]> };
  t.equal(surrogate.status, 422);
  t.equal(sBody.error, 'validation_error');
  t.match(sBody.details?.csv?.[0], /unpaired UTF-16 surrogates/);
  t.equal(await jobCount(), 0);
});

t.test('rows with bad values are still accepted: 202, and the rows are rejected one by one later', async (t) => {
  const ok = await call('POST', '/api/admin/user-imports', { mapping, csv: `${HEADER}\nnot-an-address,A,B,,yes,red\n` });
  t.equal(ok.status, 202);
  t.equal(ok.body.status, 'queued');
  t.equal(ok.body.total_rows, 1, 'the row count is known when the job is created');
});
