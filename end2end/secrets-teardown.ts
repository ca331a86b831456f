// After the whole suite: no secret Tower holds may show up in anything Tower wrote to its log or in anything a
// browser context exchanged with it (every HAR the config records). The secrets are the ones Tower's sandbox
// mode configured and the sandbox forge issued while the suite ran (`--sandbox-secrets-file`), and the session
// key the harness gave Tower (`TOWER_SESSION_SECRET`). Each is looked for as it is and in its base64 forms
// (inside a longer base64 text too, e.g. an `Authorization: Basic` header); a hit fails the run, naming the
// secret's kind and where it was, never the secret itself.
//
// It runs before Playwright stops the web server, so Tower's shutdown lines are not looked at. Towers a spec
// starts itself (`tests/own-tower.ts`) are covered: they write `--sandbox-secrets-file <secretsDir>/<name>.jsonl`
// and their output to `<secretsDir>/<name>.log`: every `*.jsonl` and `*.log` there is read.
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { harDir, secretsFile, towerLog } from './playwright.config';

/** A text to look for, and what kind of secret it gives away. */
export interface Needle {
  kind: string;
  form: string;
  text: string;
}

/** Below this many characters a form could match by chance; every real secret is longer. */
const SHORTEST = 16;

/**
 * The base64 (standard and URL-safe) texts that appear wherever `secret` is base64-encoded, whatever bytes came
 * before it: one per alignment, without the characters that also depend on its neighbours.
 */
export function base64Forms(secret: Buffer): string[] {
  const forms = new Set<string>();
  for (const offset of [0, 1, 2]) {
    const encoded = Buffer.concat([Buffer.alloc(offset), secret]).toString('base64');
    const start = [0, 2, 3][offset];
    // The last group also holds bits of whatever follows (or padding) unless it ends on a 3-byte boundary.
    const end = (offset + secret.length) % 3 === 0 ? encoded.length : encoded.length - 4;
    const core = encoded.slice(start, end).replace(/=+$/, '');
    if (core.length >= SHORTEST) {
      forms.add(core);
      forms.add(core.replace(/\+/g, '-').replace(/\//g, '_'));
    }
  }
  return [...forms];
}

/** Every form of the secret `value` of `kind`. */
export function needles(kind: string, value: string): Needle[] {
  const out: Needle[] = [];
  const add = (form: string, text: string) => {
    if (text.length >= SHORTEST && !out.some((n) => n.text === text)) out.push({ kind, form, text });
  };
  if (value.includes('-----BEGIN')) {
    // A PEM key: any line of its body gives away part of the key; its DER is binary, so base64 is its form.
    const body = value.split('\n').filter((line) => line && !line.startsWith('-----'));
    body.forEach((line, i) => add(`PEM body line ${i + 1}`, line.trim()));
    add('PEM body as one line', body.join(''));
    return out;
  }
  add('as is', value);
  for (const form of base64Forms(Buffer.from(value, 'utf8'))) add('base64', form);
  return out;
}

/** The session key as `cookie::Key` derives it from the master secret: signing half, then encryption half. */
function sessionKeyNeedles(secret: string): Needle[] {
  const out = needles('session key (TOWER_SESSION_SECRET)', secret);
  const master = Buffer.from(secret, 'utf8');
  for (const [name, half] of [['signing', master.subarray(0, 32)], ['encryption', master.subarray(32, 64)]] as const) {
    for (const form of base64Forms(half)) out.push({ kind: `session ${name} key`, form: 'base64', text: form });
    out.push({ kind: `session ${name} key`, form: 'hex', text: half.toString('hex') });
  }
  return out;
}

/** One piece of text that was seen, and where. */
interface Seen {
  where: string;
  text: string;
}

/** The pieces of one HAR: each entry's URL, headers and bodies, binary bodies decoded. */
function harPieces(file: string): Seen[] {
  const name = path.basename(file);
  const har = JSON.parse(fs.readFileSync(file, 'utf8'));
  const pieces: Seen[] = [];
  (har.log?.entries ?? []).forEach((entry: any, i: number) => {
    const { request, response } = entry;
    const label = `${name} entry ${i + 1} (${request?.method} ${String(request?.url).slice(0, 120)})`;
    const headers = (list: any[] | undefined) => (list ?? []).map((h) => `${h.name}: ${h.value}`).join('\n');
    pieces.push({ where: `${label}: request URL`, text: String(request?.url ?? '') });
    pieces.push({ where: `${label}: request headers`, text: headers(request?.headers) });
    if (request?.postData?.text) pieces.push({ where: `${label}: request body`, text: request.postData.text });
    pieces.push({ where: `${label}: response headers`, text: headers(response?.headers) });
    const content = response?.content;
    if (content?.text) {
      const text = content.encoding === 'base64' ? Buffer.from(content.text, 'base64').toString('latin1') : content.text;
      pieces.push({ where: `${label}: response body`, text });
      // A body stored as base64 is also looked at as stored, for secrets that were base64 to begin with.
      if (content.encoding === 'base64') pieces.push({ where: `${label}: response body (base64)`, text: content.text });
    }
  });
  return pieces;
}

/**
 * Reads the secrets files: the suite's Tower's (`secrets.jsonl`, which must be there) and any other Tower's a
 * spec started with `--sandbox-secrets-file` in the same folder (`*.jsonl`); one `{"kind", "value"}` a line.
 */
function readSecrets(): { kind: string; value: string }[] {
  if (!fs.existsSync(secretsFile)) {
    throw new Error(
      `secrets check: ${secretsFile} is missing, so nothing can be checked: Tower must run with ` +
        '`--sandbox-secrets-file` (see playwright.config.ts)',
    );
  }
  const dir = path.dirname(secretsFile);
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .flatMap((f) => fs.readFileSync(path.join(dir, f), 'utf8').split('\n'))
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line));
}

/** Every hit of a needle in `seen`, as `kind (form) in where`. */
export function findLeaks(all: Needle[], seen: Seen[], looked = new Set<string>()): string[] {
  const hits = new Set<string>();
  // Every context loads the same assets: a text already looked through (`looked`, digests) is not looked
  // through again (a hit in it was reported where it was first seen).
  for (const piece of seen) {
    if (piece.text.length > 256) {
      const digest = crypto.createHash('sha256').update(piece.text).digest('hex');
      if (looked.has(digest)) continue;
      looked.add(digest);
    }
    for (const needle of all) {
      if (piece.text.includes(needle.text)) hits.add(`${needle.kind} (${needle.form}) in ${piece.where}`);
    }
  }
  return [...hits];
}

export default async function secretsTeardown() {
  const secrets = readSecrets();
  const session = process.env.TOWER_E2E_SESSION_SECRET;
  const all: Needle[] = secrets.flatMap((s) => needles(s.kind, s.value));
  if (session) all.push(...sessionKeyNeedles(session));
  const kinds = new Set(all.map((n) => n.kind));

  if (!fs.existsSync(towerLog)) throw new Error(`secrets check: Tower's log ${towerLog} is missing`);
  // The suite's Tower's log, and any other Tower's a spec started writing its output beside it (`*.log`).
  const logs = fs.readdirSync(path.dirname(towerLog)).filter((f) => f.endsWith('.log'));
  const log: Seen[] = logs.flatMap((name) =>
    fs
      .readFileSync(path.join(path.dirname(towerLog), name), 'utf8')
      .split('\n')
      .map((line, i) => ({ where: `Tower's log ${name} line ${i + 1}`, text: line })),
  );
  const looked = new Set<string>();
  const leaks = findLeaks(all, log, looked);
  let pieces = log.length;
  // One HAR at a time: together they can be a gigabyte.
  const hars = fs.existsSync(harDir) ? fs.readdirSync(harDir).filter((f) => f.endsWith('.har')) : [];
  if (hars.length === 0) {
    throw new Error(`secrets check: no HAR was recorded in ${harDir}, so no response was checked`);
  }
  for (const har of hars) {
    const seen = harPieces(path.join(harDir, har));
    pieces += seen.length;
    leaks.push(...findLeaks(all, seen, looked));
  }
  const summary =
    `${secrets.length} secrets of ${kinds.size} kinds (${all.length} forms) looked for in ${logs.length} log(s) and ` +
    `${hars.length} HAR files (${pieces} pieces)`;
  if (leaks.length > 0) {
    throw new Error(
      `SECRETS LEAKED: ${leaks.length} place(s) show a secret (values not printed; the files are in ` +
        `${path.dirname(towerLog)}):\n  ${leaks.join('\n  ')}\n(${summary})`,
    );
  }
  console.log(`secrets check: none found; ${summary}`);
}
