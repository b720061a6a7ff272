// The admin console's build (issue 33), run by `npm run build` after the server's: type-check the
// console's own sources (DOM + JSX, src/console/tsconfig.json), bundle them with Vite into
// dist/console/, precompress every asset (gzip, brotli) for the server to pick by Accept-Encoding, and
// fail when the JavaScript the first load needs exceeds its budget.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import { build } from 'vite';
import react from '@vitejs/plugin-react';
import { BUDGET_BYTES, checkBudget } from './console-budget.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const src = path.join(root, 'src/console');
const out = path.join(root, 'dist/console');

try {
  execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', path.join(src, 'tsconfig.json')], { stdio: 'inherit' });
} catch {
  console.error('console: type errors in src/console/ (above)');
  process.exit(1);
}

await build({
  configFile: false,
  root: src,
  base: '/console/',
  logLevel: 'warn',
  plugins: [react()],
  build: {
    outDir: out,
    emptyOutDir: true,
    assetsDir: 'assets',
    // No source maps shipped: the console is served to operators, not debugged in production.
    sourcemap: false,
    // Vite's module-preload polyfill would be code in the entry chunk only; modern browsers need none.
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
  },
});

const assets = path.join(out, 'assets');
for (const name of fs.readdirSync(assets)) {
  const file = path.join(assets, name);
  const data = fs.readFileSync(file);
  fs.writeFileSync(`${file}.gz`, zlib.gzipSync(data, { level: 9 }));
  fs.writeFileSync(`${file}.br`, zlib.brotliCompressSync(data, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: data.length } }));
}

checkBudget(out, BUDGET_BYTES);
