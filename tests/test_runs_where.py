"""WORKSHOP.md's one table of which scenarios run where, derived from each scenario.toml's `needs`
(scenarios/clinic/platforms.py); tests/test_readme.py checks that the block is current."""
from conftest import REPO_ROOT
from scenarios.clinic.platforms import NO, SYSTEMS, YES, cell, numbers_as_ranges

LINUX, WSL, MACOS, WINDOWS, CONTAINER = range(len(SYSTEMS))


def test_a_scenario_that_needs_nothing_runs_everywhere():
    assert [cell([], system) for system in range(len(SYSTEMS))] == [YES] * len(SYSTEMS)


def test_linux_and_fork_run_on_linux_wsl_and_a_container_only():
    cells = [cell(["linux", "fork"], system) for system in range(len(SYSTEMS))]
    assert cells == [YES, YES, NO, NO, YES]


def test_a_condition_is_a_footnote_and_a_missing_facility_is_no():
    assert cell(["linux", "fork", "userns"], CONTAINER) == "yes (2)"
    assert cell(["linux", "fork", "memory_cgroup"], WSL) == "yes (3)"
    assert cell(["linux", "cuda"], WINDOWS) == NO  # Windows has CUDA, but not Linux
    assert cell(["cuda"], WINDOWS) == "yes (5)" and cell(["cuda"], MACOS) == NO
    assert "does not know" in cell(["a_need_nobody_declared"], LINUX)


def test_numbers_are_shown_as_ranges():
    assert numbers_as_ranges(["01", "02", "03", "05", "06", "09"]) == "01–03, 05, 06, 09"


def test_the_pages_point_to_the_one_table_and_repeat_none_of_its_counts():
    workshop = (REPO_ROOT / "scenarios" / "WORKSHOP.md").read_text()
    readme = (REPO_ROOT / "README.md").read_text()
    assert workshop.count("<!-- runs-where:begin -->") == 1
    assert readme.count("scenarios/WORKSHOP.md#which-exercises-run-where") >= 1
    for page in (workshop, readme):
        assert "natively;" not in page and "only 13" not in page and "13 and 22 are" not in page
