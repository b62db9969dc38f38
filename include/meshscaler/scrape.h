/*
 * scrape.h - reading a sidecar's own statistics endpoint (issue 27): the
 * I/O-free core. The controller does not use it yet; a later change sends
 * the requests (libcurl) and feeds the answers through this module.
 *
 *   parser   the Prometheus text exposition format 0.0.4 (and OpenMetrics'
 *            "# EOF"), fed in chunks, keeping only the samples of a few
 *            metric families (name + label matchers), summed per family;
 *            bounded in line length and total bytes; garbage is a one-line
 *            error naming the line.
 *   presets  per proxy (HAProxy, Envoy/Istio, Linkerd): port, path and the
 *            families to read, as data; and the per-pod values they give.
 *   rates    a counter's rate from two reads of the same pod (keyed by pod
 *            UID): delta / elapsed; a decrease is a reset, as Prometheus'
 *            rate() treats it; the first read gives no rate.
 *   sample   which pods to read when there are many (Knative's sample size)
 *            in a deterministic shuffled order; the caller replaces a failed
 *            pod by the next of the order.
 *
 * Everything here is pure or works on caller-owned state: no clock (the
 * caller passes monotonic seconds), no I/O, no globals. Not thread-safe per
 * object (a parser or a rate memory belongs to one thread at a time).
 */
#ifndef MESHSCALER_SCRAPE_H
#define MESHSCALER_SCRAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meshscaler/error.h"
#include "meshscaler/strmap.h"

/* ---- the parser ---- */

#define MS_SCRAPE_MAX_FAMILIES 6
#define MS_SCRAPE_MAX_MATCHERS 3
/* The longest line kept between two chunks (and so the longest line read):
 * real exporters' lines are under 1 KiB (Linkerd's outbound series with a
 * dozen labels are the longest seen, ~600 bytes). */
#define MS_SCRAPE_MAX_LINE 4096
/* The most labels one sample may carry. */
#define MS_SCRAPE_MAX_LABELS 64

typedef enum {
    MS_SCRAPE_MATCH_EQ,     /* label value == value (an absent label is "") */
    MS_SCRAPE_MATCH_PREFIX, /* label value starts with value: the one regex shape
                               the presets need (Envoy's cluster_name=~"inbound\\|.*") */
} ms_scrape_match_op_t;

typedef struct {
    const char *label; /* borrowed */
    const char *value; /* borrowed; compared with the unescaped label value */
    ms_scrape_match_op_t op;
} ms_scrape_matcher_t;

/* One family to read: every sample whose metric name is exactly `name`
 * (the sample's own name: a histogram's "x_sum", not "x") and whose labels
 * pass every matcher. */
typedef struct {
    const char *name; /* borrowed */
    ms_scrape_matcher_t matchers[MS_SCRAPE_MAX_MATCHERS];
    size_t nmatchers;
    /* Only samples > 0 count (HAProxy's limit_sessions: 0 means no limit,
     * as presets.c's `> 0` filters it out). */
    bool positive_only;
} ms_scrape_family_t;

/* What one answer gave for one family. */
typedef struct {
    double sum;     /* of the matching samples that are numbers; 0 when none */
    size_t samples; /* how many were summed */
    size_t nan;     /* matching samples whose value was NaN, left out (HAProxy
                       writes NaN for "not applicable") */
} ms_scrape_total_t;

/* A parser for one answer. Caller-provided storage (about 4 KiB: the
 * carried partial line); no allocation, so no cleanup. Errors are sticky:
 * after one, every call returns it again. */
typedef struct {
    const ms_scrape_family_t *families; /* borrowed for the parser's life */
    size_t nfamilies;
    ms_scrape_total_t totals[MS_SCRAPE_MAX_FAMILIES];
    size_t max_bytes; /* the answer's cap */
    size_t bytes;     /* fed so far */
    size_t lineno;    /* lines completed so far */
    size_t lines;     /* sample lines read (every family) */
    bool eof;         /* OpenMetrics' "# EOF" was read: nothing may follow */
    ms_err_t err;     /* MS_OK, or the sticky error */
    size_t carry_len; /* bytes of an unfinished line in carry */
    char carry[MS_SCRAPE_MAX_LINE];
} ms_scrape_parser_t;

/* Start a parser for families[0..n) (n <= MS_SCRAPE_MAX_FAMILIES, else the
 * first feed fails with MS_ERR_INVALID) and an answer of at most max_bytes. */
void ms_scrape_parser_init(ms_scrape_parser_t *p, const ms_scrape_family_t *families, size_t n,
                           size_t max_bytes);
/* Feed the next len bytes of the answer (any split: a line may span chunks).
 * MS_ERR_TOOLARGE past max_bytes or for a line longer than
 * MS_SCRAPE_MAX_LINE; MS_ERR_PARSE for anything that is not the format,
 * with "line N: ..." in errbuf. */
ms_err_t ms_scrape_parser_feed(ms_scrape_parser_t *p, const char *data, size_t len, char *errbuf,
                               size_t errlen);
/* The answer ended: reads a last line without a newline. The totals are
 * final once this returns MS_OK. */
ms_err_t ms_scrape_parser_finish(ms_scrape_parser_t *p, char *errbuf, size_t errlen);

/* The whole answer buf[0..len) at once (init, feed, finish); totals[i] for
 * families[i]. On error totals are unspecified. */
ms_err_t ms_scrape_parse(const char *buf, size_t len, const ms_scrape_family_t *families, size_t n,
                         size_t max_bytes, ms_scrape_total_t *totals, char *errbuf, size_t errlen);

/* ---- presets ---- */

typedef enum {
    MS_SCRAPE_PROXY_HAPROXY,
    MS_SCRAPE_PROXY_ENVOY, /* Istio's sidecar */
    MS_SCRAPE_PROXY_LINKERD,
    MS_SCRAPE_PROXY__COUNT
} ms_scrape_proxy_t;

/* What a preset's family stands for. */
typedef enum {
    MS_SCRAPE_ROLE_IN_FLIGHT, /* gauge: requests in flight at the app now */
    MS_SCRAPE_ROLE_LIMIT,     /* gauge: the pod's in-flight limit */
    MS_SCRAPE_ROLE_REMAINING, /* gauge: room left below the limit (Envoy's
                                 circuit breaker): limit = in flight + this */
    MS_SCRAPE_ROLE_BUSY_MS,   /* counter: milliseconds of latency accrued; its
                                 rate / 1000 is the mean in flight (Little's law) */
    MS_SCRAPE_ROLE_ADMITTED,  /* counter: requests admitted (saturation guard) */
    MS_SCRAPE_ROLE_REJECTED,  /* counter or gauge: requests refused or queued */
    MS_SCRAPE_ROLE__COUNT
} ms_scrape_role_t;

/* One proxy's endpoint and families, as data: a caller may copy it and
 * change port or path (issue 27: "overridable"). */
typedef struct {
    const char *proxy; /* "haproxy", "envoy", "linkerd" */
    unsigned port;
    const char *path;   /* with its query, e.g. Envoy's filter */
    const char *accept; /* the Accept header to send */
    ms_scrape_family_t families[MS_SCRAPE_MAX_FAMILIES];
    ms_scrape_role_t roles[MS_SCRAPE_MAX_FAMILIES];
    bool counter[MS_SCRAPE_MAX_FAMILIES]; /* a counter: its rate is what counts */
    size_t nfamilies;
} ms_scrape_preset_t;

/* The built-in preset of proxy (static), or NULL for an unknown one. */
const ms_scrape_preset_t *ms_scrape_preset(ms_scrape_proxy_t proxy);
/* "haproxy" / "envoy" / "linkerd" -> the proxy; false when unknown. */
bool ms_scrape_proxy_parse(const char *name, ms_scrape_proxy_t *out);

/* http://IP:PORT/PATH for pod_ip (IPv4, or IPv6 put in brackets) into out;
 * MS_ERR_INVALID for an empty or odd address or a path not starting with
 * '/', MS_ERR_TOOLARGE when it does not fit outlen. */
ms_err_t ms_scrape_url(const ms_scrape_preset_t *preset, const char *pod_ip, char *out,
                       size_t outlen, char *errbuf, size_t errlen);

/* ---- rates ---- */

/* A counter's reading: observed false means "not observed" (the first read
 * of a pod, a counter it did not report, time that did not move). */
typedef struct {
    bool observed;
    double rate; /* per second, >= 0 */
} ms_scrape_rate_t;

/* Per-pod memory of the last counter values, keyed by pod UID. Caller
 * storage: init, cleanup. Not thread-safe. */
typedef struct {
    ms_strmap_t pods; /* uid -> an owned entry */
} ms_scrape_rates_t;

void ms_scrape_rates_init(ms_scrape_rates_t *r);
void ms_scrape_rates_cleanup(ms_scrape_rates_t *r);
/* Record pod uid's counter values at monotonic time now (values[i] for
 * counter i; has[i] false when the pod did not report it) and fill
 * out[i] with the rate since the previous read of the same pod:
 *   (value - previous) / (now - previous now), or value / elapsed when the
 *   value went down (a restart: Prometheus' rate counts the new value as
 *   the increase);
 * not observed on the first read, when counter i was missing in either
 * read, or when now is not after the previous read (which is then kept).
 * n <= MS_SCRAPE_MAX_FAMILIES. */
void ms_scrape_rates_update(ms_scrape_rates_t *r, const char *uid, double now, const double *values,
                            const bool *has, size_t n, ms_scrape_rate_t *out);
/* Forget pods not read since before `older_than` (monotonic seconds): a pod
 * gone, or not sampled for a while (its next read is a first read again).
 * Returns how many were forgotten. */
size_t ms_scrape_rates_expire(ms_scrape_rates_t *r, double older_than);
size_t ms_scrape_rates_size(const ms_scrape_rates_t *r);

/* ---- what one pod's answer says ---- */

typedef struct {
    bool has_in_flight;
    double in_flight; /* requests in flight (for Linkerd: the mean since the last read) */
    bool has_limit;
    double limit;
    ms_scrape_rate_t admitted; /* per second */
    ms_scrape_rate_t rejected; /* per second */
} ms_scrape_pod_t;

/* One pod's values from its answer's totals (totals[i] for
 * preset->families[i]), updating the rate memory under uid at now. */
void ms_scrape_pod_values(const ms_scrape_preset_t *preset, const ms_scrape_total_t *totals,
                          ms_scrape_rates_t *rates, const char *uid, double now,
                          ms_scrape_pod_t *out);

/* ---- sampling ---- */

/* At most this many pods are read per object and round (Knative's bound:
 * the sample size below never exceeds it). */
#define MS_SCRAPE_SAMPLE_MAX 16

/* How many of population pods to read: all of them up to 3, then Knative's
 * ceil(N * X / (N + X - 1)), X = 1.96^2 * 100 / 5^2 = 15.3664 (95 %
 * confidence, margin 5 on a variance of 100): 4 -> 4, 10 -> 7, 100 -> 14,
 * never above 16. */
size_t ms_scrape_sample_size(size_t population);

/* The caller estimates a workload's total as (sum over the pods read) *
 * npods / read, as Knative scales its sample. */
/* The order to read npods pods in: order[0..npods) a permutation of
 * 0..npods-1, shuffled by seed (the same seed, the same order). Read the
 * first ms_scrape_sample_size(npods) of it; when one fails, read the next
 * one of the order in its place, until the order runs out. */
void ms_scrape_sample_order(size_t npods, uint64_t seed, size_t *order);

#endif
