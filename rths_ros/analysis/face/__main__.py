"""``python -m rths_ros.analysis.face SWEEP.yaml --out DIR ...``: :func:`rths_ros.analysis.face.cli.main`."""
from rths_ros.analysis.face.cli import main

if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
