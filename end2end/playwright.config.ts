// Browser tests against Tower on the embedded sandbox, in Debian's Chromium (no browser download).
import { defineConfig } from '@playwright/test';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';

const repo = path.resolve(__dirname, '..');
export const towerPort = Number(process.env.TOWER_E2E_PORT ?? 18080);
export const sandboxPort = Number(process.env.TOWER_E2E_SANDBOX_PORT ?? 18181);
export const towerBin = process.env.TOWER_BIN ?? path.join(repo, 'target/debug/tower');
export const assets = process.env.TOWER_ASSETS ?? path.join(repo, 'dist');

export const sandboxUrl = `http://127.0.0.1:${sandboxPort}`;

// The secrets check (`secrets-teardown.ts`): Tower's log, every browser context's HAR and the secrets themselves
// go here, inside the output folder Playwright empties before each run (so every file is this run's).
export const secretsDir = path.join(__dirname, 'test-results', 'secrets-check');
/** Everything Tower (and its embedded sandbox) writes to stdout and stderr. */
export const towerLog = path.join(secretsDir, 'tower.log');
/** The secrets Tower's sandbox mode configured and issued (`--sandbox-secrets-file`), one JSON a line. */
export const secretsFile = path.join(secretsDir, 'secrets.jsonl');
/** One HAR per browser context (with embedded bodies), written when the context closes. */
export const harDir = path.join(secretsDir, 'har');
// The session key is the harness's, so the check knows it: set once by the runner process, inherited by the
// workers and by Tower (`TOWER_SESSION_SECRET`, at least 64 bytes).
process.env.TOWER_E2E_SESSION_SECRET ??= crypto.randomBytes(48).toString('base64url');

let hars = 0;
/**
 * `recordHar` for every context: Playwright reads `path` each time it creates one (the `page` fixture's, a
 * test's own `browser.newContext()`), so each gets a file of its own.
 */
const recordHar = {
  get path() {
    fs.mkdirSync(harDir, { recursive: true });
    hars += 1;
    return path.join(harDir, `context-${process.pid}-${hars}.har`);
  },
  content: 'embed' as const,
  mode: 'full' as const,
  // Not the build's hashed assets (the wasm, scripts, styles): built from this repository before any secret
  // exists, they cannot carry one, and embedding them made the HARs about 675 MB a run.
  urlFilter: /^(?!.*\/assets\/)/,
};

/**
 * Tower's command line, its output appended to `towerLog` (stderr also still reaches Playwright's console).
 * The `tee` ignores SIGTERM, which Playwright sends the whole process group: it ends with Tower's last line.
 */
const logged = (command: string) =>
  `mkdir -p ${secretsDir} && : > ${towerLog} && exec bash -c ` +
  `'exec "$@" >>${towerLog} 2> >(trap "" TERM INT; exec tee -a ${towerLog} >&2)' tower ${command}`;

export default defineConfig({
  testDir: './tests',
  fullyParallel: false,
  workers: 1,
  // A flaky test is a bug: no retries locally, one at most on CI.
  retries: process.env.CI ? 1 : 0,
  timeout: 30_000,
  reporter: [['list']],
  // Fails the run when a secret shows up in Tower's log or in a response any browser context saw.
  globalTeardown: './secrets-teardown.ts',
  use: {
    contextOptions: { recordHar },
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
    command: logged(
      `${towerBin} serve --sandbox --listen 127.0.0.1:${towerPort} --sandbox-listen 127.0.0.1:${sandboxPort} --assets ${assets} --speed 10 --sandbox-secrets-file ${secretsFile}`,
    ),
    env: { TOWER_SESSION_SECRET: process.env.TOWER_E2E_SESSION_SECRET as string },
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
