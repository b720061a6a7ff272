import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

// Folders under src/ form layers: two folders that import each other cannot be understood, tested or
// moved apart. Top-level modules (errors, config, deps, admin-access, ...) are the shared base and exempt.
const src = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../src');

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? (e.name === 'generated' ? [] : files(path.join(dir, e.name))) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []);
}
const folderOf = (f: string) => { const parts = path.relative(src, f).split(path.sep); return parts.length > 1 ? parts[0]! : null; };

t.test('no two folders of src/ import each other', async (t) => {
  const edges = new Map<string, string[]>();
  for (const f of files(src)) {
    const from = folderOf(f);
    if (!from) continue;
    for (const m of fs.readFileSync(f, 'utf8').matchAll(/^(?:import|export)\s[^'"]*from\s+'(\.[^']+)'/gm)) {
      const to = folderOf(path.resolve(path.dirname(f), m[1]!));
      if (!to || to === from) continue;
      const k = `${from} -> ${to}`;
      edges.set(k, [...(edges.get(k) ?? []), path.relative(src, f)]);
    }
  }
  t.ok(edges.size > 10, `read ${edges.size} folder dependencies`);
  const cycles = [...edges.keys()].filter((k) => { const [a, b] = k.split(' -> '); return a! < b! && edges.has(`${b} -> ${a}`); })
    .map((k) => { const [a, b] = k.split(' -> '); return `${a} <-> ${b} (${edges.get(k)!.join(', ')} / ${edges.get(`${b} -> ${a}`)!.join(', ')})`; });
  t.same(cycles, [], 'folder import cycles');
});
