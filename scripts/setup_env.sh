#!/usr/bin/env bash
# Create or refresh the project's Python environment (.venv) from nothing, without a ROS 2 distribution:
#   1. a Python 3.11 venv (the ROS 2 wheels are built for CPython 3.11);
#   2. the pinned requirements (requirements/*.txt, exact versions in requirements/constraints.txt);
#   3. the custom messages: msg/*.msg built with rosidl through CMake against the venv and installed
#      into it (site-packages/rths_ros/msg and the typesupport libraries in .venv/lib);
#   4. the Python sources as an editable install (the source tree is used in place, so edits need no
#      rebuild), its plugin entry points (entry_points.txt) and the console scripts `rths` and `rths_<node>`
#      in .venv/bin; 4b. the example lab package (examples/rths_lab_example), editable as well;
#   5. the ROS 2 launch tooling (launch, launch_ros, launch_testing and the `ros2` command) from the
#      wheel folder ../shared/ros2-tooling beside the repository (or RTHS_ROS2_TOOLING), checksums
#      verified; skipped when a ROS 2 distribution is sourced (its own launch is used) or when no such
#      folder exists (the launch tests then skip, naming the reason);
#   6. share/rths_ros/launch (one link per launch file) and AMENT_PREFIX_PATH for the venv's Python,
#      so `ros2 launch rths_ros rths.launch.py` and `ros2 run rths_ros <node>` find the package.
# Each step records a hash of its inputs and is skipped when nothing changed, so a second run takes a
# few seconds. See docs/building.md.
#
# The ROS 2 distribution: RTHS_ROS_DISTRO=kilted (default: the newest release, on which every measurement of
# docs/ was made) or jazzy (the long-term-support release), each with its own pinned requirements
# (requirements/ros.txt + constraints.txt for Kilted, requirements/ros-jazzy.txt + constraints-jazzy.txt for
# Jazzy) and its own venv (.venv, .venv-jazzy) and build directory; a venv made for one is never changed into the
# other. docs/ros2.md "Jazzy and Kilted".
#
# Environment overrides: RTHS_VENV (venv directory), RTHS_BUILD_DIR (CMake build directory),
# RTHS_ROS2_TOOLING (folder with wheels/ and SHA256SUMS of the launch tooling; "none" skips it),
# PYTHON (interpreter used to create the venv), RTHS_JOBS (parallel compile jobs),
# RTHS_FORCE=1 (redo every step).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DISTRO="${RTHS_ROS_DISTRO:-kilted}"
case "$DISTRO" in
  kilted) distro_suffix=""; ROS_REQUIREMENTS=requirements/ros.txt; CONSTRAINTS=requirements/constraints.txt ;;
  jazzy)  distro_suffix="-jazzy"; ROS_REQUIREMENTS=requirements/ros-jazzy.txt
          CONSTRAINTS=requirements/constraints-jazzy.txt ;;
  *) printf '[setup_env] error: RTHS_ROS_DISTRO=%s is not offered; expected kilted or jazzy\n' "$DISTRO" >&2; exit 1 ;;
esac
VENV="${RTHS_VENV:-$REPO/.venv$distro_suffix}"
BUILD_DIR="${RTHS_BUILD_DIR:-$REPO/build/venv$distro_suffix}"
JOBS="${RTHS_JOBS:-$(nproc 2>/dev/null || echo 2)}"
FORCE="${RTHS_FORCE:-0}"
REQUIRED_PY="3.11"

log() { printf '[setup_env] %s\n' "$*" >&2; }
die() { printf '[setup_env] error: %s\n' "$*" >&2; exit 1; }

start_s=$SECONDS
cd "$REPO"

# One run at a time (make -j, two terminals): the steps below write into the same venv and build dir.
# COLCON_IGNORE: colcon started in the repository root must not take the ROS packages inside the venv
# or the build tree for workspace packages.
mkdir -p "$REPO/build"
touch "$REPO/build/COLCON_IGNORE"
exec 9>"$REPO/build/.setup_env.lock"
if command -v flock >/dev/null 2>&1; then
  flock 9
fi

# A sourced ROS 2 distribution brings its own launch and ros2 command (step 5 then installs no wheels).
DISTRO_LAUNCH=""
if [ -n "${ROS_DISTRO:-}" ] && command -v ros2 >/dev/null 2>&1; then
  DISTRO_LAUNCH="$ROS_DISTRO"
fi

# A ROS 2 distribution sourced in this shell must not leak into the venv build. The venv's Python
# sets its own library path at start-up (ros_wheels_bootstrapper), unless told it already did.
unset PYTHONPATH PYTHONHOME LD_LIBRARY_PATH AMENT_PREFIX_PATH CMAKE_PREFIX_PATH COLCON_PREFIX_PATH \
  ROS_DISTRO ROS_VERSION ROS_PYTHON_VERSION _ROS_WHEELS_BOOTSTRAP_COMPLETE
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1

# Hash of the given files (names and contents), for the step stamps.
hash_inputs() {
  sha256sum -- "$@" | sha256sum | cut -d' ' -f1
}

STAMP_DIR="$VENV/.rths-setup"
stamp_ok() {  # stamp_ok NAME KEY: true when step NAME last succeeded with the same KEY
  [ "$FORCE" != 1 ] && [ -f "$STAMP_DIR/$1" ] && [ "$(cat "$STAMP_DIR/$1")" = "$2" ]
}
stamp_write() {
  mkdir -p "$STAMP_DIR"
  printf '%s\n' "$2" >"$STAMP_DIR/$1"
}

# ---------------------------------------------------------------------------------------------------
# 1. venv
# ---------------------------------------------------------------------------------------------------
py_version() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null; }

if [ ! -f "$VENV/pyvenv.cfg" ] || [ ! -x "$VENV/bin/python" ]; then
  base_python=""
  for candidate in "${PYTHON:-}" python3 "python$REQUIRED_PY"; do
    [ -n "$candidate" ] || continue
    command -v "$candidate" >/dev/null 2>&1 || continue
    if [ "$(py_version "$candidate")" = "$REQUIRED_PY" ]; then
      base_python="$candidate"
      break
    fi
  done
  [ -n "$base_python" ] || die "Python $REQUIRED_PY is needed (the ROS 2 wheels are cp311); set PYTHON=/path/to/python$REQUIRED_PY"
  log "creating $VENV with $(command -v "$base_python")"
  "$base_python" -m venv "$VENV" || die "python -m venv failed (on Debian/Ubuntu: apt-get install python$REQUIRED_PY-venv)"
fi
touch "$VENV/COLCON_IGNORE"
PY="$VENV/bin/python"
[ "$(py_version "$PY")" = "$REQUIRED_PY" ] ||
  die "$VENV runs Python $(py_version "$PY"), not $REQUIRED_PY: remove it and run again"
SITE="$("$PY" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
# the distribution this venv was made for (a venv older than this record is Kilted's)
distro_record="$VENV/.rths-setup/ros_distro"
venv_distro=kilted
if [ -f "$distro_record" ]; then venv_distro="$(cat "$distro_record")"; fi
if [ -f "$VENV/.rths-setup/deps" ] && [ "$venv_distro" != "$DISTRO" ]; then
  die "$VENV holds ROS 2 $venv_distro, not $DISTRO (RTHS_ROS_DISTRO): use another RTHS_VENV or remove it"
fi
mkdir -p "$VENV/.rths-setup"
printf '%s\n' "$DISTRO" >"$distro_record"
log "ROS 2 $DISTRO in $VENV"

# ---------------------------------------------------------------------------------------------------
# 2. pinned requirements
# ---------------------------------------------------------------------------------------------------
requirement_files=(requirements/build.txt "$ROS_REQUIREMENTS" requirements/runtime.txt requirements/test.txt)
deps_key="$(hash_inputs "${requirement_files[@]}" "$CONSTRAINTS")"
if stamp_ok deps "$deps_key"; then
  log "requirements: up to date"
else
  log "requirements: installing pinned versions"
  step_s=$SECONDS
  "$PY" -m pip install --progress-bar off -q -r requirements/build.txt -c "$CONSTRAINTS"
  # uv (pinned in build.txt) resolves and installs the same pinned set several times faster than pip; pip
  # stays the route when uv is missing or fails (an index only pip is configured for, for example)
  # (--compile-bytecode: uv writes no .pyc by default, pip does; see "bytecode" below)
  if ! { [ -x "$VENV/bin/uv" ] && "$VENV/bin/uv" pip install --quiet --compile-bytecode --python "$PY" \
           -c "$CONSTRAINTS" -r "$ROS_REQUIREMENTS" -r requirements/runtime.txt -r requirements/test.txt; }; then
    [ -x "$VENV/bin/uv" ] && log "requirements: uv failed; installing with pip"
    "$PY" -m pip install --progress-bar off -q -c "$CONSTRAINTS" \
      -r "$ROS_REQUIREMENTS" -r requirements/runtime.txt -r requirements/test.txt
  fi
  stamp_write deps "$deps_key"
  log "requirements: installed ($((SECONDS - step_s)) s)"
fi

# ---------------------------------------------------------------------------------------------------
# 3. messages (rosidl through CMake, installed into the venv prefix)
# ---------------------------------------------------------------------------------------------------
command -v cmake >/dev/null 2>&1 || die "cmake (>= 3.20) is needed to build msg/: apt-get install cmake"
command -v cc >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 ||
  die "a C/C++ compiler is needed to build msg/: apt-get install build-essential"

mapfile -t msg_files < <(find msg -maxdepth 1 -name '*.msg' | LC_ALL=C sort)
[ "${#msg_files[@]}" -gt 0 ] || die "no msg/*.msg files"
msgs_key="$(hash_inputs "${msg_files[@]}" CMakeLists.txt package.xml rths_ros/__init__.py \
  scripts/setup_env.sh "${requirement_files[@]}" "$CONSTRAINTS")-$VENV"

msgs_installed() {
  [ -f "$SITE/rths_ros/msg/__init__.py" ] &&
    compgen -G "$SITE/rths_ros/rths_ros_s__rosidl_typesupport_c*.so" >/dev/null &&
    cmp -s rths_ros/__init__.py "$SITE/rths_ros/__init__.py"
}

if stamp_ok msgs "$msgs_key" && msgs_installed; then
  log "messages: up to date (${#msg_files[@]} in msg/)"
else
  log "messages: building ${#msg_files[@]} definitions in $BUILD_DIR"
  step_s=$SECONDS
  generator=()
  if command -v ninja >/dev/null 2>&1; then
    generator=(-G Ninja)
  fi
  # A build directory configured for another source tree, venv, generator or set of message names is
  # started afresh: rosidl's generated msg/__init__.py is not rewritten when a definition is removed
  # or renamed, so the installed generated code is removed too.
  config_key="$REPO|$VENV|${generator[*]:-default}|${msg_files[*]}"
  if [ -f "$BUILD_DIR/CMakeCache.txt" ] && [ "$(cat "$BUILD_DIR/.rths-config" 2>/dev/null)" != "$config_key" ]; then
    log "messages: fresh build (message set, venv or generator changed)"
    rm -rf "$BUILD_DIR" "$SITE/rths_ros/msg" "$VENV/share/rths_ros/msg" "$VENV/include/rths_ros"
  fi
  mkdir -p "$BUILD_DIR"
  printf '%s\n' "$config_key" >"$BUILD_DIR/.rths-config"

  cmake_env=(env AMENT_PREFIX_PATH="$VENV" CMAKE_PREFIX_PATH="$VENV")
  "${cmake_env[@]}" cmake -S "$REPO" -B "$BUILD_DIR" "${generator[@]}" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$VENV" \
    -DCMAKE_PREFIX_PATH="$VENV" \
    -DPython3_EXECUTABLE="$PY" \
    -DPython3_FIND_VIRTUALENV=ONLY \
    -DRTHS_INSTALL_PYTHON_SOURCES=OFF \
    -DBUILD_TESTING=OFF \
    >"$BUILD_DIR/configure.log" 2>&1 ||
    { tail -n 40 "$BUILD_DIR/configure.log" >&2; die "CMake configure failed (log: $BUILD_DIR/configure.log)"; }
  "${cmake_env[@]}" cmake --build "$BUILD_DIR" --parallel "$JOBS" >"$BUILD_DIR/build.log" 2>&1 ||
    { tail -n 40 "$BUILD_DIR/build.log" >&2; die "message build failed (log: $BUILD_DIR/build.log)"; }
  cmake --install "$BUILD_DIR" >"$BUILD_DIR/install.log" 2>&1 ||
    { tail -n 40 "$BUILD_DIR/install.log" >&2; die "message install failed (log: $BUILD_DIR/install.log)"; }
  msgs_installed || die "message install incomplete: $SITE/rths_ros lacks msg/ or the typesupport module"
  stamp_write msgs "$msgs_key"
  log "messages: built and installed ($((SECONDS - step_s)) s)"
fi

# ---------------------------------------------------------------------------------------------------
# 4. editable install of the Python sources and the console scripts
# ---------------------------------------------------------------------------------------------------
editable_install() {  # editable_install STAMP DIR DIST WHAT KEY CHECK...: pip install -e DIR unless up to date
  local stamp="$1" dir="$2" dist="$3" what="$4" key="$5"
  shift 5
  if stamp_ok "$stamp" "$key" && grep -qsxF "$dir" "$SITE"/__editable__."$dist"-*.pth && "$@"; then
    log "$what: up to date (editable, $dir)"
    return
  fi
  log "$what: editable install ($dir)"
  PYTHONWARNINGS="ignore:Compat editable installs" \
    "$PY" -m pip install --progress-bar off -q --no-deps --no-build-isolation \
    --config-settings editable_mode=compat -e "$dir"
  grep -qsxF "$dir" "$SITE"/__editable__."$dist"-*.pth && "$@" ||
    die "the editable install of $dir left no .pth file in $SITE (or what it installs is missing)"
  stamp_write "$stamp" "$key"
}
package_key="$(hash_inputs setup.py entry_points.txt package.xml requirements/build.txt)-$REPO"
editable_install package "$REPO" rths_ros "python package and console scripts" "$package_key" test -x "$VENV/bin/rths"

# 4b. the example lab package (examples/rths_lab_example): a model and a rig family registered from outside this
#     package through its entry points, as a lab's own package does (docs/extending.md); the tests run it
LAB="$REPO/examples/rths_lab_example"
editable_install lab "$LAB" rths_lab_example "example lab package" "$(hash_inputs "$LAB/pyproject.toml")-$REPO" true

# ---------------------------------------------------------------------------------------------------
# 5. ROS 2 launch tooling (launch, launch_ros, launch_testing, ros2cli) from a verified wheel folder
# ---------------------------------------------------------------------------------------------------
TOOLING="${RTHS_ROS2_TOOLING:-$REPO/../shared/ros2-tooling}"
if [ -n "$DISTRO_LAUNCH" ]; then
  log "ros2 launch tooling: the sourced ROS 2 distribution's ($DISTRO_LAUNCH)"
elif [ "$TOOLING" != none ] && [ -f "$TOOLING/SHA256SUMS" ] && [ -d "$TOOLING/wheels" ]; then
  TOOLING="$(cd "$TOOLING" && pwd)"
  tooling_key="$(hash_inputs "$TOOLING/SHA256SUMS" requirements/launch.txt "$CONSTRAINTS")"
  if stamp_ok tooling "$tooling_key" && [ -x "$VENV/bin/ros2" ]; then
    log "ros2 launch tooling: up to date ($TOOLING)"
  else
    log "ros2 launch tooling: verifying and installing the wheels of $TOOLING"
    (cd "$TOOLING/wheels" && sha256sum --check --quiet --strict ../SHA256SUMS) ||
      die "checksum mismatch in $TOOLING/wheels (see its SHA256SUMS): not installing them"
    mapfile -t tooling_wheels < <(cd "$TOOLING/wheels" && awk '{print $2}' ../SHA256SUMS)
    [ "${#tooling_wheels[@]}" -gt 0 ] || die "$TOOLING/SHA256SUMS lists no wheels"
    # --no-deps: launch_ros names ament-index-python, whose registry name is ros-ament-index-python
    "$PY" -m pip install --progress-bar off -q --no-deps --no-index \
      "${tooling_wheels[@]/#/$TOOLING/wheels/}"
    "$PY" -m pip install --progress-bar off -q --no-deps -c "$CONSTRAINTS" -r requirements/launch.txt
    [ -x "$VENV/bin/ros2" ] || die "the launch tooling installed no $VENV/bin/ros2"
    stamp_write tooling "$tooling_key"
    log "ros2 launch tooling: installed ($VENV/bin/ros2)"
  fi
else
  log "ros2 launch tooling: none (no sourced ROS 2 distribution, no $TOOLING); the launch tests will skip"
fi

# ---------------------------------------------------------------------------------------------------
# 6. what ros2 launch / ros2 run need to find the package in the venv prefix
# ---------------------------------------------------------------------------------------------------
# share/rths_ros/launch: a real directory with one link per launch file (ros2 launch searches the
# share directory with os.walk, which does not follow a symlinked directory); rebuilt every run so a
# new launch file is found without a rebuild.
share_launch="$VENV/share/rths_ros/launch"
if [ -L "$share_launch" ]; then rm -f "$share_launch"; fi
mkdir -p "$share_launch"
find "$share_launch" -maxdepth 1 -type l -delete
for f in "$REPO"/launch/*.py; do
  ln -sfn "$f" "$share_launch/$(basename "$f")"
done
# The ament index of the venv prefix (where the messages, lib/rths_ros and share/rths_ros are) for
# every Python started from the venv: prepended to AMENT_PREFIX_PATH unless it is there already.
cat >"$SITE/rths_ros_ament_prefix.pth" <<'PTH'
import os, sys; _rths_p = [x for x in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if x]; sys.prefix in _rths_p or os.environ.__setitem__("AMENT_PREFIX_PATH", os.pathsep.join([sys.prefix] + _rths_p))
PTH

# ---------------------------------------------------------------------------------------------------
# Check: messages from the venv, sources from the tree, no environment variables needed.
# ---------------------------------------------------------------------------------------------------
(cd / && "$PY" -c "
import importlib.util
import sys
import rths_ros.msg as m
names = [n for n in dir(m) if n[:1].isupper()]
assert len(names) == ${#msg_files[@]}, ('rths_ros.msg has', names)
core = importlib.util.find_spec('rths_ros.core')
assert core is not None and core.origin.startswith('$REPO/'), core
print('[setup_env] ok: %d messages in rths_ros.msg, rths_ros.core from %s' % (len(names), '$REPO'), file=sys.stderr)
") || die "the installed environment does not import rths_ros.msg and rths_ros.core"

# ---------------------------------------------------------------------------------------------------
# bytecode: every module of the venv and of this tree compiled once.  Where PYTHONDONTWRITEBYTECODE is set (as on
# some CI machines) Python never writes the .pyc files itself, and each process compiled every module it imported
# from source again: scipy, numba and matplotlib doubled the start of each node process (7.3 s instead of 2.1 s
# for the imports of a node on a 2-core machine).  The venv's site-packages once after each change of what is
# installed in it (about 20 s the first time); this tree at every set-up (up-to-date files are only checked).
# ---------------------------------------------------------------------------------------------------
step_s=$SECONDS
site_key="$deps_key|$msgs_key|$package_key|${tooling_key:-}"
if ! stamp_ok bytecode "$site_key"; then
  "$PY" -m compileall -qq -j 0 "$SITE" >/dev/null 2>&1 || true
  stamp_write bytecode "$site_key"
fi
"$PY" -m compileall -qq -j 0 "$REPO/rths_ros" "$REPO/test" >/dev/null 2>&1 || true
log "bytecode: compiled ($((SECONDS - step_s)) s)"

# ---------------------------------------------------------------------------------------------------
# numba kernels: every scenario's compiled kernels built once into numba's cache beside the sources
# (rths_ros/runtime/precompile.py; about 80 s on 2 cores from nothing, 6 s when all are cached).  Without it the
# first run compiles them (the gait model's alone about 45 s of CPU), and on a fresh clone the test suite's workers
# and node processes, starting at once, each compiled the same kernels until one had written the cache.  Again
# only when a Python source or a scenario changed (numba itself recompiles only what is stale).
# ---------------------------------------------------------------------------------------------------
step_s=$SECONDS
# numba checks a cached kernel against its own source file only: a kernel that calls a changed kernel of another
# file would keep the old callee compiled into it.  So when any source that defines a kernel changed, every cached
# kernel goes, and the warm-up below compiles them again.
numba_src_key="$(cd "$REPO" && grep -rlE --include='*.py' 'njit|numba\.jit' rths_ros "$LAB" | LC_ALL=C sort \
  | tr '\n' '\0' | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)"
# The key of the sources the cache was built from is kept beside the cache, in the tree (build/), not in the venv:
# both ROS 2 distributions' venvs share the tree's cache, and a second venv that kept its own key dropped the
# kernels the first had just compiled and compiled them again (28 s of `make test`'s set-up of its second venv).
numba_stamp="$REPO/build/numba-sources.key"
if [ "$FORCE" = 1 ] || [ ! -f "$numba_stamp" ] || [ "$(cat "$numba_stamp")" != "$numba_src_key" ]; then
  find "$REPO/rths_ros" "$LAB" \( -name '*.nbi' -o -name '*.nbc' \) -delete 2>/dev/null || true
  rm -f "$STAMP_DIR/kernels"
  mkdir -p "$REPO/build"
  printf '%s\n' "$numba_src_key" >"$numba_stamp"
  log "numba kernels: a kernel source changed, the cached kernels are compiled again"
fi
kernels_key="$site_key|$(cd "$REPO" && find rths_ros config/scenarios "$LAB" -name '*.py' -o -name '*.yaml' \
  | grep -v __pycache__ | LC_ALL=C sort | tr '\n' '\0' | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)"
if ! stamp_ok kernels "$kernels_key"; then
  if (cd / && "$PY" -m rths_ros.runtime.precompile >"$STAMP_DIR/precompile.log" 2>&1); then
    stamp_write kernels "$kernels_key"
    log "numba kernels: $(tail -n 1 "$STAMP_DIR/precompile.log" | sed 's/^precompile: //')"
  else
    log "numba kernels: the warm-up failed (the first run compiles them; $STAMP_DIR/precompile.log)"
  fi
else
  log "numba kernels: cached ($((SECONDS - step_s)) s)"
fi

log "done in $((SECONDS - start_s)) s"
