"""Fast DDS segments of participants that are gone are removed; a living participant's never (rths_ros.runtime.shm).
The lock is the one Fast DDS takes: an exclusive flock on fastdds_<id>_el, held for the participant's life."""
import subprocess
import sys
import time

from rths_ros.runtime.shm import remove_dead_segments

HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("locked", flush=True)
time.sleep(60)
"""


def test_a_segment_whose_lock_nobody_holds_is_removed_and_a_held_one_kept(tmp_path):
    dead, live, port = "fastdds_00112233aabbccdd", "fastdds_44556677eeff0011", "fastdds_port7411"
    for name in (dead, f"{dead}_el", live, f"{live}_el", port, f"{port}_el", "other_file"):
        (tmp_path / name).write_bytes(b"x")
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path / f"{live}_el")], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert remove_dead_segments(str(tmp_path)) == [dead]
        left = sorted(p.name for p in tmp_path.iterdir())
        assert left == sorted([live, f"{live}_el", port, f"{port}_el", "other_file"])
    finally:
        holder.kill()
        holder.wait()
    time.sleep(0.05)
    assert remove_dead_segments(str(tmp_path)) == [live]     # its owner is gone now
    assert remove_dead_segments(str(tmp_path / "missing")) == []
