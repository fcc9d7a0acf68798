"""The doctor's checks: one module per scenario, registered here in one list (as pytest's
default_plugins).

A check module owns everything about its scenario's diagnosis:

    SCENARIO = "03"                      the scenario that explains what it finds
    FIXES = {"copy-on-read": "…"}        the fix text of each finding it makes
    ERRORS = [(regex, "check-name")]     error texts that point to it (the error table; optional)
    LOG_TEXTS = [(regex, "check-name")]  warnings that name it in a log on their own (`explain`; optional)
    def static(examined) -> [Finding]    what the loader, its dataset and this process show (optional)
    def measured(examined, probe) -> [Finding]   what the probe's events show (optional)
    def running(job) -> [Finding]        what a job running now shows (`doctor --pid`; optional)
    def merge(findings, probe) -> [Finding]      its own rule for combining the two (optional;
                                                 default: one finding per name, both evidences)

The engine (doctor/examine.py) runs the list; a check that raises becomes one `crashed` finding
naming it, and the rest of the report survives.
"""
from scenarios.clinic.doctor.checks import (
    s01_fork_inherited_lock,
    s02_corrupt_files,
    s03_list_refcount_growth,
    s04_dev_shm_exhaustion,
    s05_shared_state_races,
    s06_worker_killed_by_signal,
    s07_remote_storage_latency,
    s08_too_many_open_files,
    s09_spawn_pitfalls,
    s10_prefetch_memory,
    s11_shared_file_handle,
    s12_identical_augmentations,
    s13_iterable_dataset_duplicates,
    s14_persistent_workers_stale_epoch,
    s15_distributed_sampler_set_epoch,
    s16_variable_size_samples,
    s17_process_pool_in_worker,
    s18_hdf5_opened_in_init,
    s19_oom_killer_in_memory_limit,
    s20_orphaned_workers_after_sigkill,
    s21_thread_oversubscription,
    s22_fewer_shards_than_workers,
    s23_tokenizers_before_fork,
    s24_resume_mid_epoch,
)

# The order is the error table's: the first pattern that matches a traceback wins, so the more
# specific texts come first ("killed by signal: Killed" and "Bus error" before 06's "killed by
# signal"), and 02's catch-all last.  Reports sort findings by level and scenario, not by this.
CHECKS = (
    s17_process_pool_in_worker,
    s16_variable_size_samples,
    s04_dev_shm_exhaustion,
    s08_too_many_open_files,
    s05_shared_state_races,
    s09_spawn_pitfalls,
    s01_fork_inherited_lock,
    s19_oom_killer_in_memory_limit,
    s10_prefetch_memory,
    s06_worker_killed_by_signal,
    s03_list_refcount_growth,
    s07_remote_storage_latency,
    s11_shared_file_handle,
    s12_identical_augmentations,
    s13_iterable_dataset_duplicates,
    s14_persistent_workers_stale_epoch,
    s15_distributed_sampler_set_epoch,
    s18_hdf5_opened_in_init,
    s20_orphaned_workers_after_sigkill,
    s21_thread_oversubscription,
    s22_fewer_shards_than_workers,
    s23_tokenizers_before_fork,
    s24_resume_mid_epoch,
    s02_corrupt_files,
)


def name_of(check) -> str:
    """`03_list_refcount_growth`: the module's name without its `s`, as the scenario folder is named."""
    return check.__name__.rsplit(".", 1)[-1][1:]


def log_texts() -> list[tuple[str, object, str]]:
    """(pattern, check module, finding name): warnings that name a failure on their own, without
    a traceback through the DataLoader (`explain` matches them anywhere in a log)."""
    return [(pattern, check, name) for check in CHECKS for pattern, name in getattr(check, "LOG_TEXTS", ())]


def error_table() -> list[tuple[str, object, str]]:
    """(pattern, check module, finding name) from every check, in the registry's order: the
    first match wins, and scenario 02's catch-all comes last."""
    return [(pattern, check, name) for check in CHECKS for pattern, name in getattr(check, "ERRORS", ())]
