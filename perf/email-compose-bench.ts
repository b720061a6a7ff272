// Issue 35 item 3: the e-mail worker's CPU per login code mail, from the sealed job data to the SMTP
// server's acknowledgement: the message composed by nodemailer (as before) against the one composed by
// src/mail/mime.ts and sent raw (as sendEmail does now). The SMTP sink runs in a child process, so the
// figures are this process's CPU alone (what the e-mail worker spends), with 32 sends in flight over a
// pool of 32 connections as in the worker. Rounds alternate nodemailer / raw.
// node dist/perf/email-compose-bench.js [--messages 4000] [--rounds 3]
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import nodemailer from 'nodemailer';
import { loadConfig } from '../src/config.js';
import { composeRaw, senderAddress } from '../src/mail/mime.js';
import { mailKey, seal, unseal } from '../src/mail/seal.js';
import { loginCodeMail } from '../src/mail/templates.js';

const arg = (name: string, dflt: string) => { const i = process.argv.indexOf(`--${name}`); return i > 0 ? process.argv[i + 1] ?? dflt : dflt; };
const messages = Number(arg('messages', '4000'));
const rounds = Number(arg('rounds', '3'));
const INFLIGHT = 32;

const sinkModule = pathToFileURL(path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'src', 'mail', 'dev-sink.js')).href;
// The sink keeps nothing: onMessage drops each message (its array is emptied as it goes).
const sink = spawn(process.execPath, ['--input-type=module', '-e',
  `import { startSmtpSink } from ${JSON.stringify(sinkModule)}; const s = await startSmtpSink({ onMessage() { s.messages.length = 0; } }); console.log(s.port);`],
{ stdio: ['ignore', 'pipe', 'inherit'] });
const port = await new Promise<number>((resolve) => sink.stdout!.once('data', (b: Buffer) => resolve(Number(b.toString().trim()))));

const config = loadConfig({ ...process.env, NODE_ENV: 'development', KEY_ENCRYPTION_KEY: '11'.repeat(32) });
const key = mailKey(config.keyEncryptionKey);
const sender = senderAddress(config.mailFrom);
const transport = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true, pool: true, maxConnections: INFLIGHT, maxMessages: Infinity });

type Send = (i: number) => Promise<unknown>;
const job = (i: number) => { const to = `user-${i}@bench.test`; return { to, sealed: seal(key, String(100000 + (i % 900000)), to) }; };
const viaNodemailer: Send = async (i) => {
  const d = job(i);
  const mail = loginCodeMail(unseal(key, d.sealed, d.to), 'Bench client', 600);
  await transport.sendMail({ from: config.mailFrom, to: d.to, subject: mail.subject, text: mail.text, html: mail.html });
};
const viaRaw: Send = async (i) => {
  const d = job(i);
  const mail = loginCodeMail(unseal(key, d.sealed, d.to), 'Bench client', 600);
  const composed = composeRaw({ from: config.mailFrom, to: d.to, mail })!;
  await transport.sendMail({ envelope: { from: sender, to: [d.to] }, raw: composed.raw, messageId: composed.messageId });
};

async function run(send: Send): Promise<{ perMsgUs: number; perSec: number }> {
  let next = 0;
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  await Promise.all(Array.from({ length: INFLIGHT }, async () => { while (next < messages) await send(next++); }));
  const c = process.cpuUsage(c0);
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  return { perMsgUs: (c.user + c.system) / messages, perSec: messages / s };
}

await run(viaNodemailer); // warm-up: connections, JIT
await run(viaRaw);
const r1 = (x: number) => Math.round(x * 10) / 10;
for (let r = 1; r <= rounds; r++) {
  const a = await run(viaNodemailer);
  const b = await run(viaRaw);
  console.log(`round ${r}: nodemailer composes ${r1(a.perMsgUs)} µs CPU/message (${Math.round(a.perSec)}/s) · composed here, sent raw ${r1(b.perMsgUs)} µs (${Math.round(b.perSec)}/s) · raw ÷ nodemailer ${(b.perMsgUs / a.perMsgUs).toFixed(2)}`);
}
transport.close();
sink.kill();
