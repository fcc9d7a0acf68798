"""The doctor's checks: one module per scenario, registered here in one list (as pytest's
default_plugins).

A check module owns everything about its scenario's diagnosis, through the names of CONTRACT and
no others (its helpers are private, `_name`; test_layout fails a public name outside it, so a
misspelt hook is an error, not a check that never runs).  What a check needs is handed to it or
read through the doctor's small shared readers (findings, evidence, holdings, setup, job, stacks,
events), the lab kit and fixes/; it imports no other check and no part of the engine that runs it
(engine, probe, running, commands, explain, orphans, machine, loading).

The engine (doctor/engine.py) runs the list; a check that raises becomes one `crashed` finding
naming it, and the rest of the report survives.
"""
import ast
import inspect

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
    s25_cuda_in_forked_worker,
    s26_cuda_context_per_worker,
    s27_pinned_memory_path,
    s28_gpu_waits_for_data,
)

# name: (kind, what it is).  A hook's parameters are named as here.
CONTRACT = {
    "SCENARIO": ("data", '"03": the scenario that explains what it finds'),
    "FIXES": ("data", '{"copy-on-read": "…"}: the fix text of each finding it makes'),
    "ERRORS": ("data", "[(regex, finding name)]: error texts that point to it (the error table; optional)"),
    "LOG_TEXTS": ("data", "[(regex, finding name)]: warnings that name it in a log on their own (explain; optional)"),
    "CONTEXT": ("data", "regex: frames where its generic ERRORS count without a DataLoader, because its lesson holds "
                        "whoever started the process (explain; optional)"),
    "HEALTHY": ("data", "how often a healthy loader trips each of its rules, measured (tests/loaders/false_alarms.py, "
                        "tests/jobs/false_alarms.py), or why no chance is in a rule"),
    "static": ("hook(examined)", "[Finding]: what the loader, its dataset and this process show"),
    "measured": ("hook(examined, probe)", "[Finding]: what the probe's events show"),
    "running": ("hook(job)", "[Finding]: what a job running now shows (doctor --pid; a job.Job)"),
    "merge": ("hook(findings, probe)", "[Finding]: its own rule for joining the read and the measured "
                                       "(default: findings.merge_same)"),
    "error_detail": ("hook(error, probe)", "str: words added to the headline of an error its ERRORS matched"),
}
# The module docstring's first line is the cause `explain` quotes beside a matched text.
REQUIRED = ("SCENARIO", "FIXES", "HEALTHY")


def contract_problems(check) -> list[str]:
    """What in a check module breaks the contract: a public name it defines outside CONTRACT, a
    hook whose parameters differ, a required name missing, no docstring."""
    problems = [f"no {name}" for name in REQUIRED if not hasattr(check, name)]
    problems += [] if (check.__doc__ or "").strip() else ["no docstring (explain quotes its first line)"]
    for name in _defined_names(check):
        kind = CONTRACT.get(name, (None,))[0]
        if name.startswith("_"):
            continue
        if kind is None:
            problems.append(f"public name {name!r} is not in the contract (a misspelt hook, or a helper "
                            "that should be private: _name)")
        elif kind.startswith("hook"):
            wanted = kind[5:-1].split(", ")
            if list(inspect.signature(getattr(check, name)).parameters) != wanted:
                problems.append(f"{name}{inspect.signature(getattr(check, name))} should take ({', '.join(wanted)})")
    return problems


def _defined_names(check) -> list[str]:
    """The names the module's own top level binds (not those it imports)."""
    names = []
    for node in ast.parse(inspect.getsource(check)).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [t.id for t in targets if isinstance(t, ast.Name)]
    return names


# The order is the error table's: the first pattern that matches a traceback wins, so the more
# specific texts come first ("killed by signal: Killed" and "Bus error" before 06's "killed by
# signal"), and 02's catch-all last.  Reports sort findings by level and scenario, not by this.
# The GPU texts (27, 25, 26) lead: a worker's CUDA error is theirs, whatever else the traceback says.
CHECKS = (
    s27_pinned_memory_path,
    s25_cuda_in_forked_worker,
    s26_cuda_context_per_worker,
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
    s28_gpu_waits_for_data,
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
