import type { HttpRequest } from './request.js';

/**
 * Whether a route that serves pages should answer this request with JSON: the client sent JSON, or
 * its Accept header ranks application/json above text/html. A browser navigation (text/html first),
 * a bare `*\/*` and a missing Accept all get pages. Routes that serve no pages always answer JSON.
 */
export function wantsJson(req: HttpRequest): boolean {
  const ct = req.headers['content-type'] ?? '';
  if (ct.startsWith('application/json')) return true;
  const accept = req.headers.accept;
  if (!accept) return false;
  const json = rank(accept, 'application', 'json');
  const html = rank(accept, 'text', 'html');
  // Equal weight: the type the client named outright wins over one it only reached by a wildcard
  // (`application/json, */*` is an API client); a full tie stays with pages.
  return json.q > html.q || (json.q === html.q && json.q > 0 && json.specificity > html.specificity);
}

/** The weight Accept gives a media type (RFC 9110 12.5.1): the most specific range that matches decides. */
function rank(accept: string, type: string, subtype: string): { q: number; specificity: number } {
  let best = { q: 0, specificity: 0 };
  for (const part of accept.split(',')) {
    const [range = '', ...params] = part.split(';');
    const r = range.trim().toLowerCase();
    const specificity = r === `${type}/${subtype}` ? 3 : r === `${type}/*` ? 2 : r === '*/*' ? 1 : 0;
    if (specificity <= best.specificity) continue;
    let q = 1;
    for (const p of params) {
      const [k, v] = p.split('=');
      if (k?.trim().toLowerCase() === 'q') { q = Number(v?.trim()); if (!(q >= 0 && q <= 1)) q = 0; }
    }
    best = { q, specificity };
  }
  return best;
}
