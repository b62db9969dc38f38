/*
 * kube_internal.h - pieces shared inside src/kube/ and tested at narrow seams
 * (tests/unit/test_kube_*.c): file reading, base64, the clock, the token
 * bucket, backoff, watch-line framing and event keys. Not a public header.
 *
 * Every function takes the time as an argument where time matters, so the
 * unit tests pass a clock instead of sleeping.
 */
#ifndef MESHSCALER_KUBE_INTERNAL_H
#define MESHSCALER_KUBE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meshscaler/buf.h"
#include "meshscaler/error.h"

/* Most kubeconfig files merged from $KUBECONFIG. */
#define MS__KUBE_MAX_FILES 16

/* ---- small utilities (kube_util.c) ---- */

/* Monotonic seconds; wall-clock seconds since the epoch. */
/* Sleep up to seconds, waking early when *cancel turns true (may be NULL).
 * Returns false when cancelled. */
bool ms__kube_sleep(double seconds, const atomic_bool *cancel);

/* Read a whole file into b (capped at MS_KUBE_MAX_FILE). On failure errbuf
 * holds "cannot read \"path\": reason". */
ms_err_t ms__kube_read_file(const char *path, ms_buf_t *b, char *errbuf, size_t errlen);

/* Decode standard base64 (whitespace ignored). *out is malloc'ed and
 * NUL-terminated (not counted in *out_len); MS_ERR_PARSE on bad input. */
ms_err_t ms__kube_base64_decode(const char *in, size_t len, char **out, size_t *out_len);

/* Append to b the percent-encoding of s for a query value. */
ms_err_t ms__kube_urlencode(ms_buf_t *b, const char *s);

/* ---- token bucket (ratelimit.c) ---- */

/* client-go's flowcontrol token bucket: qps tokens per second, at most
 * burst stored; starts full. Thread-safe.
 *
 * Two classes of request share it. Foreground requests (the default)
 * reserve: they may drive the count below zero and wait their turn. A
 * background request (status writes, Events: ms_kube_background_set) never
 * reserves: it takes a token only when one is there, so it never queues
 * ahead of a scale write, and it has a floor of its own
 * (MS__KUBE_BACKGROUND_FLOOR of qps) so a long run of foreground requests
 * slows it without stopping it. Every request of both classes takes its
 * token from the one count: together they stay within qps and burst. */
typedef struct {
    pthread_mutex_t lock;
    double qps;
    double burst;
    double tokens;
    double last;         /* time tokens was computed for; < 0 before the first use */
    double floor_tokens; /* the background floor's bucket: qps * floor per second, at most 1 */
} ms__kube_ratelimit_t;

/* The share of qps that background requests get however busy the foreground is. */
#define MS__KUBE_BACKGROUND_FLOOR 0.1

void ms__kube_ratelimit_init(ms__kube_ratelimit_t *rl, double qps, int burst);
void ms__kube_ratelimit_cleanup(ms__kube_ratelimit_t *rl);
/* Take one token at time now; returns how long the caller must wait before
 * using it (0 when one was available). qps <= 0 means unlimited. */
double ms__kube_ratelimit_reserve(ms__kube_ratelimit_t *rl, double now);
/* A background request at time now: 0 when it took a token, else how long
 * to wait before asking again (it took none). */
double ms__kube_ratelimit_try_background(ms__kube_ratelimit_t *rl, double now);

/* ---- exponential backoff with jitter (ratelimit.c) ---- */

typedef struct {
    double initial;     /* first delay */
    double max;         /* cap */
    double factor;      /* growth per failure (2) */
    double jitter;      /* up to this fraction is added at random (0.5) */
    double reset_after; /* a success this long after the last failure resets */
    double current;
    double last_failure;
    uint64_t rng; /* xorshift state; seed it for reproducible tests */
} ms__kube_backoff_t;

void ms__kube_backoff_init(ms__kube_backoff_t *b, double initial, double max, uint64_t seed);
/* The delay to wait after a failure at time now. */
double ms__kube_backoff_next(ms__kube_backoff_t *b, double now);
/* Forget failures (a watch that delivered events, say). */
void ms__kube_backoff_reset(ms__kube_backoff_t *b);

/* ---- watch stream framing (watch.c) ---- */

/* Splits a byte stream into lines through a bounded buffer: a line longer
 * than max fails with MS_ERR_TOOLARGE, so a hostile server cannot make the
 * client allocate without bound. */
typedef ms_err_t (*ms__kube_line_fn)(void *ctx, const char *line, size_t len);

typedef struct {
    ms_buf_t partial; /* bytes of the line not yet complete */
    ms__kube_line_fn on_line;
    void *ctx;
    ms_err_t err; /* first error; sticky */
} ms__kube_lines_t;

void ms__kube_lines_init(ms__kube_lines_t *l, size_t max_line, ms__kube_line_fn fn, void *ctx);
void ms__kube_lines_cleanup(ms__kube_lines_t *l);
/* Feed bytes; calls on_line for every complete line (without '\n', empty
 * lines skipped). Returns the first error of the stream. */
ms_err_t ms__kube_lines_feed(ms__kube_lines_t *l, const char *data, size_t len);

/* ---- managedFields cut before parsing (cut.c) ---- */

/* Copies s into out (emptied first) without the member managedFields of a
 * watch event's object.metadata (cut.c says why). False
 * when there is none, or s is not text the scan can follow, or out's cap
 * was reached: then s is to be parsed as it is. */
bool ms__kube_cut_managed_fields(const char *s, size_t len, ms_buf_t *out);

/* ---- event deduplication (kube_events.c) ---- */

/* The key under which repeated events are folded into one (count++):
 * client-go's getEventKey fields. Writes at most cap-1 bytes; returns false
 * when the key did not fit (then it must not be used). */
bool ms__kube_event_key(char *buf, size_t cap, const char *source, const char *api_version,
                        const char *kind, const char *ns, const char *name, const char *uid,
                        const char *type, const char *reason, const char *message);

#endif
