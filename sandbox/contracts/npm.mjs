// What both contract generators need from npm: one JSON file of a pinned package version, read from the
// tarball `npm pack` downloads (no install, no node_modules), in a temporary folder removed afterwards.

import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The parsed JSON of `file` (a path inside the package) in `pkg@version`. */
export function publishedJson(pkg, version, file) {
  const work = mkdtempSync(join(tmpdir(), "tower-contract-"));
  try {
    const [packed] = JSON.parse(
      execFileSync("npm", ["pack", "--json", "--pack-destination", work, `${pkg}@${version}`], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "inherit"],
      }),
    );
    execFileSync("tar", ["-xzf", join(work, packed.filename), "-C", work, `package/${file}`]);
    return JSON.parse(readFileSync(join(work, "package", file), "utf8"));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
