#!/usr/bin/env bash
# Regenerates every vendored contract that comes from a package: GitHub's REST description and its webhook
# payload schemas, each from its pinned npm version. (Argo CD's swagger sits with the other upstream
# references in sandbox/tests/reference/argocd; Prometheus' and Loki's shapes are transcribed from their
# documentation, see each folder's SOURCE.)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
node "$here/github-rest/update.mjs"
node "$here/github-webhooks/update.mjs"
