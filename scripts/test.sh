#!/usr/bin/env bash
# The one test command: everything CI checks, for every module of go.work (.ci/run installs the tools,
# then runs this). It stops at the first failing step, and prints each step's wall time.
#
# Usage: scripts/test.sh [-quick] [-module DIR]... [-step NAME]... [-list]
#
#   (no flag)    every step below, every module of go.work, in this order:
#                  modules      every go.mod of the repository is in go.work, and none has a replace directive
#                  gofmt        gofmt -l over every tracked .go file
#                  signing      receipt proof signing on every crypto backend: the minion module's Python
#                               test_minion_proofs.py, then Go's TestVerifyProofPythonSigned (CI=true makes a
#                               missing backend a failure, not a skip)
#                  vet          go vet ./...                       in each module
#                  staticcheck  staticcheck ./...                  in each module (skipped with a warning when
#                               it is not installed, unless CI=true)
#                  compose      examples/harness/check-compose.sh  (compose.yaml and the Salt config, no docker)
#                  test         go test -race -count=1 ./...       in each module (the root module's includes
#                               the minion module's whole Python suite, receipt/minion_python_test.go)
#                The root module, oduflow/etcdstore and examples (one module until 0.4.0) share one vet,
#                staticcheck and go test invocation from the root (./... ./oduflow/etcdstore/... ./examples/...),
#                so that their packages run in parallel as before; every other module runs in its directory.
#   -quick       a developer's fast loop: modules, gofmt, vet, and go test -short -count=1 ./... (no race
#                detector; -short skips the tests that fork processes or build binaries) in each module
#   -module DIR  only this module (a directory of go.work's use list, e.g. oduflow/prom; repeatable) for
#                the per-module steps vet, staticcheck and test; the repository-wide steps still run
#                unless -step leaves them out
#   -step NAME   only this step (repeatable; the names above)
#   -list        print the steps it would run, run nothing
#
# Examples: scripts/test.sh -module oduflow/prom -step vet -step test
#           scripts/test.sh -quick -module .
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

quick=0 list=0
modules=() steps=()
while [ $# -gt 0 ]; do
  case $1 in
    -quick | --quick) quick=1 ;;
    -list | --list) list=1 ;;
    -module | --module) [ $# -ge 2 ] || { echo "test.sh: $1 needs a directory" >&2; exit 2; }; m=${2%/}; m=${m#./}; modules+=("${m:-.}"); shift ;;
    -step | --step) [ $# -ge 2 ] || { echo "test.sh: $1 needs a step name" >&2; exit 2; }; steps+=("$2"); shift ;;
    -h | -help | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test.sh: unknown argument $1 (see scripts/test.sh -h)" >&2; exit 2 ;;
  esac
  shift
done

# The workspace is what makes each module build against the working copy of the others: never the
# released versions a GOWORK=off build would fetch, and -mod=mod (which workspace mode refuses) is an error
# here rather than a confusing one from go.
export GOWORK="$root/go.work"
case " ${GOFLAGS:-} " in *" -mod="*) echo "test.sh: GOFLAGS=${GOFLAGS} sets -mod, which workspace mode refuses; unset it" >&2; exit 2 ;; esac

all_steps="modules gofmt signing vet staticcheck compose test"
quick_steps="modules gofmt vet test"
for s in "${steps[@]+"${steps[@]}"}"; do
  case " $all_steps " in *" $s "*) ;; *) echo "test.sh: unknown step $s (one of: $all_steps)" >&2; exit 2 ;; esac
done
wanted() { # wanted STEP: whether STEP runs in this invocation
  if [ "$quick" = 1 ]; then case " $quick_steps " in *" $1 "*) ;; *) return 1 ;; esac; fi
  [ ${#steps[@]} -eq 0 ] && return 0
  case " ${steps[*]} " in *" $1 "*) return 0 ;; esac
  return 1
}

# The modules of go.work, as directories relative to the root: those of "order" first, in that order
# (the library, then what depends on it; go work edit sorts go.work's own list), then any other.
order=". oduflow/etcdstore oduflow/etcdstore/etcdtest oduflow/prom oduflow/otel examples examples/controller bench"
listed=()
while IFS= read -r dir; do
  dir=${dir#./}
  listed+=("${dir:-.}")
done < <(go work edit -json | sed -n 's/^[[:space:]]*"DiskPath": "\(.*\)"[,]*$/\1/p')
[ ${#listed[@]} -gt 0 ] || { echo "test.sh: no module in $GOWORK" >&2; exit 2; }
workspace=()
for m in $order; do case " ${listed[*]} " in *" $m "*) workspace+=("$m") ;; esac; done
for m in "${listed[@]}"; do case " $order " in *" $m "*) ;; *) workspace+=("$m") ;; esac; done
if [ ${#modules[@]} -eq 0 ]; then
  modules=("${workspace[@]}")
else
  for m in "${modules[@]}"; do
    case " ${workspace[*]} " in *" $m "*) ;; *) echo "test.sh: $m is not a module of go.work (${workspace[*]})" >&2; exit 2 ;; esac
  done
fi

python=python3
[ -x /usr/bin/python3 ] && python=/usr/bin/python3 # Debian's, where the crypto backends are (see .ci/run)

# ---- the plan: one line per step, "header<TAB>directory<TAB>command" --------------------------------
plan=()
add() { plan+=("$1"$'\t'"$2"$'\t'"$3"); }
wanted modules && add "modules: go.work lists every go.mod, no go.mod has a replace directive" . check_modules
wanted gofmt && add "gofmt -l (every tracked .go file)" . check_gofmt
if wanted signing; then
  add "receipt proof signing on every backend: python3 test_minion_proofs.py" receipt/minion \
    "$python -W ignore -m unittest discover -s tests -p test_minion_proofs.py"
  add "receipt proof signing on every backend: go test -run TestVerifyProofPythonSigned ./receipt/proof/" . \
    "go test -count=1 -run TestVerifyProofPythonSigned ./receipt/proof/"
fi
# per_module STEP COMMAND: one step per module, COMMAND followed by the module's package patterns. The
# modules of "together" (those that were one module until 0.4.0) share one invocation from the root, as
# they did then, so that their packages still run in parallel (go test -p, GOMAXPROCS); in workspace
# mode ./DIR/... matches the packages of the module at DIR only. Every other module runs alone in its
# directory, as before.
together=". oduflow/etcdstore examples"
per_module() {
  local step=$1 cmd=$2 m g group=() pats=()
  for m in "${modules[@]}"; do
    case " $together " in *" $m "*) group+=("$m") ;; esac
  done
  for m in "${modules[@]}"; do
    case " $together " in
      *" $m "*)
        [ "$m" = "${group[0]}" ] || continue # the group's step, where its first module would be
        pats=()
        for g in "${group[@]}"; do if [ "$g" = . ]; then pats+=(./...); else pats+=("./$g/..."); fi; done
        add "$step ${pats[*]}  (module${group[1]+s} ${group[*]})" . "$cmd ${pats[*]}" ;;
      *) add "$step ./...  (module $m)" "$m" "$cmd ./..." ;;
    esac
  done
}
wanted vet && per_module "go vet" "go vet"
wanted staticcheck && per_module "staticcheck" run_staticcheck
wanted compose && add "compose file syntax: examples/harness/check-compose.sh" . "bash examples/harness/check-compose.sh"
if wanted test; then
  if [ "$quick" = 1 ]; then
    per_module "go test -short -count=1" "go test -short -count=1"
  else
    per_module "go test -race -count=1" "go test -race -count=1"
  fi
fi

if [ "$list" = 1 ]; then
  for p in "${plan[@]}"; do IFS=$'\t' read -r header dir cmd <<<"$p"; printf '%-90s (in %s: %s)\n' "$header" "$dir" "$cmd"; done
  exit 0
fi

# ---- the steps that are functions ------------------------------------------------------------------
check_modules() {
  local bad=0 d
  while IFS= read -r d; do
    d=$(dirname "$d")
    case " ${workspace[*]} " in *" $d "*) ;; *) echo "$d/go.mod is not in go.work: go work use ./$d"; bad=1 ;; esac
    if go mod edit -json "$d/go.mod" | grep -q '"Replace": \['; then
      echo "$d/go.mod has a replace directive: modules publish as they are (go.work maps versions to the working copy)"
      bad=1
    fi
  done < <(git ls-files --cached --others --exclude-standard '*go.mod' | grep -E '(^|/)go\.mod$')
  return $bad
}
check_gofmt() {
  local unformatted
  unformatted=$(git ls-files -z '*.go' | xargs -0 gofmt -l)
  [ -z "$unformatted" ] && return 0
  echo "gofmt would change:"; echo "$unformatted"; return 1
}
run_staticcheck() {
  if ! command -v staticcheck >/dev/null; then
    if [ "${CI:-}" = true ]; then echo "staticcheck is not installed (CI=true: it must run)"; return 1; fi
    echo "staticcheck is not installed: skipped (go install honnef.co/go/tools/cmd/staticcheck@v0.8.2)"
    return 0
  fi
  staticcheck "$@"
}

# ---- run them in order, stop at the first failure --------------------------------------------------
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1fs", b - a }'; }
start=$(now)
times=()
n=${#plan[@]} i=0
for p in "${plan[@]}"; do
  i=$((i + 1))
  IFS=$'\t' read -r header dir cmd <<<"$p"
  printf '\n== [%d/%d] %s ==\n' "$i" "$n" "$header"
  t=$(now)
  status=0
  (cd "$dir" && eval "$cmd") || status=$?
  took=$(elapsed "$t" "$(now)")
  if [ "$status" != 0 ]; then
    printf '\n== FAILED (exit %d, %s): [%d/%d] %s ==\n' "$status" "$took" "$i" "$n" "$header"
    exit "$status"
  fi
  printf -- '-- ok in %s\n' "$took"
  times+=("$took  $header")
done
printf '\n== all %d steps passed in %s ==\n' "$n" "$(elapsed "$start" "$(now)")"
printf '  %s\n' "${times[@]+"${times[@]}"}"
