"""All nodes of a scenario in one process, on one executor (``rths run --composed``)."""
from __future__ import annotations

import sys

from rths_ros.nodes.registry import node_class
from rths_ros.runtime.node import node_main


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--nodes" not in argv:
        print("rths_composed: error: --nodes a,b,c is required", file=sys.stderr)
        return 2
    i = argv.index("--nodes")
    names = [n for n in argv[i + 1].split(",") if n]
    del argv[i:i + 2]
    try:
        classes = [node_class(n) for n in names]
    except KeyError as exc:
        print(f"rths_composed: error: {exc.args[0]}", file=sys.stderr)
        return 2
    return node_main(classes, argv, prog="rths_composed")


if __name__ == "__main__":
    raise SystemExit(main())
