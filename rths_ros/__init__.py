"""rths_ros: robot-based real-time hybrid substructuring (RTHS) on ROS 2.

The package is spread over two directories that form one package: the generated interface code
(``rths_ros.msg``, built from msg/ by rosidl and installed into site-packages) and the pure-Python
sources (``rths_ros.core``, ``rths_ros.nodes``, ...), which may live in the source tree.
"""
from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)
