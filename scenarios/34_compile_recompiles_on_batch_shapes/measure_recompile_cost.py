"""Scenario 34, measured: what one recompilation costs with the backend users compile with, and
how many graphs the loader's shapes make under the other settings of torch.compile.

    python scenarios/34_compile_recompiles_on_batch_shapes/measure_recompile_cost.py

One process, no loader: broken.py's model and training step, called with batch shapes as its
loader makes them.
- Cost: with dynamic=False, for the inductor backend (torch.compile's default, which generates
  and builds C++ on a CPU) and for aot_eager (the scenario's): 3 new shapes, each called twice;
  the first call of a shape compiles, the second runs the cached graph.
- Graphs: 5 batches of broken.py's kind, (4, 40) (4, 52) (2, 33) (4, 61) (2, 47), with the
  default dynamic=None (dynamo recompiles a size once, then makes it symbolic), and with
  torch._dynamo.mark_dynamic on both sizes of each batch (one symbolic graph from the start).
  Graphs are torch's own count (torch._dynamo.utils.counters).
Inductor's caches go to a fresh folder, removed at the end: every compile is a first one, as in a
new job on a new machine, and nothing is left in torch's shared default cache folder.
"""
import os
import shutil
import statistics
import tempfile
import time

CACHE = os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="scenario34-inductor-")
import torch  # after its cache folder is chosen

from broken import VOCAB, TokenModel

COST_SHAPES = ((4, 16), (4, 32), (2, 48))
LOADER_SHAPES = ((4, 40), (4, 52), (2, 33), (4, 61), (2, 47))


def batch(shape):
    return torch.randint(1, VOCAB, shape, generator=torch.Generator().manual_seed(sum(shape)))


def compile_cost(backend):
    """Seconds a new shape's first call takes beyond its second, the median of 3 shapes."""
    torch._dynamo.reset()
    step = torch.compile(TokenModel(), backend=backend, dynamic=False)
    extra = []
    for shape in COST_SHAPES:
        timings = []
        for _ in range(2):
            started = time.perf_counter()
            step(batch(shape)).backward()
            timings.append(time.perf_counter() - started)
        extra.append(timings[0] - timings[1])
    return statistics.median(extra), torch._dynamo.utils.counters["stats"]["unique_graphs"]


def graphs_for_loader_shapes(mark_dynamic):
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    step = torch.compile(TokenModel(), backend="aot_eager")
    for shape in LOADER_SHAPES:
        tokens = batch(shape)
        if mark_dynamic:
            torch._dynamo.mark_dynamic(tokens, 0)
            torch._dynamo.mark_dynamic(tokens, 1)
        step(tokens).backward()
    return torch._dynamo.utils.counters["stats"]["unique_graphs"]


def main():
    try:
        costs = {}
        for backend in ("inductor", "aot_eager"):
            torch._dynamo.utils.counters.clear()
            costs[backend], graphs = compile_cost(backend)
            print(f"metric {backend}_compile_s_per_shape={costs[backend]:.2f}")
            print(f"metric {backend}_graphs={graphs}")
        default_graphs = graphs_for_loader_shapes(mark_dynamic=False)
        marked_graphs = graphs_for_loader_shapes(mark_dynamic=True)
    finally:
        shutil.rmtree(CACHE, ignore_errors=True)  # torch makes the folder again for any compile: last
    print(f"metric dynamic_none_graphs={default_graphs}")
    print(f"metric mark_dynamic_graphs={marked_graphs}")
    print(f"{len(LOADER_SHAPES)} loader shapes: {default_graphs} graphs with dynamic=None, {marked_graphs} with "
          f"mark_dynamic; with dynamic=False a new shape costs {costs['inductor']:.1f} s with inductor, "
          f"{costs['aot_eager']:.2f} s with aot_eager")

if __name__ == "__main__":
    main()
