"""Scenario 27, broken (read before synchronize): a non_blocking copy to the host, read too early.

    python -m scenarios run 27 --variant broken_read_before_sync     # needs a CUDA GPU

`.to("cpu", non_blocking=True)` returns at once, into pinned memory the GPU fills later, in
its stream's order.  Read before a synchronize, the host sees whatever the memory held: wrong
values and no error.  Here a few milliseconds of GPU work come before each copy, so the read
comes before the copy has run; fixed.py synchronizes before it reads.
"""
import torch

from scenarios.host import cannot_run, cuda_problem_here

READS, SIZE = 20, 4 * 2**20


def main():
    if problem := cuda_problem_here():
        cannot_run(problem)
    busy = torch.randn(2048, 2048, device="cuda")
    wrong = 0
    for attempt in range(1, READS + 1):
        for _ in range(8):
            busy = torch.tanh(busy @ busy)  # GPU work queued before the copy, on the same stream
        values = torch.full((SIZE,), float(attempt), device="cuda")
        on_host = values.to("cpu", non_blocking=True)
        last = float(on_host[-1])  # BUG: read before torch.cuda.synchronize(): the copy may not have run
        wrong += last != attempt
    torch.cuda.synchronize()
    print(f"metric reads_wrong={wrong}")
    print(f"{wrong} of {READS} reads of a non_blocking copy were wrong, with no error "
          f"(destination pinned: {on_host.is_pinned()})")
    if wrong:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
