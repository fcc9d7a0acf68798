"""34 · a compiled step recompiles for each batch shape its loader makes, until dynamo stops compiling it."""
from scenarios.clinic.doctor.findings import finder

SCENARIO = "34"
FIXES = {
    "shape-recompiles": "give the compiled function a few input shapes; for a loader's batches: "
                        "DataLoader(drop_last=True) for the ragged last batch, and pad each batch to one of a "
                        "few bucketed lengths (a multiple of 16 or 64) instead of its longest sample; or mark the "
                        "varying sizes dynamic (torch._dynamo.mark_dynamic) where static kernels are not needed "
                        "(scenario 34's fixed.py)",
}
# torch 2.13's own texts (torch/_dynamo/guards.py's recompile reasons, convert_frame.py's limit warning):
# a tensor's guard on a size, as TORCH_LOGS=recompiles prints it; and the recompile limit's warning, whatever
# its last reason (a size in the public reports; older releases, as in HeavyBall#16, named the limit
# cache_size_limit).  dynamo prints them for whatever passes new sizes to a compiled function; in a training
# loop that is mostly the loader's batches.
LOG_TEXTS = [(r"tensor '[^'\n]+' size mismatch(?: at index \d+)?[.:] expected \d+, actual \d+", "shape-recompiles"),
             (r"torch\._dynamo hit config\.(?:accumulated_)?(?:recompile|cache_size)_limit \(\d+\)",
              "shape-recompiles")]
# dynamo's own words where the size that changed is a parameter's (an optimizer compiled per parameter shape,
# microsoft/dion#23): no loader's batch is in it.
UNLESS = r"Guard failed on a parameter"
# Either text counts only where dynamo's guard failure shows a batch: a size that changed at a tensor's first
# dimensions (the batch, a sequence's length), of a tensor not named as a weight, or the loader or a batch named in
# the failure.  A weight-quantisation loop compiled per weight shape hits the same limit with no loader in it.
_WEIGHT = r"weight|bias|param|grad|exp_avg|scale|\bw\b|\bW\b"
NEEDS = (rf"tensor '(?!(?:(?!' size).)*(?:{_WEIGHT}))(?:(?!' size).)+' size mismatch(?: at index [01])?[.:] expected"
         r"|(?:last reason|guard failure|Recompiling)[^\n]*(?:DataLoader|dataloader|collate|\bbatch)")
HEALTHY = ("log texts only, no rule on a loader: a loader's batch shapes are the user's choice and torch.compile "
           "is not in what the doctor examines; the texts are dynamo's own, printed only when a compiled function "
           "sees a new size or reaches its recompile limit (no log in tests/logs holds either text). In your run "
           "(doctor -- COMMAND): 3 or "
           "more compilations while the loaders delivered batches of 3 or more shapes, both counted")

_found = finder(SCENARIO, FIXES)
_MANY = 3  # compilations past the first two (a step's first shapes: the batch, then the ragged last one)


def observed(run):
    """In the user's own run: dynamo compiled again and again while the loader delivered batches of
    many shapes.  Counts, both seen: each compilation as dynamo starts it, each batch's first shape."""
    compiles, shapes = run.get("compiles", 0), run.get("batch_shapes", 0)
    if compiles < _MANY or shapes < _MANY:
        return []
    return [_found("risk", "shape-recompiles",
                   f"measured in your run: dynamo compiled {compiles} times while the loaders delivered batches of "
                   f"{shapes} shapes: each new shape is a new graph, until the recompile limit stops compiling",
                   figures={"compiles": compiles, "batch_shapes": shapes})]
