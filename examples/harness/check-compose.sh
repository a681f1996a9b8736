#!/usr/bin/env bash
# Checks examples/harness/compose.yaml and the Salt configuration it mounts WITHOUT docker and
# without network: YAML syntax, required services and keys, the master settings and the eauth
# ACL the library needs, the minion id and harness.env. Needs only Go.
# Usage: bash examples/harness/check-compose.sh
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here/../.."
for s in "$here/check-compose.sh" "$here/run-integration.sh"; do
  bash -n "$s"
done
go run ./examples/harness/composecheck "$here"
