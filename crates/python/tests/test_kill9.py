"""A writer process killed with SIGKILL under `sync` durability loses no acknowledged write.

The child opens the store with durability="sync" and, from several threads, writes keys
and prints each key once its write call has returned (acknowledged). The parent reads
those lines, kills the child with SIGKILL at a random moment, reopens the store and
checks that every printed key is present with its value. Repeated a few rounds on the
same store, so recovery after recovery is covered too.
"""

import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time

import cairn

WRITER = textwrap.dedent(
    """
    import sys, threading
    import cairn

    db = cairn.Db(sys.argv[1], durability="sync", memtable_size=64 << 10)
    ks = db.keyspace("acked")
    round_ = sys.argv[2]
    lock = threading.Lock()

    def work(t):
        i = 0
        while True:
            key = b"r%s-t%d-%07d" % (round_.encode(), t, i)
            if i % 3 == 0:
                with db.batch() as b:
                    b.insert(ks, key, key[::-1])
            else:
                ks[key] = key[::-1]
            with lock:
                sys.stdout.write(key.decode() + "\\n")
                sys.stdout.flush()
            i += 1

    for t in range(3):
        threading.Thread(target=work, args=(t,), daemon=True).start()
    threading.Event().wait()
    """
)


def test_kill9_keeps_every_acknowledged_write(tmp_path):
    store = tmp_path / "store"
    acked = []
    rng = random.Random(19)
    for round_ in range(3):
        child = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(store), str(round_)],
            stdout=subprocess.PIPE,
            text=True,
        )
        # A watchdog, so a writer that hangs before its first line fails the test instead
        # of blocking it; the random moment of the kill is counted from the first
        # acknowledged write, so a slow start on a busy machine does not shorten the run.
        watchdog = threading.Timer(120, child.kill)
        watchdog.start()
        first = child.stdout.readline()
        lines = [first.strip()] if first.endswith("\n") else []
        deadline = time.monotonic() + rng.uniform(0.3, 1.2)
        while lines and time.monotonic() < deadline:
            line = child.stdout.readline()
            if not line.endswith("\n"):
                break
            lines.append(line.strip())
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        watchdog.cancel()
        # Lines the child printed before it died were acknowledged too; a line the kill cut
        # short (no newline) names no key.
        rest = child.stdout.read().split("\n")
        lines.extend(l.strip() for l in rest[:-1])
        child.stdout.close()
        assert child.returncode == -signal.SIGKILL
        acked.extend(l for l in lines if l)
        assert len(lines) > 10, "the writer made no progress"
        with cairn.Db(store) as db:
            ks = db.keyspace("acked")
            missing = [k for k in acked if ks.get(k.encode()) != k.encode()[::-1]]
            assert missing == [], f"{len(missing)} acknowledged writes lost, e.g. {missing[:3]}"
