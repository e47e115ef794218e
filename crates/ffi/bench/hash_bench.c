/*
 * The constant-store benchmark of crates/libsparkey/bench/sparkey_bench.c, through
 * libcairn's own C API (cairn_hash_*), so scripts/bench-libsparkey.sh measures it beside
 * the reference library and Cairn's libsparkey.so on the same files.
 *
 *   hash_bench write FILE.spl N none|snappy   puts N entries, closes, builds the index
 *   hash_bench read  FILE.spl N LOOKUPS       LOOKUPS random lookups (cairn_hash_reader_get_into
 *                                             into one reused buffer)
 *   hash_bench readmany FILE.spl N LOOKUPS    the same keys, 1,024 at a time through
 *                                             cairn_hash_reader_get_many (which overlaps the
 *                                             batch's memory misses; each value is a malloc'ed
 *                                             copy, freed in the loop)
 *   hash_bench readmanyinto FILE.spl N LOOKUPS  the same batches through
 *                                             cairn_hash_reader_get_many_into, which packs
 *                                             the values into one reused buffer
 *
 * Same keys, values, lookup order and output lines as sparkey_bench.c. With
 * CAIRN_BENCH_BLOCK_CACHE=BYTES in the environment, readers open with that cache of decoded
 * blocks (cairn_hash_reader_open_with) instead of the default 64 MiB; 1 leaves room for no
 * block, so every lookup in a compressed log decodes its block, as with the cache off.
 */
#define _POSIX_C_SOURCE 200809L
#include "cairn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define VALUE_LEN 100

static double clock_seconds(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct {
    double wall, cpu;
} stamp;

static stamp now(void) {
    stamp s = {clock_seconds(CLOCK_MONOTONIC), clock_seconds(CLOCK_PROCESS_CPUTIME_ID)};
    return s;
}

static char *err = NULL;

#define TRY(what, expr)                                                                  \
    do {                                                                                 \
        if ((expr) != CAIRN_OK) {                                                        \
            fprintf(stderr, "%s: %s\n", what, err ? err : "failed");                    \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

/* "key-%012llu" written by hand: snprintf took a quarter of a batched lookup's time, a
 * cost of the benchmark rather than of the library measured. Same bytes as snprintf. */
static int make_key(char *buf, unsigned long long i) {
    if (i >= 1000000000000ULL) return snprintf(buf, 32, "key-%012llu", i);
    memcpy(buf, "key-", 4);
    for (int d = 15; d >= 4; d--) {
        buf[d] = (char)('0' + i % 10);
        i /= 10;
    }
    buf[16] = '\0';
    return 16;
}

static void make_value(char *buf, unsigned long long i) {
    for (int j = 0; j < VALUE_LEN; j++) buf[j] = (char)('a' + (i * 31 + (unsigned long long)j) % 26);
}

static void report(const char *op, unsigned long long n, stamp start) {
    stamp end = now();
    double wall = end.wall - start.wall, cpu = end.cpu - start.cpu;
    printf("op=%s n=%llu seconds=%.3f per_second=%.0f cpu_seconds=%.3f per_cpu_second=%.0f\n", op,
           n, wall, (double)n / wall, cpu, (double)n / cpu);
}

static void index_name(char *out, size_t cap, const char *log) {
    snprintf(out, cap, "%s", log);
    size_t len = strlen(out);
    if (len > 0) out[len - 1] = 'i';
}

static int write_files(const char *log, unsigned long long n, const char *comp) {
    int type = strcmp(comp, "snappy") == 0 ? CAIRN_HASH_COMPRESSION_SNAPPY : CAIRN_HASH_COMPRESSION_NONE;
    char spi[4096], key[32], value[VALUE_LEN];
    index_name(spi, sizeof spi, log);
    cairn_hash_logwriter_t *w = NULL;
    stamp t0 = now();
    TRY("create", cairn_hash_logwriter_create(log, type, 4096, &w, &err));
    for (unsigned long long i = 0; i < n; i++) {
        int kl = make_key(key, i);
        make_value(value, i);
        TRY("put", cairn_hash_logwriter_put(w, key, (size_t)kl, value, VALUE_LEN, &err));
    }
    TRY("close", cairn_hash_logwriter_close(w, &err));
    cairn_hash_logwriter_destroy(w);
    report("put", n, t0);
    stamp t1 = now();
    TRY("write_index", cairn_hash_write_index(spi, log, 0, &err));
    report("index", n, t1);
    return 0;
}

/* True if the environment variable `name` is set to something other than "" or "0". */
static int env_flag(const char *name) {
    const char *v = getenv(name);
    return v != NULL && *v != '\0' && strcmp(v, "0") != 0;
}

/* Opens the reader of `log` and its index `spi`, with CAIRN_BENCH_BLOCK_CACHE (bytes of
   the cache of decoded blocks), CAIRN_BENCH_PIN_INDEX and CAIRN_BENCH_LOAD_LOG (the index,
   the log copied into memory) if set. */
static cairn_hash_reader_t *open_reader(const char *spi, const char *log) {
    cairn_hash_reader_t *r = NULL;
    const char *cache = getenv("CAIRN_BENCH_BLOCK_CACHE");
    int pin = env_flag("CAIRN_BENCH_PIN_INDEX"), load = env_flag("CAIRN_BENCH_LOAD_LOG");
    if ((cache != NULL && *cache != '\0') || pin || load) {
        size_t bytes = cache != NULL ? (size_t)strtoull(cache, NULL, 10) : 0;
        TRY("open", cairn_hash_reader_open_with(spi, log, (uint8_t)pin, (uint8_t)load, bytes,
                                                &r, &err));
    } else {
        TRY("open", cairn_hash_reader_open(spi, log, &r, &err));
    }
    return r;
}

static int read_files(const char *log, unsigned long long n, unsigned long long lookups) {
    char spi[4096], key[32], value[VALUE_LEN], want[VALUE_LEN];
    index_name(spi, sizeof spi, log);
    cairn_hash_reader_t *r = open_reader(spi, log);
    unsigned long long x = 88172645463325252ULL, bad = 0;
    stamp t0 = now();
    for (unsigned long long q = 0; q < lookups; q++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        unsigned long long i = x % n;
        int kl = make_key(key, i);
        size_t len = 0;
        cairn_status_t st = cairn_hash_reader_get_into(r, key, (size_t)kl, value, VALUE_LEN, &len, &err);
        if (st == CAIRN_NOT_FOUND) {
            bad++;
            continue;
        }
        TRY("get_into", st);
        if (q % 1024 == 0) {
            make_value(want, i);
            if (len != VALUE_LEN || memcmp(value, want, VALUE_LEN) != 0) bad++;
        }
    }
    report("get", lookups, t0);
    cairn_hash_reader_destroy(r);
    if (bad) {
        fprintf(stderr, "%llu lookups missed or returned a wrong value\n", bad);
        return 1;
    }
    return 0;
}

#define BATCH 1024

/* The next `count` keys of the lookup sequence (the xorshift state `*x`, as read_files
 * draws them), their lengths and pointers, and their numbers in `index`. */
static void next_batch(char keys[][32], const char **key_ptrs, size_t *key_lens,
                       unsigned long long *index, size_t count, unsigned long long *x,
                       unsigned long long n) {
    for (size_t k = 0; k < count; k++) {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        index[k] = *x % n;
        key_lens[k] = (size_t)make_key(keys[k], index[k]);
        key_ptrs[k] = keys[k];
    }
}

static int read_many(const char *log, unsigned long long n, unsigned long long lookups) {
    char spi[4096], want[VALUE_LEN];
    static char keys[BATCH][32];
    const char *key_ptrs[BATCH];
    size_t key_lens[BATCH], value_lens[BATCH];
    unsigned long long index[BATCH];
    char *values[BATCH];
    index_name(spi, sizeof spi, log);
    cairn_hash_reader_t *r = open_reader(spi, log);
    unsigned long long x = 88172645463325252ULL, bad = 0;
    stamp t0 = now();
    for (unsigned long long q = 0; q < lookups; q += BATCH) {
        size_t count = lookups - q < BATCH ? (size_t)(lookups - q) : BATCH;
        next_batch(keys, key_ptrs, key_lens, index, count, &x, n);
        size_t found = 0;
        TRY("get_many", cairn_hash_reader_get_many(r, key_ptrs, key_lens, count, values, value_lens,
                                                   &found, &err));
        bad += count - found;
        for (size_t k = 0; k < count; k++) {
            if (values[k] == NULL) continue;
            if (k == 0) {
                make_value(want, index[k]);
                if (value_lens[k] != VALUE_LEN || memcmp(values[k], want, VALUE_LEN) != 0) bad++;
            }
            cairn_free(values[k]);
        }
    }
    report("get_many", lookups, t0);
    cairn_hash_reader_destroy(r);
    if (bad) {
        fprintf(stderr, "%llu lookups missed or returned a wrong value\n", bad);
        return 1;
    }
    return 0;
}

static int read_many_into(const char *log, unsigned long long n, unsigned long long lookups) {
    char spi[4096], want[VALUE_LEN];
    static char keys[BATCH][32];
    static char packed[BATCH * VALUE_LEN];
    const char *key_ptrs[BATCH];
    size_t key_lens[BATCH], offsets[BATCH], value_lens[BATCH];
    unsigned long long index[BATCH];
    index_name(spi, sizeof spi, log);
    cairn_hash_reader_t *r = open_reader(spi, log);
    unsigned long long x = 88172645463325252ULL, bad = 0;
    stamp t0 = now();
    for (unsigned long long q = 0; q < lookups; q += BATCH) {
        size_t count = lookups - q < BATCH ? (size_t)(lookups - q) : BATCH;
        next_batch(keys, key_ptrs, key_lens, index, count, &x, n);
        size_t found = 0, done = 0;
        TRY("get_many_into", cairn_hash_reader_get_many_into(r, key_ptrs, key_lens, count, packed,
                                                             sizeof packed, offsets, value_lens,
                                                             &found, &done, &err));
        bad += count - found;
        if (offsets[0] != CAIRN_HASH_ABSENT) {
            make_value(want, index[0]);
            if (value_lens[0] != VALUE_LEN || memcmp(packed + offsets[0], want, VALUE_LEN) != 0) bad++;
        }
    }
    report("get_many", lookups, t0);
    cairn_hash_reader_destroy(r);
    if (bad) {
        fprintf(stderr, "%llu lookups missed or returned a wrong value\n", bad);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 5 && strcmp(argv[1], "write") == 0)
        return write_files(argv[2], strtoull(argv[3], NULL, 10), argv[4]);
    if (argc == 5 && strcmp(argv[1], "read") == 0)
        return read_files(argv[2], strtoull(argv[3], NULL, 10), strtoull(argv[4], NULL, 10));
    if (argc == 5 && strcmp(argv[1], "readmany") == 0)
        return read_many(argv[2], strtoull(argv[3], NULL, 10), strtoull(argv[4], NULL, 10));
    if (argc == 5 && strcmp(argv[1], "readmanyinto") == 0)
        return read_many_into(argv[2], strtoull(argv[3], NULL, 10), strtoull(argv[4], NULL, 10));
    fprintf(stderr,
            "usage: %s write FILE.spl N none|snappy | read|readmany|readmanyinto FILE.spl N "
            "LOOKUPS\n",
            argv[0]);
    return 2;
}
