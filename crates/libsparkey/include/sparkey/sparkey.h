/*
 * sparkey.h: the Sparkey C API, as served by Cairn's libsparkey.so.0.
 *
 * Same names, signatures, enum values and return codes as the reference library's header
 * (spotify/sparkey, src/sparkey.h), so a program built against the reference compiles and
 * runs unchanged against Cairn's library. The behaviour of every function is specified
 * in sparkey-format.md section 9; the file formats are Cairn's crates/engine/src/hash/FORMAT.md.
 *
 * Where Cairn deliberately differs from the reference (each is a bug or a crash in the
 * reference; marked "Cairn:" below and listed in crates/libsparkey/README.md):
 *
 *  - Closed writers and readers stay valid. Closing a writer, log reader or hash reader
 *    frees everything it owns but keeps a small closed object, so a stale pointer (and an
 *    iterator of a closed reader) gives SPARKEY_LOG_CLOSED (-204) or SPARKEY_HASH_CLOSED
 *    (-304) instead of a use-after-free. A few dozen bytes per closed writer or reader are
 *    kept for the life of the process. Iterators are freed by sparkey_logiter_close, as
 *    in the reference (programs create one per lookup): a stale copy of a closed
 *    iterator's pointer must not be used.
 *  - NULL handles are treated as closed handles; NULL out-pointers, buffers or keys with a
 *    non-zero length give SPARKEY_INTERNAL_ERROR (-1) instead of a crash.
 *  - No panic or abort crosses the boundary: an internal failure is SPARKEY_INTERNAL_ERROR.
 *  - sparkey_logiter_valuechunk / fill_value on an iterator that is not ACTIVE return
 *    SPARKEY_LOG_ITERATOR_INACTIVE at once (the reference can loop forever).
 *  - Damaged files give error codes, never out-of-bounds reads or hangs.
 *
 * Thread-safety: a sparkey_logreader or sparkey_hashreader may be shared by threads,
 * except while it is opened or closed; a sparkey_logiter or sparkey_logwriter must be used
 * by one thread at a time. There is no locking against several writers on one file.
 */
#ifndef SPOTIFY_SPARKEY_H_INCLUDED
#define SPOTIFY_SPARKEY_H_INCLUDED

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  SPARKEY_SUCCESS = 0,
  SPARKEY_INTERNAL_ERROR = -1,

  SPARKEY_FILE_NOT_FOUND = -100,
  SPARKEY_PERMISSION_DENIED = -101,
  SPARKEY_TOO_MANY_OPEN_FILES = -102,
  SPARKEY_FILE_TOO_LARGE = -103,
  SPARKEY_FILE_ALREADY_EXISTS = -104,
  SPARKEY_FILE_BUSY = -105,
  SPARKEY_FILE_IS_DIRECTORY = -106,
  SPARKEY_FILE_SIZE_EXCEEDED = -107,
  SPARKEY_FILE_CLOSED = -108,
  SPARKEY_OUT_OF_DISK = -109,
  SPARKEY_UNEXPECTED_EOF = -110,
  SPARKEY_MMAP_FAILED = -111,

  SPARKEY_WRONG_LOG_MAGIC_NUMBER = -200,
  SPARKEY_WRONG_LOG_MAJOR_VERSION = -201,
  SPARKEY_UNSUPPORTED_LOG_MINOR_VERSION = -202,
  SPARKEY_LOG_TOO_SMALL = -203,
  SPARKEY_LOG_CLOSED = -204,
  SPARKEY_LOG_ITERATOR_INACTIVE = -205,
  SPARKEY_LOG_ITERATOR_MISMATCH = -206,
  SPARKEY_LOG_ITERATOR_CLOSED = -207,
  SPARKEY_LOG_HEADER_CORRUPT = -208,
  SPARKEY_INVALID_COMPRESSION_BLOCK_SIZE = -209,
  SPARKEY_INVALID_COMPRESSION_TYPE = -210,

  SPARKEY_WRONG_HASH_MAGIC_NUMBER = -300,
  SPARKEY_WRONG_HASH_MAJOR_VERSION = -301,
  SPARKEY_UNSUPPORTED_HASH_MINOR_VERSION = -302,
  SPARKEY_HASH_TOO_SMALL = -303,
  SPARKEY_HASH_CLOSED = -304,
  SPARKEY_FILE_IDENTIFIER_MISMATCH = -305,
  SPARKEY_HASH_HEADER_CORRUPT = -306,
  SPARKEY_HASH_SIZE_INVALID = -307,
} sparkey_returncode;

/**
 * The reference's static message for a code ("Unknown error" for any other value).
 * Never NULL; do not free.
 */
const char * sparkey_errstring(sparkey_returncode code);

/* logwriter */

struct sparkey_logwriter;
typedef struct sparkey_logwriter sparkey_logwriter;

typedef enum {
  SPARKEY_COMPRESSION_NONE,
  SPARKEY_COMPRESSION_SNAPPY,
  SPARKEY_COMPRESSION_ZSTD
} sparkey_compression_type;

typedef enum {
  SPARKEY_ENTRY_PUT,
  SPARKEY_ENTRY_DELETE
} sparkey_entry_type;

typedef enum {
  SPARKEY_ITER_NEW,
  SPARKEY_ITER_ACTIVE,
  SPARKEY_ITER_CLOSED,
  SPARKEY_ITER_INVALID
} sparkey_iter_state;

struct sparkey_logreader;
typedef struct sparkey_logreader sparkey_logreader;

struct sparkey_logiter;
typedef struct sparkey_logiter sparkey_logiter;

struct sparkey_hashreader;
typedef struct sparkey_hashreader sparkey_hashreader;

/**
 * Creates a new, empty log at filename (replacing any file there) with a fresh random
 * file identifier. compression_block_size must be 10 ... 2^30 for SNAPPY and ZSTD
 * (else SPARKEY_INVALID_COMPRESSION_BLOCK_SIZE); it is ignored (stored as 0) for NONE.
 * Cairn: an unknown compression_type returns SPARKEY_INVALID_COMPRESSION_TYPE (the
 * reference writes it into a header every reader rejects). The new file replaces the
 * old one atomically (temporary file + rename); readers holding the old file keep it.
 */
sparkey_returncode sparkey_logwriter_create(sparkey_logwriter **log, const char *filename, sparkey_compression_type compression_type, int compression_block_size);

/**
 * Opens an existing log to append after its data_end; compressed logs continue in a new
 * block.
 */
sparkey_returncode sparkey_logwriter_append(sparkey_logwriter **log, const char *filename);

/** Appends a PUT. SPARKEY_LOG_CLOSED if the writer is closed (or NULL). */
sparkey_returncode sparkey_logwriter_put(sparkey_logwriter *log, uint64_t keylen, const uint8_t *key, uint64_t valuelen, const uint8_t *value);

/** Appends a DELETE (even if the key never existed). */
sparkey_returncode sparkey_logwriter_delete(sparkey_logwriter *log, uint64_t keylen, const uint8_t *key);

/**
 * Writes buffered entries and the header, making them visible to readers opened
 * afterwards. No fsync.
 */
sparkey_returncode sparkey_logwriter_flush(sparkey_logwriter *log);

/**
 * Flushes, closes and sets *log to NULL. No fsync (as the reference).
 * Cairn: calling it again with the NULL pointer (or a stale pointer to the closed writer)
 * returns SPARKEY_SUCCESS.
 */
sparkey_returncode sparkey_logwriter_close(sparkey_logwriter **log);

/* logreader */

/** Opens a log for reading: validates the header and maps data_end bytes read-only. */
sparkey_returncode sparkey_logreader_open(sparkey_logreader **log, const char *filename);

/**
 * Closes the log and sets *log to NULL; NULL-safe.
 * Cairn: iterators of a closed reader then get SPARKEY_LOG_CLOSED (in the reference
 * they read freed memory).
 */
void sparkey_logreader_close(sparkey_logreader **log);

/** Header max_key_len (Cairn: 0 for a NULL or closed reader). */
uint64_t sparkey_logreader_maxkeylen(sparkey_logreader *log);

/** Header max_value_len (Cairn: 0 for a NULL or closed reader). */
uint64_t sparkey_logreader_maxvaluelen(sparkey_logreader *log);

/** Header compression block size, 0 if uncompressed (Cairn: 0 for a NULL or closed reader). */
int sparkey_logreader_get_compression_blocksize(sparkey_logreader *log);

/** Header compression type (Cairn: NONE for a NULL or closed reader). */
sparkey_compression_type sparkey_logreader_get_compression_type(sparkey_logreader *log);

/**
 * A new iterator before the first entry (state NEW). SPARKEY_LOG_CLOSED if the reader is
 * closed.
 */
sparkey_returncode sparkey_logiter_create(sparkey_logiter **iter, sparkey_logreader *log);

/** Frees the iterator and sets *iter to NULL; NULL-safe; never touches the reader. */
void sparkey_logiter_close(sparkey_logiter **iter);

/**
 * Repositions at a block start (compressed logs) or an entry start (uncompressed logs):
 * state NEW; position == data_end gives state CLOSED.
 * Cairn: a position outside 84 ... data_end returns SPARKEY_INTERNAL_ERROR (state
 * INVALID); one that is not a block start of a compressed log usually fails to decode
 * (an error code, never undefined behaviour).
 */
sparkey_returncode sparkey_logiter_seek(sparkey_logiter *iter, sparkey_logreader *log, uint64_t position);

/** Calls sparkey_logiter_next count times. */
sparkey_returncode sparkey_logiter_skip(sparkey_logiter *iter, sparkey_logreader *log, int count);

/**
 * Skips the unread rest of the current entry and reads the next entry's header: state
 * ACTIVE, or CLOSED at the end of the data (a CLOSED iterator stays CLOSED and returns
 * SPARKEY_SUCCESS), or INVALID on error. Errors: SPARKEY_LOG_CLOSED,
 * SPARKEY_LOG_ITERATOR_CLOSED, SPARKEY_LOG_ITERATOR_MISMATCH (iterator of another log).
 */
sparkey_returncode sparkey_logiter_next(sparkey_logiter *iter, sparkey_logreader *log);

/**
 * Rewinds to the start of the current entry's key: key and value are unread again.
 * SPARKEY_LOG_ITERATOR_INACTIVE unless ACTIVE.
 */
sparkey_returncode sparkey_logiter_reset(sparkey_logiter *iter, sparkey_logreader *log);

/**
 * Zero-copy read of the next part of the key: *res points into the log's map or the
 * iterator's block buffer, *len <= maxlen, never crossing a block; *len = 0 (and *res
 * untouched) once the key is exhausted. Valid until the next operation on the iterator.
 * SPARKEY_LOG_ITERATOR_INACTIVE unless ACTIVE.
 */
sparkey_returncode sparkey_logiter_keychunk(sparkey_logiter *iter, sparkey_logreader *log, uint64_t maxlen, uint8_t ** res, uint64_t *len);

/**
 * Discards the unread rest of the key, then reads like sparkey_logiter_keychunk from the
 * value.
 * Cairn: SPARKEY_LOG_ITERATOR_INACTIVE at once unless ACTIVE (the reference skips key
 * bytes before checking the state and can loop forever on a never-activated iterator).
 */
sparkey_returncode sparkey_logiter_valuechunk(sparkey_logiter *iter, sparkey_logreader *log, uint64_t maxlen, uint8_t ** res, uint64_t *len);

/**
 * Copies up to maxlen key bytes into buf; *len = bytes copied. No NUL terminator.
 * Cairn: with maxlen > 0, SPARKEY_LOG_ITERATOR_INACTIVE unless ACTIVE.
 */
sparkey_returncode sparkey_logiter_fill_key(sparkey_logiter *iter, sparkey_logreader *log, uint64_t maxlen, uint8_t *buf, uint64_t *len);

/** Same as sparkey_logiter_fill_key for the value (skipping the unread key first). */
sparkey_returncode sparkey_logiter_fill_value(sparkey_logiter *iter, sparkey_logreader *log, uint64_t maxlen, uint8_t *buf, uint64_t *len);

/**
 * Compares the unread keys of two iterators (memcmp order, a proper prefix first) and
 * consumes them. Cairn: *res is exactly -1, 0 or 1; the same iterator passed twice
 * compares equal (the reference gives 1); both iterators must be ACTIVE
 * (else SPARKEY_LOG_ITERATOR_INACTIVE).
 */
sparkey_returncode sparkey_logiter_keycmp(sparkey_logiter *iter1, sparkey_logiter *iter2, sparkey_logreader *log, int *res);

/** The iterator's state (Cairn: SPARKEY_ITER_CLOSED for a NULL or closed iterator). */
sparkey_iter_state sparkey_logiter_state(sparkey_logiter *iter);

/** Type of the current entry (Cairn: PUT for a NULL or closed iterator). */
sparkey_entry_type sparkey_logiter_type(sparkey_logiter *iter);

/** Key length of the current entry (Cairn: 0 for a NULL or closed iterator). */
uint64_t sparkey_logiter_keylen(sparkey_logiter *iter);

/** Value length of the current entry, 0 for a DELETE (Cairn: 0 for a NULL or closed iterator). */
uint64_t sparkey_logiter_valuelen(sparkey_logiter *iter);

/* hashwriter */

/**
 * Builds the index hash_filename for log_filename: incrementally if a valid index for the
 * same log exists, else from scratch. hash_size: 0 (auto: 64-bit hashes from 2^23 entries
 * on), 4 (murmurhash3_x86_32) or 8 (lower 64 bits of murmurhash3_x64_128); anything else
 * is SPARKEY_HASH_SIZE_INVALID. The index replaces the old file atomically.
 */
sparkey_returncode sparkey_hash_write(const char *hash_filename, const char *log_filename, int hash_size);

/* hashreader */

/** Opens an index and its log; checks that they belong together. */
sparkey_returncode sparkey_hash_open(sparkey_hashreader **reader, const char *hash_filename, const char *log_filename);

/**
 * The embedded log reader, owned by the hash reader (do not close it separately).
 * Cairn: NULL for a NULL or closed hash reader.
 */
sparkey_logreader * sparkey_hash_getreader(sparkey_hashreader *reader);

/**
 * Closes the index and its log, sets *reader to NULL; NULL-safe.
 * Cairn: the embedded log reader is closed too and stays a valid closed handle.
 */
void sparkey_hash_close(sparkey_hashreader **reader);

/**
 * Looks key up. Found: the iterator is ACTIVE on the PUT with the key consumed (read the
 * value next). Absent: state INVALID and SPARKEY_SUCCESS. SPARKEY_HASH_CLOSED if the
 * reader is closed. Cairn: SPARKEY_LOG_ITERATOR_CLOSED / _MISMATCH are checked before the
 * lookup, whether or not the key is found.
 */
sparkey_returncode sparkey_hash_get(sparkey_hashreader *reader, const uint8_t *key, uint64_t keylen, sparkey_logiter *iter);

/**
 * Like sparkey_logiter_next but stops only on live entries (each live key once, in log
 * order of its surviving PUT), rewound so the key can be read.
 */
sparkey_returncode sparkey_logiter_hashnext(sparkey_logiter *iter, sparkey_hashreader *reader);

/** Index header num_entries (Cairn: 0 for a NULL or closed reader). */
uint64_t sparkey_hash_numentries(sparkey_hashreader *reader);

/** Index header hash_collisions (Cairn: 0 for a NULL or closed reader). */
uint64_t sparkey_hash_numcollisions(sparkey_hashreader *reader);

/* util */

/**
 * A malloc'ed copy of index_filename with its trailing ".spi" turned into ".spl"; NULL if
 * the suffix is missing, the input is NULL or longer than 10 000 bytes. Free with free().
 */
char * sparkey_create_log_filename(const char *index_filename);

/** Same, ".spl" to ".spi". */
char * sparkey_create_index_filename(const char *log_filename);

#ifdef __cplusplus
}
#endif

#endif
