"""Scenario 04, myth check: does the 'file_system' sharing strategy make room in /dev/shm?

    python scenarios/04_dev_shm_exhaustion/myth_file_system.py

"A deep dive into PyTorch DataLoader with Multiprocessing" presents the choice between
'file_descriptor' and 'file_system' as the lever for shared-memory trouble.  Both keep the
batches' bytes in the same tmpfs; only the way a worker names them to the main process
differs.  This runs broken.py's loop with 'file_system'.  Expect broken.py's error, raised
this time from _new_using_filename_cpu.
"""
import torch.multiprocessing

from broken import main

if __name__ == "__main__":
    torch.multiprocessing.set_sharing_strategy("file_system")  # MYTH: another strategy makes room
    print(f"sharing strategy: {torch.multiprocessing.get_sharing_strategy()}")
    main()
