#!/usr/bin/env bash
# Builds the harness's Salt 3006.0 image with podman, without any container registry:
#   1. a Debian bookworm root file system with python3 and the Debian packages Salt needs
#      (mmdebstrap --variant=minbase), imported as BASE_IMAGE (skipped when it exists);
#   2. the build context: Salt's source tree (salt/, scripts/, salt/_version.txt = 3006.0), the
#      harness's configuration and roles, and oduflow_job.py written by this module's oduflowctl;
#   3. `podman build -f Containerfile`, tagged SALT_IMAGE;
#   4. the controller service's image (examples/controller/Containerfile, compose service controller):
#      its binary built here with this Go toolchain (CGO_ENABLED=0) on the same base, CONTROLLER_IMAGE.
# Salt's source is read at build time and never written into the repository.
#
# Usage: bash examples/harness/build-images.sh [--salt-src DIR | --salt-git GIT_DIR] [--rebuild-base]
#        bash examples/harness/build-images.sh --controller-only
#   --salt-src DIR    an extracted Salt 3006.0 tree (holds salt/__init__.py and scripts/)
#   --salt-git DIR    a git directory (bare is fine) holding SALT_REF (default openSUSE/release/3006.0)
#   --rebuild-base    make the Debian base again even if BASE_IMAGE exists
#   --controller-only build only the controller's image (the base must exist or is made)
# Environment: SALT_SRC, SALT_GIT, SALT_REF, BASE_IMAGE, SALT_IMAGE, CONTROLLER_IMAGE, BUILD_DIR (default
# /var/tmp/oduflow-harness-build), DEBIAN_MIRROR (mmdebstrap's mirror; default its own),
# CONTAINERS_CONF (default: containers.conf next to this script). Run as root.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

BASE_IMAGE=${BASE_IMAGE:-localhost/oduflow-harness/bookworm-salt-deps:latest}
SALT_IMAGE=${SALT_IMAGE:-localhost/oduflow-harness/salt:3006.0}
CONTROLLER_IMAGE=${CONTROLLER_IMAGE:-localhost/oduflow-harness/controller:latest}
SALT_REF=${SALT_REF:-openSUSE/release/3006.0}
BUILD_DIR=${BUILD_DIR:-/var/tmp/oduflow-harness-build}
export CONTAINERS_CONF=${CONTAINERS_CONF:-$here/containers.conf}
# The Debian packages Salt 3006 imports at runtime (its vendored tornado needs nothing more).
DEB_PKGS=python3,python3-zmq,python3-msgpack,python3-yaml,python3-jinja2,python3-markupsafe,python3-requests,python3-distro,python3-psutil,python3-pycryptodome,python3-packaging,python3-jmespath

usage() { sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
die() { echo "build-images: $*" >&2; exit 2; }
say() { echo "build-images: $*" >&2; }
elapsed() { echo "$(( $(date +%s) - $1 ))s"; }

salt_src=${SALT_SRC:-}
salt_git=${SALT_GIT:-}
rebuild_base=0
controller_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --salt-src) [ $# -ge 2 ] || die "--salt-src needs a directory"; salt_src=$2; shift 2 ;;
    --salt-git) [ $# -ge 2 ] || die "--salt-git needs a git directory"; salt_git=$2; shift 2 ;;
    --rebuild-base) rebuild_base=1; shift ;;
    --controller-only) controller_only=1; shift ;;
    *) usage >&2; die "unknown argument $1" ;;
  esac
done
[ "$controller_only" = 1 ] || [ -n "$salt_src" ] || [ -n "$salt_git" ] || { usage >&2; die "say where Salt's source is: --salt-src DIR or --salt-git GIT_DIR"; }
[ -z "$salt_src" ] || [ -z "$salt_git" ] || die "give --salt-src or --salt-git, not both"
for c in podman go tar; do command -v "$c" >/dev/null || die "$c is not installed"; done
[ "$(id -u)" = 0 ] || die "run as root (rootful podman, mmdebstrap)"

# 1. The Debian base.
if [ "$rebuild_base" = 1 ] || ! podman image exists "$BASE_IMAGE"; then
  command -v mmdebstrap >/dev/null || die "mmdebstrap is not installed (apt-get install mmdebstrap)"
  mkdir -p "$BUILD_DIR"
  t=$(date +%s)
  say "making the Debian bookworm base with mmdebstrap ($DEB_PKGS)"
  rm -f "$BUILD_DIR/base.tar"
  mmdebstrap --variant=minbase --include="$DEB_PKGS" bookworm "$BUILD_DIR/base.tar" ${DEBIAN_MIRROR:+"$DEBIAN_MIRROR"}
  say "base root file system: $(du -h "$BUILD_DIR/base.tar" | cut -f1) in $(elapsed "$t")"
  t=$(date +%s)
  podman import --change 'CMD ["/bin/bash"]' --change 'ENV LANG=C.UTF-8' \
    "$BUILD_DIR/base.tar" "$BASE_IMAGE" >/dev/null
  rm -f "$BUILD_DIR/base.tar"
  say "imported $BASE_IMAGE in $(elapsed "$t")"
else
  say "base $BASE_IMAGE exists (--rebuild-base makes it again)"
fi

# 4. The controller's image: a static binary built here, on the same base (no registry, no Go in the image).
build_controller() {
  local t cctx
  t=$(date +%s)
  cctx=$(mktemp -d "${TMPDIR:-/tmp}/oduflow-controller-ctx.XXXXXX")
  (cd "$root/examples/controller" && CGO_ENABLED=0 go build -trimpath -o "$cctx/controller" .)
  podman build --pull=never --build-arg BASE_IMAGE="$BASE_IMAGE" -f "$root/examples/controller/Containerfile" \
    -t "$CONTROLLER_IMAGE" "$cctx"
  rm -rf "$cctx"
  say "built $CONTROLLER_IMAGE in $(elapsed "$t")"
}
if [ "$controller_only" = 1 ]; then
  build_controller
  exit 0
fi

# 2. The build context, outside the repository.
ctx=$(mktemp -d "${TMPDIR:-/tmp}/oduflow-harness-ctx.XXXXXX")
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/salt-src" "$ctx/harness" "$ctx/modules"
if [ -n "$salt_git" ]; then
  git --git-dir="$salt_git" rev-parse --git-dir >/dev/null 2>&1 || die "$salt_git is not a git directory"
  commit=$(git --git-dir="$salt_git" rev-parse --verify -q "$SALT_REF^{commit}") || die "$salt_git has no ref $SALT_REF"
  # Only what runs: such snapshots may lack large blobs under doc/ and tests/.
  for t in salt scripts; do
    git --git-dir="$salt_git" archive --prefix="$t/" "$commit:$t" | tar -x -C "$ctx/salt-src"
  done
  say "Salt source: $SALT_REF ($commit) from $salt_git"
else
  [ -f "$salt_src/salt/__init__.py" ] && [ -d "$salt_src/scripts" ] || die "$salt_src is not a Salt source tree (no salt/__init__.py or scripts/)"
  tar -C "$salt_src" --exclude='__pycache__' --exclude='*.pyc' -cf - salt scripts | tar -x -C "$ctx/salt-src"
  say "Salt source: $salt_src"
fi
# A tree without .git and without _version.txt reports 3007.0; a release tarball carries it.
echo "3006.0" > "$ctx/salt-src/salt/_version.txt"
cp -r "$here/master.d" "$here/minion.d" "$here/eauth_users.txt" "$here/image" "$ctx/harness/"
mkdir -p "$ctx/harness/salt" && cp -r "$here/salt/roles" "$ctx/harness/salt/roles"
(cd "$root" && go run ./examples/oduflowctl module --install "$ctx/modules") >/dev/null
[ -f "$ctx/modules/oduflow_job.py" ] || die "oduflowctl module --install wrote no oduflow_job.py"

# 3. The image.
t=$(date +%s)
podman build --pull=never --build-arg BASE_IMAGE="$BASE_IMAGE" -f "$here/Containerfile" -t "$SALT_IMAGE" "$ctx"
say "built $SALT_IMAGE in $(elapsed "$t")"
build_controller
podman image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -F -e "${BASE_IMAGE%:*}" -e "${SALT_IMAGE%:*}" -e "${CONTROLLER_IMAGE%:*}" >&2 || true
