import t from 'tap';
import nodemailer from 'nodemailer';
import { startSmtpSink } from '../../src/mail/dev-sink.js';
import { mailKey, seal } from '../../src/mail/seal.js';
import { sendEmail } from '../../workers/email-worker.js';
import { testConfig } from '../helpers/env.js';

// The e-mail worker's job over real SMTP into the development sink: the message it composes itself
// (ASCII headers and bodies) and the one nodemailer composes (anything else) both reach the mailbox
// with their code, sender, recipient and both parts.
const config = testConfig({ MAIL_FROM: 'svc <no-reply@svc.test>' });
const sink = await startSmtpSink();
const transport = nodemailer.createTransport({ host: '127.0.0.1', port: sink.port, secure: false, ignoreTLS: true });
const key = mailKey(config.keyEncryptionKey);
t.teardown(async () => { transport.close(); await sink.close(); });

async function send(to: string, code: string, clientName: string) {
  const before = sink.messages.length;
  await sendEmail({ template: 'login_code', tenantId: 't1', to, sealed: seal(key, code, to), clientName, expiresInSeconds: 600 }, { config, transport, key });
  t.equal(sink.messages.length, before + 1, 'one message delivered');
  return sink.messages[sink.messages.length - 1]!;
}

/** The body of the part of this content type, with its headers. */
function part(raw: string, type: string): { head: string; body: string } | undefined {
  const boundary = /boundary="([^"]+)"/.exec(raw)?.[1];
  if (!boundary) return undefined;
  for (const p of raw.split(`--${boundary}`)) {
    const [head, ...body] = p.replace(/^\r\n/, '').split('\r\n\r\n');
    if (head!.toLowerCase().includes(`content-type: ${type}`)) return { head: head!, body: body.join('\r\n\r\n') };
  }
  return undefined;
}

t.test('an ASCII login code mail: headers, envelope and both parts', async (t) => {
  const m = await send('ada@example.com', '482913', 'Acme & Sons <Portal>');
  t.equal(m.from, 'no-reply@svc.test', 'envelope sender is the bare From address');
  t.same(m.to, ['ada@example.com']);
  t.equal(m.code, '482913', 'the sink reads the code from the text part');
  t.equal(m.subject, '482913 is your sign-in code');
  const head = m.raw.slice(0, m.raw.indexOf('\r\n\r\n'));
  t.match(head, /^From: svc <no-reply@svc\.test>$/m);
  t.match(head, /^To: ada@example\.com$/m);
  t.match(head, /^Date: \w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} \+0000$/m);
  t.match(head, /^Message-ID: <[0-9a-f]{32}@svc\.test>$/m);
  t.equal(head.match(/^Message-ID:/gim)?.length, 1, 'one Message-ID: ours, nodemailer adds none');
  t.match(head, /^MIME-Version: 1\.0$/m);
  const text = part(m.raw, 'text/plain');
  const html = part(m.raw, 'text/html');
  t.ok(text && html, 'multipart/alternative with a text and an HTML part');
  t.match(text!.body, /Your sign-in code for Acme & Sons <Portal> is:\r\n\r\n482913\r\n/);
  t.match(html!.body, /Acme &amp; Sons &lt;Portal&gt;/, 'the client name is escaped in HTML');
  t.match(html!.body, /<strong>482913<\/strong>/);
  t.notMatch(m.raw, /\r(?!\n)|(?<!\r)\n/, 'every line ends in CRLF');
});

t.test('a client name outside ASCII: nodemailer composes and encodes it, the code still arrives', async (t) => {
  const m = await send('bo@example.com', '105277', 'Café Zürich');
  t.equal(m.code, '105277');
  t.equal(m.subject, '105277 is your sign-in code');
  t.equal(m.from, 'no-reply@svc.test');
  t.match(m.text, /Café Zürich/, 'the decoded text keeps the name');
});

t.test('two messages never share a Message-ID', async (t) => {
  const a = await send('cy@example.com', '300001', 'Acme');
  const b = await send('cy@example.com', '300002', 'Acme');
  const id = (raw: string) => /^Message-ID: (.+)$/m.exec(raw)?.[1];
  t.ok(id(a.raw));
  t.not(id(a.raw), id(b.raw));
});
