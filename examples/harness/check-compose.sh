#!/usr/bin/env bash
# Checks examples/harness/compose.yaml and the Salt configuration it mounts WITHOUT docker and
# without network: YAML syntax, required services and keys, the master settings and the eauth
# ACL the library needs, the minion id, the published port (loopback, not a lab port) and
# harness.env (the port, event bus and root key compose.yaml exposes). Needs only Go.
# Usage: bash examples/harness/check-compose.sh
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here/../.."
for s in "$here/check-compose.sh" "$here/run-integration.sh" "$here/build-images.sh" "$here/compose-kit.sh"; do
  bash -n "$s"
done
go run ./examples/harness/composecheck "$here"
