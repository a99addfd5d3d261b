# rths_ros developer commands (Python venv route, no ROS 2 distribution needed). See docs/building.md.
#   make run    set up the environment, then run the 1-D contact scenario into runs/contact_1d-<date>-<time>
#   make test   set up the environment, then run the test suite (ROS 2 Kilted), then its graph and launch
#               tiers on ROS 2 Jazzy in .venv-jazzy (SECOND_DISTRO=none leaves those out)
#   RTHS_ROS_DISTRO=jazzy make run|test  the same on ROS 2 Jazzy in .venv-jazzy (the second tiers on Kilted)
#   make test-quick  the unit tests without the slow ones, on every core; make test-all adds the extended runs
#   make setup  create/refresh .venv: pinned requirements, messages, editable install (incremental)
#   make clean  remove build products (build/, caches); `make distclean` also removes .venv and .venv-jazzy

SHELL := /bin/bash
.DEFAULT_GOAL := help

# The ROS 2 distribution of make run / make test: kilted (default) or jazzy, each in its own venv
RTHS_ROS_DISTRO ?= kilted
export RTHS_ROS_DISTRO
venv_of = $(CURDIR)/.venv$(if $(filter kilted,$(1)),,-$(1))
VENV ?= $(call venv_of,$(RTHS_ROS_DISTRO))
PYTHON := $(VENV)/bin/python
# Per-test limit (pytest-timeout) and a limit for the whole suite, in seconds.
PYTEST_TIMEOUT_S ?= 300
TEST_TIMEOUT_S ?= 3300
PYTEST_ARGS ?=
# make test also runs the graph and launch tiers on the other ROS 2 distribution (its own venv; docs/ros2.md)
SECOND_DISTRO ?= $(if $(filter jazzy,$(RTHS_ROS_DISTRO)),kilted,jazzy)
SECOND_VENV := $(call venv_of,$(SECOND_DISTRO))

# Keep DDS discovery on this machine unless the caller chose otherwise.
export ROS_AUTOMATIC_DISCOVERY_RANGE ?= LOCALHOST
export RTHS_VENV := $(VENV)

.PHONY: help setup run test test-all test-quick clean distclean

help:
	@sed -n '2,10p' $(firstword $(MAKEFILE_LIST)) | sed 's/^# \{0,1\}//'

setup:
	bash scripts/setup_env.sh

run: setup
	$(VENV)/bin/rths run contact_1d

# The suite in tiers (scripts/run_tests.sh, docs/building.md "Test tiers"): `make test` (CI) runs every test but
# the extended ones: the timing-sensitive ones one at a time, the others beside them on every core at idle priority;
# `make test-all` adds the extended tests; `make test-quick` runs the unit tests that are not slow. Each run records its wall time and result in build/test_wall.json (reported by
# `rths bench`).
# After the whole suite, the graph and launch tiers on $(SECOND_DISTRO) (scripts/run_tests.sh graph-launch), in its
# own venv, whatever the first part's result; the exit code is the first failure's.
# second_distro TIER RECORD: the tier of scripts/run_tests.sh on $(SECOND_DISTRO) in its own venv (set up first)
define second_distro
	  echo "== ROS 2 $(SECOND_DISTRO): the graph and launch tiers ($(SECOND_VENV), $(1))"; \
	  RTHS_ROS_DISTRO=$(SECOND_DISTRO) RTHS_VENV=$(SECOND_VENV) bash scripts/setup_env.sh || rc2=$$?; \
	  [ -z "$${rc2:-}" ] && { RTHS_ROS_DISTRO=$(SECOND_DISTRO) RTHS_VENV=$(SECOND_VENV) \
	    PYTHON=$(SECOND_VENV)/bin/python TEST_TIMEOUT_S=$(TEST_TIMEOUT_S) PYTEST_TIMEOUT_S=$(PYTEST_TIMEOUT_S) \
	    PYTEST_ARGS="$(PYTEST_ARGS)" TEST_RECORD=$(2) bash scripts/run_tests.sh $(1) || rc2=$$?; }; \
	  [ "$$rc" -ne 0 ] || rc=$${rc2:-0};
endef

test: setup
	@rc=0; PYTHON=$(PYTHON) TEST_TIMEOUT_S=$(TEST_TIMEOUT_S) PYTEST_TIMEOUT_S=$(PYTEST_TIMEOUT_S) \
	  PYTEST_ARGS="$(PYTEST_ARGS)" bash scripts/run_tests.sh ci || rc=$$?; \
	if [ "$(SECOND_DISTRO)" != none ]; then \
	$(call second_distro,graph-launch,build/test_$(SECOND_DISTRO)_wall.json) \
	fi; exit $$rc

test-all: setup
	@rc=0; PYTHON=$(PYTHON) TEST_TIMEOUT_S=$$(( 3 * $(TEST_TIMEOUT_S) )) PYTEST_TIMEOUT_S=$(PYTEST_TIMEOUT_S) \
	  PYTEST_ARGS="$(PYTEST_ARGS)" TEST_RECORD=build/test_all_wall.json bash scripts/run_tests.sh all || rc=$$?; \
	if [ "$(SECOND_DISTRO)" != none ]; then \
	$(call second_distro,graph-launch-all,build/test_$(SECOND_DISTRO)_all_wall.json) \
	fi; exit $$rc

test-quick: setup
	@PYTHON=$(PYTHON) TEST_TIMEOUT_S=$(TEST_TIMEOUT_S) PYTEST_TIMEOUT_S=$(PYTEST_TIMEOUT_S) \
	  PYTEST_ARGS="$(PYTEST_ARGS)" TEST_RECORD=build/test_quick_wall.json bash scripts/run_tests.sh quick

clean:
	rm -rf build .pytest_cache
	find . -path ./.venv -prune -o -type d -name __pycache__ -exec rm -rf {} +

distclean: clean
	rm -rf $(call venv_of,kilted) $(call venv_of,jazzy)
