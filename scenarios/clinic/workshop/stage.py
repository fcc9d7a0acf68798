"""The stage an exercise keeps: what broken.py imports from the scenario's own helper modules (`_*.py`)
and from the project's lab kit (`scenarios.*`): the workload, the model's step and the measurements.
An attempt may call them; it may not redefine them, reach into those modules to change them, or take
from them what broken.py does not (an answer key, such as the list of the corpus's unreadable files).
"""
from __future__ import annotations

import ast


def _is_stage(module: str | None) -> bool:
    return bool(module) and (module.startswith("_") or module == "scenarios" or module.startswith("scenarios."))


def _imports(tree: ast.Module) -> tuple[dict[str, str], dict[str, str]]:
    """(name -> module for each `from STAGE import name`, alias -> module for each stage module bound)."""
    names, modules = {}, {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and _is_stage(node.module):
            for alias in node.names:
                bound = alias.asname or alias.name
                if node.module == "scenarios":  # `from scenarios import remote_training`: a module
                    modules[bound] = f"scenarios.{alias.name}"
                else:
                    names[bound] = node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _is_stage(alias.name):
                    modules[alias.asname or alias.name.split(".")[0]] = alias.name
    return names, modules


def _bound_at_top(tree: ast.Module) -> set[str]:
    """Names a module-level def, class or assignment binds."""
    bound = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return bound


def _changed_attributes(tree: ast.Module, modules: dict[str, str]) -> list[str]:
    """`module.name = …` (or del, or +=) on a stage module, anywhere in the attempt; setattr(module, …)."""
    found = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" \
                and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in modules:
            found.append(f"setattr({node.args[0].id}, …)")
        for target in targets:
            root = target
            while isinstance(root, ast.Attribute):
                root = root.value
            if target is not root and isinstance(root, ast.Name) and root.id in modules:
                found.append(ast.unparse(target))
    return found


def stage_problems(broken: ast.Module, attempt: ast.Module) -> list[str]:
    """What the attempt did to the stage broken.py stands on: one sentence each."""
    ours, _ = _imports(broken)
    theirs, modules = _imports(attempt)
    problems = []
    for name in sorted(set(ours) & _bound_at_top(attempt)):
        problems.append(f"you define {name} over the one broken.py imports from {ours[name]}: the exercise's "
                        "workload and measurements stay the scenario's; fix the cause instead")
    for name, module in sorted(theirs.items()):
        if module.startswith("_") and name not in ours:
            problems.append(f"you import {name} from {module}, which broken.py does not: the scenario's helper "
                            "module sets the stage (and knows the answers); fix the cause with what the script has")
    for target in _changed_attributes(attempt, modules):
        problems.append(f"you change {target}: the scenario's helper modules (the workload, the model's step, the "
                        "measurements) stay as they are; fix the cause instead")
    return problems
