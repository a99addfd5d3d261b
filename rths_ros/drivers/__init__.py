"""Hardware-path drivers of the rig (ROS-free, used by the driver nodes).

* :mod:`.ft_sensor_base` - the small force/torque sensor interface and the sequence-number bookkeeping
  shared by the UDP clients;
* :mod:`.ati_netft` / :mod:`.ati_netft_emulator` - ATI Net F/T Raw Data Transfer (RDT) client and a
  protocol emulator for tests;
* :mod:`.platform_link` / :mod:`.platform_emulator` - the binary UDP link to the Stewart platform's own
  controller and an emulator that serves the digital twin over it.

The wire formats are documented in docs/protocols.md.
"""
