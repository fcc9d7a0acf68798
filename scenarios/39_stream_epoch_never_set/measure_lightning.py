"""Scenario 39, measured: Lightning's fit loop sets the sampler's epoch, never the stream's.

    python scenarios/39_stream_epoch_never_set/measure_lightning.py

broken.py's stream (4 shards of 48 records, shuffle(seed=42, buffer_size=64), batches of 16, 2
forked persistent workers) trained by lightning.Trainer.fit for 4 epochs, twice: as a Lightning
user writes it, and with the LightningModule's on_train_epoch_start calling the stream's
set_epoch(self.current_epoch).  Lightning 2.6.6's fit loop calls _set_sampler_epoch
(lightning/fabric/utilities/data.py) on the loader's sampler and batch sampler only.
"""
import logging
import warnings

import lightning as L
import torch
from torch.utils.data import DataLoader

from _epoch_orders import corpus, report

SHARDS, PER_SHARD, BATCH, EPOCHS, WORKERS = 4, 48, 16, 4, 2


class RecordsOrder(L.LightningModule):
    """A model of one weight that records the ids of every batch, epoch by epoch."""

    def __init__(self, stream, tell_the_stream):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(1))
        self.stream, self.tell_the_stream, self.orders = stream, tell_the_stream, []

    def on_train_epoch_start(self):
        if self.tell_the_stream:
            self.stream.set_epoch(self.current_epoch)
        self.orders.append([])

    def training_step(self, batch, index):
        self.orders[-1] += batch["id"].tolist()
        return (self.weight * batch["id"].float()).mean()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.0)


def fit(tell_the_stream):
    stream = corpus(SHARDS, PER_SHARD).shuffle(seed=42, buffer_size=64)
    loader = DataLoader(stream, batch_size=BATCH, num_workers=WORKERS, persistent_workers=True,
                        multiprocessing_context="fork")
    model = RecordsOrder(stream, tell_the_stream)
    trainer = L.Trainer(max_epochs=EPOCHS, accelerator="cpu", logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(model, loader)
    return model.orders, stream.epoch


def main():
    logging.getLogger("lightning").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
    repeats = {}
    for setting, tell in (("fit_loop_alone", False), ("on_train_epoch_start", True)):
        orders, epoch = fit(tell)
        found = report(orders, setting.replace("_", " "), BATCH)
        repeats[setting] = found["epochs_repeating_order"]
        print(f"metric {setting}_repeats={found['epochs_repeating_order']}")
        print(f"metric {setting}_complete_epochs={found['complete_epochs']}")
        print(f"metric {setting}_stream_epoch_at_end={epoch}")
    print(f"Lightning {L.__version__}, {EPOCHS} epochs: {repeats['fit_loop_alone']} of {EPOCHS - 1} later epochs "
          f"repeated an earlier order with the fit loop alone, {repeats['on_train_epoch_start']} with set_epoch "
          "in on_train_epoch_start")


if __name__ == "__main__":
    main()
