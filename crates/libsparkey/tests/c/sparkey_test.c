/*
 * Exercises every function of the Sparkey C API (sparkey.h) against Cairn's
 * libsparkey.so.0: the reference test vectors (log order, hash order and lookups compared
 * with their .expected files), error paths (bad files, wrong identifiers, closed handles,
 * NULL arguments), files written here that the Rust test then reads with Cairn's API, and
 * one hash reader shared by threads.
 *
 * Usage: sparkey_test VECTOR_DIR OUT_DIR
 * Exit status 0 when every check passes; each failure is printed on stderr.
 */
#define _POSIX_C_SOURCE 200809L
#include <sparkey/sparkey.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;
static int checks = 0;

#define CHECK(cond)                                                                  \
  do {                                                                               \
    checks++;                                                                        \
    if (!(cond)) {                                                                   \
      failures++;                                                                    \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);       \
    }                                                                                \
  } while (0)

#define CHECK_RC(expr, want)                                                         \
  do {                                                                               \
    int rc_ = (int)(expr);                                                           \
    checks++;                                                                        \
    if (rc_ != (int)(want)) {                                                        \
      failures++;                                                                    \
      fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d\n", __FILE__, __LINE__, \
              #expr, rc_, sparkey_errstring((sparkey_returncode)rc_), (int)(want));  \
    }                                                                                \
  } while (0)

/* A growable byte buffer. */
typedef struct {
  char *data;
  size_t len, cap;
} buf;

static void buf_put(buf *b, const void *p, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *d = realloc(b->data, cap);
    if (d == NULL) {
      fprintf(stderr, "out of memory\n");
      exit(2);
    }
    b->data = d;
    b->cap = cap;
  }
  memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = 0;
}

static void buf_str(buf *b, const char *s) { buf_put(b, s, strlen(s)); }

static void buf_hex(buf *b, const uint8_t *p, uint64_t n) {
  static const char digits[] = "0123456789abcdef";
  for (uint64_t i = 0; i < n; i++) {
    char two[2] = {digits[p[i] >> 4], digits[p[i] & 15]};
    buf_put(b, two, 2);
  }
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  buf b = {0};
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) buf_put(&b, chunk, n);
  fclose(f);
  if (b.data == NULL) buf_put(&b, "", 0);
  *len = b.len;
  return b.data;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

/* Decodes hex text [s, s+n) into out (which holds n/2 bytes); returns the byte count. */
static size_t unhex(const char *s, size_t n, uint8_t *out) {
  size_t k = 0;
  for (size_t i = 0; i + 1 < n; i += 2) out[k++] = (uint8_t)(hexval(s[i]) * 16 + hexval(s[i + 1]));
  return k;
}

/* Reads the current entry's key with keychunk (small pieces) or fill_key. */
static void read_key(sparkey_logiter *it, sparkey_logreader *log, buf *out, int chunked) {
  uint64_t keylen = sparkey_logiter_keylen(it);
  if (chunked) {
    uint8_t *p;
    uint64_t n;
    for (;;) {
      CHECK_RC(sparkey_logiter_keychunk(it, log, 3, &p, &n), SPARKEY_SUCCESS);
      if (n == 0) break;
      CHECK(n <= 3);
      buf_put(out, p, n);
    }
  } else {
    uint8_t *tmp = malloc(keylen + 1);
    uint64_t n = 12345;
    CHECK_RC(sparkey_logiter_fill_key(it, log, keylen, tmp, &n), SPARKEY_SUCCESS);
    CHECK(n == keylen);
    buf_put(out, tmp, n);
    free(tmp);
  }
}

static void read_value(sparkey_logiter *it, sparkey_logreader *log, buf *out, int chunked) {
  uint64_t valuelen = sparkey_logiter_valuelen(it);
  if (chunked) {
    uint8_t *p;
    uint64_t n;
    uint64_t total = 0;
    for (;;) {
      CHECK_RC(sparkey_logiter_valuechunk(it, log, 7, &p, &n), SPARKEY_SUCCESS);
      if (n == 0) break;
      CHECK(n <= 7);
      buf_put(out, p, n);
      total += n;
    }
    CHECK(total == valuelen);
  } else {
    uint8_t *tmp = malloc(valuelen + 1);
    uint64_t n = 12345;
    CHECK_RC(sparkey_logiter_fill_value(it, log, valuelen, tmp, &n), SPARKEY_SUCCESS);
    CHECK(n == valuelen);
    buf_put(out, tmp, n);
    free(tmp);
  }
}

static void compare_text(const char *what, const char *path, const buf *got) {
  size_t len;
  char *want = read_file(path, &len);
  checks++;
  if (want == NULL) {
    failures++;
    fprintf(stderr, "%s: cannot read %s\n", what, path);
    return;
  }
  const char *g = got->data ? got->data : "";
  if (len != got->len || memcmp(want, g, len) != 0) {
    failures++;
    fprintf(stderr, "%s: output differs from %s (%zu vs %zu bytes)\n", what, path, got->len, len);
  }
  free(want);
}

/* One vector case: log order, hash order, every lookup, header getters. */
static void check_vector(const char *dir, const char *name) {
  char spl[4096], spi[4096], expected[4096], log_expected[4096];
  snprintf(spl, sizeof spl, "%s/%s.spl", dir, name);
  snprintf(spi, sizeof spi, "%s/%s.spi", dir, name);
  snprintf(expected, sizeof expected, "%s/%s.expected", dir, name);
  snprintf(log_expected, sizeof log_expected, "%s/%s.log.expected", dir, name);

  /* Log order through a plain log reader; alternate chunked and filled reads. */
  sparkey_logreader *log = NULL;
  CHECK_RC(sparkey_logreader_open(&log, spl), SPARKEY_SUCCESS);
  if (log == NULL) return;
  sparkey_logiter *it = NULL;
  CHECK_RC(sparkey_logiter_create(&it, log), SPARKEY_SUCCESS);
  CHECK(sparkey_logiter_state(it) == SPARKEY_ITER_NEW);
  buf out = {0};
  uint64_t maxkey = 0, maxvalue = 0;
  for (int i = 0;; i++) {
    CHECK_RC(sparkey_logiter_next(it, log), SPARKEY_SUCCESS);
    if (sparkey_logiter_state(it) != SPARKEY_ITER_ACTIVE) break;
    if (sparkey_logiter_type(it) == SPARKEY_ENTRY_PUT) {
      buf key = {0}, value = {0};
      read_key(it, log, &key, i % 2);
      read_value(it, log, &value, i % 3 == 0);
      buf_str(&out, "PUT\t");
      buf_hex(&out, (uint8_t *)key.data, key.len);
      buf_str(&out, "\t");
      buf_hex(&out, (uint8_t *)value.data, value.len);
      buf_str(&out, "\n");
      if (key.len > maxkey) maxkey = key.len;
      if (value.len > maxvalue) maxvalue = value.len;
      free(key.data);
      free(value.data);
    } else {
      CHECK(sparkey_logiter_valuelen(it) == 0);
      buf key = {0};
      read_key(it, log, &key, i % 2);
      buf_str(&out, "DELETE\t");
      buf_hex(&out, (uint8_t *)key.data, key.len);
      buf_str(&out, "\n");
      free(key.data);
    }
  }
  CHECK(sparkey_logiter_state(it) == SPARKEY_ITER_CLOSED);
  CHECK_RC(sparkey_logiter_next(it, log), SPARKEY_SUCCESS); /* stays CLOSED */
  CHECK(sparkey_logiter_state(it) == SPARKEY_ITER_CLOSED);
  compare_text(name, log_expected, &out);
  CHECK(sparkey_logreader_maxkeylen(log) == maxkey);
  CHECK(sparkey_logreader_maxvaluelen(log) >= maxvalue);
  free(out.data);
  sparkey_logiter_close(&it);
  CHECK(it == NULL);
  sparkey_logreader_close(&log);
  CHECK(log == NULL);

  /* Hash order, then a lookup of every expected key. */
  sparkey_hashreader *reader = NULL;
  CHECK_RC(sparkey_hash_open(&reader, spi, spl), SPARKEY_SUCCESS);
  if (reader == NULL) return;
  sparkey_logreader *hlog = sparkey_hash_getreader(reader);
  CHECK(hlog != NULL);
  CHECK_RC(sparkey_logiter_create(&it, hlog), SPARKEY_SUCCESS);
  buf hashed = {0};
  uint64_t live = 0;
  for (int i = 0;; i++) {
    CHECK_RC(sparkey_logiter_hashnext(it, reader), SPARKEY_SUCCESS);
    if (sparkey_logiter_state(it) != SPARKEY_ITER_ACTIVE) break;
    CHECK(sparkey_logiter_type(it) == SPARKEY_ENTRY_PUT);
    buf key = {0}, value = {0};
    read_key(it, hlog, &key, i % 2 == 0);
    read_value(it, hlog, &value, i % 2 == 1);
    buf_hex(&hashed, (uint8_t *)key.data, key.len);
    buf_str(&hashed, "\t");
    buf_hex(&hashed, (uint8_t *)value.data, value.len);
    buf_str(&hashed, "\n");
    free(key.data);
    free(value.data);
    live++;
  }
  compare_text(name, expected, &hashed);
  CHECK(sparkey_hash_numentries(reader) == live);
  CHECK(sparkey_hash_numcollisions(reader) <= live);

  /* Every expected key resolves to its value; a missing key leaves INVALID. */
  size_t len;
  char *text = read_file(expected, &len);
  char *line = text;
  while (text != NULL && line < text + len) {
    char *nl = memchr(line, '\n', (size_t)(text + len - line));
    char *tab = memchr(line, '\t', (size_t)(nl - line));
    uint8_t *key = malloc((size_t)(tab - line) / 2 + 1);
    uint8_t *want = malloc((size_t)(nl - tab) / 2 + 1);
    size_t keylen = unhex(line, (size_t)(tab - line), key);
    size_t wantlen = unhex(tab + 1, (size_t)(nl - tab - 1), want);
    CHECK_RC(sparkey_hash_get(reader, key, keylen, it), SPARKEY_SUCCESS);
    CHECK(sparkey_logiter_state(it) == SPARKEY_ITER_ACTIVE);
    CHECK(sparkey_logiter_valuelen(it) == wantlen);
    uint8_t *got = malloc(wantlen + 1);
    uint64_t gotlen = 0;
    CHECK_RC(sparkey_logiter_fill_value(it, hlog, wantlen, got, &gotlen), SPARKEY_SUCCESS);
    CHECK(gotlen == wantlen && memcmp(got, want, wantlen) == 0);
    free(got);
    free(key);
    free(want);
    line = nl + 1;
  }
  free(text);
  const uint8_t absent[] = "\xff\xfe no such key \x01";
  CHECK_RC(sparkey_hash_get(reader, absent, sizeof absent, it), SPARKEY_SUCCESS);
  CHECK(sparkey_logiter_state(it) == SPARKEY_ITER_INVALID);

  free(hashed.data);
  sparkey_logiter_close(&it);
  sparkey_hash_close(&reader);
  CHECK(reader == NULL);
}

/* Writes a log with the given compression: sessions, deletes, flushes, an append. */
static void write_store(const char *out, const char *name, sparkey_compression_type type, int block) {
  char spl[4096], spi[4096];
  snprintf(spl, sizeof spl, "%s/%s.spl", out, name);
  snprintf(spi, sizeof spi, "%s/%s.spi", out, name);
  sparkey_logwriter *w = NULL;
  CHECK_RC(sparkey_logwriter_create(&w, spl, type, block), SPARKEY_SUCCESS);
  char key[64], value[256];
  for (int i = 0; i < 1000; i++) {
    int kl = snprintf(key, sizeof key, "key-%d", i);
    int vl = snprintf(value, sizeof value, "value-%d-%0*d", i, i % 100, 0);
    CHECK_RC(sparkey_logwriter_put(w, (uint64_t)kl, (uint8_t *)key, (uint64_t)vl, (uint8_t *)value),
             SPARKEY_SUCCESS);
    if (i % 10 == 9) {
      int dl = snprintf(key, sizeof key, "key-%d", i - 5);
      CHECK_RC(sparkey_logwriter_delete(w, (uint64_t)dl, (uint8_t *)key), SPARKEY_SUCCESS);
    }
    if (i == 500) CHECK_RC(sparkey_logwriter_flush(w), SPARKEY_SUCCESS);
  }
  CHECK_RC(sparkey_logwriter_put(w, 0, NULL, 0, NULL), SPARKEY_SUCCESS); /* empty key */
  CHECK_RC(sparkey_logwriter_close(&w), SPARKEY_SUCCESS);
  CHECK(w == NULL);
  CHECK_RC(sparkey_hash_write(spi, spl, 0), SPARKEY_SUCCESS);

  /* Second session: append, then an incremental index update. */
  CHECK_RC(sparkey_logwriter_append(&w, spl), SPARKEY_SUCCESS);
  CHECK_RC(sparkey_logwriter_put(w, 5, (const uint8_t *)"extra", 3, (const uint8_t *)"yes"), SPARKEY_SUCCESS);
  CHECK_RC(sparkey_logwriter_put(w, 5, (const uint8_t *)"key-0", 4, (const uint8_t *)"zero"), SPARKEY_SUCCESS);
  CHECK_RC(sparkey_logwriter_delete(w, 5, (const uint8_t *)"key-1"), SPARKEY_SUCCESS);
  CHECK_RC(sparkey_logwriter_close(&w), SPARKEY_SUCCESS);

  /* Before re-indexing, the old index does not see the new entries. */
  sparkey_hashreader *r = NULL;
  sparkey_logiter *it = NULL;
  CHECK_RC(sparkey_hash_open(&r, spi, spl), SPARKEY_SUCCESS);
  CHECK_RC(sparkey_logiter_create(&it, sparkey_hash_getreader(r)), SPARKEY_SUCCESS);
  CHECK_RC(sparkey_hash_get(r, (const uint8_t *)"extra", 5, it), SPARKEY_SUCCESS);
  CHECK(sparkey_logiter_state(it) == SPARKEY_ITER_INVALID);
  sparkey_logiter_close(&it);
  sparkey_hash_close(&r);

  CHECK_RC(sparkey_hash_write(spi, spl, 0), SPARKEY_SUCCESS);
  CHECK_RC(sparkey_hash_open(&r, spi, spl), SPARKEY_SUCCESS);
  sparkey_logreader *log = sparkey_hash_getreader(r);
  CHECK(sparkey_logreader_get_compression_type(log) == type);
  CHECK(sparkey_logreader_get_compression_blocksize(log) == (type == SPARKEY_COMPRESSION_NONE ? 0 : block));
  CHECK(sparkey_hash_numentries(r) == 1000 - 100 + 1 + 1 - 1);
  CHECK_RC(sparkey_logiter_create(&it, log), SPARKEY_SUCCESS);
  uint8_t v[16];
  uint64_t n = 0;
  CHECK_RC(sparkey_hash_get(r, (const uint8_t *)"key-0", 5, it), SPARKEY_SUCCESS);
  CHECK_RC(sparkey_logiter_fill_value(it, log, sizeof v, v, &n), SPARKEY_SUCCESS);
  CHECK(n == 4 && memcmp(v, "zero", 4) == 0);
  CHECK_RC(sparkey_hash_get(r, (const uint8_t *)"key-1", 5, it), SPARKEY_SUCCESS);
  CHECK(sparkey_logiter_state(it) == SPARKEY_ITER_INVALID);
  CHECK_RC(sparkey_hash_get(r, NULL, 0, it), SPARKEY_SUCCESS);
  CHECK(sparkey_logiter_state(it) == SPARKEY_ITER_ACTIVE && sparkey_logiter_valuelen(it) == 0);

  /* After a lookup, next continues with the entry after the found one. */
  CHECK_RC(sparkey_hash_get(r, (const uint8_t *)"key-998", 7, it), SPARKEY_SUCCESS);
  CHECK_RC(sparkey_logiter_next(it, log), SPARKEY_SUCCESS);
  n = 0;
  CHECK_RC(sparkey_logiter_fill_key(it, log, sizeof v, v, &n), SPARKEY_SUCCESS);
  CHECK(n == 7 && memcmp(v, "key-999", 7) == 0);

  /* reset rewinds key and value. */
  CHECK_RC(sparkey_logiter_reset(it, log), SPARKEY_SUCCESS);
  n = 0;
  CHECK_RC(sparkey_logiter_fill_key(it, log, 3, v, &n), SPARKEY_SUCCESS);
  CHECK(n == 3 && memcmp(v, "key", 3) == 0);
  CHECK_RC(sparkey_logiter_reset(it, log), SPARKEY_SUCCESS);
  CHECK(sparkey_logiter_keylen(it) == 7);

  /* keycmp on two iterators positioned by lookups. */
  sparkey_logiter *it2 = NULL;
  int cmp = 99;
  CHECK_RC(sparkey_logiter_create(&it2, log), SPARKEY_SUCCESS);
  CHECK_RC(sparkey_logiter_keycmp(it, it2, log, &cmp), SPARKEY_LOG_ITERATOR_INACTIVE);
  CHECK_RC(sparkey_logiter_seek(it, log, 84), SPARKEY_SUCCESS);
  CHECK(sparkey_logiter_state(it) == SPARKEY_ITER_NEW);
  CHECK_RC(sparkey_logiter_next(it, log), SPARKEY_SUCCESS); /* key-0 */
  CHECK_RC(sparkey_logiter_next(it2, log), SPARKEY_SUCCESS);
  CHECK_RC(sparkey_logiter_skip(it2, log, 2), SPARKEY_SUCCESS); /* key-2 */
  CHECK_RC(sparkey_logiter_keycmp(it, it2, log, &cmp), SPARKEY_SUCCESS);
  CHECK(cmp == -1);
  CHECK_RC(sparkey_logiter_reset(it, log), SPARKEY_SUCCESS);
  CHECK_RC(sparkey_logiter_reset(it2, log), SPARKEY_SUCCESS);
  CHECK_RC(sparkey_logiter_keycmp(it2, it, log, &cmp), SPARKEY_SUCCESS);
  CHECK(cmp == 1);
  CHECK_RC(sparkey_logiter_reset(it, log), SPARKEY_SUCCESS);
  CHECK_RC(sparkey_logiter_keycmp(it, it, log, &cmp), SPARKEY_SUCCESS);
  CHECK(cmp == 0);
  CHECK_RC(sparkey_logiter_keycmp(it, it2, log, NULL), SPARKEY_INTERNAL_ERROR);
  sparkey_logiter_close(&it2);

  /* seek: data_end closes; out of range is an error, never undefined behaviour. */
  CHECK_RC(sparkey_logiter_seek(it, log, 1), SPARKEY_INTERNAL_ERROR);
  CHECK(sparkey_logiter_state(it) == SPARKEY_ITER_INVALID);
  CHECK_RC(sparkey_logiter_seek(it, log, (uint64_t)1 << 60), SPARKEY_INTERNAL_ERROR);

  sparkey_logiter_close(&it);
  sparkey_hash_close(&r);
}

static void copy_prefix(const char *from, const char *to, size_t n) {
  size_t len;
  char *data = read_file(from, &len);
  FILE *f = fopen(to, "wb");
  if (data && f) fwrite(data, 1, n < len ? n : len, f);
  if (f) fclose(f);
  free(data);
}

static void check_errors(const char *dir, const char *out) {
  char basic_spl[4096], basic_spi[4096], deletes_spl[4096], deletes_spi[4096], path[4096], path2[4096];
  snprintf(basic_spl, sizeof basic_spl, "%s/basic.spl", dir);
  snprintf(basic_spi, sizeof basic_spi, "%s/basic.spi", dir);
  snprintf(deletes_spl, sizeof deletes_spl, "%s/deletes.spl", dir);
  snprintf(deletes_spi, sizeof deletes_spi, "%s/deletes.spi", dir);

  /* errstring */
  CHECK(strcmp(sparkey_errstring(SPARKEY_SUCCESS), "Success") == 0);
  CHECK(strcmp(sparkey_errstring(SPARKEY_LOG_ITERATOR_INACTIVE), "Log iterator is inactive") == 0);
  CHECK(strcmp(sparkey_errstring(SPARKEY_HASH_SIZE_INVALID), "Hash size is invalid") == 0);
  CHECK(strcmp(sparkey_errstring(SPARKEY_MMAP_FAILED), "mmap failed - running on 32 bit system?") == 0);
  CHECK(strcmp(sparkey_errstring((sparkey_returncode)-42), "Unknown error") == 0);

  /* Bad files. */
  sparkey_logreader *log = NULL;
  sparkey_hashreader *r = NULL;
  snprintf(path, sizeof path, "%s/does-not-exist.spl", out);
  CHECK_RC(sparkey_logreader_open(&log, path), SPARKEY_FILE_NOT_FOUND);
  CHECK(log == NULL);
  CHECK_RC(sparkey_logreader_open(&log, basic_spi), SPARKEY_WRONG_LOG_MAGIC_NUMBER);
  CHECK_RC(sparkey_hash_open(&r, basic_spl, basic_spl), SPARKEY_WRONG_HASH_MAGIC_NUMBER);
  CHECK_RC(sparkey_hash_open(&r, basic_spi, deletes_spl), SPARKEY_FILE_IDENTIFIER_MISMATCH);
  CHECK_RC(sparkey_hash_open(&r, path, basic_spl), SPARKEY_FILE_NOT_FOUND);
  CHECK(r == NULL);
  snprintf(path, sizeof path, "%s/truncated.spl", out);
  copy_prefix(basic_spl, path, 50);
  CHECK_RC(sparkey_logreader_open(&log, path), SPARKEY_UNEXPECTED_EOF);
  snprintf(path, sizeof path, "%s/short.spl", out);
  copy_prefix(basic_spl, path, 100);
  CHECK_RC(sparkey_logreader_open(&log, path), SPARKEY_LOG_TOO_SMALL);
  CHECK(sparkey_logreader_open(&log, out) != SPARKEY_SUCCESS); /* a directory */
  CHECK(log == NULL);

  /* Bad arguments. */
  CHECK_RC(sparkey_hash_write(basic_spi, basic_spl, 5), SPARKEY_HASH_SIZE_INVALID);
  snprintf(path, sizeof path, "%s/bad.spl", out);
  sparkey_logwriter *w = NULL;
  CHECK_RC(sparkey_logwriter_create(&w, path, SPARKEY_COMPRESSION_SNAPPY, 5), SPARKEY_INVALID_COMPRESSION_BLOCK_SIZE);
  CHECK_RC(sparkey_logwriter_create(&w, path, SPARKEY_COMPRESSION_ZSTD, -1), SPARKEY_INVALID_COMPRESSION_BLOCK_SIZE);
  CHECK_RC(sparkey_logwriter_create(&w, path, (sparkey_compression_type)7, 4096), SPARKEY_INVALID_COMPRESSION_TYPE);
  CHECK_RC(sparkey_logwriter_create(&w, NULL, SPARKEY_COMPRESSION_NONE, 0), SPARKEY_INTERNAL_ERROR);
  CHECK_RC(sparkey_logwriter_create(NULL, path, SPARKEY_COMPRESSION_NONE, 0), SPARKEY_INTERNAL_ERROR);
  CHECK_RC(sparkey_logreader_open(NULL, basic_spl), SPARKEY_INTERNAL_ERROR);
  CHECK_RC(sparkey_logreader_open(&log, NULL), SPARKEY_INTERNAL_ERROR);
  CHECK_RC(sparkey_hash_open(NULL, basic_spi, basic_spl), SPARKEY_INTERNAL_ERROR);
  CHECK_RC(sparkey_hash_open(&r, NULL, basic_spl), SPARKEY_INTERNAL_ERROR);
  CHECK_RC(sparkey_hash_write(NULL, basic_spl, 0), SPARKEY_INTERNAL_ERROR);
  CHECK_RC(sparkey_logwriter_append(&w, path), SPARKEY_FILE_NOT_FOUND);
  CHECK_RC(sparkey_logwriter_append(&w, basic_spi), SPARKEY_WRONG_LOG_MAGIC_NUMBER);
  CHECK(w == NULL);

  /* A writer: NULL key with a length, closed handle, double close. */
  CHECK_RC(sparkey_logwriter_create(&w, path, SPARKEY_COMPRESSION_NONE, 0), SPARKEY_SUCCESS);
  CHECK_RC(sparkey_logwriter_put(w, 3, NULL, 0, NULL), SPARKEY_INTERNAL_ERROR);
  CHECK_RC(sparkey_logwriter_delete(w, 3, NULL), SPARKEY_INTERNAL_ERROR);
  CHECK_RC(sparkey_logwriter_put(w, 1, (const uint8_t *)"a", 1, (const uint8_t *)"b"), SPARKEY_SUCCESS);
  sparkey_logwriter *stale = w;
  CHECK_RC(sparkey_logwriter_close(&w), SPARKEY_SUCCESS);
  CHECK(w == NULL);
  CHECK_RC(sparkey_logwriter_close(&w), SPARKEY_SUCCESS);
  CHECK_RC(sparkey_logwriter_close(NULL), SPARKEY_SUCCESS);
  CHECK_RC(sparkey_logwriter_put(stale, 1, (const uint8_t *)"a", 1, (const uint8_t *)"b"), SPARKEY_LOG_CLOSED);
  CHECK_RC(sparkey_logwriter_delete(stale, 1, (const uint8_t *)"a"), SPARKEY_LOG_CLOSED);
  CHECK_RC(sparkey_logwriter_flush(stale), SPARKEY_LOG_CLOSED);
  CHECK_RC(sparkey_logwriter_close(&stale), SPARKEY_SUCCESS);
  CHECK_RC(sparkey_logwriter_put(NULL, 1, (const uint8_t *)"a", 1, (const uint8_t *)"b"), SPARKEY_LOG_CLOSED);
  CHECK_RC(sparkey_logwriter_flush(NULL), SPARKEY_LOG_CLOSED);

  /* Iterators: inactive, mismatched, closed, after their reader closed. */
  sparkey_logreader *other = NULL;
  sparkey_logiter *it = NULL;
  uint8_t *p = NULL;
  uint64_t n = 0;
  uint8_t b[8];
  CHECK_RC(sparkey_logreader_open(&log, basic_spl), SPARKEY_SUCCESS);
  CHECK_RC(sparkey_logreader_open(&other, deletes_spl), SPARKEY_SUCCESS);
  CHECK_RC(sparkey_logiter_create(&it, log), SPARKEY_SUCCESS);
  CHECK_RC(sparkey_logiter_create(NULL, log), SPARKEY_INTERNAL_ERROR);
  CHECK_RC(sparkey_logiter_valuechunk(it, log, 10, &p, &n), SPARKEY_LOG_ITERATOR_INACTIVE); /* no hang */
  CHECK_RC(sparkey_logiter_keychunk(it, log, 10, &p, &n), SPARKEY_LOG_ITERATOR_INACTIVE);
  CHECK_RC(sparkey_logiter_fill_value(it, log, sizeof b, b, &n), SPARKEY_LOG_ITERATOR_INACTIVE);
  CHECK_RC(sparkey_logiter_fill_key(it, log, sizeof b, b, &n), SPARKEY_LOG_ITERATOR_INACTIVE);
  CHECK_RC(sparkey_logiter_reset(it, log), SPARKEY_LOG_ITERATOR_INACTIVE);
  CHECK_RC(sparkey_logiter_next(it, other), SPARKEY_LOG_ITERATOR_MISMATCH);
  CHECK_RC(sparkey_logiter_next(it, log), SPARKEY_SUCCESS);
  CHECK_RC(sparkey_logiter_keychunk(it, log, 10, NULL, &n), SPARKEY_INTERNAL_ERROR);
  CHECK_RC(sparkey_logiter_keychunk(it, log, 10, &p, NULL), SPARKEY_INTERNAL_ERROR);
  CHECK_RC(sparkey_logiter_fill_key(it, log, 10, NULL, &n), SPARKEY_INTERNAL_ERROR);
  CHECK_RC(sparkey_logiter_fill_key(it, log, 10, b, NULL), SPARKEY_INTERNAL_ERROR);
  CHECK_RC(sparkey_logiter_keychunk(it, log, 0, &p, &n), SPARKEY_SUCCESS);
  CHECK(n == 0);
  CHECK_RC(sparkey_logiter_keychunk(it, log, 2, &p, &n), SPARKEY_SUCCESS);
  CHECK(n == 2 && memcmp(p, "al", 2) == 0);
  CHECK_RC(sparkey_logiter_valuechunk(it, log, 10, &p, &n), SPARKEY_SUCCESS);
  CHECK(n == 1 && p[0] == '1');
  CHECK_RC(sparkey_logiter_valuechunk(it, log, 10, &p, &n), SPARKEY_SUCCESS);
  CHECK(n == 0);
  CHECK_RC(sparkey_logiter_seek(it, other, 84), SPARKEY_LOG_ITERATOR_MISMATCH);
  CHECK_RC(sparkey_logiter_skip(it, log, 100), SPARKEY_SUCCESS);
  CHECK(sparkey_logiter_state(it) == SPARKEY_ITER_CLOSED);
  CHECK_RC(sparkey_logiter_seek(it, log, 84), SPARKEY_SUCCESS);
  CHECK_RC(sparkey_logiter_next(it, log), SPARKEY_SUCCESS);
  CHECK(sparkey_logiter_keylen(it) == 5 && sparkey_logiter_valuelen(it) == 1);

  /* The reader closes under its iterator: -204, no use-after-free. */
  sparkey_logreader *stale_log = log;
  sparkey_logreader_close(&log);
  CHECK(log == NULL);
  sparkey_logreader_close(&log); /* NULL-safe */
  sparkey_logreader_close(NULL);
  CHECK_RC(sparkey_logiter_next(it, stale_log), SPARKEY_LOG_CLOSED);
  CHECK_RC(sparkey_logiter_keychunk(it, stale_log, 10, &p, &n), SPARKEY_LOG_CLOSED);
  CHECK_RC(sparkey_logiter_reset(it, stale_log), SPARKEY_LOG_CLOSED);
  sparkey_logiter *none = NULL;
  CHECK_RC(sparkey_logiter_create(&none, stale_log), SPARKEY_LOG_CLOSED);
  CHECK(none == NULL);
  CHECK(sparkey_logreader_maxkeylen(stale_log) == 0);
  CHECK(sparkey_logreader_get_compression_type(NULL) == SPARKEY_COMPRESSION_NONE);
  CHECK_RC(sparkey_logiter_next(it, NULL), SPARKEY_LOG_CLOSED);

  /* The iterator closes: -207 through a stale pointer. */
  sparkey_logiter *stale_it = it;
  sparkey_logiter_close(&it);
  CHECK(it == NULL);
  sparkey_logiter_close(&it);
  sparkey_logiter_close(NULL);
  CHECK_RC(sparkey_logiter_next(stale_it, other), SPARKEY_LOG_ITERATOR_CLOSED);
  CHECK_RC(sparkey_logiter_seek(stale_it, other, 84), SPARKEY_LOG_ITERATOR_CLOSED);
  CHECK_RC(sparkey_logiter_keychunk(stale_it, other, 1, &p, &n), SPARKEY_LOG_ITERATOR_CLOSED);
  CHECK_RC(sparkey_logiter_next(NULL, other), SPARKEY_LOG_ITERATOR_CLOSED);
  CHECK(sparkey_logiter_state(stale_it) == SPARKEY_ITER_CLOSED);
  CHECK(sparkey_logiter_keylen(stale_it) == 0);
  CHECK(sparkey_logiter_state(NULL) == SPARKEY_ITER_CLOSED);
  /* A handle of the wrong type reads as closed. */
  CHECK_RC(sparkey_logiter_next((sparkey_logiter *)other, other), SPARKEY_LOG_ITERATOR_CLOSED);
  CHECK_RC(sparkey_logiter_next(stale_it, (sparkey_logreader *)stale_it), SPARKEY_LOG_CLOSED);
  sparkey_logreader_close(&other);

  /* Hash reader closes before its iterator (what sparkey-python does). */
  CHECK_RC(sparkey_hash_open(&r, basic_spi, basic_spl), SPARKEY_SUCCESS);
  sparkey_logreader *hlog = sparkey_hash_getreader(r);
  CHECK_RC(sparkey_logiter_create(&it, hlog), SPARKEY_SUCCESS);
  sparkey_hashreader *stale_r = r;
  sparkey_hash_close(&r);
  CHECK(r == NULL);
  sparkey_hash_close(&r);
  sparkey_hash_close(NULL);
  CHECK_RC(sparkey_hash_get(stale_r, (const uint8_t *)"alpha", 5, it), SPARKEY_HASH_CLOSED);
  CHECK_RC(sparkey_logiter_hashnext(it, stale_r), SPARKEY_HASH_CLOSED);
  CHECK_RC(sparkey_logiter_next(it, hlog), SPARKEY_LOG_CLOSED);
  CHECK(sparkey_hash_getreader(stale_r) == NULL);
  CHECK(sparkey_hash_numentries(stale_r) == 0);
  CHECK(sparkey_hash_numcollisions(NULL) == 0);
  CHECK_RC(sparkey_hash_get(NULL, (const uint8_t *)"a", 1, it), SPARKEY_HASH_CLOSED);
  sparkey_logiter_close(&it);

  /* Lookups with a closed or foreign iterator, a NULL key. */
  CHECK_RC(sparkey_hash_open(&r, basic_spi, basic_spl), SPARKEY_SUCCESS);
  CHECK_RC(sparkey_hash_get(r, (const uint8_t *)"alpha", 5, stale_it), SPARKEY_LOG_ITERATOR_CLOSED);
  CHECK_RC(sparkey_logiter_hashnext(NULL, r), SPARKEY_LOG_ITERATOR_CLOSED);
  CHECK_RC(sparkey_logreader_open(&other, deletes_spl), SPARKEY_SUCCESS);
  CHECK_RC(sparkey_logiter_create(&it, other), SPARKEY_SUCCESS);
  CHECK_RC(sparkey_hash_get(r, (const uint8_t *)"alpha", 5, it), SPARKEY_LOG_ITERATOR_MISMATCH);
  CHECK_RC(sparkey_logiter_hashnext(it, r), SPARKEY_LOG_ITERATOR_MISMATCH);
  sparkey_logiter_close(&it);
  sparkey_logreader_close(&other);
  CHECK_RC(sparkey_logiter_create(&it, sparkey_hash_getreader(r)), SPARKEY_SUCCESS);
  CHECK_RC(sparkey_hash_get(r, NULL, 3, it), SPARKEY_INTERNAL_ERROR);
  CHECK_RC(sparkey_hash_get(r, (const uint8_t *)"alpha", 5, it), SPARKEY_SUCCESS);
  CHECK(sparkey_logiter_state(it) == SPARKEY_ITER_ACTIVE);
  sparkey_logiter_close(&it);
  sparkey_hash_close(&r);

  /* A pair whose index was built for another log's length: deletes.spi with a short log. */
  snprintf(path, sizeof path, "%s/cut.spl", out);
  snprintf(path2, sizeof path2, "%s/cut.spi", out);
  copy_prefix(deletes_spi, path2, (size_t)-1);
  copy_prefix(deletes_spl, path, 84);
  CHECK_RC(sparkey_hash_open(&r, path2, path), SPARKEY_LOG_TOO_SMALL);
  CHECK(r == NULL);

  /* File names. */
  char *name = sparkey_create_log_filename("dir/x.spi");
  CHECK(name != NULL && strcmp(name, "dir/x.spl") == 0);
  free(name);
  name = sparkey_create_index_filename("x.spl");
  CHECK(name != NULL && strcmp(name, "x.spi") == 0);
  free(name);
  CHECK(sparkey_create_log_filename("x.spl") == NULL);
  CHECK(sparkey_create_index_filename("x.spi") == NULL);
  CHECK(sparkey_create_index_filename("spl") == NULL);
  CHECK(sparkey_create_index_filename(NULL) == NULL);
  char *longname = malloc(10010);
  memset(longname, 'a', 10005);
  strcpy(longname + 10005, ".spl");
  CHECK(sparkey_create_index_filename(longname) == NULL);
  free(longname);
}

/* Threads sharing one hash reader, each with its own iterator (the API's contract). */
typedef struct {
  sparkey_hashreader *reader;
  int seed;
  int errors;
} lookup_job;

static void *lookup_thread(void *arg) {
  lookup_job *job = arg;
  sparkey_logreader *log = sparkey_hash_getreader(job->reader);
  sparkey_logiter *it = NULL;
  if (sparkey_logiter_create(&it, log) != SPARKEY_SUCCESS) {
    job->errors++;
    return NULL;
  }
  char key[32], want[256];
  uint8_t got[256];
  for (int n = 0; n < 20000; n++) {
    int i = (n * 7919 + job->seed * 104729) % 1000;
    int kl = snprintf(key, sizeof key, "key-%d", i);
    int wl = snprintf(want, sizeof want, "value-%d-%0*d", i, i % 100, 0);
    uint64_t len = 0;
    if (sparkey_hash_get(job->reader, (uint8_t *)key, (uint64_t)kl, it) != SPARKEY_SUCCESS) {
      job->errors++;
      continue;
    }
    int live = !(i % 10 == 4 && i < 995) && i != 1;
    if (sparkey_logiter_state(it) != (live ? SPARKEY_ITER_ACTIVE : SPARKEY_ITER_INVALID)) {
      job->errors++;
      continue;
    }
    if (!live || i == 0) continue;
    if (sparkey_logiter_fill_value(it, log, sizeof got, got, &len) != SPARKEY_SUCCESS ||
        len != (uint64_t)wl || memcmp(got, want, len) != 0)
      job->errors++;
  }
  sparkey_logiter_close(&it);
  return NULL;
}

static void check_threads(const char *out, const char *name) {
  char spl[4096], spi[4096];
  snprintf(spl, sizeof spl, "%s/%s.spl", out, name);
  snprintf(spi, sizeof spi, "%s/%s.spi", out, name);
  sparkey_hashreader *r = NULL;
  CHECK_RC(sparkey_hash_open(&r, spi, spl), SPARKEY_SUCCESS);
  if (r == NULL) return;
  pthread_t threads[4];
  lookup_job jobs[4];
  for (int t = 0; t < 4; t++) {
    jobs[t] = (lookup_job){r, t, 0};
    CHECK(pthread_create(&threads[t], NULL, lookup_thread, &jobs[t]) == 0);
  }
  for (int t = 0; t < 4; t++) {
    CHECK(pthread_join(threads[t], NULL) == 0);
    CHECK(jobs[t].errors == 0);
  }
  sparkey_hash_close(&r);
}

/* Resident pages of this process (Linux), or -1. */
static long resident_pages(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long size = -1, resident = -1;
  if (f == NULL) return -1;
  if (fscanf(f, "%ld %ld", &size, &resident) != 2) resident = -1;
  fclose(f);
  return resident;
}

/* A program that opens an iterator per lookup and closes it again keeps a bounded
 * footprint: iterators are freed at close, whatever the number of cycles. */
static void check_iterator_churn(const char *out, const char *name) {
  char spl[4096], spi[4096];
  snprintf(spl, sizeof spl, "%s/%s.spl", out, name);
  snprintf(spi, sizeof spi, "%s/%s.spi", out, name);
  sparkey_hashreader *r = NULL;
  CHECK_RC(sparkey_hash_open(&r, spi, spl), SPARKEY_SUCCESS);
  if (r == NULL) return;
  sparkey_logreader *log = sparkey_hash_getreader(r);
  long before = 0;
  for (int i = 0; i < 300000; i++) {
    if (i == 10000) before = resident_pages();
    sparkey_logiter *it = NULL;
    if (sparkey_logiter_create(&it, log) != SPARKEY_SUCCESS) {
      CHECK(0);
      break;
    }
    if (sparkey_hash_get(r, (const uint8_t *)"key-7", 5, it) != SPARKEY_SUCCESS) CHECK(0);
    if (sparkey_logiter_state(it) != SPARKEY_ITER_ACTIVE) CHECK(0);
    sparkey_logiter_close(&it);
    if (it != NULL) CHECK(0);
  }
  long after = resident_pages();
  /* 290,000 cycles: kept iterators would take tens of MB; allow 2 MB of noise. Under
   * AddressSanitizer freed memory is quarantined, so only the plain run measures. */
#ifndef __SANITIZE_ADDRESS__
  if (before > 0 && after > 0) CHECK(after - before < 512);
#else
  (void)before;
  (void)after;
#endif
  sparkey_hash_close(&r);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s VECTOR_DIR OUT_DIR\n", argv[0]);
    return 2;
  }
  static const char *cases[] = {"empty", "single_put", "basic", "overwrite", "deletes",
                                "binary_edge", "hash32_10k", "hash64_small", "multi_session",
                                "snappy_bs16", "snappy_bs65536", "zstd_bs512", "addr64_hash32"};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_vector(argv[1], cases[i]);
  write_store(argv[2], "none", SPARKEY_COMPRESSION_NONE, 0);
  write_store(argv[2], "snappy", SPARKEY_COMPRESSION_SNAPPY, 64);
  write_store(argv[2], "zstd", SPARKEY_COMPRESSION_ZSTD, 1024);
  check_threads(argv[2], "none");
  check_threads(argv[2], "snappy");
  check_iterator_churn(argv[2], "snappy");
  check_errors(argv[1], argv[2]);
  fprintf(stderr, "%d checks, %d failures\n", checks, failures);
  return failures == 0 ? 0 : 1;
}
