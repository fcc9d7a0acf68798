"""Graded exercises (scenarios/WORKSHOP.md): rules.py says what an attempt must keep,
grading.py runs and grades it, progress.py keeps the attendee's hints and grades.
Names are imported on first use (scenarios/clinic/__init__.py)."""
from scenarios.clinic import lazy_face

__getattr__ = lazy_face(__name__, {
    **dict.fromkeys(("check", "grade", "grade_text", "say_bad_input"), "grading"),
    **dict.fromkeys(("hint", "practice", "record_grade", "solution", "status", "status_table"), "progress"),
    "CannotRunHere": "scenarios.clinic.run.declarations",
    **dict.fromkeys(("CANNOT_RUN", "NOT_YET", "PASSED", "Grade", "exercise_of", "module_constants",
                     "static_problems"), "rules"),
})
