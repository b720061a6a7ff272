import type { Route } from './types.js';

interface DynamicEntry {
  parts: string[];
  /** Index of each ':name' segment and its name. */
  params: Array<[number, string]>;
  byMethod: Map<string, Route>;
}

export type Match =
  | { kind: 'route'; route: Route; params: Record<string, string> }
  | { kind: 'method'; allow: string[] }
  | { kind: 'none' };

const NO_PARAMS: Record<string, string> = Object.freeze({}) as Record<string, string>;

/** Path router: exact paths in a map, parameterised paths matched segment by segment. */
export class Router {
  private readonly exact = new Map<string, Map<string, Route>>();
  private readonly dynamic: DynamicEntry[] = [];
  readonly routes: Route[] = [];

  add(route: Route): void {
    this.routes.push(route);
    if (!route.path.includes(':')) {
      let m = this.exact.get(route.path);
      if (!m) this.exact.set(route.path, (m = new Map()));
      if (m.has(route.method)) throw new Error(`duplicate route ${route.method} ${route.path}`);
      m.set(route.method, route);
      return;
    }
    const parts = route.path.split('/');
    let entry = this.dynamic.find((d) => d.parts.length === parts.length && d.parts.every((p, i) => p === parts[i]));
    if (!entry) {
      entry = { parts, params: [], byMethod: new Map() };
      parts.forEach((p, i) => { if (p.startsWith(':')) entry!.params.push([i, p.slice(1)]); });
      this.dynamic.push(entry);
    }
    if (entry.byMethod.has(route.method)) throw new Error(`duplicate route ${route.method} ${route.path}`);
    entry.byMethod.set(route.method, route);
  }

  match(method: string, path: string): Match {
    const m = this.exact.get(path);
    if (m) {
      const route = m.get(method);
      return route ? { kind: 'route', route, params: NO_PARAMS } : { kind: 'method', allow: [...m.keys()] };
    }
    const segs = path.split('/');
    for (const d of this.dynamic) {
      if (d.parts.length !== segs.length) continue;
      let ok = true;
      for (let i = 0; i < segs.length; i++) {
        const p = d.parts[i]!;
        const s = segs[i]!;
        if (p.charCodeAt(0) === 58 /* : */ ? s.length === 0 : p !== s) { ok = false; break; }
      }
      if (!ok) continue;
      const route = d.byMethod.get(method);
      if (!route) return { kind: 'method', allow: [...d.byMethod.keys()] };
      const params: Record<string, string> = {};
      for (const [i, name] of d.params) {
        try { params[name] = decodeURIComponent(segs[i]!); } catch { params[name] = segs[i]!; }
        // No resource id holds a NUL (Postgres text cannot): such a path names nothing (docs/decisions.md).
        if (params[name]!.includes('\u0000')) return { kind: 'none' };
      }
      return { kind: 'route', route, params };
    }
    return { kind: 'none' };
  }
}
