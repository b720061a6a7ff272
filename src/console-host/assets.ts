import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** One built asset, with the precompressed forms the build wrote beside it. */
export interface ConsoleAsset { type: string; identity: Buffer; gzip?: Buffer; br?: Buffer }

/** The console as built into dist/console/ (ops/build-console.mjs), read once at start. */
export interface ConsoleBundle {
  /** index.html cut at its nonce placeholder: the parts joined around a fresh nonce per response. */
  index: [string, string] | null;
  /** By file name under /console/assets/. */
  assets: Map<string, ConsoleAsset>;
}

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml',
  '.png': 'image/png', '.woff2': 'font/woff2', '.json': 'application/json',
};
const NONCE_PLACEHOLDER = '__CSP_NONCE__';

/** Loads the built console; an empty bundle when the build has not made one (the routes then answer 404). */
export function loadConsole(dir: string): ConsoleBundle {
  const indexFile = path.join(dir, 'index.html');
  if (!fs.existsSync(indexFile)) return { index: null, assets: new Map() };
  const html = fs.readFileSync(indexFile, 'utf8');
  const at = html.indexOf(NONCE_PLACEHOLDER);
  if (at < 0) throw new Error(`${indexFile} has no ${NONCE_PLACEHOLDER} placeholder`);
  const assets = new Map<string, ConsoleAsset>();
  const assetDir = path.join(dir, 'assets');
  for (const name of fs.existsSync(assetDir) ? fs.readdirSync(assetDir) : []) {
    if (name.endsWith('.gz') || name.endsWith('.br')) continue;
    const file = path.join(assetDir, name);
    const read = (ext: string) => (fs.existsSync(file + ext) ? fs.readFileSync(file + ext) : undefined);
    assets.set(name, { type: TYPES[path.extname(name)] ?? 'application/octet-stream', identity: fs.readFileSync(file), gzip: read('.gz'), br: read('.br') });
  }
  return { index: [html.slice(0, at), html.slice(at + NONCE_PLACEHOLDER.length)], assets };
}

/** A CSP nonce: 128 random bits. */
export const newNonce = () => randomBytes(16).toString('base64');

/**
 * The coding to send: brotli, then gzip, when the client accepts it (a q of 0 refuses, RFC 9110
 * 12.5.3); identity otherwise.
 */
export function pickEncoding(acceptEncoding: string | undefined, asset: ConsoleAsset): { coding: 'br' | 'gzip' | null; body: Buffer } {
  const accepted = new Set<string>();
  for (const part of (acceptEncoding ?? '').split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    if (name && !(q && Number(q.slice(2)) === 0)) accepted.add(name);
  }
  if (asset.br && (accepted.has('br') || accepted.has('*'))) return { coding: 'br', body: asset.br };
  if (asset.gzip && (accepted.has('gzip') || accepted.has('*'))) return { coding: 'gzip', body: asset.gzip };
  return { coding: null, body: asset.identity };
}
