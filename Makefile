# rths_ros developer commands (Python venv route, no ROS 2 distribution needed). See docs/building.md.
#   make run    set up the environment, then run the 1-D contact scenario into runs/contact_1d-<date>-<time>
#   make test   set up the environment, then run the test suite
#   make test-quick  the unit tests without the slow ones, on every core; make test-all adds the extended runs
#   make setup  create/refresh .venv: pinned requirements, messages, editable install (incremental)
#   make clean  remove build products (build/, caches); `make distclean` also removes .venv

SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV ?= $(CURDIR)/.venv
PYTHON := $(VENV)/bin/python
# Per-test limit (pytest-timeout) and a limit for the whole suite, in seconds.
PYTEST_TIMEOUT_S ?= 300
TEST_TIMEOUT_S ?= 3300
PYTEST_ARGS ?=

# Keep DDS discovery on this machine unless the caller chose otherwise.
export ROS_AUTOMATIC_DISCOVERY_RANGE ?= LOCALHOST
export RTHS_VENV := $(VENV)

.PHONY: help setup run test test-all test-quick clean distclean

help:
	@sed -n '2,7p' $(firstword $(MAKEFILE_LIST)) | sed 's/^# \{0,1\}//'

setup:
	bash scripts/setup_env.sh

run: setup
	$(VENV)/bin/rths run contact_1d

# The suite in tiers (scripts/run_tests.sh, docs/building.md "Test tiers"): `make test` (CI) runs every test but
# the extended ones, those that are not timing-sensitive on every core, then the timing-sensitive ones alone;
# `make test-all` adds the extended tests; `make test-quick` runs the unit tests that are not slow. Each run records its wall time and result in build/test_wall.json (reported by
# `rths bench`).
test: setup
	@PYTHON=$(PYTHON) TEST_TIMEOUT_S=$(TEST_TIMEOUT_S) PYTEST_TIMEOUT_S=$(PYTEST_TIMEOUT_S) \
	  PYTEST_ARGS="$(PYTEST_ARGS)" bash scripts/run_tests.sh ci

test-all: setup
	@PYTHON=$(PYTHON) TEST_TIMEOUT_S=$$(( 3 * $(TEST_TIMEOUT_S) )) PYTEST_TIMEOUT_S=$(PYTEST_TIMEOUT_S) \
	  PYTEST_ARGS="$(PYTEST_ARGS)" TEST_RECORD=build/test_all_wall.json bash scripts/run_tests.sh all

test-quick: setup
	@PYTHON=$(PYTHON) TEST_TIMEOUT_S=$(TEST_TIMEOUT_S) PYTEST_TIMEOUT_S=$(PYTEST_TIMEOUT_S) \
	  PYTEST_ARGS="$(PYTEST_ARGS)" TEST_RECORD=build/test_quick_wall.json bash scripts/run_tests.sh quick

clean:
	rm -rf build .pytest_cache
	find . -path ./.venv -prune -o -type d -name __pycache__ -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
