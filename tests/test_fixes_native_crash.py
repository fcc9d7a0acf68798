"""fixes.native_crash: header checks, the keep/reject split, and the crash trail."""
import ctypes
import faulthandler
import multiprocessing
import os

import pytest

from fixes.native_crash import CrashTrail, MalformedSample, check_span, keep_valid

fork = multiprocessing.get_context("fork")


def test_check_span_accepts_spans_inside_the_buffer():
    check_span(16, 1024, available=1040)  # ends exactly at the last byte
    check_span(0, 0, available=0)


@pytest.mark.parametrize("offset, length, available", [
    (16, 1025, 1040),             # one byte too long
    (1041, 0, 1040),              # starts past the end
    (16 | 1 << 52, 1024, 1040),   # the flipped bit of scenario 06
    (-1, 4, 1040),
    (0, -4, 1040),
])
def test_check_span_rejects_spans_outside_the_buffer(offset, length, available):
    with pytest.raises(MalformedSample, match=r"bad\.rec: header puts .* only 1040 bytes|bad\.rec: header puts") as err:
        check_span(offset, length, available=available, source="bad.rec")
    assert "keep_valid" in str(err.value)  # the message says what to do
    assert isinstance(err.value, ValueError)


def test_keep_valid_splits_in_order_with_reasons():
    def check(n):
        if n % 3 == 0:
            raise MalformedSample(f"{n} is a multiple of 3")
    good, rejected = keep_valid(range(1, 10), check)
    assert good == [1, 2, 4, 5, 7, 8]
    assert rejected == [(3, "3 is a multiple of 3"), (6, "6 is a multiple of 3"), (9, "9 is a multiple of 3")]


def test_keep_valid_does_not_hide_other_errors():
    def check(path):
        raise PermissionError(path)
    with pytest.raises(PermissionError):
        keep_valid(["x"], check)


def test_crash_trail_needs_an_existing_directory(tmp_path):
    with pytest.raises(NotADirectoryError, match="TemporaryDirectory"):
        CrashTrail(tmp_path / "missing")


def test_mark_outside_a_trailed_worker_writes_nothing(tmp_path):
    trail = CrashTrail(tmp_path)
    CrashTrail.mark("x.rec")
    with CrashTrail.inside("y.rec"):
        pass
    assert trail.last_samples() == {} and list(tmp_path.iterdir()) == []


def _worker(trail, worker_id, samples, crash):
    trail.worker_init_fn(worker_id)
    assert faulthandler.is_enabled()
    for sample in samples:
        with CrashTrail.inside(sample):
            if crash and sample == samples[-1]:
                ctypes.string_at(16 | 1 << 52, 8)  # a genuine SIGSEGV inside memcpy
    os._exit(0)


def test_trail_names_the_sample_a_crashed_worker_was_inside(tmp_path, capfd):
    trail = CrashTrail(tmp_path)
    crashed = fork.Process(target=_worker, args=(trail, 0, ["a.rec", "b.rec"], True))
    finished = fork.Process(target=_worker, args=(trail, 1, ["c.rec"], False))
    for proc in (crashed, finished):
        proc.start()
        proc.join(timeout=60)
    assert crashed.exitcode == -11 and finished.exitcode == 0
    assert trail.last_samples() == {0: "b.rec"}  # worker 1 finished its sample: not listed
    err = capfd.readouterr().err
    assert "Fatal Python error: Segmentation fault" in err and "in _worker" in err


def test_long_sample_names_are_cut_not_spilled(tmp_path):
    trail = CrashTrail(tmp_path)
    name = "n" * 1000

    def mark_and_die():
        trail.worker_init_fn(2)
        CrashTrail.mark("short.rec")
        CrashTrail.mark(name)
        os._exit(0)
    proc = fork.Process(target=mark_and_die)
    proc.start()
    proc.join(timeout=60)
    assert trail.last_samples() == {2: name[:256]}
