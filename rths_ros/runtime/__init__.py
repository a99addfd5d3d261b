"""Node runtime shared by every rths_ros node: QoS, clock modes, timing, real-time setup, lifecycle of a run."""
