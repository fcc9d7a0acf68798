"""The engine: the runner (run/), the doctor (doctor/), the graded exercises (workshop/) and the
benchmarks (bench/), behind one command table (cli.py).  scenarios/MAP.md says what lives where.

Every package face here is lazy (PEP 562): `import scenarios.clinic.doctor.events` loads that
one small module, not every check, in every probe child and each of its spawned workers.
"""
import importlib
import sys
from pathlib import Path

SCENARIOS_DIR = Path(__file__).resolve().parents[1]
REPO_ROOT = SCENARIOS_DIR.parent


def lazy_face(package: str, where: dict[str, str]):
    """A package's module `__getattr__`: each public name is imported on first use from the
    module `where[name]` names: relative to the package, or absolute ("scenarios.…"), and
    "module:other_name" where the module calls it otherwise.
    A name may not also be a submodule's: once that module is imported, Python sets the package's
    attribute to the module and `__getattr__` is never asked again."""
    package_dir = Path(sys.modules[package].__file__).parent
    shadowed = [name for name in where if (package_dir / f"{name}.py").exists() or (package_dir / name).is_dir()]
    if shadowed:
        raise ImportError(f"{package}: {shadowed} name both a submodule and a lazy attribute")

    def __getattr__(name: str):
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = where[name].partition(":")
        module = module if module.startswith("scenarios.") else f"{package}.{module}"
        return getattr(importlib.import_module(module), attribute or name)
    __getattr__.names = tuple(where)   # for the test that every one of them resolves
    return __getattr__
