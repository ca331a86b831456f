// Browser tests against Tower on the embedded sandbox, in Debian's Chromium (no browser download).
import { defineConfig } from '@playwright/test';
import * as path from 'node:path';

const repo = path.resolve(__dirname, '..');
export const towerPort = Number(process.env.TOWER_E2E_PORT ?? 18080);
export const sandboxPort = Number(process.env.TOWER_E2E_SANDBOX_PORT ?? 18181);
export const towerBin = process.env.TOWER_BIN ?? path.join(repo, 'target/debug/tower');
export const assets = process.env.TOWER_ASSETS ?? path.join(repo, 'dist');

export const sandboxUrl = `http://127.0.0.1:${sandboxPort}`;

export default defineConfig({
  testDir: './tests',
  fullyParallel: false,
  workers: 1,
  // A flaky test is a bug: no retries locally, one at most on CI.
  retries: process.env.CI ? 1 : 0,
  timeout: 30_000,
  reporter: [['list']],
  use: {
    baseURL: `http://127.0.0.1:${towerPort}`,
    trace: 'off',
    launchOptions: {
      executablePath: '/usr/bin/chromium',
      args: [
        '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync',
      ],
    },
  },
  // The sandbox runs ten times faster than real time, so a canary rollout (about 3 simulated minutes) takes
  // seconds.
  webServer: {
    command: `${towerBin} serve --sandbox --listen 127.0.0.1:${towerPort} --sandbox-listen 127.0.0.1:${sandboxPort} --assets ${assets} --speed 10`,
    url: `http://127.0.0.1:${towerPort}/healthz`,
    reuseExistingServer: false,
    timeout: 60_000,
    // SIGTERM, not Playwright's default SIGKILL: Tower then stops its sandbox's Prometheus and removes its
    // temporary folders, which `cargo xtask test` checks.
    gracefulShutdown: { signal: 'SIGTERM', timeout: 20_000 },
    stdout: 'ignore',
    stderr: 'pipe',
  },
});
