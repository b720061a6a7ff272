// The console's first-load budget (issue 33), run by ops/build-console.mjs after every build and on its
// own as `node ops/console-budget.mjs [dist/console] [budget bytes]`: the gzip size of every script and
// module preload that index.html names (lazy chunks come later, on demand), written to
// bundle-size.json; over budget, the process fails with the list.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';

/** Compressed JavaScript the first load of /console may fetch (the issue's 250 KB, counted in 1000s). */
export const BUDGET_BYTES = 250_000;

export function checkBudget(out, budget = BUDGET_BYTES) {
  const html = fs.readFileSync(path.join(out, 'index.html'), 'utf8');
  const scripts = [...html.matchAll(/<(?:script[^>]*\ssrc|link[^>]*rel="modulepreload"[^>]*\shref)="\/console\/(assets\/[^"]+\.js)"/g)].map((m) => m[1]);
  if (scripts.length === 0) throw new Error(`${out}/index.html loads no script: the console build is broken`);
  const sizes = scripts.map((s) => [s, zlib.gzipSync(fs.readFileSync(path.join(out, s)), { level: 9 }).length]);
  const total = sizes.reduce((n, [, b]) => n + b, 0);
  fs.writeFileSync(path.join(out, 'bundle-size.json'), `${JSON.stringify({ budget_bytes: budget, gzip_bytes: total, files: Object.fromEntries(sizes) }, null, 2)}\n`);
  if (total > budget) {
    console.error(`console: first-load JavaScript is ${total} bytes gzipped, over the ${budget}-byte budget:\n${sizes.map(([s, b]) => `  ${s} ${b}`).join('\n')}`);
    process.exit(1);
  }
  console.log(`console: first-load JavaScript ${total} bytes gzipped (budget ${budget})`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  checkBudget(path.resolve(process.argv[2] ?? path.join(root, 'dist/console')), process.argv[3] ? Number(process.argv[3]) : BUDGET_BYTES);
}
