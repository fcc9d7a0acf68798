"""Scenario 16, myth check: what does batch_size=1 cost?

    python scenarios/16_variable_size_samples/myth_batch_size_1.py

The quick answer to "stack expects each tensor to be equal size": batch_size=1, since a
batch of one has nothing to be unequal to.  The error goes, and broken.py's loop runs.
This trains one epoch that way, then one epoch with fixed.py's padded, bucketed batches
of 32, on the same data with the same model, and compares samples per second after the
first batch (worker start-up left out).  One sample per step also means one optimizer
step per sample, and no batch statistics (BatchNorm refuses a batch of one in training).
"""
import broken
import fixed


def main():
    one = broken.main(batch_size=1)  # MYTH: batch_size=1 is a fix
    padded = fixed.main()
    slowdown = padded.samples_per_s() / one.samples_per_s()
    print(f"metric samples_per_s_batch_size_1={one.samples_per_s():.0f}")
    print(f"metric samples_per_s_padded={padded.samples_per_s():.0f}")
    print(f"metric batch_size_1_slowdown={slowdown:.1f}")
    print(f"batch_size=1 trains {one.samples_per_s():.0f} samples/s, padded batches of {fixed.BATCH_SIZE} "
          f"{padded.samples_per_s():.0f} samples/s: {slowdown:.1f} times slower")


if __name__ == "__main__":
    main()
