#!/usr/bin/env bash
# Builds the console's editor bundle (CodeMirror 6 + @codemirror/lang-yaml, bundled by esbuild) from the
# exact versions in examples/controller/internal/service/ui/editor/package-lock.json, and writes its
# SHA-256 next to it. The bundle and its checksum are committed; TestEditorBundleChecksum recomputes the
# checksum in CI. Needs node and npm (Debian: apt-get install -y nodejs npm).
set -euo pipefail
cd "$(dirname "$0")/../examples/controller/internal/service/ui/editor"
export SOURCE_DATE_EPOCH=0
npm ci --no-audit --no-fund --ignore-scripts=false >/dev/null
./node_modules/.bin/esbuild editor.js --bundle --minify --format=iife --target=es2020 \
  --legal-comments=none --charset=utf8 --outfile=../static/editor.js
sha256sum ../static/editor.js | cut -d' ' -f1 >../static/editor.js.sha256
echo "editor bundle: $(wc -c <../static/editor.js) bytes, sha256 $(cat ../static/editor.js.sha256)"
