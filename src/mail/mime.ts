import { randomBytes } from '../random.js';
import type { RenderedMail } from './templates.js';

/** SMTP envelope of a composed message: the bare sender address and the recipients. */
export interface Envelope { from: string; to: string[] }

// Printable ASCII only: no CR/LF (header injection), nothing that would need RFC 2047 encoding.
const PLAIN_HEADER = /^[\x20-\x7e]*$/;
// A 7bit body (RFC 2045 2.7): ASCII text, lines of at most 998 characters.
const ASCII_TEXT = /^[\t\r\n\x20-\x7e]*$/;
const plainBody = (s: string) => ASCII_TEXT.test(s) && s.split('\n').every((l) => l.length <= 998);
const BOUNDARY = '--_svc-alt_';

/**
 * The bare address of a From value such as `svc <no-reply@svc.local>`, for the envelope; computed once
 * per process (the configured sender does not change).
 */
export function senderAddress(from: string): string {
  return (/<([^<>]+)>\s*$/.exec(from)?.[1] ?? from).trim();
}

/**
 * Our own mails as one RFC 5322 multipart/alternative message (text and HTML parts, 7bit), built
 * directly: nodemailer's composer (address parsing, header normalisation, encoding detection, MIME
 * streams) was ~22% of the e-mail worker's CPU per login code (perf/RESULTS.md run 89-login2).
 * The Message-ID is answered too: given to nodemailer, it does not draw one of its own (a randomBytes
 * call, ~3% of the worker's CPU). Answers null unless headers and bodies are plain ASCII (a client
 * name in another script, say); the caller then lets nodemailer compose and encode it, as before.
 */
export function composeRaw(o: { from: string; to: string; mail: RenderedMail; now?: Date }): { raw: string; messageId: string } | null {
  if (!PLAIN_HEADER.test(o.from) || !PLAIN_HEADER.test(o.to) || !PLAIN_HEADER.test(o.mail.subject)) return null;
  if (!plainBody(o.mail.text) || !plainBody(o.mail.html)) return null;
  // A body line could otherwise end the part early.
  if (o.mail.text.includes(BOUNDARY) || o.mail.html.includes(BOUNDARY)) return null;
  const at = senderAddress(o.from);
  const domain = at.includes('@') ? at.slice(at.lastIndexOf('@') + 1) : 'localhost';
  const date = (o.now ?? new Date()).toUTCString().replace(/GMT$/, '+0000');
  const messageId = `<${randomBytes(16).toString('hex')}@${domain}>`;
  const raw = [
    `From: ${o.from}`,
    `To: ${o.to}`,
    `Subject: ${o.mail.subject}`,
    `Date: ${date}`,
    `Message-ID: ${messageId}`,
    'MIME-Version: 1.0',
    `Content-Type: multipart/alternative; boundary="${BOUNDARY}"`,
    '',
    `--${BOUNDARY}`,
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: 7bit',
    '',
    crlf(o.mail.text),
    `--${BOUNDARY}`,
    'Content-Type: text/html; charset=utf-8',
    'Content-Transfer-Encoding: 7bit',
    '',
    crlf(o.mail.html),
    `--${BOUNDARY}--`,
    '',
  ].join('\r\n');
  return { raw, messageId };
}

/** CRLF line ends (RFC 5322 2.3); SMTP dot-stuffing is the transport's job. */
function crlf(s: string): string {
  return s.replace(/\r?\n/g, '\r\n');
}
