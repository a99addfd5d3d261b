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


def test_a_process_removes_the_files_only_it_holds_a_lock_on(tmp_path):
    """release_own_files: its segment and ports (with the port semaphore) go; a file another process also
    holds a lock on, a file it does not lock and files of other names stay."""
    import fcntl
    import os

    from rths_ros.runtime.shm import release_own_files
    own_seg, own_port, shared, foreign = ("fastdds_0011223344556677", "fastdds_port7411", "fastdds_port7413",
                                          "fastdds_8899aabbccddeeff")
    names = [own_seg, f"{own_seg}_el", own_port, f"{own_port}_el", f"sem.{own_port}_mutex", shared,
             f"{shared}_el", f"sem.{shared}_mutex", foreign, f"{foreign}_el", "other_file"]
    for name in names:
        (tmp_path / name).write_bytes(b"x")
    fds = []
    for name in (own_seg, own_port):
        fd = os.open(tmp_path / f"{name}_el", os.O_RDONLY)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fds.append(fd)
    fd = os.open(tmp_path / f"{shared}_el", os.O_RDONLY)       # a shared lock, also held by another process
    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    fds.append(fd)
    hold_shared = HOLD.replace("LOCK_EX", "LOCK_SH")
    holder = subprocess.Popen([sys.executable, "-c", hold_shared, str(tmp_path / f"{shared}_el")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert release_own_files(shm_dir=str(tmp_path)) == sorted([own_seg, own_port])
        left = sorted(p.name for p in tmp_path.iterdir())
        assert left == sorted([shared, f"{shared}_el", f"sem.{shared}_mutex", foreign, f"{foreign}_el",
                               "other_file"])
    finally:
        holder.kill()
        holder.wait()
        for fd in fds:
            os.close(fd)


def test_lock_holders_reads_flocks_and_skips_waiters_and_posix_locks():
    from rths_ros.runtime.shm import lock_holders
    text = ("1: FLOCK  ADVISORY  WRITE 4242 00:1a:1234 0 EOF\n"
            "1: -> FLOCK  ADVISORY  WRITE 4343 00:1a:1234 0 EOF\n"
            "2: FLOCK  ADVISORY  READ 17 00:1a:99 0 EOF\n"
            "3: FLOCK  ADVISORY  READ 18 00:1a:99 0 EOF\n"
            "4: POSIX  ADVISORY  WRITE 19 00:1a:55 0 EOF\n")
    assert lock_holders(text) == {1234: {4242}, 99: {17, 18}}


def test_a_run_finds_its_own_processes_segments_and_removes_only_those_once_dead(tmp_path):
    """segments_held_by: the segments whose lock the given processes hold; remove_dead_segments(only=...) leaves a
    dead segment of another process alone (a run beside this one reports its own)."""
    from rths_ros.runtime.shm import segments_held_by
    ours, theirs, port = "fastdds_00112233aabbccdd", "fastdds_44556677eeff0011", "fastdds_port7411"
    for name in (ours, f"{ours}_el", theirs, f"{theirs}_el", port, f"{port}_el"):
        (tmp_path / name).write_bytes(b"x")
    holders = [subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path / f"{n}_el")], stdout=subprocess.PIPE,
                                text=True) for n in (ours, theirs, port)]
    try:
        assert all(h.stdout.readline().strip() == "locked" for h in holders)
        assert segments_held_by([holders[0].pid], str(tmp_path)) == {ours}
        assert segments_held_by([holders[1].pid, holders[2].pid], str(tmp_path)) == {theirs}    # ports are no segments
        assert segments_held_by([999_999_999], str(tmp_path)) == set()
        own = segments_held_by([holders[0].pid], str(tmp_path))
    finally:
        for h in holders:
            h.kill()
            h.wait()
    time.sleep(0.05)
    assert remove_dead_segments(str(tmp_path), only=own) == [ours]        # the other dead one is not the run's
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([theirs, f"{theirs}_el", port, f"{port}_el"])
    assert remove_dead_segments(str(tmp_path), only=set()) == []
