"""sparkey-python lookups per CPU second, through whichever libsparkey the binding loads.

Usage: LD_LIBRARY_PATH=LIBDIR LIBRARY_PATH=LIBDIR python python_lookups.py FILE.spl N LOOKUPS

FILE.spl (with FILE.spi) is a store written by sparkey_bench.c (`write FILE.spl N ...`:
keys "key-%012d" for 0 <= i < N). Runs LOOKUPS random lookups (`reader[key]`) three times
and prints the best rate per CPU second, with the library that was loaded. Run it once with
the reference library's directory and once with Cairn's to compare.
"""

import os
import random
import sys
import time

import sparkey

with open("/proc/self/maps") as maps:
    lib = next(line.split()[-1] for line in maps if "libsparkey" in line)
spl, n, lookups = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
reader = sparkey.HashReader(spl[:-1] + "i", spl)
rng = random.Random(1)
keys = [b"key-%012d" % rng.randrange(n) for _ in range(lookups)]
best = 0.0
for _ in range(3):
    start = time.process_time()
    for k in keys:
        if reader[k] is None:
            sys.exit("missing key %r" % k)
    best = max(best, lookups / (time.process_time() - start))
print("library=%s file=%s lookups_per_cpu_second=%.0f" % (os.path.realpath(lib), os.path.basename(spl), best))
