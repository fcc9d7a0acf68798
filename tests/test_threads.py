"""scenarios/threads.py: the one rule for busy threads (21's census, the grading hook, doctor --pid),
on readings shaped like those taken from 21's workers (CPU seconds by thread id, in ticks of 10 ms)."""
from scenarios.threads import busy_threads, middle_reading


def _readings(*columns):
    """Readings from per-thread cumulative CPU columns: _readings([0, 10, 20], [0, 5, 9]) is two threads."""
    return [{tid: column[i] / 100 for tid, column in enumerate(columns, start=1)} for i in range(len(columns[0]))]


def test_a_pool_thread_that_works_throughout_is_busy():
    main, pool = [0, 4, 8, 12, 16, 20], [0, 3, 6, 9, 12, 15]
    assert busy_threads(_readings(main, pool)) == {1, 2}


def test_a_thread_that_worked_once_is_not_busy():
    # 21's fixed worker in CI: 90 ms on the loop's thread, 50 ms once on another (OpenBLAS's pool
    # spinning after the fork, late under load).  Over the whole span it is over a quarter.
    main, once = [0, 2, 4, 5, 7, 9], [0, 5, 5, 5, 5, 5]
    assert busy_threads(_readings(main, once)) == {1}
    assert busy_threads(_readings(main, once)[::5]) == {1, 2}, "two readings cannot tell: the whole span decides"


def test_halves_are_taken_by_cpu_so_a_worker_that_ran_ahead_keeps_its_busy_thread():
    main = [0, 5, 9, 9, 9, 9, 9]  # its batches made before the loop's fourth reading
    assert middle_reading(_readings(main), ()) == _readings(main)[1]
    assert busy_threads(_readings(main)) == {1}


def test_the_floor_and_the_threads_left_out():
    main, feeder = [0, 4, 8, 12], [0, 1, 1, 2]
    assert busy_threads(_readings(main, feeder)) == {1}
    assert busy_threads(_readings(main, feeder), leave_out={1}) == {2}, "alone, two ticks reach the floor"
    assert busy_threads(_readings(main, feeder), leave_out={1}, floor_s=0.05) == set()
