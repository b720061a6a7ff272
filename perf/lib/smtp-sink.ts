// A local SMTP sink (smtp-server) that keeps the latest 6-digit code per recipient, for the login
// scenario. Runs inside the load process; the login driver awaits a recipient's code with waitForCode().
import { SMTPServer } from 'smtp-server';

export const codes = new Map<string, string>();
export const sinkStats = { messages: 0, withoutCode: 0 };
const MAX_CODES = 200_000;
/** Logins waiting for their code, by lower-cased recipient. */
const waiters = new Map<string, (code: string) => void>();

/**
 * The code mailed to `email`: at once if it is already in the sink, else when the mail arrives;
 * undefined after `timeoutMs`. The code is taken out of the sink (each code is used once).
 */
export function waitForCode(email: string, timeoutMs: number): Promise<string | undefined> {
  const key = email.toLowerCase();
  const have = codes.get(key);
  if (have) { codes.delete(key); return Promise.resolve(have); }
  return new Promise((resolve) => {
    const t = setTimeout(() => { waiters.delete(key); resolve(undefined); }, timeoutMs);
    waiters.set(key, (code) => { clearTimeout(t); waiters.delete(key); resolve(code); });
  });
}

/** The code in a message body: a 6-digit run outside headers and MIME boundaries. */
export function extractCode(raw: string): string | undefined {
  const sep = raw.search(/\r?\n\r?\n/);
  const body = sep >= 0 ? raw.slice(sep) : raw;
  const text = body.split(/\r?\n/)
    .filter((l) => !l.startsWith('--') && !/^[A-Za-z-]+:\s/.test(l))
    .join('\n')
    .replace(/=\r?\n/g, '');
  return /(?<![\d])(\d{6})(?![\d])/.exec(text)?.[1];
}

let server: SMTPServer | undefined;

export function startSink(port: number): Promise<number> {
  if (server) return Promise.resolve((server as any).server.address().port);
  server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    size: 1 << 20,
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        sinkStats.messages++;
        const code = extractCode(Buffer.concat(chunks).toString('utf8'));
        if (!code) sinkStats.withoutCode++;
        else {
          if (codes.size >= MAX_CODES) codes.clear();
          for (const r of session.envelope.rcptTo) {
            const key = r.address.toLowerCase();
            const w = waiters.get(key);
            if (w) w(code); else codes.set(key, code);
          }
        }
        cb();
      });
    },
  });
  server.on('error', () => { /* a broken client connection is not the harness's concern */ });
  return new Promise((resolve, reject) => {
    server!.listen(port, '127.0.0.1', () => resolve((server as any).server.address().port));
    (server as any).server.once('error', reject);
  });
}
