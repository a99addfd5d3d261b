# rths_ros developer commands (Python venv route, no ROS 2 distribution needed). See docs/building.md.
#   make run    set up the environment, then run the 1-D contact scenario into runs/contact_1d-<date>-<time>
#   make test   set up the environment, then run the test suite
#   make setup  create/refresh .venv: pinned requirements, messages, editable install (incremental)
#   make clean  remove build products (build/, caches); `make distclean` also removes .venv

SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV ?= $(CURDIR)/.venv
PYTHON := $(VENV)/bin/python
# Per-test limit (pytest-timeout) and a limit for the whole suite, in seconds.
PYTEST_TIMEOUT_S ?= 300
TEST_TIMEOUT_S ?= 3600
PYTEST_ARGS ?=

# Keep DDS discovery on this machine unless the caller chose otherwise.
export ROS_AUTOMATIC_DISCOVERY_RANGE ?= LOCALHOST
export RTHS_VENV := $(VENV)

.PHONY: help setup run test clean distclean

help:
	@sed -n '2,6p' $(firstword $(MAKEFILE_LIST)) | sed 's/^# \{0,1\}//'

setup:
	bash scripts/setup_env.sh

run: setup
	$(VENV)/bin/rths run contact_1d

# pytest exit codes: 0 passed, 1 failures, 2 interrupted, 3 internal error, 4 usage error, 5 no tests
# collected (treated as a failure). timeout(1) exits 124 when the suite ran out of time.
# Interactive runs keep Ctrl-C working (--foreground); in CI (no terminal) timeout(1) owns a process
# group, so a suite that overruns is stopped together with any processes it started.
# Each run records its wall time and result in build/test_wall.json (reported by `rths bench`).
test: setup
	@set +e; \
	fg=; if [ -t 0 ]; then fg=--foreground; fi; \
	t0=$$(date +%s.%N); \
	timeout $$fg --kill-after=30 $(TEST_TIMEOUT_S) \
	  $(PYTHON) -m pytest test -q -p no:cacheprovider --timeout=$(PYTEST_TIMEOUT_S) $(PYTEST_ARGS) </dev/null; \
	rc=$$?; \
	t1=$$(date +%s.%N); \
	case $$rc in \
	  5) echo "make test: pytest collected no tests" >&2; rc=1 ;; \
	  124|137) echo "make test: the suite exceeded $(TEST_TIMEOUT_S) s and was stopped" >&2 ;; \
	esac; \
	mkdir -p build; \
	$(PYTHON) -c 'import json, sys, time; t0, t1, rc, commit, args = sys.argv[1:]; \
	  json.dump({"wall_s": round(float(t1) - float(t0), 3), "exit_code": int(rc), \
	             "date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "commit": commit, "pytest_args": args.strip(), \
	             "timeout_s": $(TEST_TIMEOUT_S)}, open("build/test_wall.json", "w"), indent=1)' \
	  "$$t0" "$$t1" "$$rc" "$$(git describe --always --dirty --abbrev=12 2>/dev/null || echo unknown)" \
	  "$(PYTEST_ARGS)" || echo "make test: could not write build/test_wall.json" >&2; \
	exit $$rc

clean:
	rm -rf build .pytest_cache
	find . -path ./.venv -prune -o -type d -name __pycache__ -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
