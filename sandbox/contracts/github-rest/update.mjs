// Regenerates openapi.json beside this file: the operations of GitHub's REST API that the sandbox's forge
// serves, cut from GitHub's OpenAPI description as the pinned npm package publishes it, with every
// component they reference and nothing else.
//
//   node sandbox/contracts/github-rest/update.mjs
//
// Needs node and npm (the registry is asked for one tarball, with `npm pack`). To move to a newer release,
// change VERSION, run it, and run `cargo test -p sandbox --test it contract_forge`.
//
// The document stays as GitHub publishes it (OpenAPI 3.0, `nullable: true` included); the contract tests
// translate `nullable` into JSON Schema when they load it. Only the media types' `examples` are left out:
// they illustrate, they do not constrain, and they would triple the file.

import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { publishedJson } from "../npm.mjs";

const PACKAGE = "@octokit/openapi";
const VERSION = "23.0.2";
const DOCUMENT = "generated/api.github.com.json";

// The operations the forge answers (`sandbox/src/forge.rs`'s `ROUTES`), as GitHub names their paths. The
// forge's routes GitHub no longer documents (the legacy `GET /git/refs`, `GET /git/refs/{ref}` and
// `GET /statuses/{ref}`) are checked against the operations that replaced them, listed here. Keep in step
// with `OPERATIONS` in `sandbox/tests/it/contract_forge.rs`, which fails when one is missing here.
const OPERATIONS = [
  ["get", "/app"],
  ["get", "/app/installations"],
  ["post", "/app/installations/{installation_id}/access_tokens"],
  ["get", "/orgs/{org}/installation"],
  ["get", "/repos/{owner}/{repo}/installation"],
  ["get", "/installation/repositories"],
  ["get", "/orgs/{org}"],
  ["get", "/orgs/{org}/repos"],
  ["get", "/repos/{owner}/{repo}"],
  ["get", "/repos/{owner}/{repo}/contents/{path}"],
  ["put", "/repos/{owner}/{repo}/contents/{path}"],
  ["get", "/repos/{owner}/{repo}/commits"],
  ["get", "/repos/{owner}/{repo}/commits/{ref}"],
  ["get", "/repos/{owner}/{repo}/compare/{basehead}"],
  ["get", "/repos/{owner}/{repo}/branches/{branch}"],
  ["post", "/repos/{owner}/{repo}/git/refs"],
  ["patch", "/repos/{owner}/{repo}/git/refs/{ref}"],
  ["delete", "/repos/{owner}/{repo}/git/refs/{ref}"],
  ["get", "/repos/{owner}/{repo}/git/ref/{ref}"],
  ["get", "/repos/{owner}/{repo}/git/matching-refs/{ref}"],
  ["post", "/repos/{owner}/{repo}/git/blobs"],
  ["get", "/repos/{owner}/{repo}/git/blobs/{file_sha}"],
  ["post", "/repos/{owner}/{repo}/git/trees"],
  ["get", "/repos/{owner}/{repo}/git/trees/{tree_sha}"],
  ["post", "/repos/{owner}/{repo}/git/commits"],
  ["get", "/repos/{owner}/{repo}/git/commits/{commit_sha}"],
  ["get", "/repos/{owner}/{repo}/pulls"],
  ["post", "/repos/{owner}/{repo}/pulls"],
  ["get", "/repos/{owner}/{repo}/pulls/{pull_number}"],
  ["patch", "/repos/{owner}/{repo}/pulls/{pull_number}"],
  ["get", "/repos/{owner}/{repo}/pulls/{pull_number}/merge"],
  ["put", "/repos/{owner}/{repo}/pulls/{pull_number}/merge"],
  ["get", "/repos/{owner}/{repo}/pulls/{pull_number}/files"],
  ["get", "/repos/{owner}/{repo}/pulls/{pull_number}/commits"],
  ["get", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews"],
  ["post", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews"],
  ["get", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}"],
  ["post", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/events"],
  ["get", "/repos/{owner}/{repo}/issues/{issue_number}/comments"],
  ["post", "/repos/{owner}/{repo}/issues/{issue_number}/comments"],
  ["get", "/repos/{owner}/{repo}/issues/{issue_number}/labels"],
  ["post", "/repos/{owner}/{repo}/issues/{issue_number}/labels"],
  ["put", "/repos/{owner}/{repo}/issues/{issue_number}/labels"],
  ["delete", "/repos/{owner}/{repo}/issues/{issue_number}/labels"],
  ["delete", "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}"],
  ["get", "/repos/{owner}/{repo}/labels"],
  ["post", "/repos/{owner}/{repo}/labels"],
  ["get", "/repos/{owner}/{repo}/labels/{name}"],
  ["post", "/repos/{owner}/{repo}/statuses/{sha}"],
  ["get", "/repos/{owner}/{repo}/commits/{ref}/statuses"],
  ["get", "/repos/{owner}/{repo}/commits/{ref}/status"],
  ["get", "/repos/{owner}/{repo}/commits/{ref}/check-runs"],
  ["post", "/repos/{owner}/{repo}/check-runs"],
  ["get", "/repos/{owner}/{repo}/check-runs/{check_run_id}"],
  ["patch", "/repos/{owner}/{repo}/check-runs/{check_run_id}"],
  ["get", "/user"],
  ["get", "/user/teams"],
  ["get", "/user/orgs"],
  ["get", "/users/{username}"],
];

const here = dirname(fileURLToPath(import.meta.url));
const published = publishedJson(PACKAGE, VERSION, DOCUMENT);

const paths = {};
for (const [method, path] of OPERATIONS) {
  const operation = published.paths[path]?.[method];
  if (operation === undefined) {
    throw new Error(`${PACKAGE}@${VERSION} has no operation ${method.toUpperCase()} ${path}`);
  }
  paths[path] ??= {};
  paths[path][method] = withoutExamples(operation);
}

// The components the operations reference, and the ones those reference, until nothing new turns up.
const components = {};
const queue = [...references(paths)];
while (queue.length > 0) {
  const reference = queue.pop();
  const prefix = "#/components/";
  if (!reference.startsWith(prefix)) {
    throw new Error(`a reference outside the document: ${reference}`);
  }
  const [kind, name, ...rest] = reference.slice(prefix.length).split("/");
  if (rest.length > 0) throw new Error(`a reference into a component: ${reference}`);
  if (components[kind]?.[name] !== undefined) continue;
  const component = published.components[kind]?.[name];
  if (component === undefined) throw new Error(`${PACKAGE}@${VERSION} has no ${reference}`);
  components[kind] ??= {};
  components[kind][name] = withoutExamples(component);
  queue.push(...references(components[kind][name]));
}

const subset = {
  openapi: published.openapi,
  info: {
    ...published.info,
    "x-vendored": `${PACKAGE}@${VERSION} (MIT, github.com/octokit/openapi), ${DOCUMENT}: the ${OPERATIONS.length} operations the sandbox's forge serves and the components they reference; media-type examples left out. Generated by update.mjs; do not edit.`,
  },
  paths: sortKeys(paths),
  components: Object.fromEntries(
    Object.keys(components)
      .sort()
      .map((kind) => [kind, sortKeys(components[kind])]),
  ),
};
writeFileSync(join(here, "openapi.json"), `${JSON.stringify(subset, null, 2)}\n`);
const counted = Object.entries(subset.components).map(([kind, of]) => `${Object.keys(of).length} ${kind}`);
console.log(`openapi.json: ${OPERATIONS.length} operations, ${counted.join(", ")} from ${PACKAGE}@${VERSION}`);

/** `value` without the `examples` of its media types (`content.<type>.examples`), deeply. */
function withoutExamples(value) {
  if (Array.isArray(value)) return value.map(withoutExamples);
  if (value === null || typeof value !== "object") return value;
  const out = {};
  for (const [key, inner] of Object.entries(value)) {
    // A response's or request body's `content` maps media types to objects with a `schema`; a schema's
    // property may be named `content` too, and stays as it is.
    const media = inner !== null && typeof inner === "object" ? Object.values(inner) : [];
    if (key === "content" && media.length > 0 && media.every((m) => m !== null && typeof m === "object" && "schema" in m)) {
      out[key] = Object.fromEntries(
        Object.entries(inner).map(([type, media]) => {
          const { examples: _, ...rest } = media;
          return [type, withoutExamples(rest)];
        }),
      );
    } else {
      out[key] = withoutExamples(inner);
    }
  }
  return out;
}

/** Every `$ref` inside `value`. */
function* references(value) {
  if (Array.isArray(value)) {
    for (const item of value) yield* references(item);
  } else if (value !== null && typeof value === "object") {
    for (const [key, inner] of Object.entries(value)) {
      if (key === "$ref" && typeof inner === "string") yield inner;
      else yield* references(inner);
    }
  }
}

/** `object` with its keys sorted, so a regeneration diffs by what changed. */
function sortKeys(object) {
  return Object.fromEntries(
    Object.keys(object)
      .sort()
      .map((key) => [key, object[key]]),
  );
}
