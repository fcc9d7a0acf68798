"""02 · an exception raised in a worker (an unreadable file) ends the epoch; the catch-all of the
error table: anything raised in a worker that no other check explains."""
from scenarios.clinic.doctor.findings import finder

SCENARIO = "02"
FIXES = {
    "worker-error": "fixes/bad_samples.py (SkipBadSamples + collate_good_samples turn a bad sample into a reported "
                    "event), or repair the data first (scan_images)",
}
# Pillow's own words for an unreadable image (PIL/Image.py, PIL/ImageFile.py), then the catch-all.
ERRORS = [(r"cannot identify image file|image file is truncated|broken data stream"
           r"|Image size \(\d+ pixels\) exceeds limit", "worker-error"), (r"", "worker-error")]
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = "an exception a worker raised, which a healthy loader does not: {loaders}"
_found = finder(SCENARIO, FIXES)
