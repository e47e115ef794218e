/*
 * A small benchmark of the Sparkey C API, linked once against the reference libsparkey and
 * once against Cairn's, so both run the same code on the same files.
 *
 *   sparkey_bench write FILE.spl N none|snappy   puts N entries, closes, builds the index
 *   sparkey_bench read  FILE.spl N LOOKUPS       LOOKUPS random lookups (hash_get + fill_value)
 *
 * Keys are "key-%012llu" (16 bytes), values 100 bytes derived from the key number. Prints
 * one line per measured phase: `op=<op> n=<N> seconds=<wall s> per_second=<rate>
 * cpu_seconds=<s> per_cpu_second=<rate>` (monotonic wall clock; CPU time of the process,
 * user + system). Exit status 1 on any library error or wrong value.
 */
#define _POSIX_C_SOURCE 200809L
#include <sparkey/sparkey.h>

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

/* A point in time: wall clock and the CPU time of this process. */
typedef struct {
  double wall, cpu;
} stamp;

static stamp now(void) {
  stamp s = {clock_seconds(CLOCK_MONOTONIC), clock_seconds(CLOCK_PROCESS_CPUTIME_ID)};
  return s;
}

static void die(const char *what, sparkey_returncode rc) {
  fprintf(stderr, "%s: %s\n", what, sparkey_errstring(rc));
  exit(1);
}

#define TRY(what, expr)                          \
  do {                                           \
    sparkey_returncode rc_ = (expr);             \
    if (rc_ != SPARKEY_SUCCESS) die(what, rc_);  \
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

static void make_value(uint8_t *buf, unsigned long long i) {
  for (int j = 0; j < VALUE_LEN; j++) buf[j] = (uint8_t)('a' + (i * 31 + (unsigned long long)j) % 26);
}

/* Rates per wall-clock second and per CPU second (the latter is steadier on a busy machine). */
static void report(const char *op, unsigned long long n, stamp start) {
  stamp end = now();
  double wall = end.wall - start.wall, cpu = end.cpu - start.cpu;
  printf("op=%s n=%llu seconds=%.3f per_second=%.0f cpu_seconds=%.3f per_cpu_second=%.0f\n", op, n,
         wall, (double)n / wall, cpu, (double)n / cpu);
}

static void index_name(char *out, size_t cap, const char *log) {
  snprintf(out, cap, "%s", log);
  size_t len = strlen(out);
  if (len > 0) out[len - 1] = 'i';
}

static int write_files(const char *log, unsigned long long n, const char *comp) {
  sparkey_compression_type type = strcmp(comp, "snappy") == 0 ? SPARKEY_COMPRESSION_SNAPPY : SPARKEY_COMPRESSION_NONE;
  char spi[4096];
  index_name(spi, sizeof spi, log);
  sparkey_logwriter *w = NULL;
  char key[32];
  uint8_t value[VALUE_LEN];
  stamp t0 = now();
  TRY("create", sparkey_logwriter_create(&w, log, type, 4096));
  for (unsigned long long i = 0; i < n; i++) {
    int kl = make_key(key, i);
    make_value(value, i);
    TRY("put", sparkey_logwriter_put(w, (uint64_t)kl, (uint8_t *)key, VALUE_LEN, value));
  }
  TRY("close", sparkey_logwriter_close(&w));
  report("put", n, t0);
  stamp t1 = now();
  TRY("hash_write", sparkey_hash_write(spi, log, 0));
  report("index", n, t1);
  return 0;
}

static int read_files(const char *log, unsigned long long n, unsigned long long lookups) {
  char spi[4096];
  index_name(spi, sizeof spi, log);
  sparkey_hashreader *r = NULL;
  sparkey_logiter *it = NULL;
  TRY("hash_open", sparkey_hash_open(&r, spi, log));
  sparkey_logreader *lr = sparkey_hash_getreader(r);
  TRY("logiter_create", sparkey_logiter_create(&it, lr));
  char key[32];
  uint8_t value[VALUE_LEN], want[VALUE_LEN];
  unsigned long long x = 88172645463325252ULL, bad = 0;
  stamp t0 = now();
  for (unsigned long long q = 0; q < lookups; q++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    unsigned long long i = x % n;
    int kl = make_key(key, i);
    TRY("hash_get", sparkey_hash_get(r, (uint8_t *)key, (uint64_t)kl, it));
    if (sparkey_logiter_state(it) != SPARKEY_ITER_ACTIVE) {
      bad++;
      continue;
    }
    uint64_t len = 0;
    TRY("fill_value", sparkey_logiter_fill_value(it, lr, VALUE_LEN, value, &len));
    if (q % 1024 == 0) {
      make_value(want, i);
      if (len != VALUE_LEN || memcmp(value, want, VALUE_LEN) != 0) bad++;
    }
  }
  report("get", lookups, t0);
  sparkey_logiter_close(&it);
  sparkey_hash_close(&r);
  if (bad) {
    fprintf(stderr, "%llu lookups missed or returned a wrong value\n", bad);
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 5 && strcmp(argv[1], "write") == 0) return write_files(argv[2], strtoull(argv[3], NULL, 10), argv[4]);
  if (argc == 5 && strcmp(argv[1], "read") == 0)
    return read_files(argv[2], strtoull(argv[3], NULL, 10), strtoull(argv[4], NULL, 10));
  fprintf(stderr, "usage: %s write FILE.spl N none|snappy | read FILE.spl N LOOKUPS\n", argv[0]);
  return 2;
}
