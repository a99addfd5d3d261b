"""ROS-free, scenario-free numerics of rths_ros: numerics, models, platform, plant, methods, learning, sysid.

Imports nothing of the package but rths_ros.params and rths_ros.resources (the contracts of .importlinter)."""
