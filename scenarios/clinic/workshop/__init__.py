"""Graded exercises (scenarios/WORKSHOP.md): rules.py says what an attempt must keep,
grading.py runs and grades it, progress.py keeps the attendee's hints and grades."""
from scenarios.clinic.workshop.grading import check, grade, grade_text, say_bad_input  # noqa: F401
from scenarios.clinic.workshop.progress import (hint, practice, record_grade, solution, status,  # noqa: F401
                                                status_table)
from scenarios.clinic.run.declarations import CannotRunHere  # noqa: F401
from scenarios.clinic.workshop.rules import (CANNOT_RUN, NOT_YET, PASSED, Grade,  # noqa: F401
                                             exercise_of, module_constants, static_problems)
