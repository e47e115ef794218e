/*
 * The C API of libcairn, exercised from C: every exported function, its error paths
 * (NULL arguments, closed handles, bad options, damaged files), and a few threads
 * sharing one store. Run by tests/c_api.rs, once normally and once under
 * AddressSanitizer (or valgrind), which must report no leak and no invalid access.
 *
 * Usage: api_test DIR   (DIR: an empty, writable directory)
 */
#include "cairn.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int failures = 0;
static char *err = NULL;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                               \
        }                                                                             \
    } while (0)

/* Runs `call` (which passes &err), checks its status, and that an error has a message
 * and a success or NOT_FOUND has none. */
#define EXPECT(want, call)                                                              \
    do {                                                                                \
        cairn_status_t got_ = (call);                                                   \
        if (got_ != (want)) {                                                           \
            fprintf(stderr, "%s:%d: %s returned %s (%s), want %s\n", __FILE__, __LINE__, \
                    #call, cairn_status_name(got_), err ? err : "no message",           \
                    cairn_status_name(want));                                           \
            failures++;                                                                 \
        } else if ((want) >= 100 && err == NULL) {                                      \
            fprintf(stderr, "%s:%d: %s: no error message\n", __FILE__, __LINE__, #call); \
            failures++;                                                                 \
        } else if ((want) < 100 && err != NULL) {                                       \
            fprintf(stderr, "%s:%d: %s: unexpected message %s\n", __FILE__, __LINE__,   \
                    #call, err);                                                        \
            failures++;                                                                 \
        }                                                                               \
        cairn_free(err);                                                                \
        err = NULL;                                                                     \
    } while (0)

#define S(lit) lit, (sizeof(lit) - 1)

static char dir[4096];

static const char *path_in(const char *name) {
    static char buf[8][4200];
    static int next = 0;
    char *p = buf[next++ % 8];
    snprintf(p, 4200, "%s/%s", dir, name);
    return p;
}

static int equals(const char *data, size_t len, const char *want) {
    return len == strlen(want) && memcmp(data, want, len) == 0;
}

/* The value of `key` in `ks` at `snap`, compared with `want` (NULL: absent). */
static void expect_value(int line, cairn_keyspace_t *ks, const cairn_snapshot_t *snap,
                         const char *key, const char *want) {
    char *value = NULL;
    size_t len = 99;
    cairn_status_t st = cairn_get(ks, snap, key, strlen(key), &value, &len, &err);
    if (want == NULL) {
        if (st != CAIRN_NOT_FOUND || value != NULL || len != 0) {
            fprintf(stderr, "line %d: %s: got %s, want absent\n", line, key,
                    cairn_status_name(st));
            failures++;
        }
    } else if (st != CAIRN_OK || !equals(value, len, want) || value[len] != '\0') {
        fprintf(stderr, "line %d: %s: got %s %.*s (%s), want %s\n", line, key,
                cairn_status_name(st), (int)(value ? len : 0), value ? value : "",
                err ? err : "", want);
        failures++;
    }
    cairn_free(value);
    cairn_free(err);
    err = NULL;
}
#define EXPECT_VALUE(ks, snap, key, want) expect_value(__LINE__, ks, snap, key, want)

/* Drains an iterator, joining its keys with ','. */
static void collect(cairn_iter_t *it, char *out, size_t cap) {
    out[0] = '\0';
    for (;;) {
        cairn_status_t st = cairn_iter_next(it, &err);
        if (st != CAIRN_OK) {
            CHECK(st == CAIRN_NOT_FOUND);
            break;
        }
        const char *k = NULL, *v = NULL;
        size_t kl = 0, vl = 0;
        EXPECT(CAIRN_OK, cairn_iter_key(it, &k, &kl, &err));
        EXPECT(CAIRN_OK, cairn_iter_value(it, &v, &vl, &err));
        CHECK(vl == 1 && v[0] == 'v');
        if (out[0] != '\0') strncat(out, ",", cap - strlen(out) - 1);
        strncat(out, k, kl < cap - strlen(out) - 1 ? kl : cap - strlen(out) - 1);
    }
    cairn_free(err);
    err = NULL;
}

static void flip_byte(const char *path, long offset) {
    int fd = open(path, O_RDWR);
    CHECK(fd >= 0);
    if (fd < 0) return;
    off_t size = lseek(fd, 0, SEEK_END);
    if (offset < 0) offset += size;
    unsigned char b = 0;
    CHECK(pread(fd, &b, 1, offset) == 1);
    b ^= 0x5a;
    CHECK(pwrite(fd, &b, 1, offset) == 1);
    close(fd);
}

/* True if the files at `a` and `b` hold the same bytes. */
static int same_contents(const char *a, const char *b) {
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa != NULL && fb != NULL;
    while (same) {
        int ca = fgetc(fa), cb = fgetc(fb);
        if (ca != cb) same = 0;
        if (ca == EOF || cb == EOF) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

/* The path of the first file in `d` whose name ends with `suffix`. */
static int find_file(const char *d, const char *suffix, char *out, size_t cap) {
    DIR *dp = opendir(d);
    if (!dp) return 0;
    struct dirent *e;
    int found = 0;
    while ((e = readdir(dp)) != NULL) {
        size_t n = strlen(e->d_name), s = strlen(suffix);
        if (n > s && strcmp(e->d_name + n - s, suffix) == 0) {
            snprintf(out, cap, "%s/%s", d, e->d_name);
            found = 1;
            break;
        }
    }
    closedir(dp);
    return found;
}

static void test_status_and_version(void) {
    CHECK(strcmp(cairn_status_name(CAIRN_OK), "CAIRN_OK") == 0);
    CHECK(strcmp(cairn_status_name(CAIRN_IO), "CAIRN_IO") == 0);
    CHECK(strcmp(cairn_status_name(CAIRN_CLOSED), "CAIRN_CLOSED") == 0);
    CHECK(strcmp(cairn_status_name(CAIRN_CONFLICT), "CAIRN_CONFLICT") == 0);
    CHECK(strcmp(cairn_status_name(12345), "CAIRN_UNKNOWN") == 0);
    CHECK(cairn_version() != NULL && strchr(cairn_version(), '.') != NULL);
    cairn_free(NULL);
    cairn_names_free(NULL, 0);
}

static void test_options(void) {
    cairn_options_t *o = cairn_options_create();
    CHECK(o != NULL);
    EXPECT(CAIRN_OK, cairn_options_set_durability(o, CAIRN_DURABILITY_SYNC, 0, &err));
    EXPECT(CAIRN_OK, cairn_options_set_durability(o, CAIRN_DURABILITY_PERIODIC, 1000, &err));
    EXPECT(CAIRN_OK, cairn_options_set_durability(o, CAIRN_DURABILITY_ASYNC, 8, &err));
    EXPECT(CAIRN_OK, cairn_options_set_durability(o, CAIRN_DURABILITY_NONE, 0, &err));
    EXPECT(CAIRN_OK, cairn_options_set_durability(o, CAIRN_DURABILITY_BUFFERED, 0, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_options_set_durability(o, 77, 0, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_options_set_durability(NULL, 0, 0, &err));
    EXPECT(CAIRN_OK, cairn_options_set_compression(o, CAIRN_COMPRESSION_NONE, 0, &err));
    EXPECT(CAIRN_OK, cairn_options_set_compression(o, CAIRN_COMPRESSION_SNAPPY, 0, &err));
    EXPECT(CAIRN_OK, cairn_options_set_compression(o, CAIRN_COMPRESSION_ZSTD, 3, &err));
    EXPECT(CAIRN_OK, cairn_options_set_compression(o, CAIRN_COMPRESSION_LZ4, 0, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_options_set_compression(o, 9, 0, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_options_set_compression(NULL, 0, 0, &err));
    /* Setters without a status ignore NULL. */
    cairn_options_set_create_if_missing(NULL, 1);
    cairn_options_set_memtable_size(NULL, 1);
    cairn_options_set_max_wal_size(NULL, 1);
    cairn_options_set_block_cache_size(NULL, 1);
    cairn_options_set_memory_budget(NULL, 1);
    cairn_options_set_tombstone_compaction_percent(NULL, 1);
    cairn_options_set_idle_compaction_percent(NULL, 1);
    cairn_options_set_memtable_huge_pages(NULL, 1);
    cairn_options_set_mmap_reads(NULL, 1);
    cairn_options_set_row_cache_size(NULL, 1);
    cairn_options_set_blob_threshold(NULL, 1);
    cairn_options_set_background_threads(NULL, 1);
    cairn_options_set_salvage_wal(NULL, 1);
    cairn_options_set_refresh_interval_ms(NULL, 1);
    cairn_options_set_refresh_interval_ms(o, 0);
    cairn_options_destroy(o);
    cairn_options_destroy(NULL);

    cairn_writeoptions_t *w = cairn_writeoptions_create();
    EXPECT(CAIRN_OK, cairn_writeoptions_set_durability(w, CAIRN_DURABILITY_SYNC, 0, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_writeoptions_set_durability(w, -1, 0, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_writeoptions_set_durability(NULL, 0, 0, &err));
    cairn_writeoptions_destroy(w);
    cairn_writeoptions_destroy(NULL);

    cairn_entryoptions_t *e = cairn_entryoptions_create();
    EXPECT(CAIRN_OK, cairn_entryoptions_set_meta(e, 1, NULL, 0, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_entryoptions_set_meta(e, 1, NULL, 3, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_entryoptions_set_meta(NULL, 1, NULL, 0, &err));
    EXPECT(CAIRN_OK, cairn_entryoptions_set_durability(e, CAIRN_DURABILITY_BUFFERED, 0, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_entryoptions_set_durability(e, 99, 0, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_entryoptions_set_durability(NULL, 0, 0, &err));
    cairn_entryoptions_set_ttl_ms(NULL, 1);
    cairn_entryoptions_set_expires_at_ms(NULL, 1);
    cairn_entryoptions_destroy(e);
    cairn_entryoptions_destroy(NULL);
}

/* Every handle-taking function given NULL handles or NULL out-parameters. */
static void test_null_arguments(void) {
    cairn_db_t *db = (cairn_db_t *)1;
    cairn_keyspace_t *ks = (cairn_keyspace_t *)1;
    char *value = (char *)1;
    size_t len = 5;
    uint64_t u = 0;
    int64_t i64 = 0;
    const char *cp = NULL;
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_open(NULL, NULL, &db, &err));
    CHECK(db == NULL);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_open(NULL, "", &db, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_open(NULL, path_in("x"), NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_open_read_only(NULL, NULL, &db, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_open_follower(NULL, NULL, &db, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_refresh(NULL, NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_close(NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_flush(NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_flush_wal(NULL, 1, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_compact(NULL, NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_compact_expired(NULL, NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_collect_garbage(NULL, NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_wait_for_compactions(NULL, &err));
    CHECK(cairn_db_is_read_only(NULL) == -1);
    CHECK(cairn_db_is_follower(NULL) == -1);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_backup(NULL, "x", NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_verify(NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_verify(NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_disk_size(NULL, &u, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_durable_seqno(NULL, &u, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_last_seqno(NULL, &u, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_keyspace_open(NULL, "a", &ks, &err));
    CHECK(ks == NULL);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_keyspace_get(NULL, "a", &ks, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_keyspace_drop(NULL, "a", &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_keyspace_names(NULL, NULL, NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_keyspace_name(NULL, &cp, &len, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_keyspace_count(NULL, NULL, &u, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_keyspace_disk_size(NULL, &u, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_get(NULL, NULL, S("k"), &value, &len, &err));
    CHECK(value == NULL && len == 0);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_get_into(NULL, NULL, S("k"), NULL, 0, &len, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_head(NULL, NULL, S("k"), NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_put(NULL, NULL, S("k"), S("v"), &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_put_entry(NULL, NULL, S("k"), S("v"), &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_delete(NULL, NULL, S("k"), &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_incr(NULL, NULL, S("k"), 1, &i64, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_decr(NULL, NULL, S("k"), 1, &i64, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_delete_range(NULL, NULL, NULL, 0, NULL, 0, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_delete_prefix(NULL, NULL, NULL, 0, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_batch_create(NULL, NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_batch_put(NULL, NULL, S("k"), S("v"), &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_batch_put_entry(NULL, NULL, NULL, S("k"), S("v"), &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_batch_delete(NULL, NULL, S("k"), &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_batch_delete_range(NULL, NULL, NULL, 0, NULL, 0, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_batch_delete_prefix(NULL, NULL, NULL, 0, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_batch_clear(NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_batch_commit(NULL, NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_batch_incr(NULL, NULL, S("k"), 1, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_batch_counter(NULL, 0, NULL, &err));
    CHECK(cairn_batch_count(NULL) == 0);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_snapshot_create(NULL, NULL, &err));
    CHECK(cairn_snapshot_seqno(NULL) == 0);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_iter_range(NULL, NULL, NULL, 0, NULL, 0, 0, NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_iter_prefix(NULL, NULL, NULL, 0, 0, NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_iter_next(NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_iter_seek(NULL, S("k"), &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_iter_key(NULL, &cp, &len, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_iter_value(NULL, &cp, &len, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_logwriter_create(NULL, 0, 0, NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_logwriter_append(NULL, NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_logwriter_put(NULL, S("k"), S("v"), &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_logwriter_delete(NULL, S("k"), &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_logwriter_flush(NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_logwriter_sync(NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_keyspace_open_with(NULL, "a", 0, &ks, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_logwriter_close(NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_write_index(NULL, NULL, 0, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_reader_open(NULL, NULL, NULL, &err));
    CHECK(cairn_hash_reader_num_entries(NULL) == 0);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_reader_get(NULL, S("k"), &value, &len, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_reader_get_into(NULL, S("k"), NULL, 0, &len, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT,
           cairn_hash_reader_get_many(NULL, NULL, NULL, 0, NULL, NULL, NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_reader_get_many_into(NULL, NULL, NULL, 0, NULL, 0,
                                                                   NULL, NULL, NULL, NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_reader_iter(NULL, NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_log_iter(NULL, NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_iter_next(NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_iter_kind(NULL, NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_iter_key(NULL, &cp, &len, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_iter_value(NULL, &cp, &len, &err));
    /* Destroying NULL is a no-op. */
    cairn_db_destroy(NULL);
    cairn_keyspace_destroy(NULL);
    cairn_batch_destroy(NULL);
    cairn_snapshot_destroy(NULL);
    cairn_iter_destroy(NULL);
    cairn_hash_logwriter_destroy(NULL);
    cairn_hash_reader_destroy(NULL);
    cairn_hash_iter_destroy(NULL);
    /* A message left in *errptr is freed before the next one replaces it (no leak). */
    CHECK(cairn_db_flush(NULL, &err) == CAIRN_INVALID_ARGUMENT && err != NULL);
    CHECK(cairn_db_flush(NULL, &err) == CAIRN_INVALID_ARGUMENT && err != NULL);
    cairn_free(err);
    err = NULL;
    /* errptr may be NULL. */
    CHECK(cairn_db_flush(NULL, NULL) == CAIRN_INVALID_ARGUMENT);
}

static void test_bad_options(void) {
    cairn_db_t *db = NULL;
    cairn_options_t *o = cairn_options_create();
    cairn_options_set_memtable_size(o, 10);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_open(o, path_in("bad"), &db, &err));
    CHECK(db == NULL);
    cairn_options_set_memtable_size(o, 1 << 20);
    EXPECT(CAIRN_OK, cairn_options_set_compression(o, CAIRN_COMPRESSION_ZSTD, 99, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_open(o, path_in("bad"), &db, &err));
    EXPECT(CAIRN_OK, cairn_options_set_compression(o, CAIRN_COMPRESSION_LZ4, 0, &err));
    EXPECT(CAIRN_OK, cairn_options_set_durability(o, CAIRN_DURABILITY_ASYNC, 0, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_open(o, path_in("bad"), &db, &err));
    EXPECT(CAIRN_OK, cairn_options_set_durability(o, CAIRN_DURABILITY_SYNC, 0, &err));
    cairn_options_set_create_if_missing(o, 0);
    cairn_status_t st = cairn_db_open(o, path_in("missing"), &db, &err);
    CHECK(st != CAIRN_OK && err != NULL && db == NULL);
    cairn_free(err);
    err = NULL;
    cairn_options_destroy(o);
}

/* A memory budget: too small is refused at open; a valid one is divided as documented
   (5/8 block cache, 1/4 memtables, 1/8 index and filter), each share's use stays within
   it, and 0 removes it again. */
static void test_memory_budget(void) {
    cairn_db_t *db = NULL;
    cairn_options_t *o = cairn_options_create();
    EXPECT(CAIRN_OK, cairn_options_set_durability(o, CAIRN_DURABILITY_BUFFERED, 0, &err));
    cairn_options_set_memory_budget(o, 1 << 20);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_open(o, path_in("budget"), &db, &err));
    CHECK(db == NULL);
    const uint64_t budget = 32u << 20;
    cairn_options_set_memory_budget(o, (size_t)budget);
    cairn_options_set_block_cache_size(o, 1u << 30); /* replaced by the cache's share */
    EXPECT(CAIRN_OK, cairn_db_open(o, path_in("budget"), &db, &err));
    if (db == NULL) {
        cairn_options_destroy(o);
        return;
    }
    cairn_keyspace_t *ks = NULL;
    EXPECT(CAIRN_OK, cairn_keyspace_open(db, "k", &ks, &err));
    char key[32], val[128];
    memset(val, 'v', sizeof val);
    for (int i = 0; i < 20000; i++) {
        int kl = snprintf(key, sizeof key, "key%08d", i);
        EXPECT(CAIRN_OK, cairn_put(ks, NULL, key, kl, val, sizeof val, &err));
    }
    EXPECT(CAIRN_OK, cairn_db_flush(db, &err));
    for (int i = 0; i < 20000; i += 7) {
        int kl = snprintf(key, sizeof key, "key%08d", i);
        size_t len = 0;
        char buf[128];
        EXPECT(CAIRN_OK, cairn_get_into(ks, NULL, key, kl, buf, sizeof buf, &len, &err));
        CHECK(len == sizeof val);
    }
    uint64_t v = 0, limit = 0;
    EXPECT(CAIRN_OK, cairn_db_property_int(db, "stats.memory_budget", &v, &err));
    CHECK(v == budget);
    EXPECT(CAIRN_OK, cairn_db_property_int(db, "stats.block_cache_capacity", &limit, &err));
    CHECK(limit == budget - budget / 4 - budget / 8);
    EXPECT(CAIRN_OK, cairn_db_property_int(db, "stats.block_cache_bytes", &v, &err));
    CHECK(v > 0 && v <= limit);
    EXPECT(CAIRN_OK, cairn_db_property_int(db, "stats.memtable_limit", &limit, &err));
    CHECK(limit == budget / 4);
    EXPECT(CAIRN_OK, cairn_db_property_int(db, "stats.memtable_bytes", &v, &err));
    CHECK(v <= limit);
    EXPECT(CAIRN_OK, cairn_db_property_int(db, "stats.index_filter_limit", &limit, &err));
    CHECK(limit == budget / 8);
    EXPECT(CAIRN_OK, cairn_db_property_int(db, "stats.index_filter_bytes", &v, &err));
    CHECK(v > 0 && v <= limit);
    cairn_keyspace_destroy(ks);
    EXPECT(CAIRN_OK, cairn_db_close(db, &err));
    cairn_db_destroy(db);

    /* 0: no budget; the block cache has its own size again. */
    cairn_options_set_memory_budget(o, 0);
    cairn_options_set_block_cache_size(o, 4u << 20);
    db = NULL;
    EXPECT(CAIRN_OK, cairn_db_open(o, path_in("budget"), &db, &err));
    if (db != NULL) {
        EXPECT(CAIRN_OK, cairn_db_property_int(db, "stats.memory_budget", &v, &err));
        CHECK(v == 0);
        EXPECT(CAIRN_OK, cairn_db_property_int(db, "stats.block_cache_capacity", &v, &err));
        CHECK(v == 4u << 20);
        EXPECT(CAIRN_OK, cairn_db_property_int(db, "stats.index_filter_limit", &v, &err));
        CHECK(v == 0);
        cairn_db_destroy(db);
    }
    cairn_options_destroy(o);
}

/* The compaction percentages, huge-page memtables and mapped table reads reach the
 * engine: an out-of-range percentage is refused at open, and a store on huge-page
 * memtables with both triggers set, reading its tables through maps, writes, flushes,
 * reopens and reads. */
static void test_compaction_options(void) {
    cairn_db_t *db = NULL;
    cairn_options_t *o = cairn_options_create();
    EXPECT(CAIRN_OK, cairn_options_set_durability(o, CAIRN_DURABILITY_BUFFERED, 0, &err));
    cairn_options_set_tombstone_compaction_percent(o, 101);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_open(o, path_in("compaction-options"), &db, &err));
    CHECK(db == NULL);
    cairn_options_set_tombstone_compaction_percent(o, 0);
    cairn_options_set_idle_compaction_percent(o, 0);
    cairn_options_set_memtable_huge_pages(o, 1);
    cairn_options_set_mmap_reads(o, 1);
    cairn_options_set_row_cache_size(o, 1u << 20);
    for (int round = 0; round < 2; round++) {
        db = NULL;
        EXPECT(CAIRN_OK, cairn_db_open(o, path_in("compaction-options"), &db, &err));
        if (db == NULL) break;
        cairn_keyspace_t *ks = NULL;
        EXPECT(CAIRN_OK, cairn_keyspace_open(db, "k", &ks, &err));
        char key[32], val[64];
        memset(val, 'a' + round, sizeof val);
        for (int i = 0; i < 5000; i++) {
            int kl = snprintf(key, sizeof key, "key%08d", i);
            EXPECT(CAIRN_OK, cairn_put(ks, NULL, key, kl, val, sizeof val, &err));
        }
        /* The reads below come from a table. */
        EXPECT(CAIRN_OK, cairn_db_flush(db, &err));
        for (int i = 0; i < 5000; i += 97) {
            int kl = snprintf(key, sizeof key, "key%08d", i);
            char buf[64];
            size_t len = 0;
            EXPECT(CAIRN_OK, cairn_get_into(ks, NULL, key, kl, buf, sizeof buf, &len, &err));
            CHECK(len == sizeof val && memcmp(buf, val, sizeof val) == 0);
            /* Read again: the row cache answers, with the same value. */
            EXPECT(CAIRN_OK, cairn_get_into(ks, NULL, key, kl, buf, sizeof buf, &len, &err));
            CHECK(len == sizeof val && memcmp(buf, val, sizeof val) == 0);
        }
        uint64_t hits = 0, capacity = 0;
        EXPECT(CAIRN_OK, cairn_db_property_int(db, "stats.row_cache_hits", &hits, &err));
        EXPECT(CAIRN_OK, cairn_db_property_int(db, "stats.row_cache_capacity", &capacity, &err));
        CHECK(hits > 0 && capacity == 1u << 20);
        cairn_keyspace_destroy(ks);
        EXPECT(CAIRN_OK, cairn_db_close(db, &err));
        cairn_db_destroy(db);
    }
    cairn_options_destroy(o);
}

struct worker {
    cairn_keyspace_t *ks;
    int id;
    int errors;
};

static void *work(void *arg) {
    struct worker *w = arg;
    char key[32], val[32];
    for (int i = 0; i < 200; i++) {
        int kl = snprintf(key, sizeof key, "t%d-%03d", w->id, i);
        int vl = snprintf(val, sizeof val, "v%d", i);
        char *e = NULL;
        if (cairn_put(w->ks, NULL, key, kl, val, vl, &e) != CAIRN_OK) w->errors++;
        char buf[32];
        size_t len = 0;
        if (cairn_get_into(w->ks, NULL, key, kl, buf, sizeof buf, &len, &e) != CAIRN_OK ||
            len != (size_t)vl || memcmp(buf, val, len) != 0)
            w->errors++;
        cairn_free(e);
    }
    return NULL;
}

static void test_ordered_store(void) {
    cairn_options_t *o = cairn_options_create();
    EXPECT(CAIRN_OK, cairn_options_set_durability(o, CAIRN_DURABILITY_BUFFERED, 0, &err));
    cairn_options_set_memtable_size(o, 1 << 20);
    cairn_options_set_max_wal_size(o, 64 << 20);
    cairn_options_set_block_cache_size(o, 4 << 20);
    cairn_options_set_background_threads(o, 1);
    cairn_options_set_blob_threshold(o, 0);
    cairn_options_set_salvage_wal(o, 0);
    cairn_options_set_create_if_missing(o, 1);
    const char *store = path_in("store");
    cairn_db_t *db = NULL;
    EXPECT(CAIRN_OK, cairn_db_open(o, store, &db, &err));
    CHECK(db != NULL);
    if (db == NULL) return;

    /* A second open of a locked store fails with IO. */
    cairn_db_t *db2 = NULL;
    EXPECT(CAIRN_IO, cairn_db_open(o, store, &db2, &err));
    CHECK(db2 == NULL);

    /* Keyspaces. */
    cairn_keyspace_t *users = NULL, *emails = NULL, *missing = (cairn_keyspace_t *)1;
    EXPECT(CAIRN_OK, cairn_keyspace_open(db, "users", &users, &err));
    EXPECT(CAIRN_OK, cairn_keyspace_open(db, "emails", &emails, &err));
    EXPECT(CAIRN_NOT_FOUND, cairn_keyspace_get(db, "nope", &missing, &err));
    CHECK(missing == NULL);
    cairn_keyspace_t *users2 = NULL;
    EXPECT(CAIRN_OK, cairn_keyspace_get(db, "users", &users2, &err));
    cairn_keyspace_t *bad = NULL;
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_keyspace_open(db, "", &bad, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_keyspace_open(db, NULL, &bad, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_keyspace_open(db, "\xff\xfe", &bad, &err));
    CHECK(bad == NULL);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_keyspace_open(db, "a", NULL, &err));
    char **names = NULL;
    size_t count = 0;
    EXPECT(CAIRN_OK, cairn_keyspace_names(db, &names, &count, &err));
    int seen = 0;
    for (size_t i = 0; i < count; i++)
        seen += strcmp(names[i], "users") == 0 || strcmp(names[i], "emails") == 0;
    CHECK(seen == 2);
    for (size_t i = 1; i < count; i++) CHECK(strcmp(names[i - 1], names[i]) < 0);
    cairn_names_free(names, count);
    const char *name = NULL;
    size_t name_len = 0;
    EXPECT(CAIRN_OK, cairn_keyspace_name(users2, &name, &name_len, &err));
    CHECK(equals(name, name_len, "users"));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_keyspace_name(users2, NULL, &name_len, &err));
    cairn_keyspace_destroy(users2);

    /* Put, get, get_into, delete. */
    EXPECT(CAIRN_OK, cairn_put(users, NULL, S("u:42"), S("Ada"), &err));
    EXPECT_VALUE(users, NULL, "u:42", "Ada");
    EXPECT_VALUE(users, NULL, "u:43", NULL);
    EXPECT_VALUE(emails, NULL, "u:42", NULL);
    char buf[8];
    size_t len = 0;
    EXPECT(CAIRN_OK, cairn_get_into(users, NULL, S("u:42"), buf, sizeof buf, &len, &err));
    CHECK(len == 3 && memcmp(buf, "Ada", 3) == 0);
    EXPECT(CAIRN_BUFFER_TOO_SMALL, cairn_get_into(users, NULL, S("u:42"), buf, 2, &len, &err));
    CHECK(len == 3);
    EXPECT(CAIRN_BUFFER_TOO_SMALL, cairn_get_into(users, NULL, S("u:42"), NULL, 0, &len, &err));
    EXPECT(CAIRN_NOT_FOUND, cairn_get_into(users, NULL, S("zz"), buf, sizeof buf, &len, &err));
    CHECK(len == 0);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_get_into(users, NULL, S("u:42"), NULL, 4, &len, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_get_into(users, NULL, S("u:42"), buf, 8, NULL, &err));
    char *value = NULL;
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_get(users, NULL, NULL, 3, &value, &len, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_get(users, NULL, S("u:42"), NULL, &len, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_put(users, NULL, NULL, 1, S("v"), &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_put(users, NULL, S("k"), NULL, 1, &err));
    /* Empty key and value, passed as NULL with length 0. */
    EXPECT(CAIRN_OK, cairn_put(users, NULL, NULL, 0, NULL, 0, &err));
    EXPECT(CAIRN_OK, cairn_get(users, NULL, NULL, 0, &value, &len, &err));
    CHECK(value != NULL && len == 0);
    cairn_free(value);
    value = NULL;
    EXPECT(CAIRN_OK, cairn_delete(users, NULL, NULL, 0, &err));
    /* Binary keys and values with NUL bytes. */
    EXPECT(CAIRN_OK, cairn_put(users, NULL, "a\0b", 3, "x\0y", 3, &err));
    EXPECT(CAIRN_OK, cairn_get(users, NULL, "a\0b", 3, &value, &len, &err));
    CHECK(len == 3 && memcmp(value, "x\0y", 3) == 0);
    cairn_free(value);
    EXPECT(CAIRN_OK, cairn_delete(users, NULL, "a\0b", 3, &err));
    /* A key over the 65,535-byte limit. */
    size_t big_len = 70000;
    char *big = calloc(big_len, 1);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_put(users, NULL, big, big_len, S("v"), &err));

    cairn_writeoptions_t *sync = cairn_writeoptions_create();
    EXPECT(CAIRN_OK, cairn_writeoptions_set_durability(sync, CAIRN_DURABILITY_SYNC, 0, &err));
    EXPECT(CAIRN_OK, cairn_put(users, sync, S("u:43"), S("Grace"), &err));
    EXPECT_VALUE(users, NULL, "u:43", "Grace");
    EXPECT(CAIRN_OK, cairn_delete(users, sync, S("u:43"), &err));
    EXPECT_VALUE(users, NULL, "u:43", NULL);
    EXPECT(CAIRN_OK, cairn_delete(users, NULL, S("never-there"), &err));

    /* Entries with tag, metadata and expiry; HEAD. */
    cairn_entryoptions_t *eo = cairn_entryoptions_create();
    EXPECT(CAIRN_OK, cairn_entryoptions_set_meta(eo, 7, S("image/png"), &err));
    cairn_entryoptions_set_ttl_ms(eo, 3600 * 1000);
    EXPECT(CAIRN_OK, cairn_put_entry(users, eo, S("logo"), S("PNG!"), &err));
    EXPECT_VALUE(users, NULL, "logo", "PNG!");
    cairn_head_t head;
    EXPECT(CAIRN_OK, cairn_head(users, NULL, S("logo"), &head, &err));
    CHECK(head.value_len == 4 && head.tag == 7 && head.has_expiry == 1 && head.separated == 0);
    CHECK(head.meta != NULL && equals(head.meta, head.meta_len, "image/png"));
    CHECK(head.seqno > 0 && head.expires_at_ms > 1000000000000ULL);
    cairn_free(head.meta);
    EXPECT(CAIRN_NOT_FOUND, cairn_head(users, NULL, S("nope"), &head, &err));
    CHECK(head.meta == NULL && head.value_len == 0);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_head(users, NULL, S("logo"), NULL, &err));
    EXPECT(CAIRN_OK, cairn_put_entry(users, NULL, S("plain"), S("p"), &err));
    EXPECT(CAIRN_OK, cairn_head(users, NULL, S("plain"), &head, &err));
    CHECK(head.meta == NULL && head.tag == 0 && head.has_expiry == 0 && head.value_len == 1);
    cairn_entryoptions_set_expires_at_ms(eo, 1000); /* long past: invisible at once */
    EXPECT(CAIRN_OK, cairn_put_entry(users, eo, S("gone"), S("x"), &err));
    EXPECT_VALUE(users, NULL, "gone", NULL);
    EXPECT(CAIRN_OK, cairn_entryoptions_set_meta(eo, 1, big, 5000, &err)); /* over 4 KiB */
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_put_entry(users, eo, S("m"), S("v"), &err));
    cairn_entryoptions_destroy(eo);

    /* Counters. */
    int64_t n = 0;
    EXPECT(CAIRN_OK, cairn_incr(users, NULL, S("hits"), 5, &n, &err));
    CHECK(n == 5);
    EXPECT(CAIRN_OK, cairn_decr(users, sync, S("hits"), 7, &n, &err));
    CHECK(n == -2);
    EXPECT(CAIRN_OK, cairn_incr(users, NULL, S("hits"), 1, NULL, &err));
    EXPECT_VALUE(users, NULL, "hits", "-1");
    EXPECT(CAIRN_OK, cairn_put(users, NULL, S("text"), S("abc"), &err));
    EXPECT(CAIRN_NOT_A_COUNTER, cairn_incr(users, NULL, S("text"), 1, &n, &err));
    EXPECT(CAIRN_OK, cairn_put(users, NULL, S("max"), S("9223372036854775807"), &err));
    EXPECT(CAIRN_COUNTER_OVERFLOW, cairn_incr(users, NULL, S("max"), 1, &n, &err));

    /* Range and prefix deletes. */
    const char *ks_keys[] = {"a1", "a2", "a3", "a4", "a5", "b1", "z1", "z2"};
    for (int i = 0; i < 8; i++)
        EXPECT(CAIRN_OK, cairn_put(emails, NULL, ks_keys[i], 2, S("v"), &err));
    EXPECT(CAIRN_OK, cairn_delete_range(emails, NULL, S("a2"), S("a4"), &err));
    EXPECT_VALUE(emails, NULL, "a1", "v");
    EXPECT_VALUE(emails, NULL, "a2", NULL);
    EXPECT_VALUE(emails, NULL, "a3", NULL);
    EXPECT_VALUE(emails, NULL, "a4", "v");
    EXPECT(CAIRN_OK, cairn_delete_range(emails, sync, S("z2"), NULL, 0, &err));
    EXPECT_VALUE(emails, NULL, "z1", "v");
    EXPECT_VALUE(emails, NULL, "z2", NULL);
    EXPECT(CAIRN_OK, cairn_delete_prefix(emails, NULL, S("a"), &err));
    EXPECT_VALUE(emails, NULL, "a1", NULL);
    EXPECT_VALUE(emails, NULL, "a5", NULL);
    EXPECT_VALUE(emails, NULL, "b1", "v");
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_delete_range(emails, NULL, NULL, 2, NULL, 0, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_delete_prefix(emails, NULL, NULL, 2, &err));
    uint64_t u = 0;
    EXPECT(CAIRN_OK, cairn_keyspace_count(emails, NULL, &u, &err));
    CHECK(u == 2); /* b1, z1 */
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_keyspace_count(emails, NULL, NULL, &err));

    /* Batches across keyspaces. */
    cairn_batch_t *batch = NULL;
    EXPECT(CAIRN_OK, cairn_batch_create(db, &batch, &err));
    EXPECT(CAIRN_OK, cairn_batch_put(batch, users, S("u:44"), S("Edsger"), &err));
    EXPECT(CAIRN_OK, cairn_batch_put(batch, emails, S("e@x"), S("u:44"), &err));
    EXPECT(CAIRN_OK, cairn_batch_delete(batch, emails, S("b1"), &err));
    eo = cairn_entryoptions_create();
    EXPECT(CAIRN_OK, cairn_entryoptions_set_meta(eo, 3, S("m"), &err));
    EXPECT(CAIRN_OK, cairn_batch_put_entry(batch, users, eo, S("u:45"), S("Barbara"), &err));
    EXPECT(CAIRN_OK, cairn_batch_put_entry(batch, users, NULL, S("u:46"), S("Tony"), &err));
    cairn_entryoptions_destroy(eo);
    EXPECT(CAIRN_OK, cairn_batch_delete_range(batch, emails, S("z"), NULL, 0, &err));
    EXPECT(CAIRN_OK, cairn_batch_delete_prefix(batch, users, S("text"), &err));
    CHECK(cairn_batch_count(batch) == 7);
    EXPECT_VALUE(users, NULL, "u:44", NULL); /* nothing applied before the commit */
    EXPECT(CAIRN_OK, cairn_batch_commit(batch, sync, &err));
    CHECK(cairn_batch_count(batch) == 0);
    EXPECT_VALUE(users, NULL, "u:44", "Edsger");
    EXPECT_VALUE(emails, NULL, "e@x", "u:44");
    EXPECT_VALUE(emails, NULL, "b1", NULL);
    EXPECT_VALUE(emails, NULL, "z1", NULL);
    EXPECT_VALUE(users, NULL, "text", NULL);
    EXPECT_VALUE(users, NULL, "u:45", "Barbara");
    EXPECT(CAIRN_OK, cairn_head(users, NULL, S("u:45"), &head, &err));
    CHECK(head.tag == 3 && equals(head.meta, head.meta_len, "m"));
    cairn_free(head.meta);
    /* A refused write is reported by the commit, which then applies nothing. */
    EXPECT(CAIRN_OK, cairn_batch_put(batch, users, S("u:47"), S("Niklaus"), &err));
    EXPECT(CAIRN_OK, cairn_batch_put(batch, users, big, big_len, S("v"), &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_batch_commit(batch, NULL, &err));
    CHECK(cairn_batch_count(batch) == 0);
    EXPECT_VALUE(users, NULL, "u:47", NULL);
    EXPECT(CAIRN_OK, cairn_batch_put(batch, users, S("u:48"), S("John"), &err));
    EXPECT(CAIRN_OK, cairn_batch_clear(batch, &err));
    CHECK(cairn_batch_count(batch) == 0);
    EXPECT(CAIRN_OK, cairn_batch_commit(batch, NULL, &err)); /* empty */
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_batch_put(batch, NULL, S("k"), S("v"), &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_batch_put(batch, users, NULL, 1, S("v"), &err));
    free(big);

    /* Counter increments in a batch: they read the batch's own writes and add up; the
       commit reports each new value; a failing one writes nothing of the batch. */
    int64_t counter = 0;
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_batch_counter(batch, 0, &counter, &err));
    EXPECT(CAIRN_OK, cairn_batch_put(batch, users, S("hits"), S("10"), &err));
    EXPECT(CAIRN_OK, cairn_batch_incr(batch, users, S("hits"), 5, &err));
    EXPECT(CAIRN_OK, cairn_batch_incr(batch, emails, S("sent"), -2, &err));
    EXPECT(CAIRN_OK, cairn_batch_incr(batch, users, S("hits"), 1, &err));
    CHECK(cairn_batch_count(batch) == 4);
    EXPECT(CAIRN_OK, cairn_batch_commit(batch, NULL, &err));
    EXPECT(CAIRN_OK, cairn_batch_counter(batch, 0, &counter, &err));
    CHECK(counter == 15);
    EXPECT(CAIRN_OK, cairn_batch_counter(batch, 1, &counter, &err));
    CHECK(counter == -2);
    EXPECT(CAIRN_OK, cairn_batch_counter(batch, 2, &counter, &err));
    CHECK(counter == 16);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_batch_counter(batch, 3, &counter, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_batch_counter(batch, 0, NULL, &err));
    EXPECT_VALUE(users, NULL, "hits", "16");
    EXPECT_VALUE(emails, NULL, "sent", "-2");
    EXPECT(CAIRN_OK, cairn_batch_put(batch, users, S("u:49"), S("Alan"), &err));
    EXPECT(CAIRN_OK, cairn_batch_incr(batch, users, S("hits"), 1, &err));
    EXPECT(CAIRN_OK, cairn_batch_incr(batch, users, S("u:44"), 1, &err)); /* "Edsger" */
    EXPECT(CAIRN_NOT_A_COUNTER, cairn_batch_commit(batch, NULL, &err));
    EXPECT_VALUE(users, NULL, "u:49", NULL);
    EXPECT_VALUE(users, NULL, "hits", "16");
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_batch_counter(batch, 0, &counter, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_batch_incr(batch, NULL, S("k"), 1, &err));

    /* Snapshots. */
    EXPECT(CAIRN_OK, cairn_put(users, NULL, S("s"), S("old"), &err));
    cairn_snapshot_t *snap = NULL;
    EXPECT(CAIRN_OK, cairn_snapshot_create(db, &snap, &err));
    CHECK(cairn_snapshot_seqno(snap) > 0);
    EXPECT(CAIRN_OK, cairn_put(users, NULL, S("s"), S("new"), &err));
    EXPECT(CAIRN_OK, cairn_put(users, NULL, S("s2"), S("v"), &err));
    EXPECT_VALUE(users, snap, "s", "old");
    EXPECT_VALUE(users, NULL, "s", "new");
    EXPECT_VALUE(users, snap, "s2", NULL);
    EXPECT(CAIRN_OK, cairn_get_into(users, snap, S("s"), buf, sizeof buf, &len, &err));
    CHECK(len == 3 && memcmp(buf, "old", 3) == 0);
    EXPECT(CAIRN_NOT_FOUND, cairn_head(users, snap, S("s2"), &head, &err));
    uint64_t at_snap = 0, now = 0;
    EXPECT(CAIRN_OK, cairn_keyspace_count(users, snap, &at_snap, &err));
    EXPECT(CAIRN_OK, cairn_keyspace_count(users, NULL, &now, &err));
    CHECK(now == at_snap + 1);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_snapshot_create(db, NULL, &err));

    /* Iterators: range, prefix, reverse, seek, snapshot. */
    cairn_keyspace_t *scan = NULL;
    EXPECT(CAIRN_OK, cairn_keyspace_open(db, "scan", &scan, &err));
    for (int i = 0; i < 20; i++) {
        char k[8];
        snprintf(k, sizeof k, "k%02d", i);
        EXPECT(CAIRN_OK, cairn_put(scan, NULL, k, 3, S("v"), &err));
    }
    char got[512];
    cairn_iter_t *it = NULL;
    EXPECT(CAIRN_OK, cairn_iter_range(scan, NULL, S("k05"), S("k10"), 0, &it, &err));
    const char *kp = NULL;
    size_t kl = 0;
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_iter_key(it, &kp, &kl, &err)); /* not positioned */
    collect(it, got, sizeof got);
    CHECK(strcmp(got, "k05,k06,k07,k08,k09") == 0);
    EXPECT(CAIRN_NOT_FOUND, cairn_iter_next(it, &err)); /* stays at the end */
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_iter_value(it, &kp, &kl, &err));
    /* Seek restarts the scan within the original range. */
    EXPECT(CAIRN_OK, cairn_iter_seek(it, S("k075"), &err));
    collect(it, got, sizeof got);
    CHECK(strcmp(got, "k08,k09") == 0);
    EXPECT(CAIRN_OK, cairn_iter_seek(it, S("k00"), &err));
    collect(it, got, sizeof got);
    CHECK(strcmp(got, "k05,k06,k07,k08,k09") == 0);
    EXPECT(CAIRN_OK, cairn_iter_seek(it, S("k50"), &err));
    EXPECT(CAIRN_NOT_FOUND, cairn_iter_next(it, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_iter_seek(it, NULL, 3, &err));
    cairn_iter_destroy(it);
    EXPECT(CAIRN_OK, cairn_iter_range(scan, NULL, S("k05"), S("k10"), 1, &it, &err));
    collect(it, got, sizeof got);
    CHECK(strcmp(got, "k09,k08,k07,k06,k05") == 0);
    EXPECT(CAIRN_OK, cairn_iter_seek(it, S("k065"), &err));
    collect(it, got, sizeof got);
    CHECK(strcmp(got, "k06,k05") == 0);
    cairn_iter_destroy(it);
    EXPECT(CAIRN_OK, cairn_iter_range(scan, NULL, NULL, 0, S("k02"), 0, &it, &err));
    collect(it, got, sizeof got);
    CHECK(strcmp(got, "k00,k01") == 0);
    cairn_iter_destroy(it);
    EXPECT(CAIRN_OK, cairn_iter_range(scan, NULL, S("k18"), NULL, 0, 0, &it, &err));
    collect(it, got, sizeof got);
    CHECK(strcmp(got, "k18,k19") == 0);
    cairn_iter_destroy(it);
    EXPECT(CAIRN_OK, cairn_iter_range(scan, NULL, S("k10"), S("k05"), 0, &it, &err));
    EXPECT(CAIRN_NOT_FOUND, cairn_iter_next(it, &err)); /* empty range */
    cairn_iter_destroy(it);
    EXPECT(CAIRN_OK, cairn_iter_prefix(scan, NULL, S("k1"), 0, &it, &err));
    collect(it, got, sizeof got);
    CHECK(strcmp(got, "k10,k11,k12,k13,k14,k15,k16,k17,k18,k19") == 0);
    cairn_iter_destroy(it);
    EXPECT(CAIRN_OK, cairn_iter_prefix(scan, NULL, S("k0"), 1, &it, &err));
    EXPECT(CAIRN_OK, cairn_iter_seek(it, S("k03"), &err));
    collect(it, got, sizeof got);
    CHECK(strcmp(got, "k03,k02,k01,k00") == 0);
    cairn_iter_destroy(it);
    /* A snapshot taken now does not see later writes, across seeks too. */
    cairn_snapshot_t *scan_snap = NULL;
    EXPECT(CAIRN_OK, cairn_snapshot_create(db, &scan_snap, &err));
    EXPECT(CAIRN_OK, cairn_iter_prefix(scan, scan_snap, S("k1"), 0, &it, &err));
    EXPECT(CAIRN_OK, cairn_put(scan, NULL, S("k155"), S("v"), &err));
    EXPECT(CAIRN_OK, cairn_iter_seek(it, S("k15"), &err));
    collect(it, got, sizeof got);
    CHECK(strcmp(got, "k15,k16,k17,k18,k19") == 0);
    cairn_iter_destroy(it);
    EXPECT(CAIRN_OK, cairn_iter_prefix(scan, NULL, NULL, 0, 0, &it, &err));
    collect(it, got, sizeof got);
    CHECK(strstr(got, "k155") != NULL && strncmp(got, "k00,", 4) == 0);
    cairn_iter_destroy(it);
    cairn_snapshot_destroy(scan_snap);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_iter_range(scan, NULL, NULL, 1, NULL, 0, 0, &it, &err));
    CHECK(it == NULL);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_iter_prefix(scan, NULL, NULL, 1, 0, &it, &err));

    /* Head and entry scans: attributes without (or with) values. */
    cairn_entryoptions_t *tagged = cairn_entryoptions_create();
    EXPECT(CAIRN_OK, cairn_entryoptions_set_meta(tagged, 7, S("m!"), &err));
    cairn_entryoptions_set_ttl_ms(tagged, 3600 * 1000);
    EXPECT(CAIRN_OK, cairn_put_entry(scan, tagged, S("k03"), S("tagged"), &err));
    cairn_entryoptions_destroy(tagged);
    EXPECT(CAIRN_OK, cairn_iter_prefix_with(scan, NULL, S("k0"), 0, CAIRN_SCAN_HEADS, &it, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_iter_head(it, &head, &err)); /* not positioned */
    CHECK(head.meta == NULL && head.value_len == 0);
    int heads = 0, tagged_seen = 0;
    while (cairn_iter_next(it, &err) == CAIRN_OK) {
        EXPECT(CAIRN_OK, cairn_iter_key(it, &kp, &kl, &err));
        EXPECT(CAIRN_OK, cairn_iter_head(it, &head, &err));
        EXPECT(CAIRN_INVALID_ARGUMENT, cairn_iter_value(it, &kp, &kl, &err)); /* no values */
        CHECK(head.seqno > 0);
        if (head.tag == 7) {
            tagged_seen++;
            CHECK(head.value_len == 6 && head.has_expiry == 1 && head.expires_at_ms > 0);
            CHECK(head.meta_len == 2 && memcmp(head.meta, "m!", 2) == 0);
        } else {
            CHECK(head.value_len == 1 && head.has_expiry == 0 && head.meta == NULL);
        }
        cairn_free(head.meta);
        heads++;
    }
    CHECK(heads == 10 && tagged_seen == 1);
    cairn_iter_destroy(it);
    EXPECT(CAIRN_OK, cairn_iter_range_with(scan, NULL, S("k03"), S("k05"), 1, CAIRN_SCAN_ENTRIES, &it, &err));
    EXPECT(CAIRN_OK, cairn_iter_next(it, &err)); /* reverse: k04 first */
    EXPECT(CAIRN_OK, cairn_iter_value(it, &kp, &kl, &err));
    CHECK(kl == 1 && kp[0] == 'v');
    EXPECT(CAIRN_OK, cairn_iter_next(it, &err));
    EXPECT(CAIRN_OK, cairn_iter_value(it, &kp, &kl, &err));
    CHECK(kl == 6 && memcmp(kp, "tagged", 6) == 0);
    EXPECT(CAIRN_OK, cairn_iter_head(it, &head, &err));
    CHECK(head.tag == 7 && head.meta_len == 2);
    cairn_free(head.meta);
    EXPECT(CAIRN_NOT_FOUND, cairn_iter_next(it, &err));
    cairn_iter_destroy(it);
    /* A value scan has no heads; an unknown scan kind is refused. */
    EXPECT(CAIRN_OK, cairn_iter_range_with(scan, NULL, NULL, 0, NULL, 0, 0, CAIRN_SCAN_VALUES, &it, &err));
    EXPECT(CAIRN_OK, cairn_iter_next(it, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_iter_head(it, &head, &err));
    cairn_iter_destroy(it);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_iter_range_with(scan, NULL, NULL, 0, NULL, 0, 0, 9, &it, &err));
    CHECK(it == NULL);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_iter_prefix_with(scan, NULL, S("k"), 0, -1, &it, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_iter_head(NULL, &head, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_iter_head(it, NULL, &err));

    /* Threads sharing the store and a keyspace handle. */
    pthread_t threads[4];
    struct worker workers[4];
    for (int i = 0; i < 4; i++) {
        workers[i] = (struct worker){scan, i, 0};
        CHECK(pthread_create(&threads[i], NULL, work, &workers[i]) == 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(threads[i], NULL);
        CHECK(workers[i].errors == 0);
    }

    /* Store-wide operations. */
    EXPECT(CAIRN_OK, cairn_db_flush_wal(db, 0, &err));
    EXPECT(CAIRN_OK, cairn_db_flush_wal(db, 1, &err));
    EXPECT(CAIRN_OK, cairn_db_flush(db, &err));
    size_t runs = 99;
    EXPECT(CAIRN_OK, cairn_db_compact(db, &runs, &err));
    CHECK(runs != 99);
    EXPECT(CAIRN_OK, cairn_db_compact(db, NULL, &err));
    runs = 99;
    EXPECT(CAIRN_OK, cairn_db_compact_expired(db, &runs, &err));
    CHECK(runs == 0); /* nothing has expired */
    EXPECT(CAIRN_OK, cairn_db_compact_expired(db, NULL, &err));
    size_t removed = 99;
    EXPECT(CAIRN_OK, cairn_db_collect_garbage(db, &removed, &err));
    CHECK(removed != 99);
    EXPECT(CAIRN_OK, cairn_db_collect_garbage(db, NULL, &err));
    EXPECT(CAIRN_OK, cairn_db_wait_for_compactions(db, &err));

    /* Properties by name: every listed name answers; unknown names are NOT_FOUND. */
    char **prop_names = NULL;
    size_t prop_count = 0;
    EXPECT(CAIRN_OK, cairn_db_property_names(db, &prop_names, &prop_count, &err));
    CHECK(prop_count > 30);
    int saw_level0 = 0;
    for (size_t i = 0; i < prop_count; i++) {
        uint64_t v = 0;
        EXPECT(CAIRN_OK, cairn_db_property_int(db, prop_names[i], &v, &err));
        if (strcmp(prop_names[i], "stats.tables_at_level.0") == 0) saw_level0 = 1;
    }
    CHECK(saw_level0);
    cairn_names_free(prop_names, prop_count);
    uint64_t pv = 0;
    EXPECT(CAIRN_OK, cairn_db_property_int(db, "stats.flushes", &pv, &err));
    CHECK(pv >= 1);
    EXPECT(CAIRN_OK, cairn_db_property_int(db, "stats.tables", &pv, &err));
    CHECK(pv >= 1);
    EXPECT(CAIRN_OK, cairn_db_property_int(db, "space.table_bytes", &pv, &err));
    CHECK(pv > 0);
    EXPECT(CAIRN_OK, cairn_db_property_int(db, "stats.user_bytes_written", &pv, &err));
    CHECK(pv > 0);
    EXPECT(CAIRN_OK, cairn_db_property_int(db, "recovery.losses", &pv, &err));
    CHECK(pv == 0);
    pv = 5;
    EXPECT(CAIRN_NOT_FOUND, cairn_db_property_int(db, "stats.no_such_thing", &pv, &err));
    CHECK(pv == 0);
    EXPECT(CAIRN_NOT_FOUND, cairn_db_property_int(db, "stats.tables_at_level.99", &pv, &err));
    EXPECT(CAIRN_NOT_FOUND, cairn_db_property_int(db, "stats.tables_at_level.x", &pv, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_property_int(db, NULL, &pv, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_property_int(db, "stats.flushes", NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_property_names(db, NULL, &prop_count, &err));
    char *loss_text = NULL;
    EXPECT(CAIRN_NOT_FOUND, cairn_db_recovery_loss(db, 0, NULL, NULL, &loss_text, &err));
    CHECK(loss_text == NULL);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_recovery_loss(db, 0, NULL, NULL, NULL, &err));
    CHECK(cairn_db_is_read_only(db) == 0);
    CHECK(cairn_db_is_follower(db) == 0);
    EXPECT_VALUE(users, NULL, "u:44", "Edsger");
    EXPECT_VALUE(users, snap, "s", "old"); /* the snapshot survives compaction */
    EXPECT(CAIRN_OK, cairn_db_disk_size(db, &u, &err));
    CHECK(u > 0);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_disk_size(db, NULL, &err));
    EXPECT(CAIRN_OK, cairn_keyspace_disk_size(scan, &u, &err));
    CHECK(u > 0);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_keyspace_disk_size(scan, NULL, &err));
    uint64_t last = 0, durable = 0;
    EXPECT(CAIRN_OK, cairn_db_last_seqno(db, &last, &err));
    EXPECT(CAIRN_OK, cairn_db_durable_seqno(db, &durable, &err));
    CHECK(last > 0 && durable == last);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_last_seqno(db, NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_durable_seqno(db, NULL, &err));
    EXPECT(CAIRN_OK, cairn_db_verify(db, &err));
    EXPECT(CAIRN_IO, cairn_verify(store, &err)); /* locked: the store is open */
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_refresh(db, NULL, &err)); /* not a follower */

    /* Backup, then open the copy read-only. */
    const char *backup = path_in("backup");
    uint64_t backup_seqno = 0;
    EXPECT(CAIRN_OK, cairn_db_backup(db, backup, &backup_seqno, &err));
    CHECK(backup_seqno == last);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_db_backup(db, NULL, NULL, &err));
    CHECK(cairn_db_backup(db, backup, NULL, &err) != CAIRN_OK); /* exists already */
    cairn_free(err);
    err = NULL;
    EXPECT(CAIRN_OK, cairn_verify(backup, &err));
    cairn_db_t *ro = NULL;
    EXPECT(CAIRN_OK, cairn_db_open_read_only(NULL, backup, &ro, &err));
    cairn_keyspace_t *ro_users = NULL;
    EXPECT(CAIRN_OK, cairn_keyspace_get(ro, "users", &ro_users, &err));
    EXPECT_VALUE(ro_users, NULL, "u:44", "Edsger");
    EXPECT(CAIRN_READ_ONLY, cairn_put(ro_users, NULL, S("k"), S("v"), &err));
    cairn_keyspace_t *ro_new = NULL;
    EXPECT(CAIRN_READ_ONLY, cairn_keyspace_open(ro, "new", &ro_new, &err));
    CHECK(ro_new == NULL);
    CHECK(cairn_db_is_read_only(ro) == 1);
    CHECK(cairn_db_is_follower(ro) == 0);
    EXPECT(CAIRN_READ_ONLY, cairn_db_collect_garbage(ro, NULL, &err));
    cairn_keyspace_destroy(ro_users);
    EXPECT(CAIRN_OK, cairn_db_close(ro, &err));
    cairn_db_destroy(ro);

    /* A follower of the live store sees new writes after a refresh. */
    cairn_db_t *follower = NULL;
    EXPECT(CAIRN_OK, cairn_db_open_follower(NULL, store, &follower, &err));
    cairn_keyspace_t *f_users = NULL;
    EXPECT(CAIRN_OK, cairn_keyspace_get(follower, "users", &f_users, &err));
    EXPECT_VALUE(f_users, NULL, "late", NULL);
    EXPECT(CAIRN_OK, cairn_put(users, sync, S("late"), S("comer"), &err));
    uint8_t changed = 0;
    EXPECT(CAIRN_OK, cairn_db_refresh(follower, &changed, &err));
    CHECK(changed == 1);
    EXPECT_VALUE(f_users, NULL, "late", "comer");
    EXPECT(CAIRN_OK, cairn_db_refresh(follower, NULL, &err));
    EXPECT(CAIRN_READ_ONLY, cairn_put(f_users, NULL, S("k"), S("v"), &err));
    cairn_keyspace_destroy(f_users);
    CHECK(cairn_db_is_read_only(follower) == 1);
    CHECK(cairn_db_is_follower(follower) == 1);
    cairn_db_destroy(follower); /* destroy without close closes */

    /* A keyspace with its own value-separation threshold. */
    cairn_keyspace_t *media = NULL;
    EXPECT(CAIRN_OK, cairn_keyspace_open_with(db, "media", 64, &media, &err));
    char clip[200];
    memset(clip, 'c', sizeof clip);
    EXPECT(CAIRN_OK, cairn_put(media, NULL, S("clip"), clip, sizeof clip, &err));
    EXPECT(CAIRN_OK, cairn_put(media, NULL, S("tiny"), S("t"), &err));
    EXPECT(CAIRN_OK, cairn_head(media, NULL, S("clip"), &head, &err));
    CHECK(head.separated == 1 && head.value_len == sizeof clip);
    EXPECT(CAIRN_OK, cairn_head(media, NULL, S("tiny"), &head, &err));
    CHECK(head.separated == 0);
    EXPECT(CAIRN_BUFFER_TOO_SMALL, cairn_get_into(media, NULL, S("clip"), NULL, 0, &len, &err));
    CHECK(len == sizeof clip);
    cairn_keyspace_t *unnamed = NULL;
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_keyspace_open_with(db, NULL, 0, &unnamed, &err));
    CHECK(unnamed == NULL);
    cairn_keyspace_destroy(media);

    /* Dropping a keyspace. */
    EXPECT(CAIRN_OK, cairn_keyspace_drop(db, "emails", &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_put(emails, NULL, S("k"), S("v"), &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_get(emails, NULL, S("e@x"), &value, &len, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_keyspace_drop(db, "emails", &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_keyspace_drop(db, NULL, &err));
    EXPECT(CAIRN_NOT_FOUND, cairn_keyspace_get(db, "emails", &missing, &err));

    /* Close: every handle made from the store reports CLOSED; destroy still works. */
    EXPECT(CAIRN_OK, cairn_iter_prefix(scan, NULL, NULL, 0, 0, &it, &err));
    EXPECT(CAIRN_OK, cairn_db_close(db, &err));
    EXPECT(CAIRN_CLOSED, cairn_db_close(db, &err));
    EXPECT(CAIRN_CLOSED, cairn_put(users, NULL, S("k"), S("v"), &err));
    EXPECT(CAIRN_CLOSED, cairn_get(users, NULL, S("u:44"), &value, &len, &err));
    EXPECT(CAIRN_CLOSED, cairn_get_into(users, NULL, S("u:44"), buf, 8, &len, &err));
    EXPECT(CAIRN_CLOSED, cairn_head(users, NULL, S("u:44"), &head, &err));
    EXPECT(CAIRN_CLOSED, cairn_delete(users, NULL, S("u:44"), &err));
    EXPECT(CAIRN_CLOSED, cairn_incr(users, NULL, S("hits"), 1, &n, &err));
    EXPECT(CAIRN_CLOSED, cairn_keyspace_count(users, NULL, &u, &err));
    EXPECT(CAIRN_CLOSED, cairn_iter_next(it, &err));
    EXPECT(CAIRN_CLOSED, cairn_iter_seek(it, S("k"), &err));
    EXPECT(CAIRN_CLOSED, cairn_batch_put(batch, users, S("k"), S("v"), &err));
    EXPECT(CAIRN_CLOSED, cairn_batch_commit(batch, NULL, &err));
    cairn_snapshot_t *snap2 = NULL;
    EXPECT(CAIRN_CLOSED, cairn_snapshot_create(db, &snap2, &err));
    cairn_keyspace_t *users3 = NULL;
    EXPECT(CAIRN_CLOSED, cairn_keyspace_open(db, "users", &users3, &err));
    EXPECT(CAIRN_CLOSED, cairn_db_flush(db, &err));
    EXPECT(CAIRN_CLOSED, cairn_db_compact_expired(db, NULL, &err));
    EXPECT(CAIRN_CLOSED, cairn_db_collect_garbage(db, NULL, &err));
    EXPECT(CAIRN_CLOSED, cairn_db_wait_for_compactions(db, &err));
    CHECK(cairn_db_is_read_only(db) == -1);
    CHECK(cairn_db_is_follower(db) == -1);
    cairn_batch_t *batch2 = NULL;
    EXPECT(CAIRN_CLOSED, cairn_batch_create(db, &batch2, &err));
    CHECK(snap2 == NULL && batch2 == NULL);
    cairn_iter_destroy(it);
    cairn_batch_destroy(batch);
    cairn_snapshot_destroy(snap);
    cairn_keyspace_destroy(users);
    cairn_keyspace_destroy(emails);
    cairn_keyspace_destroy(scan);
    cairn_writeoptions_destroy(sync);
    cairn_db_destroy(db);

    /* Reopen: the data is there (the lock was released). */
    EXPECT(CAIRN_OK, cairn_db_open(o, store, &db, &err));
    EXPECT(CAIRN_OK, cairn_keyspace_get(db, "users", &users, &err));
    EXPECT_VALUE(users, NULL, "u:44", "Edsger");
    EXPECT_VALUE(users, NULL, "late", "comer");
    cairn_keyspace_destroy(users);
    EXPECT(CAIRN_OK, cairn_db_close(db, &err));
    cairn_db_destroy(db);

    /* A damaged table: verify reports CORRUPTION. */
    char table[4400];
    CHECK(find_file(store, ".sst", table, sizeof table));
    flip_byte(table, 100);
    EXPECT(CAIRN_CORRUPTION, cairn_verify(store, &err));
    CHECK(cairn_verify(path_in("no-such-store"), &err) != CAIRN_OK && err != NULL);
    cairn_free(err);
    err = NULL;
    cairn_options_destroy(o);
}

/* A value source for cairn_put_from: `total` bytes of a pattern, in pieces of at most
   `piece`, failing after `fail_after` bytes if that is not negative. */
struct source {
    size_t total, done, piece;
    long fail_after;
};

static int64_t pattern_read(void *ctx, char *buf, size_t cap) {
    struct source *s = ctx;
    if (s->fail_after >= 0 && s->done >= (size_t)s->fail_after) return -5;
    size_t n = s->total - s->done;
    if (n > cap) n = cap;
    if (n > s->piece) n = s->piece;
    for (size_t i = 0; i < n; i++) buf[i] = (char)((s->done + i) % 251);
    s->done += n;
    return (int64_t)n;
}

/* Streaming values in and out: a 3 MiB separated value and a small inline one. */
static void test_streaming(void) {
    cairn_options_t *o = cairn_options_create();
    const char *store = path_in("stream");
    cairn_db_t *db = NULL;
    EXPECT(CAIRN_OK, cairn_db_open(o, store, &db, &err));
    if (db == NULL) return;
    cairn_keyspace_t *media = NULL, *small = NULL;
    EXPECT(CAIRN_OK, cairn_keyspace_open_with(db, "media", 4096, &media, &err));
    EXPECT(CAIRN_OK, cairn_keyspace_open(db, "small", &small, &err));
    cairn_entryoptions_t *e = cairn_entryoptions_create();
    EXPECT(CAIRN_OK, cairn_entryoptions_set_meta(e, 3, S("video"), &err));
    struct source src = {3u << 20, 0, 10000, -1};
    EXPECT(CAIRN_OK, cairn_put_from(media, e, S("clip"), src.total, pattern_read, &src, &err));
    CHECK(src.done == src.total);
    cairn_entryoptions_destroy(e);
    cairn_head_t head;
    EXPECT(CAIRN_OK, cairn_head(media, NULL, S("clip"), &head, &err));
    CHECK(head.separated == 1 && head.value_len == src.total && head.tag == 3);
    cairn_free(head.meta);
    struct source tiny = {100, 0, 7, -1};
    EXPECT(CAIRN_OK, cairn_put_from(small, NULL, S("t"), 100, pattern_read, &tiny, &err));

    /* Read back in odd-sized pieces; every byte is the pattern's. */
    cairn_value_reader_t *r = NULL;
    EXPECT(CAIRN_OK, cairn_value_reader_open(media, S("clip"), &r, &err));
    CHECK(cairn_value_reader_len(r) == src.total);
    char piece[7001];
    size_t got = 0, n = 0;
    int bad = 0;
    do {
        EXPECT(CAIRN_OK, cairn_value_reader_read(r, piece, sizeof piece, &n, &err));
        for (size_t i = 0; i < n; i++)
            if (piece[i] != (char)((got + i) % 251)) bad = 1;
        got += n;
    } while (n > 0);
    CHECK(got == src.total && !bad);
    EXPECT(CAIRN_OK, cairn_value_reader_read(r, piece, sizeof piece, &n, &err));
    CHECK(n == 0); /* stays at the end */
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_value_reader_read(r, NULL, 3, &n, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_value_reader_read(r, piece, 3, NULL, &err));
    cairn_value_reader_destroy(r);
    EXPECT(CAIRN_OK, cairn_value_reader_open(small, S("t"), &r, &err));
    EXPECT(CAIRN_OK, cairn_value_reader_read(r, piece, sizeof piece, &n, &err));
    CHECK(n == 100 && piece[99] == (char)99);
    cairn_value_reader_destroy(r);
    r = (cairn_value_reader_t *)1;
    EXPECT(CAIRN_NOT_FOUND, cairn_value_reader_open(media, S("absent"), &r, &err));
    CHECK(r == NULL);
    CHECK(cairn_value_reader_len(NULL) == 0);

    /* A failing or short source writes nothing. */
    struct source failing = {1u << 20, 0, 4096, 300000};
    EXPECT(CAIRN_IO, cairn_put_from(media, NULL, S("broken"), failing.total, pattern_read, &failing, &err));
    struct source short_src = {1000, 0, 4096, -1};
    EXPECT(CAIRN_IO, cairn_put_from(small, NULL, S("short"), 2000, pattern_read, &short_src, &err));
    EXPECT(CAIRN_NOT_FOUND, cairn_head(media, NULL, S("broken"), &head, &err));
    EXPECT(CAIRN_NOT_FOUND, cairn_head(small, NULL, S("short"), &head, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_put_from(small, NULL, S("k"), 1, NULL, NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_value_reader_open(NULL, S("k"), &r, &err));

    /* A reader outlives the store's close, and then reports CLOSED. */
    EXPECT(CAIRN_OK, cairn_value_reader_open(media, S("clip"), &r, &err));
    EXPECT(CAIRN_OK, cairn_db_close(db, &err));
    EXPECT(CAIRN_CLOSED, cairn_value_reader_read(r, piece, sizeof piece, &n, &err));
    cairn_value_reader_destroy(r);
    cairn_value_reader_destroy(NULL);
    cairn_keyspace_destroy(media);
    cairn_keyspace_destroy(small);
    cairn_db_destroy(db);
    cairn_options_destroy(o);
}

/* Transactions: read-your-own-writes, commit, rollback, conflicts, write skew. */
static void test_transactions(void) {
    cairn_options_t *o = cairn_options_create();
    EXPECT(CAIRN_OK, cairn_options_set_durability(o, CAIRN_DURABILITY_BUFFERED, 0, &err));
    const char *store = path_in("txn");
    cairn_db_t *db = NULL;
    EXPECT(CAIRN_OK, cairn_db_open(o, store, &db, &err));
    if (db == NULL) return;
    cairn_keyspace_t *acct = NULL;
    EXPECT(CAIRN_OK, cairn_keyspace_open(db, "accounts", &acct, &err));
    EXPECT(CAIRN_OK, cairn_put(acct, NULL, S("alice"), S("100"), &err));

    cairn_txn_t *t = NULL;
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_txn_begin(db, 7, &t, &err));
    CHECK(t == NULL);
    EXPECT(CAIRN_OK, cairn_txn_begin(db, CAIRN_ISOLATION_SNAPSHOT, &t, &err));
    int64_t n = 0;
    EXPECT(CAIRN_OK, cairn_txn_incr(t, acct, S("alice"), -30, &n, &err));
    CHECK(n == 70);
    EXPECT(CAIRN_OK, cairn_txn_incr(t, acct, S("bob"), 30, &n, &err));
    CHECK(n == 30);
    char *v = NULL;
    size_t vl = 0;
    EXPECT(CAIRN_OK, cairn_txn_get(t, acct, S("alice"), &v, &vl, &err));
    CHECK(equals(v, vl, "70")); /* its own write */
    cairn_free(v);
    EXPECT_VALUE(acct, NULL, "alice", "100"); /* not yet outside */
    EXPECT(CAIRN_OK, cairn_txn_put(t, acct, NULL, S("note"), S("x"), &err));
    EXPECT(CAIRN_OK, cairn_txn_delete(t, acct, S("note"), &err));
    EXPECT(CAIRN_NOT_FOUND, cairn_txn_get(t, acct, S("note"), &v, &vl, &err));
    CHECK(v == NULL);
    EXPECT(CAIRN_OK, cairn_txn_commit(t, NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_txn_commit(t, NULL, &err)); /* done */
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_txn_put(t, acct, NULL, S("k"), S("v"), &err));
    cairn_txn_destroy(t);
    EXPECT_VALUE(acct, NULL, "alice", "70");
    EXPECT_VALUE(acct, NULL, "bob", "30");
    EXPECT_VALUE(acct, NULL, "note", NULL);

    /* A write after the snapshot to a key the transaction writes: CONFLICT, nothing
       written. */
    EXPECT(CAIRN_OK, cairn_txn_begin(db, CAIRN_ISOLATION_SNAPSHOT, &t, &err));
    EXPECT(CAIRN_OK, cairn_txn_put(t, acct, NULL, S("alice"), S("0"), &err));
    EXPECT(CAIRN_OK, cairn_txn_put(t, acct, NULL, S("carol"), S("1"), &err));
    EXPECT(CAIRN_OK, cairn_put(acct, NULL, S("alice"), S("71"), &err));
    cairn_status_t st = cairn_txn_commit(t, NULL, &err);
    CHECK(st == CAIRN_CONFLICT && err != NULL && strstr(err, "alice") != NULL);
    cairn_free(err);
    err = NULL;
    cairn_txn_destroy(t);
    EXPECT_VALUE(acct, NULL, "alice", "71");
    EXPECT_VALUE(acct, NULL, "carol", NULL);

    /* Write skew: both commit under snapshot isolation, the second conflicts when
       serializable. */
    for (int iso = CAIRN_ISOLATION_SNAPSHOT; iso <= CAIRN_ISOLATION_SERIALIZABLE; iso++) {
        EXPECT(CAIRN_OK, cairn_put(acct, NULL, S("x"), S("1"), &err));
        EXPECT(CAIRN_OK, cairn_put(acct, NULL, S("y"), S("1"), &err));
        cairn_txn_t *t1 = NULL, *t2 = NULL;
        EXPECT(CAIRN_OK, cairn_txn_begin(db, iso, &t1, &err));
        EXPECT(CAIRN_OK, cairn_txn_begin(db, iso, &t2, &err));
        EXPECT(CAIRN_OK, cairn_txn_get(t1, acct, S("y"), &v, &vl, &err));
        cairn_free(v);
        EXPECT(CAIRN_OK, cairn_txn_get(t2, acct, S("x"), &v, &vl, &err));
        cairn_free(v);
        EXPECT(CAIRN_OK, cairn_txn_put(t1, acct, NULL, S("x"), S("0"), &err));
        EXPECT(CAIRN_OK, cairn_txn_put(t2, acct, NULL, S("y"), S("0"), &err));
        EXPECT(CAIRN_OK, cairn_txn_commit(t1, NULL, &err));
        if (iso == CAIRN_ISOLATION_SNAPSHOT) {
            EXPECT(CAIRN_OK, cairn_txn_commit(t2, NULL, &err));
        } else {
            EXPECT(CAIRN_CONFLICT, cairn_txn_commit(t2, NULL, &err));
        }
        cairn_txn_destroy(t1);
        cairn_txn_destroy(t2);
    }

    /* Rollback, destroy without commit, range removes, refusals. */
    EXPECT(CAIRN_OK, cairn_txn_begin(db, CAIRN_ISOLATION_SNAPSHOT, &t, &err));
    EXPECT(CAIRN_OK, cairn_txn_delete_range(t, acct, NULL, 0, NULL, 0, &err));
    EXPECT(CAIRN_NOT_FOUND, cairn_txn_get(t, acct, S("alice"), &v, &vl, &err));
    EXPECT(CAIRN_OK, cairn_txn_rollback(t, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_txn_rollback(t, &err));
    cairn_txn_destroy(t);
    EXPECT(CAIRN_OK, cairn_txn_begin(db, CAIRN_ISOLATION_SERIALIZABLE, &t, &err));
    EXPECT(CAIRN_OK, cairn_txn_delete_range(t, acct, S("a"), S("c"), &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_txn_delete_range(t, acct, NULL, 2, NULL, 0, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_txn_get(t, acct, S("k"), NULL, &vl, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_txn_incr(t, NULL, S("k"), 1, NULL, &err));
    cairn_txn_destroy(t); /* rolled back */
    EXPECT_VALUE(acct, NULL, "alice", "71");
    EXPECT_VALUE(acct, NULL, "bob", "30");
    EXPECT(CAIRN_OK, cairn_put(acct, NULL, S("word"), S("abc"), &err));
    EXPECT(CAIRN_OK, cairn_txn_begin(db, CAIRN_ISOLATION_SNAPSHOT, &t, &err));
    EXPECT(CAIRN_NOT_A_COUNTER, cairn_txn_incr(t, acct, S("word"), 1, NULL, &err));
    cairn_txn_destroy(t);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_txn_begin(NULL, 0, &t, &err));
    CHECK(t == NULL);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_txn_commit(NULL, NULL, &err));
    cairn_txn_destroy(NULL);

    /* After the store closes, a transaction reports CLOSED. */
    EXPECT(CAIRN_OK, cairn_txn_begin(db, CAIRN_ISOLATION_SNAPSHOT, &t, &err));
    EXPECT(CAIRN_OK, cairn_db_close(db, &err));
    EXPECT(CAIRN_CLOSED, cairn_txn_put(t, acct, NULL, S("k"), S("v"), &err));
    EXPECT(CAIRN_CLOSED, cairn_txn_commit(t, NULL, &err));
    cairn_txn_destroy(t);
    cairn_keyspace_destroy(acct);
    cairn_db_destroy(db);
    cairn_options_destroy(o);
}

/* A damaged log record: the open refuses it; a salvaging open drops it and says so. */
static void test_recovery_report(void) {
    cairn_options_t *o = cairn_options_create();
    EXPECT(CAIRN_OK, cairn_options_set_durability(o, CAIRN_DURABILITY_SYNC, 0, &err));
    const char *store = path_in("salvage");
    cairn_db_t *db = NULL;
    EXPECT(CAIRN_OK, cairn_db_open(o, store, &db, &err));
    if (db == NULL) return;
    cairn_keyspace_t *ks = NULL;
    EXPECT(CAIRN_OK, cairn_keyspace_open(db, "ks", &ks, &err));
    char value[64];
    memset(value, 'x', sizeof value);
    for (int i = 0; i < 100; i++) {
        char k[8];
        snprintf(k, sizeof k, "k%03d", i);
        EXPECT(CAIRN_OK, cairn_put(ks, NULL, k, 4, value, sizeof value, &err));
    }
    cairn_keyspace_destroy(ks);
    EXPECT(CAIRN_OK, cairn_db_close(db, &err));
    cairn_db_destroy(db);

    char wal[4400];
    CHECK(find_file(store, ".wal", wal, sizeof wal));
    struct stat st;
    CHECK(stat(wal, &st) == 0 && st.st_size > 4000);
    /* Damage the payload of the 51st write's record, walking the log's framing
       (wal/FORMAT.md: a 20-byte file header, then records with 24-byte headers whose
       bytes 8..12 hold the payload length and byte 12 the kind, 1 for a write batch). */
    long damaged = -1;
    FILE *f = fopen(wal, "rb");
    CHECK(f != NULL);
    if (f == NULL) return;
    unsigned char *bytes = malloc((size_t)st.st_size);
    CHECK(bytes != NULL && fread(bytes, 1, (size_t)st.st_size, f) == (size_t)st.st_size);
    fclose(f);
    int batches = 0;
    for (long at = 20; at + 24 <= (long)st.st_size;) {
        uint32_t plen = (uint32_t)bytes[at + 8] | (uint32_t)bytes[at + 9] << 8 |
                        (uint32_t)bytes[at + 10] << 16 | (uint32_t)bytes[at + 11] << 24;
        if (bytes[at + 12] == 1 && ++batches == 52) damaged = at; /* 1st batch: the keyspace */
        at += 24 + (long)plen;
    }
    free(bytes);
    CHECK(damaged > 0);
    flip_byte(wal, damaged + 24);
    db = NULL;
    EXPECT(CAIRN_CORRUPTION, cairn_db_open(o, store, &db, &err));
    CHECK(db == NULL);
    cairn_options_set_salvage_wal(o, 1);
    EXPECT(CAIRN_OK, cairn_db_open(o, store, &db, &err));
    if (db == NULL) return;
    uint64_t losses = 0, durable_lost = 9, records = 0;
    EXPECT(CAIRN_OK, cairn_db_property_int(db, "recovery.losses", &losses, &err));
    EXPECT(CAIRN_OK, cairn_db_property_int(db, "recovery.lost_durable_writes", &durable_lost, &err));
    EXPECT(CAIRN_OK, cairn_db_property_int(db, "recovery.replayed_records", &records, &err));
    CHECK(losses == 1 && durable_lost == 1 && records > 0);
    /* Exactly the damaged record's write is gone. */
    cairn_keyspace_t *kept = NULL;
    uint64_t present = 0;
    EXPECT(CAIRN_OK, cairn_keyspace_get(db, "ks", &kept, &err));
    EXPECT(CAIRN_OK, cairn_keyspace_count(kept, NULL, &present, &err));
    CHECK(present == 99);
    cairn_keyspace_destroy(kept);
    char *text = NULL;
    uint64_t offset = 0, len = 0;
    EXPECT(CAIRN_OK, cairn_db_recovery_loss(db, 0, &offset, &len, &text, &err));
    CHECK(text != NULL && strstr(text, ".wal") != NULL && len > 0);
    CHECK(offset == (uint64_t)damaged);
    cairn_free(text);
    text = NULL;
    EXPECT(CAIRN_NOT_FOUND, cairn_db_recovery_loss(db, (size_t)losses, NULL, NULL, &text, &err));
    CHECK(text == NULL);
    EXPECT(CAIRN_OK, cairn_db_close(db, &err));
    cairn_db_destroy(db);
    cairn_options_destroy(o);
}

static void test_constant_store(void) {
    const char *log = path_in("fruit.spl"), *index = path_in("fruit.spi");
    cairn_hash_logwriter_t *w = NULL;
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_logwriter_create(log, 9, 0, &w, &err));
    CHECK(w == NULL);
    EXPECT(CAIRN_INVALID_ARGUMENT,
           cairn_hash_logwriter_create(log, CAIRN_HASH_COMPRESSION_SNAPPY, 1, &w, &err));
    EXPECT(CAIRN_OK, cairn_hash_logwriter_create(log, CAIRN_HASH_COMPRESSION_NONE, 0, &w, &err));
    for (int i = 0; i < 100; i++) {
        char k[16], v[16];
        int kl = snprintf(k, sizeof k, "key%d", i), vl = snprintf(v, sizeof v, "value%d", i);
        EXPECT(CAIRN_OK, cairn_hash_logwriter_put(w, k, kl, v, vl, &err));
    }
    EXPECT(CAIRN_OK, cairn_hash_logwriter_delete(w, S("key7"), &err));
    EXPECT(CAIRN_OK, cairn_hash_logwriter_put(w, NULL, 0, NULL, 0, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_logwriter_put(w, NULL, 1, NULL, 0, &err));
    EXPECT(CAIRN_OK, cairn_hash_logwriter_flush(w, &err));
    EXPECT(CAIRN_OK, cairn_hash_logwriter_sync(w, &err));
    EXPECT(CAIRN_OK, cairn_hash_logwriter_close(w, &err));
    EXPECT(CAIRN_CLOSED, cairn_hash_logwriter_close(w, &err));
    EXPECT(CAIRN_CLOSED, cairn_hash_logwriter_put(w, S("k"), S("v"), &err));
    EXPECT(CAIRN_CLOSED, cairn_hash_logwriter_delete(w, S("k"), &err));
    EXPECT(CAIRN_CLOSED, cairn_hash_logwriter_flush(w, &err));
    EXPECT(CAIRN_CLOSED, cairn_hash_logwriter_sync(w, &err));
    cairn_hash_logwriter_destroy(w);
    EXPECT(CAIRN_OK, cairn_hash_logwriter_append(log, &w, &err));
    EXPECT(CAIRN_OK, cairn_hash_logwriter_put(w, S("extra"), S("appended"), &err));
    cairn_hash_logwriter_destroy(w); /* destroy without close flushes */
    EXPECT(CAIRN_IO, cairn_hash_logwriter_append(path_in("none.spl"), &w, &err));

    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_write_index(index, log, 3, &err));
    EXPECT(CAIRN_OK, cairn_hash_write_index(index, log, 0, &err));
    EXPECT(CAIRN_OK, cairn_hash_write_index(index, log, 8, &err));
    EXPECT(CAIRN_OK, cairn_hash_write_index(index, log, 4, &err));

    /* Verify: the pair is whole; a report says what was checked. */
    cairn_hash_verify_report_t vr;
    memset(&vr, 0xff, sizeof vr);
    EXPECT(CAIRN_OK, cairn_hash_verify(index, log, &vr, &err));
    CHECK(vr.puts == 102 && vr.deletes == 1 && vr.live_entries == 101 && vr.slots_checked == 101);
    EXPECT(CAIRN_OK, cairn_hash_verify(index, log, NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_verify(NULL, log, NULL, &err));
    char none[4200];
    snprintf(none, sizeof none, "%s/none.spi", dir);
    EXPECT(CAIRN_IO, cairn_hash_verify(none, log, NULL, &err));

    /* A fixed file identifier and seed give byte-identical files from the same puts;
       a fresh build with another seed gives another index that verifies too. */
    char logs[2][4200], indexes[2][4200];
    for (int copy = 0; copy < 2; copy++) {
        snprintf(logs[copy], sizeof logs[copy], "%s/same-%d.spl", dir, copy);
        snprintf(indexes[copy], sizeof indexes[copy], "%s/same-%d.spi", dir, copy);
    }
    uint32_t file_id = 0xC0FFEE, seed = 42, other_seed = 7;
    for (int copy = 0; copy < 2; copy++) {
        cairn_hash_logwriter_t *fw = NULL;
        EXPECT(CAIRN_OK, cairn_hash_logwriter_create_with(logs[copy], CAIRN_HASH_COMPRESSION_SNAPPY,
                                                          512, &file_id, &fw, &err));
        for (int i = 0; i < 300; i++) {
            char k[16];
            int kl = snprintf(k, sizeof k, "key%d", i);
            EXPECT(CAIRN_OK, cairn_hash_logwriter_put(fw, k, kl, S("same"), &err));
        }
        EXPECT(CAIRN_OK, cairn_hash_logwriter_close(fw, &err));
        cairn_hash_logwriter_destroy(fw);
        EXPECT(CAIRN_OK, cairn_hash_write_index_with(indexes[copy], logs[copy], 0, &seed, 1, &err));
    }
    CHECK(same_contents(logs[0], logs[1]));
    CHECK(same_contents(indexes[0], indexes[1]));
    EXPECT(CAIRN_OK, cairn_hash_write_index_with(indexes[1], logs[1], 8, &other_seed, 1, &err));
    CHECK(!same_contents(indexes[0], indexes[1]));
    EXPECT(CAIRN_OK, cairn_hash_verify(indexes[1], logs[1], &vr, &err));
    CHECK(vr.puts == 300 && vr.live_entries == 300);
    EXPECT(CAIRN_OK, cairn_hash_write_index_with(indexes[1], logs[1], 0, NULL, 0, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_write_index_with(indexes[1], logs[1], 2, NULL, 0, &err));
    cairn_hash_logwriter_t *bad = NULL;
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_logwriter_create_with(logs[1], 9, 0, NULL, &bad, &err));
    CHECK(bad == NULL);
    /* A damaged log fails verification, naming the problem. */
    flip_byte(logs[1], -10);
    CHECK(cairn_hash_verify(indexes[1], logs[1], NULL, &err) == CAIRN_CORRUPTION);
    CHECK(err != NULL && strstr(err, "same-1.sp") != NULL); /* names the file */
    cairn_free(err);
    err = NULL;

    cairn_hash_reader_t *r = NULL;
    EXPECT(CAIRN_OK, cairn_hash_reader_open(index, log, &r, &err));
    CHECK(cairn_hash_reader_num_entries(r) == 101); /* 100 - key7 + empty key + extra */
    char *value = NULL;
    size_t len = 0;
    EXPECT(CAIRN_OK, cairn_hash_reader_get(r, S("key42"), &value, &len, &err));
    CHECK(equals(value, len, "value42"));
    cairn_free(value);
    EXPECT(CAIRN_NOT_FOUND, cairn_hash_reader_get(r, S("key7"), &value, &len, &err));
    CHECK(value == NULL && len == 0);
    EXPECT(CAIRN_OK, cairn_hash_reader_get(r, S("extra"), &value, &len, &err));
    CHECK(equals(value, len, "appended"));
    cairn_free(value);
    EXPECT(CAIRN_OK, cairn_hash_reader_get(r, NULL, 0, &value, &len, &err));
    CHECK(len == 0);
    cairn_free(value);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_reader_get(r, S("k"), NULL, &len, &err));
    char buf[16];
    EXPECT(CAIRN_OK, cairn_hash_reader_get_into(r, S("key1"), buf, sizeof buf, &len, &err));
    CHECK(len == 6 && memcmp(buf, "value1", 6) == 0);
    EXPECT(CAIRN_BUFFER_TOO_SMALL, cairn_hash_reader_get_into(r, S("key1"), buf, 3, &len, &err));
    CHECK(len == 6);
    EXPECT(CAIRN_NOT_FOUND, cairn_hash_reader_get_into(r, S("nope"), buf, 16, &len, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_reader_get_into(r, S("key1"), NULL, 3, &len, &err));

    const char *keys[] = {"key3", "missing", "key99", "key7"};
    size_t key_lens[] = {4, 7, 5, 4};
    char *values[4];
    size_t value_lens[4];
    size_t found = 0;
    EXPECT(CAIRN_OK,
           cairn_hash_reader_get_many(r, keys, key_lens, 4, values, value_lens, &found, &err));
    CHECK(found == 2);
    CHECK(equals(values[0], value_lens[0], "value3") && values[1] == NULL && value_lens[1] == 0);
    CHECK(equals(values[2], value_lens[2], "value99") && values[3] == NULL);
    for (int i = 0; i < 4; i++) cairn_free(values[i]);
    EXPECT(CAIRN_OK, cairn_hash_reader_get_many(r, NULL, NULL, 0, NULL, NULL, NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT,
           cairn_hash_reader_get_many(r, keys, NULL, 4, values, value_lens, NULL, &err));
    CHECK(values[0] == NULL && value_lens[0] == 0);
    const char *bad_keys[] = {"key3", NULL};
    size_t bad_lens[] = {4, 3};
    EXPECT(CAIRN_INVALID_ARGUMENT,
           cairn_hash_reader_get_many(r, bad_keys, bad_lens, 2, values, value_lens, NULL, &err));

    /* get_many_into: values packed into one caller buffer, absent keys marked. */
    char packed[64];
    size_t offsets[4], done = 99;
    found = 99;
    EXPECT(CAIRN_OK, cairn_hash_reader_get_many_into(r, keys, key_lens, 4, packed, sizeof packed,
                                                     offsets, value_lens, &found, &done, &err));
    CHECK(found == 2 && done == 4);
    CHECK(equals(packed + offsets[0], value_lens[0], "value3"));
    CHECK(offsets[1] == CAIRN_HASH_ABSENT && value_lens[1] == 0);
    CHECK(equals(packed + offsets[2], value_lens[2], "value99") && offsets[2] == 6);
    CHECK(offsets[3] == CAIRN_HASH_ABSENT && value_lens[3] == 0);
    /* A buffer that holds the first value only: stops at the key that does not fit, tells
     * its length, and the caller goes on from there. */
    CHECK(cairn_hash_reader_get_many_into(r, keys, key_lens, 4, packed, 10, offsets, value_lens,
                                          &found, &done, &err) == CAIRN_BUFFER_TOO_SMALL);
    CHECK(err != NULL && strstr(err, "7 bytes") != NULL);
    cairn_free(err);
    err = NULL;
    CHECK(found == 1 && done == 2);
    CHECK(equals(packed + offsets[0], value_lens[0], "value3") && offsets[1] == CAIRN_HASH_ABSENT);
    CHECK(offsets[2] == CAIRN_HASH_ABSENT && value_lens[2] == 7);
    EXPECT(CAIRN_OK, cairn_hash_reader_get_many_into(r, keys + done, key_lens + done, 4 - done,
                                                     packed, 10, offsets, value_lens, &found,
                                                     &done, &err));
    CHECK(found == 1 && done == 2 && equals(packed + offsets[0], value_lens[0], "value99"));
    /* An empty buffer still answers absent keys and empty values. */
    const char *none_keys[] = {"missing", ""};
    size_t none_lens[] = {7, 0};
    EXPECT(CAIRN_OK, cairn_hash_reader_get_many_into(r, none_keys, none_lens, 2, NULL, 0, offsets,
                                                     value_lens, &found, &done, &err));
    CHECK(found == 1 && done == 2 && offsets[0] == CAIRN_HASH_ABSENT && value_lens[1] == 0);
    CHECK(offsets[1] == 0);
    EXPECT(CAIRN_OK, cairn_hash_reader_get_many_into(r, NULL, NULL, 0, NULL, 0, NULL, NULL, NULL,
                                                     NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT,
           cairn_hash_reader_get_many_into(r, keys, key_lens, 4, NULL, 8, offsets, value_lens,
                                           &found, &done, &err));
    CHECK(found == 0 && done == 0 && offsets[0] == CAIRN_HASH_ABSENT);
    EXPECT(CAIRN_INVALID_ARGUMENT,
           cairn_hash_reader_get_many_into(r, bad_keys, bad_lens, 2, packed, sizeof packed,
                                           offsets, value_lens, NULL, NULL, &err));

    /* Live entries through the reader; every entry through the log. */
    cairn_hash_iter_t *it = NULL;
    EXPECT(CAIRN_OK, cairn_hash_reader_iter(r, &it, &err));
    const char *kp = NULL;
    size_t kl = 0;
    int kind = -1;
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_iter_key(it, &kp, &kl, &err));
    int live = 0;
    while (cairn_hash_iter_next(it, &err) == CAIRN_OK) {
        EXPECT(CAIRN_OK, cairn_hash_iter_kind(it, &kind, &err));
        CHECK(kind == CAIRN_HASH_PUT);
        EXPECT(CAIRN_OK, cairn_hash_iter_key(it, &kp, &kl, &err));
        CHECK(!(kl == 4 && memcmp(kp, "key7", 4) == 0));
        live++;
    }
    CHECK(err == NULL);
    CHECK(live == 101);
    EXPECT(CAIRN_NOT_FOUND, cairn_hash_iter_next(it, &err));
    cairn_hash_iter_destroy(it);
    EXPECT(CAIRN_OK, cairn_hash_log_iter(log, &it, &err));
    int puts = 0, deletes = 0;
    while (cairn_hash_iter_next(it, &err) == CAIRN_OK) {
        EXPECT(CAIRN_OK, cairn_hash_iter_kind(it, &kind, &err));
        const char *vp = NULL;
        size_t vl = 0;
        EXPECT(CAIRN_OK, cairn_hash_iter_value(it, &vp, &vl, &err));
        if (kind == CAIRN_HASH_PUT) puts++;
        if (kind == CAIRN_HASH_DELETE) {
            deletes++;
            CHECK(vl == 0);
            EXPECT(CAIRN_OK, cairn_hash_iter_key(it, &kp, &kl, &err));
            CHECK(equals(kp, kl, "key7"));
        }
    }
    CHECK(err == NULL && puts == 102 && deletes == 1);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_iter_kind(it, NULL, &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_iter_value(it, &kp, &kl, &err));
    cairn_hash_iter_destroy(it);
    EXPECT(CAIRN_IO, cairn_hash_log_iter(path_in("none.spl"), &it, &err));
    CHECK(it == NULL);
    cairn_hash_reader_destroy(r);

    EXPECT(CAIRN_OK, cairn_hash_reader_open_with(index, log, 1, 1, 1 << 20, &r, &err));
    EXPECT(CAIRN_OK, cairn_hash_reader_get(r, S("key42"), &value, &len, &err));
    CHECK(equals(value, len, "value42"));
    cairn_free(value);
    cairn_hash_reader_destroy(r);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_hash_reader_open_with(NULL, log, 0, 0, 0, &r, &err));
    CHECK(r == NULL);

    /* A compressed log: Snappy, small blocks. */
    const char *zlog = path_in("z.spl"), *zindex = path_in("z.spi");
    EXPECT(CAIRN_OK,
           cairn_hash_logwriter_create(zlog, CAIRN_HASH_COMPRESSION_SNAPPY, 256, &w, &err));
    for (int i = 0; i < 200; i++) {
        char k[16];
        int kl2 = snprintf(k, sizeof k, "z%d", i);
        EXPECT(CAIRN_OK, cairn_hash_logwriter_put(w, k, kl2, S("zzzzzzzzzzzzzzzzzzzzzzzz"), &err));
    }
    EXPECT(CAIRN_OK, cairn_hash_logwriter_close(w, &err));
    cairn_hash_logwriter_destroy(w);
    EXPECT(CAIRN_OK, cairn_hash_write_index(zindex, zlog, 0, &err));
    EXPECT(CAIRN_OK, cairn_hash_reader_open(zindex, zlog, &r, &err));
    EXPECT(CAIRN_OK, cairn_hash_reader_get(r, S("z150"), &value, &len, &err));
    CHECK(len == 24);
    cairn_free(value);
    cairn_hash_reader_destroy(r);
    EXPECT(CAIRN_OK,
           cairn_hash_logwriter_create(path_in("zs.spl"), CAIRN_HASH_COMPRESSION_ZSTD, 4096, &w,
                                       &err));
    EXPECT(CAIRN_OK, cairn_hash_logwriter_close(w, &err));
    cairn_hash_logwriter_destroy(w);

    /* Damaged and mismatched files. */
    EXPECT(CAIRN_IDENTIFIER_MISMATCH, cairn_hash_reader_open(index, zlog, &r, &err));
    CHECK(r == NULL);
    EXPECT(CAIRN_IO, cairn_hash_reader_open(path_in("none.spi"), log, &r, &err));
    flip_byte(zlog, -20); /* inside the last compressed block */
    EXPECT(CAIRN_OK, cairn_hash_log_iter(zlog, &it, &err));
    cairn_status_t st;
    while ((st = cairn_hash_iter_next(it, &err)) == CAIRN_OK) {
    }
    CHECK(st == CAIRN_CORRUPTION && err != NULL);
    cairn_free(err);
    err = NULL;
    EXPECT(CAIRN_NOT_FOUND, cairn_hash_iter_next(it, &err)); /* ended */
    cairn_hash_iter_destroy(it);
    CHECK(truncate(index, 50) == 0);
    EXPECT(CAIRN_CORRUPTION, cairn_hash_reader_open(index, log, &r, &err));
    flip_byte(log, 0); /* the magic number */
    EXPECT(CAIRN_CORRUPTION, cairn_hash_log_iter(log, &it, &err));
}

/* Merge operators: counters and appends written without a read, in single writes, batches
 * and transactions; a keyspace without an operator refuses operands; a merge that cannot
 * combine reports CAIRN_MERGE_FAILED; the operator comes back on reopen. */
static void test_merge(void) {
    CHECK(strcmp(cairn_status_name(CAIRN_MERGE_FAILED), "CAIRN_MERGE_FAILED") == 0);
    cairn_options_t *o = cairn_options_create();
    EXPECT(CAIRN_OK, cairn_options_set_durability(o, CAIRN_DURABILITY_BUFFERED, 0, &err));
    const char *store = path_in("merge");
    cairn_db_t *db = NULL;
    EXPECT(CAIRN_OK, cairn_db_open(o, store, &db, &err));
    if (db == NULL) {
        cairn_options_destroy(o);
        return;
    }
    cairn_keyspace_t *hits = NULL, *log = NULL, *plain = NULL, *bad = NULL;
    EXPECT(CAIRN_INVALID_ARGUMENT,
           cairn_keyspace_open_merge(db, "bad", "no.such", NULL, 0, &bad, &err));
    CHECK(bad == NULL);
    EXPECT(CAIRN_INVALID_ARGUMENT,
           cairn_keyspace_open_merge(db, "bad", "cairn.add_i64", S(","), &bad, &err));
    CHECK(bad == NULL);
    EXPECT(CAIRN_INVALID_ARGUMENT,
           cairn_keyspace_open_merge(NULL, "bad", "cairn.add_i64", NULL, 0, &bad, &err));
    EXPECT(CAIRN_OK, cairn_keyspace_open_merge(db, "hits", "cairn.add_i64", NULL, 0, &hits, &err));
    EXPECT(CAIRN_OK, cairn_keyspace_open_merge(db, "log", "cairn.append", S(","), &log, &err));
    EXPECT(CAIRN_OK, cairn_keyspace_open(db, "plain", &plain, &err));
    if (hits == NULL || log == NULL || plain == NULL) return;

    cairn_writeoptions_t *sync = cairn_writeoptions_create();
    EXPECT(CAIRN_OK, cairn_writeoptions_set_durability(sync, CAIRN_DURABILITY_SYNC, 0, &err));
    EXPECT(CAIRN_OK, cairn_merge(hits, NULL, S("home"), S("5"), &err));
    EXPECT(CAIRN_OK, cairn_merge(hits, sync, S("home"), S("-2"), &err));
    EXPECT_VALUE(hits, NULL, "home", "3");
    int64_t n = 0;
    EXPECT(CAIRN_OK, cairn_incr(hits, NULL, S("home"), 10, &n, &err)); /* mixes with incr */
    CHECK(n == 13);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_merge(hits, NULL, S("home"), S("07"), &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_merge(plain, NULL, S("k"), S("1"), &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_merge(NULL, NULL, S("k"), S("1"), &err));
    EXPECT_VALUE(plain, NULL, "k", NULL);

    EXPECT(CAIRN_OK, cairn_merge(log, NULL, S("ada"), S("a"), &err));
    EXPECT(CAIRN_OK, cairn_merge(log, NULL, S("ada"), S("b"), &err));
    EXPECT_VALUE(log, NULL, "ada", "a,b");

    /* A value that is not a counter under operands: the read fails, nothing is lost. */
    EXPECT(CAIRN_OK, cairn_put(hits, NULL, S("word"), S("abc"), &err));
    EXPECT(CAIRN_OK, cairn_merge(hits, NULL, S("word"), S("1"), &err));
    char *v = NULL;
    size_t vl = 0;
    EXPECT(CAIRN_MERGE_FAILED, cairn_get(hits, NULL, S("word"), &v, &vl, &err));
    CHECK(v == NULL);
    EXPECT(CAIRN_OK, cairn_put(hits, NULL, S("word"), S("40"), &err));
    EXPECT(CAIRN_OK, cairn_merge(hits, NULL, S("word"), S("2"), &err));
    EXPECT_VALUE(hits, NULL, "word", "42");

    /* Batches: operands of several keyspaces commit together; a refused one writes
     * nothing of the batch. */
    cairn_batch_t *b = NULL;
    EXPECT(CAIRN_OK, cairn_batch_create(db, &b, &err));
    EXPECT(CAIRN_OK, cairn_batch_merge(b, hits, S("home"), S("7"), &err));
    EXPECT(CAIRN_OK, cairn_batch_merge(b, log, S("ada"), S("c"), &err));
    EXPECT(CAIRN_OK, cairn_batch_commit(b, NULL, &err));
    EXPECT_VALUE(hits, NULL, "home", "20");
    EXPECT_VALUE(log, NULL, "ada", "a,b,c");
    EXPECT(CAIRN_OK, cairn_batch_clear(b, &err));
    EXPECT(CAIRN_OK, cairn_batch_merge(b, hits, S("home"), S("1"), &err));
    EXPECT(CAIRN_OK, cairn_batch_merge(b, plain, S("k"), S("1"), &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_batch_commit(b, NULL, &err));
    EXPECT_VALUE(hits, NULL, "home", "20");
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_batch_merge(NULL, hits, S("k"), S("1"), &err));
    cairn_batch_destroy(b);

    /* Transactions: the transaction sees its merge at once, others after the commit. */
    cairn_txn_t *t = NULL;
    EXPECT(CAIRN_OK, cairn_txn_begin(db, CAIRN_ISOLATION_SNAPSHOT, &t, &err));
    EXPECT(CAIRN_OK, cairn_txn_merge(t, hits, S("home"), S("5"), &err));
    EXPECT(CAIRN_OK, cairn_txn_get(t, hits, S("home"), &v, &vl, &err));
    CHECK(equals(v, vl, "25"));
    cairn_free(v);
    v = NULL;
    EXPECT_VALUE(hits, NULL, "home", "20");
    EXPECT(CAIRN_OK, cairn_txn_commit(t, NULL, &err));
    cairn_txn_destroy(t);
    EXPECT_VALUE(hits, NULL, "home", "25");
    t = NULL;
    EXPECT(CAIRN_OK, cairn_txn_begin(db, CAIRN_ISOLATION_SNAPSHOT, &t, &err));
    EXPECT(CAIRN_OK, cairn_txn_merge(t, plain, S("k"), S("1"), &err));
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_txn_commit(t, NULL, &err));
    cairn_txn_destroy(t);
    EXPECT(CAIRN_INVALID_ARGUMENT, cairn_txn_merge(NULL, hits, S("k"), S("1"), &err));
    EXPECT_VALUE(plain, NULL, "k", NULL);

    /* Reopen: the operands were kept, and the same operator reads them. */
    cairn_keyspace_destroy(hits);
    cairn_keyspace_destroy(log);
    cairn_keyspace_destroy(plain);
    EXPECT(CAIRN_OK, cairn_db_close(db, &err));
    cairn_db_destroy(db);
    db = NULL;
    EXPECT(CAIRN_OK, cairn_db_open(o, store, &db, &err));
    if (db == NULL) {
        cairn_writeoptions_destroy(sync);
        cairn_options_destroy(o);
        return;
    }
    hits = NULL;
    EXPECT(CAIRN_INVALID_ARGUMENT,
           cairn_keyspace_open_merge(db, "hits", "cairn.append", NULL, 0, &hits, &err));
    CHECK(hits == NULL);
    EXPECT(CAIRN_OK, cairn_keyspace_open_merge(db, "hits", "cairn.add_i64", NULL, 0, &hits, &err));
    EXPECT_VALUE(hits, NULL, "home", "25");
    EXPECT(CAIRN_OK, cairn_merge(hits, NULL, S("home"), S("1"), &err));
    EXPECT_VALUE(hits, NULL, "home", "26");
    cairn_keyspace_destroy(hits);
    EXPECT(CAIRN_OK, cairn_db_close(db, &err));
    cairn_db_destroy(db);
    cairn_writeoptions_destroy(sync);
    cairn_options_destroy(o);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    snprintf(dir, sizeof dir, "%s", argv[1]);
    test_status_and_version();
    test_options();
    test_null_arguments();
    test_bad_options();
    test_memory_budget();
    test_compaction_options();
    test_ordered_store();
    test_recovery_report();
    test_streaming();
    test_transactions();
    test_merge();
    test_constant_store();
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("api_test: all checks passed\n");
    return 0;
}
