"""Scenario 38: what the runs show beyond their declarations (tests/test_scenarios.py checks those):
a buffer fed one shard at a time hands each worker's first batch out of one shard, with no word from
torch or webdataset; mixed by source, the same buffer of 8 gives every batch several sources; the
buffer bound the scripts print is a count no buffer can exceed; and datasets 5.2.0's own shuffle, which
feeds its buffer from several files unless take() or skip() came first (make test-full)."""
import random
import re

import pytest
import webdataset as wds
from webdataset.filters import _shuffle
from webdataset.mix import random_samples

from conftest import load_scenario_module, scenario_report

FOLDER = "38_shuffle_buffer_too_local"
BATCH_LINE = re.compile(r"^batch +(\d+): (.+)$", re.M)


@pytest.fixture(scope="module")
def report():
    return scenario_report("38")


@pytest.fixture(scope="module")
def shards():
    return load_scenario_module(FOLDER, "_sorted_shards")


def sources_by_batch(run):
    return {int(n): [part.rsplit(" ", 1)[0] for part in parts.split(", ")]
            for n, parts in BATCH_LINE.findall(run["output_tail"])}


def test_broken_hands_out_each_workers_first_batch_from_one_shard_and_nothing_is_said(report):
    run = report["variants"]["broken"]
    batches = sources_by_batch(run)
    assert len(batches) == 24
    # batch 0 is worker 0's first, batch 1 worker 1's: a buffer of 8 has read 15 samples by its 8th
    assert len(batches[0]) == len(batches[1]) == 1
    assert not re.search(r"Warning|Traceback|torch/|webdataset/", run["output_tail"])


def test_fixed_mixes_every_batch_but_at_most_one(report):
    batches = sources_by_batch(report["variants"]["fixed"])
    assert len(batches) == 24
    assert sum(len(sources) == 1 for sources in batches.values()) <= 1
    assert len(batches[0]) >= 3 and len(batches[1]) >= 3


def test_the_shards_are_sorted_by_source_and_hold_each_sample_once(tmp_path, shards):
    urls = shards.write_shards(tmp_path)
    assert [u.rsplit("/", 1)[1] for u in urls[:3]] == ["books-00000.tar", "books-00001.tar", "code-00000.tar"]
    assert [len(group) for group in shards.by_source(urls)] == [2] * 6
    stream = wds.DataPipeline(wds.SimpleShardList(urls), wds.tarfile_to_samples())
    indices = [int(sample["idx.txt"]) for sample in stream]
    assert indices == list(range(shards.SAMPLES))  # read in order, the corpus is one source after another
    assert [shards.source_of(i) for i in indices[::32]] == list(shards.SOURCES)


def test_split_by_worker_gives_each_worker_one_shard_of_every_source(tmp_path, shards):
    urls = shards.write_shards(tmp_path)
    for worker in (0, 1):
        mine = urls[worker::2]  # what wds.split_by_worker keeps for worker `worker` of 2
        assert [u.rsplit("/", 1)[1] for u in mine] == [f"{s}-{worker:05d}.tar" for s in shards.SOURCES]


def test_a_full_shuffle_mixes_4_65_sources_in_a_batch_of_8(shards):
    rng = random.Random(0)
    corpus = list(range(shards.SAMPLES))
    means = []
    for _ in range(400):
        rng.shuffle(corpus)
        means += [len({shards.source_of(i) for i in corpus[b:b + 8]}) for b in range(0, shards.SAMPLES, 8)]
    assert shards.full_shuffle_distinct(8) == 4.65
    assert abs(sum(means) / len(means) - 4.65) < 0.03


@pytest.mark.parametrize("buffer", [8, 16, 32])
def test_no_buffer_of_b_samples_shows_more_than_b_minus_1_held(shards, buffer):
    # The figure the scripts bound: from a worker's own stream, whatever it mixes, it never passes B - 1.
    for seed in range(200):
        rng = random.Random(seed)
        per_shard = [iter(range(s * shards.PER_SHARD, (s + 1) * shards.PER_SHARD)) for s in range(0, 12, 2)]
        stream = list(_shuffle(random_samples(per_shard, longest=True), buffer, rng=rng))
        assert shards._most_held(stream) <= buffer - 1


def test_a_buffer_of_the_whole_data_shows_it_held_most_of_it(shards):
    rng = random.Random(0)
    mine = [i for s in range(0, 12, 2) for i in range(s * shards.PER_SHARD, (s + 1) * shards.PER_SHARD)]
    stream = list(_shuffle(iter(mine), len(mine), rng=rng))
    assert shards._most_held(stream) >= 30
    assert shards._most_held(mine) == 0  # read in order, handed out in order: nothing held


def test_webdataset_buffer_hands_out_its_first_8_from_the_first_15_read():
    for seed in range(100):
        first = list(_shuffle(iter(range(100)), 8, rng=random.Random(seed)))[:8]
        assert max(first) <= 14


def test_datasets_feeds_its_buffer_from_several_files_unless_take_came_first(tmp_path):
    from datasets import IterableDataset
    from datasets.iterable_dataset import InterleavedShardsExamplesIterable

    def rows(shards):
        for shard in shards:
            yield from ({"idx": shard * 16 + i} for i in range(16))

    stream = IterableDataset.from_generator(rows, gen_kwargs={"shards": list(range(12))})
    assert stream.num_shards == 12
    by_default = stream.shuffle(seed=0, buffer_size=8)._ex_iterable
    assert isinstance(by_default.ex_iterable, InterleavedShardsExamplesIterable)
    one_file = stream.shuffle(seed=0, buffer_size=8, max_buffer_input_shards=1)._ex_iterable
    after_take = stream.take(192).shuffle(seed=0, buffer_size=8)._ex_iterable
    for buffered in (one_file, after_take):
        assert not isinstance(buffered.ex_iterable, InterleavedShardsExamplesIterable)


def test_only_a_buffer_near_the_workers_whole_data_mixes_and_it_holds_it(report):
    figures = report["variants"]["measure_buffer_size"]["metrics"]
    mixes = [figures[f"buffer_{b}_distinct_sources_per_batch"] for b in (8, 16, 32, 96)]
    assert mixes[0] < 3 < mixes[-1]
    assert figures["buffer_96_most_held_in_a_buffer"] >= 2 * figures["buffer_16_most_held_in_a_buffer"]


def test_datasets_default_mixes_files_but_the_worker_split_comes_after_the_file_shuffle(report):
    figures = report["variants"]["measure_datasets_stream"]["metrics"]
    mix = {way: figures[f"{way}_distinct_sources_per_batch"]
           for way in ("one_file_at_a_time", "files_at_once", "interleaved_sources")}
    assert mix["one_file_at_a_time"] < mix["files_at_once"] < mix["interleaved_sources"]
    # seed=0 shuffles the 12 files before the 2 workers take every second one: one gets both files of a source
    assert figures["files_at_once_fewest_sources_in_a_worker"] < 6
    assert figures["take_before_shuffle_fewest_sources_in_a_worker"] == 6


# ---------------------------------------------------------------- the doctor and explain

def _examined(dataset):
    from types import SimpleNamespace

    return SimpleNamespace(setup=SimpleNamespace(iterable=True), loader=SimpleNamespace(dataset=dataset))


def test_the_doctor_notes_a_buffer_fed_one_shard_at_a_time_and_not_the_mixed_one(shards):
    from scenarios.clinic.doctor.checks import s38_shuffle_buffer_too_local as s38

    broken = load_scenario_module(FOLDER, "broken")
    fixed = load_scenario_module(FOLDER, "fixed")
    urls = [f"{source}-{k:05d}.tar" for source in shards.SOURCES for k in (0, 1)]
    found = s38.static(_examined(broken.shard_stream(urls)))
    assert [(f.level, f.check, f.general) for f in found] == [("note", "buffer-fed-one-shard", True)]
    assert "a buffer of 8 fed by one shard after another" in found[0].evidence
    assert s38.static(_examined(fixed.shard_stream(urls))) == []
    assert s38.static(_examined(wds.WebDataset(urls, shardshuffle=False).shuffle(100)))[0].check == \
        "buffer-fed-one-shard"


def test_the_doctor_notes_a_datasets_stream_whose_take_came_before_its_shuffle():
    from datasets import IterableDataset

    from scenarios.clinic.doctor.checks import s38_shuffle_buffer_too_local as s38

    def rows(shards):
        for shard in shards:
            yield from ({"idx": shard * 16 + i} for i in range(16))

    stream = IterableDataset.from_generator(rows, gen_kwargs={"shards": list(range(12))})
    found = s38.static(_examined(stream.take(192).shuffle(seed=0, buffer_size=8)))
    assert [(f.level, f.check) for f in found] == [("note", "buffer-fed-one-shard")]
    assert "of 12 shards shuffles in a buffer of 8 rows" in found[0].evidence
    assert s38.static(_examined(stream.shuffle(seed=0, buffer_size=8))) == []


def test_explain_names_38_for_printed_batches_of_one_label_and_not_for_mixed_ones():
    from scenarios.clinic.doctor.explain import explain_text

    sorted_log = "\n".join(f"step {i} labels: {[i // 3] * 8}" for i in range(6))
    found = [f for f in explain_text(sorted_log) if f.scenario == "38"]
    assert [(f.check, str(f.level)) for f in found] == [("batches-of-one-label", "possible")]
    rng = random.Random(0)
    mixed_log = "\n".join(f"step {i} labels: {[rng.randrange(6) for _ in range(8)]}" for i in range(6))
    assert [f for f in explain_text(mixed_log) if f.scenario == "38"] == []


def test_explain_names_38_for_webdatasets_shard_shuffle_warning():
    from scenarios.clinic.doctor.explain import explain_text

    warned = ("UserWarning: WebDataset(shardshuffle=...) is None; set explicitly to False or a number\n"
              '  warnings.warn("WebDataset(shardshuffle=...) is None; set explicitly to False or a number")')
    assert [(f.scenario, f.check) for f in explain_text(warned)] == [("38", "shards-in-file-order")]
