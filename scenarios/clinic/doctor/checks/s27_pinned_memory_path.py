"""27 · the pinned-memory path: pin_memory=True pins CPU batches only; a CUDA batch cannot be pinned."""
from scenarios.clinic.doctor import events
from scenarios.clinic.doctor.findings import finder

SCENARIO = "27"
FIXES = {
    "pin-cuda-batch": "let the dataset and collate_fn return CPU tensors, keep pin_memory=True, and move the batch "
                      "with batch.to('cuda', non_blocking=True) in the training loop",
}
# torch's pin_memory on a tensor already on the GPU; with workers, wrapped as "Caught RuntimeError in
# pin memory thread for device 0." (torch/utils/data/_utils/pin_memory.py).
ERRORS = [(r"cannot pin 'torch\.cuda\.\w+' only dense CPU tensors can be pinned", "pin-cuda-batch")]
_found = finder(SCENARIO, FIXES)


def measured(examined, probe):
    asked = probe.first(events.CUDA_REQUESTS)
    if not (asked and asked.get("batch_on_cuda") and examined.setup.pin_memory):
        return []
    return [_found("risk", "pin-cuda-batch",
                   "; ".join(r["text"] for r in asked["requests"][:2])
                   + ": the batch would be a CUDA tensor and pin_memory=True pins batches, so the first batch "
                     "fails with \"cannot pin 'torch.cuda.FloatTensor' only dense CPU tensors can be pinned\"")]
