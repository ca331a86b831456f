// The browser half of `cargo xtask bench pipelines`: Tower on a sandbox in `--scale` mode (10,000 runs and the
// 300-task monorepo run), in Debian's Chromium with precise memory figures. Not part of the test suite: its
// specs live in bench/ and end in .bench.ts. Each prints its numbers as JSON lines (`{"bench": …}`). With
// TOWER_BENCH_URL set (`cargo xtask bench scale`), the specs run against that Tower and start none.
import { defineConfig } from '@playwright/test';
import base from './playwright.config';

const towerPort = Number(process.env.TOWER_E2E_PORT ?? 18080);
const scale = Number(process.env.TOWER_BENCH_SCALE ?? 100);
const server = Array.isArray(base.webServer) ? base.webServer[0] : base.webServer;
// `cargo xtask bench scale` starts the sandbox and Tower itself, as separate processes, and says where.
const running = process.env.TOWER_BENCH_URL;
const launch = base.use?.launchOptions ?? {};

export default defineConfig({
  ...base,
  testDir: './bench',
  testMatch: '**/*.bench.ts',
  retries: 0,
  timeout: 600_000,
  // The secrets check reads what the suite's Tower writes with `--sandbox-secrets-file`; a bench's Tower
  // (started here or by `cargo xtask bench scale`) writes none, so the check would fail every bench.
  globalTeardown: undefined,
  use: {
    ...base.use,
    ...(running ? { baseURL: running } : {}),
    launchOptions: {
      ...launch,
      args: [...(launch.args ?? []), '--enable-precise-memory-info', '--js-flags=--expose-gc'],
    },
  },
  webServer: running ? undefined : server && {
    ...server,
    command: `${server.command} --scale ${scale}`,
    url: `http://127.0.0.1:${towerPort}/healthz`,
    // Seeding 10,000 runs takes a while.
    timeout: 300_000,
  },
});
