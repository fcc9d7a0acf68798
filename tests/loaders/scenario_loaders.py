"""The scenarios' own broken loaders, built as each broken.py builds its loader, for the doctor:

    python -m scenarios doctor tests/loaders/scenario_loaders.py:scenario_03   # also 02, 06, 09-14, 16, 17

Scenario 04's loader is tests/loaders/augmented_crops.py (its broken.py re-runs itself in a
private /dev/shm as it is imported, so it cannot be imported here): examine it in a small
/dev/shm as that script does, e.g. under `unshare --user --map-root-user --mount` with a 16 MB
tmpfs mounted on /dev/shm.
"""
import importlib.util
import sys
import tempfile
from pathlib import Path

from torch.utils.data import DataLoader

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def _broken(pattern: str):
    """scenarios/NN_*/broken.py imported as a module (its folder first on sys.path, for the
    helper modules it imports)."""
    folder = next(SCENARIOS.glob(pattern))
    sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location(f"{folder.name[:2]}_broken", folder / "broken.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def scenario_03():
    broken = _broken("03_*")
    return DataLoader(broken.DetectionDataset(broken.IMAGES), batch_size=256, num_workers=2,
                      multiprocessing_context="fork")


def scenario_09():
    broken = _broken("09_*")
    raw = broken.SensorReadings(broken.SAMPLES)
    mean, std = raw.readings.mean(dim=0), raw.readings.std(dim=0)
    dataset = broken.SensorReadings(broken.SAMPLES, transform=lambda row: broken.standardize(row, mean, std))
    return DataLoader(dataset, batch_size=64, num_workers=2, persistent_workers=True,
                      multiprocessing_context="spawn")


def scenario_11():
    broken = _broken("11_*")
    path = Path(tempfile.gettempdir()) / "clinic-doctor-data" / "scenario_11.records"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        sys.modules["_record_file"].write_records(path, broken.RECORDS)
    return DataLoader(broken.RecordFileDataset(path, broken.RECORDS), batch_size=64, shuffle=True,
                      num_workers=2, multiprocessing_context="fork")


def scenario_12():
    broken = _broken("12_*")
    return DataLoader(broken.RandomCropFlip(broken.IMAGES), batch_size=8, num_workers=2,
                      multiprocessing_context="fork")


def scenario_13():
    broken = _broken("13_*")
    root = Path(tempfile.gettempdir()) / "clinic-doctor-data" / "scenario_13"
    root.mkdir(parents=True, exist_ok=True)
    return DataLoader(broken.ShardStream(sys.modules["_shard_files"].write_shards(root)), num_workers=4)


def scenario_14():
    broken = _broken("14_*")
    return DataLoader(broken.CurriculumDataset(), batch_size=16, num_workers=2,
                      persistent_workers=True, multiprocessing_context="fork")


def scenario_16():
    broken = _broken("16_*")
    dataset = broken.TokenSequences(*sys.modules["_token_corpus"].make_corpus())
    return DataLoader(dataset, batch_size=32, shuffle=True, num_workers=2)


def scenario_17():
    broken = _broken("17_*")
    return DataLoader(broken.TiledSamples(), batch_size=4, num_workers=2, multiprocessing_context="fork")


def scenario_02():
    broken = _broken("02_*")
    root = Path(tempfile.gettempdir()) / "clinic-doctor-data" / "scenario_02"
    if not root.exists():
        sys.modules["_image_corpus"].write_corpus(root)
    return DataLoader(broken.ImageFolderDataset(root), batch_size=8, num_workers=2,
                      multiprocessing_context="fork")


def scenario_06():
    broken = _broken("06_*")
    folder = Path(tempfile.gettempdir()) / "clinic-doctor-data" / "scenario_06"
    if not folder.exists():
        folder.mkdir(parents=True)
        sys.modules["_record_files"].write_record_files(folder, broken.FILES)
    return DataLoader(broken.RecordDataset(folder), batch_size=16, num_workers=2, prefetch_factor=1,
                      multiprocessing_context="fork")


def scenario_10():
    broken = _broken("10_*")
    return DataLoader(broken.CropDataset(), batch_size=broken.BATCH, num_workers=2, prefetch_factor=16,
                      multiprocessing_context="fork")
