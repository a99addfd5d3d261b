#!/usr/bin/env bash
# The test suite in tiers (docs/building.md "Test tiers"):
#   scripts/run_tests.sh ci      every test but the extended ones: those not marked serial on every core
#                                (pytest-xdist), then the serial ones alone (`make test`, CI)
#   scripts/run_tests.sh all     the same with the extended tests (`make test-all`)
#   scripts/run_tests.sh quick   the tests neither graph nor slow nor serial nor extended, on every core
# Environment: PYTHON (the venv's interpreter), TEST_TIMEOUT_S (the whole run), PYTEST_TIMEOUT_S (one test),
# TEST_JOBS (workers of the unit tier; default: the number of cores), PYTEST_ARGS (passed to every pytest call),
# TEST_RECORD (the JSON record of the run; default build/test_wall.json). Each tier prints its 25 slowest tests.
# pytest exit codes: 0 passed, 1 failures, 2 interrupted, 3 internal error, 4 usage error, 5 no tests collected
# (a failure here). timeout(1) exits 124 when the suite ran out of time; it owns a process group in CI, so what a
# test started is stopped with it. Interactive runs keep Ctrl-C working (--foreground).
set -u
tier="${1:-ci}"
PYTHON="${PYTHON:-.venv/bin/python}"
TEST_TIMEOUT_S="${TEST_TIMEOUT_S:-3300}"
PYTEST_TIMEOUT_S="${PYTEST_TIMEOUT_S:-300}"
TEST_JOBS="${TEST_JOBS:-$(nproc)}"
PYTEST_ARGS="${PYTEST_ARGS:-}"
export TEST_RECORD="${TEST_RECORD:-build/test_wall.json}"

case "$tier" in
  ci)    phases=("not serial and not extended|$TEST_JOBS" "serial and not extended|1") ;;
  all)   phases=("not serial|$TEST_JOBS" "serial|1") ;;
  quick) phases=("not graph and not slow and not serial and not extended|$TEST_JOBS") ;;
  *) echo "run_tests.sh: unknown tier '$tier' (ci, all, quick)" >&2; exit 4 ;;
esac

fg=
if [ -t 0 ]; then fg=--foreground; fi
t0=$(date +%s.%N)
rc=0
walls=()
for phase in "${phases[@]}"; do
  marks="${phase%%|*}"
  jobs="${phase##*|}"
  left=$("$PYTHON" -c "import sys,time; print(max(1, int($TEST_TIMEOUT_S - (time.time() - $t0))))")
  par=()
  if [ "$jobs" -gt 1 ]; then par=(-n "$jobs" --dist loadfile); fi
  echo "== tier: -m \"$marks\"${par:+ on $jobs workers} (time left ${left} s)"
  p0=$(date +%s.%N)
  # shellcheck disable=SC2086
  timeout $fg --kill-after=30 "$left" \
    "$PYTHON" -m pytest test -q -p no:cacheprovider --durations=25 --timeout="$PYTEST_TIMEOUT_S" -m "$marks" "${par[@]}" \
    $PYTEST_ARGS </dev/null
  prc=$?
  p1=$(date +%s.%N)
  walls+=("$marks=$("$PYTHON" -c "print(round($p1 - $p0, 1))")")
  case $prc in
    0) ;;
    5) echo "run_tests.sh: pytest collected no tests for -m \"$marks\"" >&2; prc=1 ;;
    124|137) echo "run_tests.sh: the suite exceeded $TEST_TIMEOUT_S s and was stopped" >&2 ;;
  esac
  if [ "$prc" -ne 0 ] && [ "$rc" -eq 0 ]; then rc=$prc; fi
  if [ "$prc" -eq 124 ] || [ "$prc" -eq 137 ]; then break; fi
done
t1=$(date +%s.%N)
echo "== $tier: $("$PYTHON" -c "print(round($t1 - $t0, 1))") s (${walls[*]}), exit $rc"
mkdir -p "$(dirname "$TEST_RECORD")"
"$PYTHON" - "$t0" "$t1" "$rc" "$(git describe --always --dirty --abbrev=12 2>/dev/null || echo unknown)" \
  "$PYTEST_ARGS" "$tier" "$TEST_TIMEOUT_S" "${walls[@]}" <<'EOF' || echo "run_tests.sh: could not write $TEST_RECORD" >&2
import json, os, sys, time
t0, t1, rc, commit, args, tier, limit, *walls = sys.argv[1:]
json.dump({"wall_s": round(float(t1) - float(t0), 3), "exit_code": int(rc), "tier": tier,
           "phases": {w.rsplit("=", 1)[0]: float(w.rsplit("=", 1)[1]) for w in walls},
           "date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "commit": commit, "pytest_args": args.strip(),
           "timeout_s": int(limit)}, open(os.environ.get("TEST_RECORD", "build/test_wall.json"), "w"), indent=1)
EOF
exit $rc
