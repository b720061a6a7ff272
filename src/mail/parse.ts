/**
 * Just enough MIME to read our own messages back (dev sink, tests): the Subject header and the
 * text/plain part, decoding quoted-printable and base64. Not a general mail parser.
 */
export function simpleParser(raw: string): { subject: string; text: string } {
  const [head, ...rest] = raw.split(/\r?\n\r?\n/);
  const body = rest.join('\n\n');
  const headers = unfold(head ?? '');
  const subject = decodeWords(headers.get('subject') ?? '');
  const ct = headers.get('content-type') ?? 'text/plain';
  const boundary = /boundary="?([^";]+)"?/i.exec(ct)?.[1];
  if (!boundary) return { subject, text: decodeBody(body, headers.get('content-transfer-encoding')) };
  for (const part of body.split(`--${boundary}`)) {
    const [ph, ...pb] = part.replace(/^\r?\n/, '').split(/\r?\n\r?\n/);
    const h = unfold(ph ?? '');
    if ((h.get('content-type') ?? '').startsWith('text/plain')) return { subject, text: decodeBody(pb.join('\n\n'), h.get('content-transfer-encoding')) };
  }
  return { subject, text: body };
}

function unfold(head: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of head.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/)) {
    const i = line.indexOf(':');
    if (i > 0) out.set(line.slice(0, i).trim().toLowerCase(), line.slice(i + 1).trim());
  }
  return out;
}

function decodeBody(body: string, enc: string | undefined): string {
  const e = (enc ?? '').toLowerCase();
  if (e === 'base64') return Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8');
  if (e === 'quoted-printable') {
    const bytes = body.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/gi, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
    return Buffer.from(bytes, 'latin1').toString('utf8');
  }
  return body;
}

function decodeWords(s: string): string {
  return s.replace(/=\?utf-8\?([bq])\?([^?]*)\?=/gi, (_m, k: string, t: string) =>
    k.toLowerCase() === 'b' ? Buffer.from(t, 'base64').toString('utf8') : decodeBody(t.replace(/_/g, ' '), 'quoted-printable'));
}
