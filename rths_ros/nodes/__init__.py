"""One module per node: thin rclpy wrappers around the core objects."""
