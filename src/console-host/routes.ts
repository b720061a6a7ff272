import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NotFound } from '../errors.js';
import type { Reply, Route } from '../http/types.js';
import { loadConsole, newNonce, pickEncoding } from './assets.js';

/** dist/console/, beside this module's dist/src/console-host/. */
const DEFAULT_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../console');
/** Deepest client-side route of the console (/console/a/b/c/d); the router matches by segment count. */
const MAX_DEPTH = 4;

/**
 * The console's headers: the pages' (src/http/pages.ts) plus its own script and the API it calls, all
 * from us; Mantine's one injected <style> passes by this response's nonce; no inline script, no eval.
 */
export function consoleHeaders(nonce: string): Record<string, string> {
  return {
    'Content-Security-Policy': `default-src 'none'; script-src 'self'; style-src 'self' 'nonce-${nonce}'; img-src 'self' data:; font-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
    'X-Frame-Options': 'DENY',
    'Cache-Control': 'no-store',
    Pragma: 'no-cache',
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
  };
}

/**
 * /console: the admin console's index for /console and every client-side route under it, and its
 * hashed assets, immutable for a year, precompressed, from memory. Nothing here touches a store.
 */
export function consoleRoutes(dir = DEFAULT_DIR): Route[] {
  const bundle = loadConsole(dir);
  const index = (): Reply => {
    if (!bundle.index) throw new NotFound('not_found', 'The console is not built on this server (npm run build).');
    const nonce = newNonce();
    return { type: 'text/html; charset=utf-8', headers: consoleHeaders(nonce), body: bundle.index[0] + nonce + bundle.index[1] };
  };
  const asset = (name: string, acceptEncoding: string | undefined): Reply => {
    const a = bundle.assets.get(name);
    // A missing asset is a 404, never the index: a stale page asking for an old hash must see it fail.
    if (!a) throw new NotFound('not_found', 'No such console asset.');
    const { coding, body } = pickEncoding(acceptEncoding, a);
    const headers: Record<string, string> = { 'Cache-Control': 'public, max-age=31536000, immutable', 'X-Content-Type-Options': 'nosniff', Vary: 'Accept-Encoding' };
    if (coding) headers['Content-Encoding'] = coding;
    return { type: a.type, headers, body };
  };
  const doc = { summary: 'Administration console (single-page application)', tags: ['console'], security: 'none' as const };
  const routes: Route[] = [
    // Registered before the client-side routes of the same depth, which the router tries in order.
    { method: 'GET', path: '/console/assets/:file', iface: 'public', html: true, doc: { ...doc, summary: 'A console asset (hashed name, immutable; gzip or brotli by Accept-Encoding)', errors: [404] }, handler: (req) => asset(req.params.file ?? '', req.headers['accept-encoding']) },
    { method: 'GET', path: '/console', iface: 'public', html: true, doc, handler: index },
    { method: 'GET', path: '/console/', iface: 'public', html: true, handler: index },
  ];
  for (let depth = 1; depth <= MAX_DEPTH; depth++) {
    const p = Array.from({ length: depth }, (_, i) => `:p${i}`).join('/');
    routes.push({ method: 'GET', path: `/console/${p}`, iface: 'public', html: true, handler: index });
  }
  return routes;
}
