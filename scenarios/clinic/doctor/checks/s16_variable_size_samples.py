"""16 · samples of different sizes: the default collate cannot stack them."""
from scenarios.clinic.doctor.findings import finder

SCENARIO = "16"
FIXES = {
    "variable-size-batch": "fixes/pad_collate.py (collate_fn=PadCollate()); or "
                           "give the DataLoader a collate_fn that pads (torch.nn.utils.rnn.pad_sequence) or returns "
                           "a list, or resize every sample to one shape in the transform",
    "tensors-at-worker-start": "keep the dataset's tensors in one flat tensor (or a numpy array) and slice it: under "
                               "spawn and forkserver each tensor travels to a new worker as one descriptor, and a "
                               "process start takes at most 256",
}
ERRORS = [(r"stack expects each tensor to be equal size|each element in list of batch should be of equal size"
           r"|Trying to resize storage that is not resizable", "variable-size-batch"),
          (r"too many fds", "tensors-at-worker-start")]
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = "a worker's collate error, which a healthy loader does not raise: {loaders}"
_found = finder(SCENARIO, FIXES)
