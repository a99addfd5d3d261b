"""The slack the graph runs against the emulated hardware get (test/graph/test_hardware_plant.py,
test_hardware_gait.py).

The emulators are threads of the node process.  The graph tier runs at idle priority beside the serial tier, where
that process was starved for 0.25 s to 2 s now and then: the client then reported a silent emulated controller or a
late F/T record (in clean-clone runs, once in each module).  These tests are about the driver chain, the ramps and
what a dead link does (the emulator stops answering at a step), not about the timeouts: a client timeout of 1 s (a
dead link's three attempts, 3 s, stay within the loop's 5-s watchdog)."""

SLACK = ["hardware.emulator_timeout_s=1", "hardware.emulator_watchdog_s=5"]
