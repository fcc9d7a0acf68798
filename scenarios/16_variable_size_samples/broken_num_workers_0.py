"""Scenario 16, broken without workers: the same error, as the main process prints it.

    python scenarios/16_variable_size_samples/broken_num_workers_0.py

broken.py's data, loader and loop with num_workers=0.  The same first batch fails in the
same torch.stack with the same words, but nothing wraps them: no "Caught RuntimeError in
DataLoader worker process 0.", no "Original Traceback"; the traceback runs from the loop
straight into default_collate, and the exception is the one torch.stack raised, so a
debugger's post-mortem lands in the collate, next to the batch.
"""
from broken import main

if __name__ == "__main__":
    main(num_workers=0)  # BUG: the same default collate, run in the main process
