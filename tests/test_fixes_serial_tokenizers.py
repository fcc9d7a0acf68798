"""fixes/serial_tokenizers.py: encode_batch inside serial_tokenizers() leaves a child forked
later with tokenizers' parallelism (its first encode_batch starts threads), where the same
call outside it leaves the child serial; the variable is restored as it was, error or not.
The fork checks run in a fresh interpreter each: a process that has used tokenizers' pool
stays marked for good, and the pytest process must not carry that mark into other tests."""
import json
import os
import subprocess
import sys

import pytest

from conftest import REPO_ROOT

from fixes.serial_tokenizers import VARIABLE, serial_tokenizers

linux_fork = pytest.mark.skipif(not os.path.isdir("/proc/self/task"),
                                reason="forks and counts threads in /proc/self/task (Linux)")

# The parent encodes a batch (inside the block or not), forks, and the child reports how many
# threads its own first encode_batch started.  The child's answer comes through a pipe; a child
# that hangs is killed after 20 s and reported as None.
_FORK_AFTER_USE = """
import json, os, signal, sys, time
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace
from fixes.serial_tokenizers import serial_tokenizers

words = [f"w{i}" for i in range(500)]
tokenizer = Tokenizer(WordLevel({w: i for i, w in enumerate(["[UNK]"] + words)}, unk_token="[UNK]"))
tokenizer.pre_tokenizer = Whitespace()
texts = [" ".join(words[(i * 7 + k) % 500] for k in range(40)) for i in range(2000)]
threads = lambda: len(os.listdir("/proc/self/task"))
if sys.argv[1] == "inside":
    with serial_tokenizers():
        tokenizer.encode_batch(texts)
else:
    tokenizer.encode_batch(texts)
parent_threads = threads()
read_end, write_end = os.pipe()
pid = os.fork()
if pid == 0:
    before = threads()
    tokenizer.encode_batch(texts)
    os.write(write_end, str(threads() - before).encode())
    os._exit(0)
os.close(write_end)
deadline = time.monotonic() + 20
while os.waitpid(pid, os.WNOHANG) == (0, 0) and time.monotonic() < deadline:
    time.sleep(0.02)
if time.monotonic() >= deadline:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
answer = os.read(read_end, 64)
print(json.dumps({"parent_threads": parent_threads, "child_started": int(answer) if answer else None}))
"""


def fork_after_use(where, **environment):
    env = {k: v for k, v in os.environ.items() if k != VARIABLE}
    done = subprocess.run([sys.executable, "-c", _FORK_AFTER_USE, where], capture_output=True, text=True,
                          timeout=60, cwd=REPO_ROOT, env={**env, "PYTHONPATH": str(REPO_ROOT), **environment})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@linux_fork
def test_a_child_forked_after_the_block_keeps_parallelism_where_one_forked_after_plain_use_loses_it():
    inside, outside = fork_after_use("inside"), fork_after_use("outside")
    # Inside the block the parent started no pool; outside it did (one thread per CPU, at least 1).
    assert outside["parent_threads"] > inside["parent_threads"]
    assert inside["child_started"] >= 1, inside
    assert outside["child_started"] == 0, outside


@linux_fork
def test_the_variable_set_to_true_before_the_block_is_kept_and_the_child_does_not_hang():
    # With TOKENIZERS_PARALLELISM=true and no pool run in the parent, the child's pool is its own.
    result = fork_after_use("inside", TOKENIZERS_PARALLELISM="true")
    assert result["child_started"] is not None, "the child hung"
    assert result["child_started"] >= 1


@pytest.mark.parametrize("before", [None, "true", "false"])
def test_the_variable_is_restored_as_it_was(monkeypatch, before):
    if before is None:
        monkeypatch.delenv(VARIABLE, raising=False)
    else:
        monkeypatch.setenv(VARIABLE, before)
    with serial_tokenizers():
        assert os.environ[VARIABLE] == "false"
    assert os.environ.get(VARIABLE) == before


def test_the_variable_is_restored_when_the_block_raises(monkeypatch):
    monkeypatch.setenv(VARIABLE, "true")
    with pytest.raises(KeyError):
        with serial_tokenizers():
            raise KeyError("a text without an id")
    assert os.environ[VARIABLE] == "true"
