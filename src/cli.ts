#!/usr/bin/env node
import { loadConfig, ConfigError } from './config.js';
import { createSql } from './store/sql.js';

const USAGE = `usage: svc <command>
  start              run the service (supervisor, HTTP processes, queue workers)
  migrate            apply pending database migrations
  bootstrap [--json] create the default tenant and platform administrator (idempotent)`;

async function run(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (cmd === 'start') {
    const { main } = await import('./main.js');
    await main();
    return -1; // keep running
  }
  let config;
  try { config = loadConfig(); } catch (err) {
    if (err instanceof ConfigError) { console.error(err.message); return 2; }
    throw err;
  }
  if (cmd === 'migrate') {
    const sql = createSql(config, { max: 1 });
    try {
      const { migrate } = await import('./store/migrate.js');
      const r = await migrate(sql);
      console.log(r.applied.length ? `applied ${r.applied.join(', ')}` : `up to date (${r.skipped} migrations)`);
      return 0;
    } finally { await sql.end({ timeout: 5 }); }
  }
  if (cmd === 'bootstrap') {
    const sql = createSql(config, { max: 2 });
    try {
      const { bootstrap } = await import('./bootstrap.js');
      const result = await bootstrap(config, sql);
      if (rest.includes('--json')) console.log(JSON.stringify(result, null, 2));
      else console.log(`tenant ${result.tenant_id} ready at ${result.issuer}`);
      return 0;
    } finally { await sql.end({ timeout: 5 }); }
  }
  console.error(USAGE);
  return cmd === undefined || cmd === 'help' || cmd === '--help' ? 0 : 2;
}

// Cluster workers re-run this file with the same argv; SVC_ROLE makes them take their role in main().
run(process.env.SVC_ROLE ? ['start'] : process.argv.slice(2)).then((code) => {
  if (code >= 0) process.exit(code);
}, (err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
