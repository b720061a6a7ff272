import { simpleParser } from './parse.js';
import { SMTPServer } from 'smtp-server';
import { pathToFileURL } from 'node:url';
import { extractCode } from './templates.js';

export interface SinkMessage { from: string; to: string[]; raw: string; text: string; subject: string; code: string | undefined }

export interface SmtpSink { port: number; messages: SinkMessage[]; close(): Promise<void> }

/**
 * A local SMTP server that accepts every message and keeps it in memory: the development mail sink
 * (`npm start` runs it when SMTP_URL is unset and logs each login code) and the tests' mailbox.
 */
export function startSmtpSink(opts: {
  port?: number; host?: string; onMessage?: (m: SinkMessage) => void;
  /**
   * Keeps a message unacknowledged until the promise settles (a test holding a send in flight); it is
   * recorded only then, and not at all if the sender's connection closed meanwhile (it was not delivered).
   * `senderGone` settles when the sender's connection closes.
   */
  hold?: (rcptTo: string[], senderGone: Promise<void>) => Promise<void> | undefined;
} = {}): Promise<SmtpSink> {
  const messages: SinkMessage[] = [];
  const closed = new Set<string>();
  const gone = new Map<string, { promise: Promise<void>; resolve: () => void }>();
  const goneOf = (id: string) => {
    let g = gone.get(id);
    if (!g) { let resolve = () => {}; const promise = new Promise<void>((r) => { resolve = r; }); g = { promise, resolve }; gone.set(id, g); }
    return g;
  };
  const server = new SMTPServer({
    authOptional: true, disabledCommands: ['STARTTLS'], logger: false, size: 1024 * 1024,
    onClose(session) { if (opts.hold) { closed.add(session.id); goneOf(session.id).resolve(); gone.delete(session.id); } },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', async () => {
        const held = opts.hold?.(session.envelope.rcptTo.map((r) => r.address), goneOf(session.id).promise);
        if (held) { await held; if (closed.has(session.id)) return; }
        const raw = Buffer.concat(chunks).toString('utf8');
        const parsed = simpleParser(raw);
        const m: SinkMessage = {
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address), raw, text: parsed.text, subject: parsed.subject, code: extractCode(parsed.text),
        };
        messages.push(m);
        opts.onMessage?.(m);
        callback();
      });
    },
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      // A sender that dies mid-session (a killed email worker) resets its connection: that is its
      // problem, not the sink's, which must keep serving (unhandled, the error ended the process).
      server.on('error', () => {});
      const addr = server.server.address();
      resolve({ port: typeof addr === 'object' && addr ? addr.port : 0, messages, close: () => new Promise((r) => server.close(() => r())) });
    });
  });
}

// Run directly (`node dist/src/mail/dev-sink.js --port 2525`): log each message's code for local logins.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const i = process.argv.indexOf('--port');
  const port = i > 0 ? Number(process.argv[i + 1]) : 2525;
  const sink = await startSmtpSink({
    port,
    onMessage: (m) => console.error(`[mail] to ${m.to.join(', ')}: ${m.subject}${m.code ? `  (code ${m.code})` : ''}`),
  });
  console.error(`[mail] development SMTP sink on smtp://127.0.0.1:${sink.port}; login codes are printed here`);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => { void sink.close().then(() => process.exit(0)); });
}
