/*
 * scrape_fetch.h - reading the sidecars' own statistics endpoints (issue 27):
 * the I/O edge of scrape.h. Given one workload's pods (UID, IP, optional
 * port and path overrides) and its proxy preset, one read sends the HTTP
 * GETs through one libcurl multi handle (an ms_http_batch kept by the
 * fetcher, so connections stay open from one read to the next), feeds each
 * answer's chunks to the scrape parser as they arrive (the body is never
 * buffered), and turns every pod into values or a reason:
 *
 *   sampling   all pods when few, ms_scrape_sample_size() of them when many,
 *              in ms_scrape_sample_order() of the caller's seed; a pod that
 *              fails is replaced at once by the next unread pod of the order
 *              (while the read's deadline has not passed).
 *   bounds     per read of one pod a timeout (default 1 s: connect, headers
 *              and body); at most max_in_flight reads at once; at most
 *              max_bytes per answer (the transfer is aborted when it goes
 *              past); the read's overall deadline ends whatever still runs.
 *   rates      an answer's counters go through ms_scrape_pod_values() with
 *              the caller's rate memory at the caller's `now`, so the second
 *              read of a pod gives its rates (the first: not observed).
 *
 * Not in the controller's round yet: the later wiring calls
 * ms_scrape_fetch_read() per object inside the round's deadline.
 *
 * Ownership: the fetcher owns its HTTP client and batch; a read borrows the
 * pods and the preset for the call; results are the caller's storage.
 * Threads: one fetcher belongs to one thread at a time. No globals. Time:
 * the rates use the caller's `now`; the deadline is in ms_clock_monotonic()
 * seconds, which the fetcher (like the HTTP layer under it) reads only to
 * compare with it and to measure the read.
 */
#ifndef MESHSCALER_SCRAPE_FETCH_H
#define MESHSCALER_SCRAPE_FETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meshscaler/error.h"
#include "meshscaler/scrape.h"

/* Why a pod gave no values (or OK). X(name, sentence) */
#define MS_SCRAPE_FETCH_REASON_MAP(X)                                                              \
    X(OK, "the pod answered and its answer was read")                                              \
    X(NOT_READ, "the pod was not in the sample")                                                   \
    X(BAD_ADDRESS, "the pod's address, port or path cannot make a URL")                            \
    X(REFUSED, "the connection was refused (no listener on the stats port)")                       \
    X(TIMEOUT, "the pod did not answer within the per-read timeout")                               \
    X(DEADLINE, "the read's deadline passed before the pod answered")                              \
    X(HTTP_STATUS, "the pod answered with an HTTP status other than 200")                          \
    X(TOO_BIG, "the answer went past the byte cap, so the transfer was aborted")                   \
    X(PARSE, "the answer is not the Prometheus text format")                                       \
    X(TRANSPORT, "the connection failed during the transfer")

typedef enum {
#define MS__SCRAPE_FETCH_ENUM(name, sentence) MS_SCRAPE_FETCH_##name,
    MS_SCRAPE_FETCH_REASON_MAP(MS__SCRAPE_FETCH_ENUM)
#undef MS__SCRAPE_FETCH_ENUM
        MS_SCRAPE_FETCH__COUNT
} ms_scrape_fetch_reason_t;

/* "TIMEOUT"; static, never NULL ("UNKNOWN" outside the enum). */
const char *ms_scrape_fetch_reason_name(ms_scrape_fetch_reason_t r);
/* The explaining sentence; static, never NULL. */
const char *ms_scrape_fetch_reason_sentence(ms_scrape_fetch_reason_t r);

#define MS_SCRAPE_FETCH_TIMEOUT_MS 1000
#define MS_SCRAPE_FETCH_IN_FLIGHT 16
/* HAProxy's full exporter answer is ~20 KiB per proxy with one backend and
 * grows with its backends and servers; Envoy's filtered one is a few KiB.
 * 1 MiB leaves room for a large HAProxy and stops an unfiltered Envoy dump. */
#define MS_SCRAPE_FETCH_MAX_BYTES ((size_t)1 << 20)
/* 256 idle connections: 16 objects' full samples; a file descriptor and a
 * few KiB each. */
#define MS_SCRAPE_FETCH_KEEP 256

typedef struct {
    long timeout_ms;      /* per pod read; 0: MS_SCRAPE_FETCH_TIMEOUT_MS */
    size_t max_in_flight; /* reads at once; 0: MS_SCRAPE_FETCH_IN_FLIGHT */
    size_t max_bytes;     /* per answer; 0: MS_SCRAPE_FETCH_MAX_BYTES */
    /* Idle connections kept open between reads (one per pod read again);
     * 0: MS_SCRAPE_FETCH_KEEP. Past it the oldest idle one is closed. */
    size_t keep_connections;
    const char *user_agent; /* NULL: "meshscaler/<version>" */
    /* Pods to read per workload: 0, Knative's ms_scrape_sample_size(); else
     * this many (all pods when more), for a caller with a reason to read
     * more or fewer (the bench reads every pod). */
    size_t sample;
} ms_scrape_fetch_options_t;

/* One pod to read. */
typedef struct {
    const char *uid;  /* the rate memory's key */
    const char *ip;   /* status.podIP */
    unsigned port;    /* 0: the preset's */
    const char *path; /* NULL: the preset's (with its query) */
} ms_scrape_fetch_pod_t;

/* What one pod gave. */
typedef struct {
    ms_scrape_fetch_reason_t reason;
    char message[MS_ERRBUF_SIZE]; /* one line naming the pod (UID, URL) and the cause; "" when OK */
    long http_status;             /* 0 when none arrived */
    size_t bytes;                 /* answer bytes read (the body, after decoding) */
    double seconds;               /* how long its read took (its own transfer) */
    double ended;                 /* when it ended, in seconds since the read began:
                                     what a slow pod beside it would delay */
    ms_scrape_total_t totals[MS_SCRAPE_MAX_FAMILIES]; /* OK: per preset family */
    ms_scrape_pod_t values;                           /* OK: in flight, limit, rates */
} ms_scrape_fetch_result_t;

/* One read, all pods. */
typedef struct {
    size_t sample;        /* pods wanted: the sample size of npods (options.sample) */
    size_t attempted;     /* pods tried (replacements and bad addresses included) */
    size_t ok;            /* pods that gave values */
    size_t failed;        /* attempted - ok */
    size_t bytes;         /* answer bytes over all pods */
    long new_connections; /* connections opened (0 when every read reused one) */
    double seconds;       /* the read's wall time */
} ms_scrape_fetch_summary_t;

typedef struct ms_scrape_fetcher ms_scrape_fetcher_t;

/* A fetcher, or NULL with the reason in errbuf. Needs ms_http_global_init(). */
ms_scrape_fetcher_t *ms_scrape_fetcher_new(const ms_scrape_fetch_options_t *opts, char *errbuf,
                                           size_t errlen);
/* NULL does nothing. Closes the connections it kept. */
void ms_scrape_fetcher_free(ms_scrape_fetcher_t *f);

/* Read pods[0..npods) of one workload with `preset` (overrides per pod),
 * sampled and ordered by seed. results[i] is pods[i]'s (NOT_READ for a pod
 * outside the sample). `now` (monotonic seconds) is the rates' time;
 * `deadline` (monotonic seconds, 0: none) ends the whole read: pods still
 * running then are DEADLINE, and no replacement starts after it. rates is the
 * caller's memory across reads (keyed by UID). Returns MS_OK unless the read
 * itself could not run (MS_ERR_IO from libcurl's multi handle); a pod's
 * failure is its result's reason, never the call's error. */
ms_err_t ms_scrape_fetch_read(ms_scrape_fetcher_t *f, const ms_scrape_preset_t *preset,
                              const ms_scrape_fetch_pod_t *pods, size_t npods, uint64_t seed,
                              double now, double deadline, ms_scrape_rates_t *rates,
                              ms_scrape_fetch_result_t *results, ms_scrape_fetch_summary_t *sum,
                              char *errbuf, size_t errlen);

#endif
