#!/usr/bin/env bash
# The test suite in tiers (docs/building.md "Test tiers"):
#   scripts/run_tests.sh ci      every test but the extended ones: the serial ones one at a time, with the graph
#                                tests not marked serial on every core (pytest-xdist) and the unit tests beside them
#                                at idle priority (`make test`, CI)
#   scripts/run_tests.sh all     the same with the extended tests (`make test-all`)
#   scripts/run_tests.sh quick   the tests neither graph nor slow nor serial nor extended, on every core
#   scripts/run_tests.sh graph-launch  the `ros2 launch` tests that are serial one at a time, with the graph tests not
#                                serial beside them at idle priority, but for the model_graph modules (what `make
#                                test` runs on its second ROS 2 distribution)
#   scripts/run_tests.sh graph-launch-all  the same with the model_graph modules and the extended tests (what `make
#                                test-all` runs on the second distribution)
# Environment: PYTHON (the venv's interpreter), TEST_TIMEOUT_S (the whole run), PYTEST_TIMEOUT_S (one test),
# TEST_JOBS (workers of the unit tier; default: the number of cores), GRAPH_JOBS (workers of the graph tier; default
# TEST_JOBS), PYTEST_ARGS (passed to every pytest call),
# SERIAL_RERUNS (reruns of a failed test in make test / make test-all; default 1),
# TEST_RECORD (the JSON record of the run; default build/test_wall.json; the unit tests' output goes to
# test_unit.log beside it), PAR_NICE (nice of the graph tier when it runs first; default 5), UNIT_BESIDE_SERIAL
# (default all), GRAPH_BESIDE_SERIAL (default 1), GRAPH_BESIDE_NICE (default idle): below.
# Each tier prints its 25 slowest tests; each has its own pytest temporary directory (removed
# when every test passed).
# pytest exit codes: 0 passed, 1 failures, 2 interrupted, 3 internal error, 4 usage error, 5 no tests collected
# (a failure here). timeout(1) exits 124 when the suite ran out of time; it owns a process group in CI, so what a
# test started is stopped with it. Interactive runs keep Ctrl-C working (--foreground).
set -u
tier="${1:-ci}"
PYTHON="${PYTHON:-.venv/bin/python}"
TEST_TIMEOUT_S="${TEST_TIMEOUT_S:-3300}"
PYTEST_TIMEOUT_S="${PYTEST_TIMEOUT_S:-300}"
TEST_JOBS="${TEST_JOBS:-$(nproc)}"
GRAPH_JOBS="${GRAPH_JOBS:-$TEST_JOBS}"
PYTEST_ARGS="${PYTEST_ARGS:-}"
export TEST_RECORD="${TEST_RECORD:-build/test_wall.json}"

# Each phase: "marks|workers|nice".  make test (ci) and make test-all (all) run the serial tests (realtime, timing)
# one at a time at normal priority; the graph tests (every core, pytest-xdist) and the unit tests (every core) run
# beside them from the start at the scheduler's idle priority ("idle": SCHED_IDLE, chrt --idle): a serial test
# waking up takes the CPU from them at once, and they use what it leaves idle (a realtime run waits for its next
# step, a start for discovery, a kill test for its watchdog; lockstep graph runs are deterministic whatever their
# share of the CPU).  The serial tier alone used about 0.6 of the 2 cores.
# GRAPH_BESIDE_SERIAL=0 runs the graph tier first (at nice PAR_NICE), then the serial one (the layout until
# 2026-11-30: 772 s, then 629 s side by side an hour later; docs/building.md); GRAPH_BESIDE_NICE sets the graph tier's
# priority beside the serial one (a nice value or idle; at nice 15 a serial test timing a lockstep run needed its
# rerun). With GRAPH_JOBS=3 beside it, a realtime serial test (the twin comparison on the emulated rig) failed
# twice: the graph tier keeps 2 workers.
# UNIT_BESIDE_SERIAL=1 starts the unit tests only with the serial tier, UNIT_BESIDE_SERIAL=0 after it.
PAR_NICE="${PAR_NICE:-5}"
UNIT_BESIDE_SERIAL="${UNIT_BESIDE_SERIAL:-all}"
GRAPH_BESIDE_SERIAL="${GRAPH_BESIDE_SERIAL:-1}"
GRAPH_BESIDE_NICE="${GRAPH_BESIDE_NICE:-idle}"
# make test and make test-all rerun a failed test once (pytest-rerunfailures): the tiers share a 2-core machine,
# and a realtime run, or a start bounded by a wait, now and then meets a stall of the whole machine; a test that
# fails twice fails, and each rerun is listed (R in the progress line, RERUN in the summary)
SERIAL_RERUNS="${SERIAL_RERUNS:-1}"
case "$tier" in
  ci)    phases=("graph and not serial and not extended|$GRAPH_JOBS|$PAR_NICE" "serial and not extended|1|0"
                 "not graph and not serial and not extended|$TEST_JOBS|idle") ;;
  all)   phases=("graph and not serial|$GRAPH_JOBS|$PAR_NICE" "serial|1|0" "not graph and not serial|$TEST_JOBS|idle") ;;
  graph-launch) phases=("graph and not serial and not extended and not model_graph|$GRAPH_JOBS|$PAR_NICE"
                        "launch and serial and not extended|1|0") ;;
  graph-launch-all) phases=("graph and not serial|$GRAPH_JOBS|$PAR_NICE" "launch and serial|1|0") ;;
  quick) phases=("not graph and not slow and not serial and not extended|$TEST_JOBS|0") ;;
  *) echo "run_tests.sh: unknown tier '$tier' (ci, all, quick, graph-launch, graph-launch-all)" >&2; exit 4 ;;
esac

graph_beside=
if [ "$GRAPH_BESIDE_SERIAL" = 1 ] && { [ "$tier" = ci ] || [ "$tier" = all ] || [ "$tier" = graph-launch ] || [ "$tier" = graph-launch-all ]; }; then
  graph_beside="${phases[0]%|*}|$GRAPH_BESIDE_NICE"
fi

fg=
if [ -t 0 ]; then fg=--foreground; fi
t0=$(date +%s.%N)
mkdir -p "$(dirname "$TEST_RECORD")"
logdir="$(dirname "$TEST_RECORD")"
tmpbase="$(mktemp -d "${TMPDIR:-/tmp}/rths-tests.XXXXXX")"      # the tiers' pytest temporary directories
# the runs that tests of every tier share (test/shared_runs.py): one `rths run` per scenario and arguments
export RTHS_SHARED_RUNS="$tmpbase/shared-runs"

# run_phase INDEX: one pytest run of phases[INDEX] under the suite's remaining time; writes its exit code and wall
# time to $logdir/.phase-INDEX
run_phase() {
  local phase="${phases[$1]}" marks jobs nice left par p0 p1 prc
  marks="${phase%%|*}"; jobs="${phase#*|}"; nice="${jobs#*|}"; jobs="${jobs%%|*}"
  left=$("$PYTHON" -c "import sys,time; print(max(1, int($TEST_TIMEOUT_S - (time.time() - $t0))))")
  par=()
  # --no-loadscope-reorder: hand out the modules in test/conftest.py's order (the long ones first), not xdist's
  # default of the modules with the most tests first (which left two long `ros2 launch` tests for the end)
  if [ "$jobs" -gt 1 ]; then par=(-n "$jobs" --dist loadfile --no-loadscope-reorder); fi
  local prio=(nice -n "$nice")
  if [ "$nice" = idle ]; then        # (nice 19 where SCHED_IDLE is not allowed)
    if chrt --idle 0 true 2>/dev/null; then prio=(chrt --idle 0); else prio=(nice -n 19); fi
  fi
  echo "== tier: -m \"$marks\"${par:+ on $jobs workers}, ${prio[*]} (time left ${left} s)"
  if [ "$SERIAL_RERUNS" -gt 0 ] && [ "$tier" != quick ]; then par+=(--reruns "$SERIAL_RERUNS" -rR); fi
  p0=$(date +%s.%N)
  # shellcheck disable=SC2086
  # (the output also goes to $logdir/.phase-INDEX.out: the summary at the end lists every tier's failures)
  timeout $fg --kill-after=30 "$left" "${prio[@]}" \
    "$PYTHON" -m pytest test -q -p no:cacheprovider --basetemp="$tmpbase/phase-$1" --durations=25 \
    --timeout="$PYTEST_TIMEOUT_S" -m "$marks" "${par[@]}" \
    $PYTEST_ARGS </dev/null 2>&1 | tee "$logdir/.phase-$1.out"
  prc=${PIPESTATUS[0]}
  p1=$(date +%s.%N)
  case $prc in
    0) ;;
    5) echo "run_tests.sh: pytest collected no tests for -m \"$marks\"" >&2; prc=1 ;;
    124|137) echo "run_tests.sh: the suite exceeded $TEST_TIMEOUT_S s and was stopped" >&2 ;;
  esac
  echo "$prc $marks=$("$PYTHON" -c "print(round($p1 - $p0, 1))")" > "$logdir/.phase-$1"
}

rc=0
walls=()
order=()
i=0
beside_pid=
beside_phase=
last=$((${#phases[@]} - 1))
if [ "$UNIT_BESIDE_SERIAL" = all ] && [ "$last" -gt 0 ] && [ "${phases[$last]##*|}" = idle ]; then
  # the idle phase beside all the others, from the start; its output kept in a log and printed at the end
  beside_log="$logdir/test_unit.log"
  run_phase "$last" >"$beside_log" 2>&1 &
  beside_pid=$!
  beside_phase="${phases[$last]}"
  unset "phases[$last]"
fi
graph_pid=
if [ -n "$graph_beside" ]; then
  # the graph tier beside the serial one, from the start; its output kept in a log and printed when it ended
  phases[0]="$graph_beside"
  graph_log="$logdir/test_graph.log"
  run_phase 0 >"$graph_log" 2>&1 &
  graph_pid=$!
  i=1
fi
while [ "$i" -lt "${#phases[@]}" ]; do
  next=$((i + 1))
  if [ "$UNIT_BESIDE_SERIAL" = 1 ] && [ "$next" -lt "${#phases[@]}" ] && [ "${phases[$next]##*|}" = idle ]; then
    # the idle phase beside this one, its output kept in a log and printed when both ended
    beside_log="$logdir/test_unit.log"
    run_phase "$next" >"$beside_log" 2>&1 &
    beside_pid=$!
    run_phase "$i"
    wait "$beside_pid"
    echo "== the unit tests' output ($beside_log):"
    cat "$beside_log"
    order+=("$i" "$next")
    i=$((next + 1))
  else
    run_phase "$i"
    order+=("$i")
    i=$next
  fi
  prc=1
  if [ -f "$logdir/.phase-${order[-1]}" ]; then read -r prc _ < "$logdir/.phase-${order[-1]}"; fi
  if [ "$prc" -eq 124 ] || [ "$prc" -eq 137 ]; then break; fi
done
if [ -n "$graph_pid" ]; then
  wait "$graph_pid"
  echo "== the graph tier's output ($graph_log):"
  cat "$graph_log"
  order=(0 "${order[@]}")
fi
if [ -n "$beside_pid" ]; then
  wait "$beside_pid"
  echo "== the unit tests' output ($beside_log):"
  cat "$beside_log"
  order+=("$last")
fi
# the summary, last (a CI log is often read from its end): each tier's result line, its failed tests and reruns
echo "== summary"
for i in "${order[@]}"; do
  phase="${phases[$i]:-$beside_phase}"
  prc=1; wall="${phase%%|*}=0"
  if [ -f "$logdir/.phase-$i" ]; then read -r prc wall < "$logdir/.phase-$i"; fi
  walls+=("$wall")
  if [ "$prc" -ne 0 ] && [ "$rc" -eq 0 ]; then rc=$prc; fi
  echo "-m \"${phase%%|*}\": exit $prc"
  if [ -f "$logdir/.phase-$i.out" ]; then
    grep -E '^(FAILED|ERROR|RERUN) |^=* ?[0-9]+ (passed|failed|error)|^\+* ?Timeout' "$logdir/.phase-$i.out" | sed 's/^/  /'
  fi
  rm -f "$logdir/.phase-$i" "$logdir/.phase-$i.out"
done
if [ "$rc" -eq 0 ]; then rm -rf "$tmpbase"; else echo "run_tests.sh: the tests' files are kept in $tmpbase" >&2; fi
t1=$(date +%s.%N)
echo "== $tier: $("$PYTHON" -c "print(round($t1 - $t0, 1))") s (${walls[*]}), exit $rc"
"$PYTHON" - "$t0" "$t1" "$rc" "$(git describe --always --dirty --abbrev=12 2>/dev/null || echo unknown)" \
  "$PYTEST_ARGS" "$tier" "$TEST_TIMEOUT_S" "${walls[@]}" <<'EOF' || echo "run_tests.sh: could not write $TEST_RECORD" >&2
import json, os, sys, time
t0, t1, rc, commit, args, tier, limit, *walls = sys.argv[1:]
json.dump({"wall_s": round(float(t1) - float(t0), 3), "exit_code": int(rc), "tier": tier,
           "phases": {w.rsplit("=", 1)[0]: float(w.rsplit("=", 1)[1]) for w in walls},
           "date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "commit": commit, "pytest_args": args.strip(),
           "timeout_s": int(limit), "distro": os.environ.get("RTHS_ROS_DISTRO", "kilted")}, open(os.environ.get("TEST_RECORD", "build/test_wall.json"), "w"), indent=1)
EOF
exit $rc
