"""`make doctor` (scenarios/clinic/doctor/machine.py): it names the start method a DataLoader gets here when
it names none, and on Linux before Python 3.14 what 3.14's default changes; the probe's events, as both sides
check them."""
import multiprocessing
import sys

import pytest

from scenarios.clinic.doctor.machine import checks, start_method_line


def test_doctor_names_the_start_method_a_loader_without_one_gets():
    line = start_method_line()
    assert line in [what for _, what, _ in checks()]  # asked twice, the same answer
    assert f"names none: {multiprocessing.get_context().get_start_method()}" in line
    if sys.platform == "linux" and sys.version_info < (3, 14):
        assert "from Python 3.14 Linux defaults to forkserver" in line


def test_a_probe_event_without_its_fields_fails_on_both_sides():
    from scenarios.clinic.doctor import events
    from scenarios.clinic.doctor.probe import ProbeResult, _event

    assert events.checked({"event": "batch", "n": 1, "seconds": 0.2, "measuring_s": 0.0})["n"] == 1
    assert events.checked({"event": "draws"}) == {"event": "draws"}   # a stage with nothing to measure
    with pytest.raises(ValueError, match="'batch' lacks measuring_s"):
        events.checked({"event": "batch", "n": 1, "seconds": 0.2})
    with pytest.raises(ValueError, match="no probe event 'batches'"):
        events.checked({"event": "batches"})
    line = events.PREFIX + '{"event": "memory", "n": 3, "uss": [1.0], "fds": 9}'
    with pytest.raises(ValueError, match="'memory' lacks shm"):
        _event(line, ProbeResult())
    assert _event(events.PREFIX + '{"event": "done", "sec', ProbeResult()) is None   # cut off as the child died
