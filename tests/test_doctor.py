"""`make doctor` (scenarios/clinic/doctor/machine.py): it names the start method a DataLoader gets here when
it names none, and on Linux before Python 3.14 what 3.14's default changes."""
import multiprocessing
import sys

from scenarios.clinic.doctor.machine import checks, start_method_line


def test_doctor_names_the_start_method_a_loader_without_one_gets():
    line = start_method_line()
    assert line in [what for _, what, _ in checks()]  # asked twice, the same answer
    assert f"names none: {multiprocessing.get_context().get_start_method()}" in line
    if sys.platform == "linux" and sys.version_info < (3, 14):
        assert "from Python 3.14 Linux defaults to forkserver" in line
