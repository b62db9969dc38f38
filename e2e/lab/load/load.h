/*
 * load.h - the pure parts of the incident lab's load client (meshscaler-load):
 * the rate profile, the arrival schedule, the retry policies and the retry
 * budget, the run's counters and latency quantiles, the JSON summary, the
 * /metrics families and the command line. None of these does I/O or reads a
 * clock: every time is an argument (seconds), so the unit test travels in time.
 *
 * Threads: every type here belongs to one thread (the client's loop), except
 * the registry inside ms_load_metrics_t, which is thread-safe (the server
 * thread renders it). Ownership is stated per declaration.
 */
#ifndef MESHSCALER_LOAD_H
#define MESHSCALER_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meshscaler/buf.h"
#include "meshscaler/error.h"
#include "meshscaler/metrics.h"

/* ---- random numbers ---------------------------------------------------- */

/* splitmix64: the same --seed gives the same arrivals and the same jitter.
 * Caller-provided storage, no cleanup. */
typedef struct {
    uint64_t state;
} ms_load_rng_t;

void ms_load_rng_seed(ms_load_rng_t *rng, uint64_t seed);
/* Uniform in [0, 1). */
double ms_load_rng_uniform(ms_load_rng_t *rng);

/* ---- the rate profile and the arrivals --------------------------------- */

typedef enum {
    MS_LOAD_PROFILE_STEADY = 0, /* steady:RATE */
    MS_LOAD_PROFILE_STEP,       /* step:R1:R2:AT_SECONDS */
    MS_LOAD_PROFILE_PEAK        /* peak:BASE:PEAK:RAMP_S:HOLD_S[:START_S] */
} ms_load_profile_kind_t;

/* A plain value; rates in logical requests per second, times in seconds
 * from the start of the run. */
typedef struct {
    ms_load_profile_kind_t kind;
    double base;   /* steady's RATE, step's R1, peak's BASE */
    double high;   /* step's R2, peak's PEAK */
    double at_s;   /* step: when R2 begins; peak: when the ramp up begins */
    double ramp_s; /* peak: each ramp's length (0: a jump) */
    double hold_s; /* peak: how long PEAK holds */
} ms_load_profile_t;

/* Parse a --profile value into *out. false with a one-line reason in errbuf
 * (and *out unspecified) when it is malformed or out of range. */
bool ms_load_profile_parse(const char *text, ms_load_profile_t *out, char *errbuf, size_t errlen);
/* The rate the profile asks for at t (requests/s, >= 0). */
double ms_load_profile_rate(const ms_load_profile_t *p, double t);
/* The highest rate it ever asks for. */
double ms_load_profile_max(const ms_load_profile_t *p);
/* The arrivals it asks for in [0, duration): the integral of the rate. */
double ms_load_profile_expected(const ms_load_profile_t *p, double duration);

typedef enum {
    MS_LOAD_ARRIVALS_POISSON = 0, /* exponential gaps (thinning, for a varying rate) */
    MS_LOAD_ARRIVALS_UNIFORM      /* gaps of exactly 1 / rate(t) */
} ms_load_arrivals_t;

/* The first arrival after t, or a time >= end when none comes before end.
 * Draws from rng (Poisson only). */
double ms_load_next_arrival(const ms_load_profile_t *p, ms_load_arrivals_t mode, double t,
                            double end, ms_load_rng_t *rng);

/* ---- attempts and retries ---------------------------------------------- */

/* How one attempt ended. "2xx" holds every answer below 400: curl does not
 * follow redirects here and the lab's backends only answer 200. */
typedef enum {
    MS_LOAD_RESULT_2XX = 0,
    MS_LOAD_RESULT_4XX,
    MS_LOAD_RESULT_5XX,
    MS_LOAD_RESULT_ERROR,   /* no answer: refused, reset, malformed */
    MS_LOAD_RESULT_TIMEOUT, /* no answer within --timeout-ms */
    MS_LOAD_RESULT_COUNT
} ms_load_result_t;

/* The label value ("2xx", ..., "timeout"); static. */
const char *ms_load_result_name(ms_load_result_t r);
/* The class of an answer with this HTTP status. */
ms_load_result_t ms_load_result_of_status(long status);

typedef enum {
    MS_LOAD_RETRY_NONE = 0,  /* none */
    MS_LOAD_RETRY_IMMEDIATE, /* immediate:N */
    MS_LOAD_RETRY_BOUNDED,   /* bounded:N:DELAY_MS */
    MS_LOAD_RETRY_BACKOFF,   /* backoff:N:BASE_MS:CAP_MS, full jitter */
    MS_LOAD_RETRY_BUDGET     /* budget:RATIO, immediate up to 3 while the budget allows */
} ms_load_retry_kind_t;

/* A plain value. */
typedef struct {
    ms_load_retry_kind_t kind;
    unsigned max_retries; /* retries after the first attempt */
    double delay_s;       /* bounded: the fixed delay */
    double base_s;        /* backoff: the first retry's ceiling */
    double cap_s;         /* backoff: no ceiling above this */
    double ratio;         /* budget: retries per logical request in the window */
} ms_load_retry_t;

/* Parse a --retry value. false with a reason in errbuf when malformed. */
bool ms_load_retry_parse(const char *text, ms_load_retry_t *out, char *errbuf, size_t errlen);

#define MS_LOAD_TERMINAL_MAX 16

/* Statuses that are never retried (--terminal). A plain value. */
typedef struct {
    long status[MS_LOAD_TERMINAL_MAX];
    size_t n;
} ms_load_terminal_t;

/* Parse "403,429" ("" or "none": no terminal status). false with a reason. */
bool ms_load_terminal_parse(const char *text, ms_load_terminal_t *out, char *errbuf, size_t errlen);

/* Full jitter (AWS Architecture Blog, "Exponential Backoff and Jitter"):
 * uniform in [0, min(cap, base * 2^retries_done)). */
double ms_load_backoff_delay(double base_s, double cap_s, unsigned retries_done,
                             ms_load_rng_t *rng);

/* The retry budget: a 10 s window of one-second slots counting logical
 * requests and retries (Finagle's RetryBudget, gRPC's retry throttling are
 * the model; one-second slots make the window slide in steps of a second).
 * Caller-provided storage, no cleanup. */
#define MS_LOAD_BUDGET_SLOTS 10

typedef struct {
    double ratio;
    int64_t second[MS_LOAD_BUDGET_SLOTS]; /* which second each slot counts; -1 unused */
    uint64_t logical[MS_LOAD_BUDGET_SLOTS];
    uint64_t retries[MS_LOAD_BUDGET_SLOTS];
} ms_load_budget_t;

void ms_load_budget_init(ms_load_budget_t *b, double ratio);
/* Count a logical request that arrived at now. */
void ms_load_budget_note_logical(ms_load_budget_t *b, double now);
/* Whether one more retry at now keeps retries <= ratio x logical requests in
 * the window; counts the retry when it does. */
bool ms_load_budget_try_retry(ms_load_budget_t *b, double now);

/* One finished attempt, as the retry decision sees it. */
typedef struct {
    ms_load_result_t result;
    long status;           /* HTTP status; 0 without an answer */
    unsigned retries_done; /* retries already made for this logical request */
    double now;
} ms_load_attempt_t;

/* Whether to retry after this attempt, and after how long (*delay_s, 0 for
 * at once). Retried: 5xx, errors and timeouts whose status is not terminal,
 * while the policy has retries left (and, for budget, the budget allows).
 * Draws from rng (backoff) and counts in budget (budget) only when it
 * returns true. */
bool ms_load_retry_next(const ms_load_retry_t *policy, const ms_load_terminal_t *terminal,
                        const ms_load_attempt_t *attempt, ms_load_budget_t *budget,
                        ms_load_rng_t *rng, double *delay_s);

/* ---- the run's figures ------------------------------------------------- */

/* Latency quantiles in bounded memory: logarithmic buckets 1% wide from
 * 10 us to over an hour, so a quantile is within 0.5% of the truth however
 * long the run. Caller-provided storage (about 19 KB), zeroed to start. */
#define MS_LOAD_SKETCH_BUCKETS 2400

typedef struct {
    uint64_t count[MS_LOAD_SKETCH_BUCKETS];
    uint64_t total;
} ms_load_sketch_t;

void ms_load_sketch_add(ms_load_sketch_t *s, double seconds);
/* The q-quantile (0 < q <= 1) in seconds; 0 when empty. */
double ms_load_sketch_quantile(const ms_load_sketch_t *s, double q);

/* Everything the summary reports. Caller-provided storage, zeroed to start. */
typedef struct {
    uint64_t arrivals;  /* arrivals due in the run: logical requests started + drops */
    uint64_t successes; /* logical requests whose last attempt answered 2xx */
    uint64_t failures;  /* logical requests that ended otherwise */
    uint64_t attempts;  /* attempts of the finished logical requests */
    uint64_t by_result[MS_LOAD_RESULT_COUNT]; /* every finished attempt */
    uint64_t drops;                           /* arrivals refused by --max-in-flight */
    uint64_t abandoned;                       /* logical requests still unfinished at exit */
    double max_lag_s;         /* the latest an arrival started after its due time: past a few
                               * ms the client, not the server, shapes the load */
    double duration_s;        /* --duration, or until the signal */
    double expected;          /* the arrivals the profile asks for */
    ms_load_sketch_t latency; /* logical requests, first attempt to last answer */
} ms_load_stats_t;

/* Count a finished logical request. */
void ms_load_stats_finish(ms_load_stats_t *s, bool success, unsigned attempts, double latency_s);
/* attempts / logical requests (0 before any finished). */
double ms_load_stats_attempts_per_logical(const ms_load_stats_t *s);
/* Append the one-line JSON summary (with '\n'). MS_ERR_NOMEM / MS_ERR_TOOLARGE. */
ms_err_t ms_load_summary_json(const ms_load_stats_t *s, ms_buf_t *out);

/* ---- /metrics ---------------------------------------------------------- */

/* The client's families in a registry of its own. Owns registry. */
typedef struct {
    ms_metrics_t *registry;
    int requests, attempts, latency, offered, in_flight, retry_share, drops, arrivals, max_lag;
} ms_load_metrics_t;

/* Make the registry and declare the families. MS_ERR_NOMEM. */
ms_err_t ms_load_metrics_init(ms_load_metrics_t *m);
/* Free the registry. Safe on a zeroed or cleaned-up value. */
void ms_load_metrics_cleanup(ms_load_metrics_t *m);
void ms_load_metrics_attempt(ms_load_metrics_t *m, ms_load_result_t r);
void ms_load_metrics_finish(ms_load_metrics_t *m, bool success, double latency_s);
void ms_load_metrics_drop(ms_load_metrics_t *m);
/* Count an arrival that came due (started or dropped): the rate actually offered. */
void ms_load_metrics_arrival(ms_load_metrics_t *m);
/* The gauges: offered rate now, logical requests in flight, retry share, and
 * the latest start so far (s->max_lag_s). */
void ms_load_metrics_gauges(ms_load_metrics_t *m, double offered, unsigned in_flight,
                            const ms_load_stats_t *s);

/* ---- the command line -------------------------------------------------- */

/* Strings are borrowed from argv, which outlives the run. */
typedef struct {
    const char *url;
    ms_load_profile_t profile;
    ms_load_arrivals_t arrivals;
    double duration_s;
    unsigned max_in_flight;
    ms_load_retry_t retry;
    ms_load_terminal_t terminal;
    long timeout_ms;
    uint64_t seed;
    const char *metrics_addr; /* NULL: no /metrics */
    const char *summary_path; /* NULL: stdout only */
} ms_load_options_t;

typedef enum { MS_LOAD_ARGS_RUN = 0, MS_LOAD_ARGS_HELP, MS_LOAD_ARGS_INVALID } ms_load_args_t;

/* Parse argv (argv[0] is the program) into *out, defaults first. INVALID
 * with a one-line reason in errbuf. */
ms_load_args_t ms_load_options_parse(int argc, char *const *argv, ms_load_options_t *out,
                                     char *errbuf, size_t errlen);

/* Shared by the parsers: "N1:N2:..." into at most max numbers, *n set; false
 * when a field is not a finite number or there are too many. */
bool ms__load_numbers(const char *text, double *values, size_t max, size_t *n);

#endif
