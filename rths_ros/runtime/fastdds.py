"""Which Fast DDS this installation has, and the profile file of this package for it (config/)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

#: the variable that names Fast DDS's default profile file and the project's file, per Fast DDS generation: Fast
#: DDS 3 (Kilted) reads FASTDDS_DEFAULT_PROFILES_FILE and names a writer's heartbeat ``heartbeat_period``; Fast DDS 2
#: (Jazzy) reads only FASTRTPS_DEFAULT_PROFILES_FILE, calls it ``heartbeatPeriod`` and rejects the whole file at an
#: element it does not know (writers then keep the default heartbeat of 3 s, and every lockstep acknowledgement
#: wait, config/qos.yaml ``ack_every_steps``, took 2.7 s)
FASTDDS_PROFILES = {3: ("FASTDDS_DEFAULT_PROFILES_FILE", "fastdds.xml"),
                    2: ("FASTRTPS_DEFAULT_PROFILES_FILE", "fastdds-2.xml")}


def fastdds_generation(env: dict | None = None, prefixes: list[str] | None = None) -> int:
    """3 or 2: the Fast DDS installed with the middleware, told by its CMake package in the first prefix that has one
    (``share/fastdds`` of Fast DDS 3, ``share/fastrtps`` of Fast DDS 2; ``prefixes``, by default the venv's prefix,
    then AMENT_PREFIX_PATH); 3 when none is found."""
    env = os.environ if env is None else env
    if prefixes is None:
        prefixes = [sys.prefix] + [p for p in env.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    for prefix in prefixes:
        share = Path(prefix) / "share"
        if (share / "fastdds").is_dir():
            return 3
        if (share / "fastrtps").is_dir():
            return 2
    return 3


__all__ = ["FASTDDS_PROFILES", "fastdds_generation"]
