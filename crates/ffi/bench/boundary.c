/*
 * The C half of the C-boundary benchmark (bench/boundary.sh): the loops of
 * examples/boundary_rust.rs through libcairn. Usage: boundary DIR [COUNT].
 * "get" copies into the caller's buffer (cairn_get_into), "get_alloc" into a buffer the
 * library allocates (cairn_get + cairn_free); "get_miss" looks up absent keys in an empty
 * keyspace, so the engine does little and the cost of the boundary shows.
 */
#include "cairn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CPU time of the calling thread: the loops run on it, and it is far less disturbed than
 * wall time by other processes on a shared machine. */
static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void key(unsigned long long i, char *k) {
    memcpy(k, "key-000000000000", 16);
    for (int p = 15; p >= 4; p--) {
        k[p] = (char)('0' + i % 10);
        i /= 10;
    }
}

static void report(const char *name, unsigned long long count, double start) {
    double secs = now() - start;
    printf("%-10s %llu ops %.3f s cpu %.0f ns/op\n", name, count, secs, secs * 1e9 / count);
}

static void check(cairn_status_t st, char *err) {
    if (st != CAIRN_OK) {
        fprintf(stderr, "%s: %s\n", cairn_status_name(st), err ? err : "");
        exit(1);
    }
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: boundary DIR [COUNT]\n");
        return 2;
    }
    unsigned long long count = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000000;
    char *err = NULL;
    cairn_options_t *o = cairn_options_create();
    check(cairn_options_set_durability(o, CAIRN_DURABILITY_NONE, 0, &err), err);
    cairn_options_set_memtable_size(o, 256 << 20);
    cairn_options_set_max_wal_size(o, 1ULL << 30);
    cairn_db_t *db = NULL;
    check(cairn_db_open(o, argv[1], &db, &err), err);
    cairn_keyspace_t *ks = NULL;
    check(cairn_keyspace_open(db, "bench", &ks, &err), err);
    char value[100], k[16], buf[128];
    memset(value, 'v', sizeof value);

    double start = now();
    for (unsigned long long i = 0; i < count; i++) {
        key(i, k);
        check(cairn_put(ks, NULL, k, 16, value, sizeof value, &err), err);
    }
    report("put", count, start);

    unsigned long long found = 0;
    start = now();
    for (unsigned long long i = 0; i < count; i++) {
        key((i * 7919) % count, k);
        size_t len = 0;
        check(cairn_get_into(ks, NULL, k, 16, buf, sizeof buf, &len, &err), err);
        found += len;
    }
    report("get", count, start);

    start = now();
    for (unsigned long long i = 0; i < count; i++) {
        key((i * 7919) % count, k);
        char *v = NULL;
        size_t len = 0;
        check(cairn_get(ks, NULL, k, 16, &v, &len, &err), err);
        found += len;
        cairn_free(v);
    }
    report("get_alloc", count, start);
    /* The fixed cost of a call: gets of absent keys in an empty keyspace. */
    cairn_keyspace_t *empty = NULL;
    check(cairn_keyspace_open(db, "empty", &empty, &err), err);
    start = now();
    for (unsigned long long i = 0; i < count; i++) {
        key(i, k);
        size_t len = 0;
        if (cairn_get_into(empty, NULL, k, 16, buf, sizeof buf, &len, &err) != CAIRN_NOT_FOUND) {
            fprintf(stderr, "found a key in the empty keyspace\n");
            return 1;
        }
    }
    report("get_miss", count, start);
    cairn_keyspace_destroy(empty);
    if (found != count * 200) {
        fprintf(stderr, "found %llu bytes, want %llu\n", found, count * 200);
        return 1;
    }
    cairn_keyspace_destroy(ks);
    check(cairn_db_close(db, &err), err);
    cairn_db_destroy(db);
    cairn_options_destroy(o);
    return 0;
}
