"""The front door stays in step with the scenario folders (one source of truth: the glob)."""
import re

from conftest import REPO_ROOT

SCENARIO_DIRS = sorted(p for p in (REPO_ROOT / "scenarios").glob("[0-9][0-9]_*") if p.is_dir())
SECTIONS = ["Symptom", "Where you meet it", "Root cause", "Diagnose it in your own code",
            "The fix", "Myth check", "References"]


def test_symptom_table_names_every_scenario_folder():
    readme = (REPO_ROOT / "README.md").read_text()
    linked = re.findall(r"\]\(scenarios/(\d\d_[a-z0-9_]+)/?\)", readme)
    assert sorted(set(linked)) == [p.name for p in SCENARIO_DIRS]


def test_each_scenario_readme_has_every_section_in_order():
    for folder in SCENARIO_DIRS:
        headings = re.findall(r"^## (.+)$", (folder / "README.md").read_text(), flags=re.M)
        assert [h for h in headings if h in SECTIONS] == SECTIONS, folder.name


def test_each_scenario_has_broken_fixed_and_a_declaration():
    for folder in SCENARIO_DIRS:
        for name in ("broken.py", "fixed.py", "scenario.toml"):
            assert (folder / name).is_file(), f"{folder.name}/{name}"
        assert "# BUG:" in (folder / "broken.py").read_text(), folder.name
        assert "# FIX:" in (folder / "fixed.py").read_text(), folder.name
