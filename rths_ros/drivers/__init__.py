"""Hardware-path drivers of the rig (ROS-free, used by the driver nodes).

* :mod:`.ft_sensor_base` - the small force/torque sensor interface and the sequence-number bookkeeping
  shared by the UDP clients;
* :mod:`.ati_netft` / :mod:`.ati_netft_emulator` - ATI Net F/T Raw Data Transfer (RDT) client and a
  protocol emulator for tests;
* :mod:`.platform_link` - the binary UDP link to the Stewart platform's own controller (its emulator serves the
  digital twin, so it sits in :mod:`rths_ros.app.emulated_rig`);
* :mod:`.hardware` - the hardware path's settings (scenario section ``hardware``).

Drivers import nothing of the package but :mod:`rths_ros.params` (the contracts of .importlinter).

The wire formats are documented in docs/protocols.md.
"""
