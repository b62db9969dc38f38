/*
 * load.c - meshscaler-load, the incident lab's HTTP load client.
 *
 * Open loop: logical requests arrive on the profile's schedule whether or not
 * earlier ones finished (a closed-loop client slows down with the server and
 * hides exactly the overload the lab is about). Each logical request makes a
 * first attempt and the retries its policy allows; latency counts from the
 * scheduled arrival to the last answer.
 *
 * Threads: one loop drives every transfer with libcurl's multi interface (one
 * pool of keep-alive HTTP/1.1 connections, at most --max-in-flight of them);
 * the project's server (server.h) serves /metrics from a thread of its own.
 * The loop reads the monotonic clock once per turn and works in run time:
 * seconds since the run started.
 */
#include <curl/curl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load.h"
#include "meshscaler/clock.h"
#include "meshscaler/log.h"
#include "meshscaler/server.h"
#include "meshscaler/xalloc.h"

/* The longest the loop sleeps: how soon it notices a signal. */
#define MAX_WAIT_S 0.1
/* Gauges are refreshed this often rather than on every event. */
#define GAUGE_PERIOD_S 0.1
/* The jitter stream is the arrival seed mixed with this, so changing the
 * retry policy never changes the arrivals. */
#define JITTER_SEED_MIX 0x6a09e667f3bcc909ull
/* Every retry carries "x-retry-attempt: N" (N = 1 for the first retry), as a
 * mesh's proxies mark the attempts they make (Envoy's x-envoy-attempt-count):
 * a proxy on the way can count retries as its own requests. Retries past
 * this number all say RETRY_HEADER_MAX. */
#define RETRY_HEADER_MAX 16

/* Set by the signal handler, read by the loop; nothing else. */
static volatile sig_atomic_t stop_requested;

/* One logical request: its first attempt and every retry. */
typedef struct request {
    CURL *easy;                  /* owned; every attempt reuses it */
    double scheduled;            /* run time the arrival was due */
    unsigned attempts;           /* attempts started */
    bool running;                /* an attempt is in the multi handle */
    double retry_at;             /* while not running: run time of the next attempt */
    struct request *prev, *next; /* the run's live list */
} request_t;

/* One run. The loop's thread owns all of it; the server thread only renders
 * metrics.registry (thread-safe). */
typedef struct {
    const ms_load_options_t *opt; /* borrowed for the run */
    CURLM *multi;                 /* owned */
    request_t *live;              /* owned: every request started and not finished */
    unsigned nlive;
    double start;        /* monotonic time of run time 0 */
    double next_arrival; /* run time */
    double next_retry;   /* run time of the earliest waiting retry; INFINITY: none */
    double gauges_at;    /* run time of the last gauge refresh */
    ms_load_rng_t arrival_rng, jitter_rng;
    ms_load_budget_t budget;
    ms_load_stats_t stats;
    ms_load_metrics_t metrics;
    struct curl_slist *retry_header[RETRY_HEADER_MAX + 1]; /* owned; [0] unused */
} run_t;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static size_t discard_body(char *data, size_t size, size_t n, void *ctx)
{
    (void)data;
    (void)ctx;
    return size * n;
}

/* An easy handle for req's attempts; NULL when curl refuses an option. */
static CURL *new_easy(const ms_load_options_t *opt, request_t *req)
{
    CURL *easy = curl_easy_init();
    CURLcode rc = CURLE_OK;

    if (easy == NULL)
        return NULL;
    rc |= curl_easy_setopt(easy, CURLOPT_URL, opt->url);
    rc |= curl_easy_setopt(easy, CURLOPT_PRIVATE, req);
    rc |= curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, discard_body);
    rc |= curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, opt->timeout_ms);
    rc |= curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    rc |= curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    rc |= curl_easy_setopt(easy, CURLOPT_USERAGENT, "meshscaler-load");
    if (rc != CURLE_OK) {
        curl_easy_cleanup(easy);
        return NULL;
    }
    return easy;
}

static void link_request(run_t *run, request_t *req)
{
    req->prev = NULL;
    req->next = run->live;
    if (run->live != NULL)
        run->live->prev = req;
    run->live = req;
    run->nlive++;
}

/* Unlink req, drop its transfer if one runs, free it. */
static void free_request(run_t *run, request_t *req)
{
    if (req->prev != NULL)
        req->prev->next = req->next;
    else
        run->live = req->next;
    if (req->next != NULL)
        req->next->prev = req->prev;
    run->nlive--;
    if (req->running)
        curl_multi_remove_handle(run->multi, req->easy);
    curl_easy_cleanup(req->easy);
    free(req);
}

static void finish_request(run_t *run, request_t *req, bool success, double t)
{
    double latency = t - req->scheduled;

    ms_load_stats_finish(&run->stats, success, req->attempts, latency);
    ms_load_metrics_finish(&run->metrics, success, latency);
    free_request(run, req);
}

/* Start req's next attempt; a handle curl refuses ends the request as failed.
 * A retry carries its number in a header (RETRY_HEADER_MAX). */
static void start_attempt(run_t *run, request_t *req, double t)
{
    unsigned retry = req->attempts < RETRY_HEADER_MAX ? req->attempts : RETRY_HEADER_MAX;

    req->attempts++;
    curl_easy_setopt(req->easy, CURLOPT_HTTPHEADER, retry > 0 ? run->retry_header[retry] : NULL);
    if (curl_multi_add_handle(run->multi, req->easy) != CURLM_OK) {
        MS_LOG_ERROR("curl refused a transfer");
        finish_request(run, req, false, t);
        return;
    }
    req->running = true;
}

/* One arrival due at run time `due`: a new logical request, or a drop. */
static void arrive(run_t *run, double due, double t)
{
    request_t *req;

    run->stats.arrivals++;
    ms_load_metrics_arrival(&run->metrics);
    if (t - due > run->stats.max_lag_s)
        run->stats.max_lag_s = t - due;
    if (run->nlive >= run->opt->max_in_flight) {
        run->stats.drops++;
        ms_load_metrics_drop(&run->metrics);
        return;
    }
    req = ms_xcalloc(1, sizeof *req);
    req->scheduled = due;
    if ((req->easy = new_easy(run->opt, req)) == NULL) {
        MS_LOG_ERROR("curl could not make a transfer");
        free(req);
        run->stats.drops++;
        return;
    }
    link_request(run, req);
    ms_load_budget_note_logical(&run->budget, due);
    start_attempt(run, req, t);
}

/* Every arrival due by t (and before the end of the run), late ones first. */
static void arrive_due(run_t *run, double t)
{
    const ms_load_options_t *opt = run->opt;

    while (run->next_arrival <= t && run->next_arrival < opt->duration_s) {
        arrive(run, run->next_arrival, t);
        run->next_arrival = ms_load_next_arrival(&opt->profile, opt->arrivals, run->next_arrival,
                                                 opt->duration_s, &run->arrival_rng);
    }
}

/* Start the retries due by t and note the earliest one still waiting. A
 * scan: the list is at most --max-in-flight long. */
static void start_due_retries(run_t *run, double t)
{
    double earliest = INFINITY;

    for (request_t *req = run->live, *next; req != NULL; req = next) {
        next = req->next; /* start_attempt may free req */
        if (req->running)
            continue;
        if (req->retry_at <= t)
            start_attempt(run, req, t);
        else if (req->retry_at < earliest)
            earliest = req->retry_at;
    }
    run->next_retry = earliest;
}

static ms_load_result_t classify(CURLcode code, long status)
{
    if (code == CURLE_OK)
        return ms_load_result_of_status(status);
    if (code == CURLE_OPERATION_TIMEDOUT)
        return MS_LOAD_RESULT_TIMEOUT;
    return MS_LOAD_RESULT_ERROR;
}

/* An attempt ended at t: count it, then retry (now or later) or finish. */
static void attempt_done(run_t *run, CURL *easy, CURLcode code, double t)
{
    char *private = NULL;
    request_t *req;
    ms_load_attempt_t attempt = {0};
    double delay = 0;

    curl_easy_getinfo(easy, CURLINFO_PRIVATE, &private);
    req = (request_t *)private;
    if (code == CURLE_OK)
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &attempt.status);
    curl_multi_remove_handle(run->multi, easy);
    req->running = false;
    attempt.result = classify(code, attempt.status);
    attempt.retries_done = req->attempts - 1;
    attempt.now = t;
    run->stats.by_result[attempt.result]++;
    ms_load_metrics_attempt(&run->metrics, attempt.result);

    if (ms_load_retry_next(&run->opt->retry, &run->opt->terminal, &attempt, &run->budget,
                           &run->jitter_rng, &delay)) {
        if (delay <= 0) {
            start_attempt(run, req, t);
            return;
        }
        req->retry_at = t + delay;
        if (req->retry_at < run->next_retry)
            run->next_retry = req->retry_at;
        return;
    }
    finish_request(run, req, attempt.result == MS_LOAD_RESULT_2XX, t);
}

static void harvest(run_t *run, double t)
{
    CURLMsg *msg;
    int left;

    while ((msg = curl_multi_info_read(run->multi, &left)) != NULL)
        if (msg->msg == CURLMSG_DONE)
            attempt_done(run, msg->easy_handle, msg->data.result, t);
}

static void refresh_gauges(run_t *run, double t, bool stopping)
{
    double offered = stopping ? 0 : ms_load_profile_rate(&run->opt->profile, t);

    ms_load_metrics_gauges(&run->metrics, offered, run->nlive, &run->stats);
    run->gauges_at = t;
}

/* Requests still unfinished when the drain ends count as abandoned. */
static void abandon_all(run_t *run)
{
    while (run->live != NULL) {
        run->stats.abandoned++;
        free_request(run, run->live);
    }
}

/* How long to sleep: until the next arrival, retry or deadline, at most MAX_WAIT_S. */
static long wait_ms(double t, double next_event)
{
    double wait = next_event - t;

    if (wait > MAX_WAIT_S)
        wait = MAX_WAIT_S;
    return wait > 0 ? (long)ceil(wait * 1000) : 0;
}

/* Run arrivals to the end of the duration (or a signal), then wait up to
 * --timeout-ms for the requests in flight. */
static void run_loop(run_t *run)
{
    const ms_load_options_t *opt = run->opt;
    bool stopping = false;
    double drain_until = 0;

    run->start = ms_clock_monotonic();
    run->next_arrival =
        ms_load_next_arrival(&opt->profile, opt->arrivals, 0, opt->duration_s, &run->arrival_rng);
    for (;;) {
        double t = ms_clock_monotonic() - run->start, next_event;
        int running = 0;

        if (!stopping)
            arrive_due(run, t);
        if (!stopping && (stop_requested || t >= opt->duration_s)) {
            stopping = true;
            drain_until = t + (double)opt->timeout_ms / 1000;
            run->stats.duration_s = t < opt->duration_s ? t : opt->duration_s;
            MS_LOG_INFO("arrivals stopped", MS_I("in_flight", run->nlive),
                        MS_S("by", stop_requested ? "signal" : "duration"));
        }
        start_due_retries(run, t);
        curl_multi_perform(run->multi, &running);
        harvest(run, t); /* may add waiting retries: next_retry is read after it */
        if (t - run->gauges_at >= GAUGE_PERIOD_S)
            refresh_gauges(run, t, stopping);
        if (stopping && (run->nlive == 0 || t >= drain_until))
            break;
        next_event = run->next_retry;
        if (stopping && drain_until < next_event)
            next_event = drain_until;
        if (!stopping && run->next_arrival < next_event)
            next_event = run->next_arrival;
        if (curl_multi_poll(run->multi, NULL, 0, (int)wait_ms(t, next_event), NULL) != CURLM_OK) {
            MS_LOG_ERROR("curl_multi_poll failed; stopping");
            stop_requested = 1;
        }
    }
    abandon_all(run);
    refresh_gauges(run, ms_clock_monotonic() - run->start, true);
}

/* Everything a run needs before its first arrival. false: nothing to clean
 * up but what run_cleanup handles. */
static bool run_init(run_t *run, const ms_load_options_t *opt)
{
    long pool = (long)opt->max_in_flight;

    run->opt = opt;
    ms_load_rng_seed(&run->arrival_rng, opt->seed);
    ms_load_rng_seed(&run->jitter_rng, opt->seed ^ JITTER_SEED_MIX);
    ms_load_budget_init(&run->budget, opt->retry.ratio);
    run->stats.duration_s = opt->duration_s;
    if (ms_load_metrics_init(&run->metrics) != MS_OK)
        return false;
    if ((run->multi = curl_multi_init()) == NULL)
        return false;
    for (unsigned i = 1; i <= RETRY_HEADER_MAX; i++) {
        char line[32];

        snprintf(line, sizeof line, "x-retry-attempt: %u", i);
        if ((run->retry_header[i] = curl_slist_append(NULL, line)) == NULL)
            return false;
    }
    /* The pool: never more connections than requests in flight, and keep
     * every one of them alive between requests. */
    curl_multi_setopt(run->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, pool);
    curl_multi_setopt(run->multi, CURLMOPT_MAXCONNECTS, pool);
    return true;
}

static void run_cleanup(run_t *run)
{
    abandon_all(run);
    if (run->multi != NULL)
        curl_multi_cleanup(run->multi);
    for (unsigned i = 1; i <= RETRY_HEADER_MAX; i++)
        curl_slist_free_all(run->retry_header[i]);
    ms_load_metrics_cleanup(&run->metrics);
}

/* Print the summary line, and write it to --summary. false when the file
 * could not be written. */
static bool report(const run_t *run)
{
    const char *path = run->opt->summary_path;
    ms_buf_t line;
    FILE *f = NULL;
    bool ok = false;

    ms_buf_init(&line, 4096);
    if (ms_load_summary_json(&run->stats, &line) != MS_OK)
        goto out;
    fputs(line.data, stdout);
    fflush(stdout);
    if (path != NULL) {
        if ((f = fopen(path, "w")) == NULL || fputs(line.data, f) == EOF) {
            MS_LOG_ERROR("cannot write the summary", MS_S("file", path));
            goto out;
        }
    }
    ok = true;
out:
    if (f != NULL && fclose(f) != 0 && ok) {
        MS_LOG_ERROR("cannot write the summary", MS_S("file", path));
        ok = false;
    }
    ms_buf_cleanup(&line);
    return ok;
}

static void usage(FILE *to)
{
    fputs("Usage: meshscaler-load --url URL [flags]\n"
          "Open-loop HTTP load with retries; one JSON summary line on stdout at exit.\n"
          "  --profile P        steady:RATE | step:R1:R2:AT_S |\n"
          "                     peak:BASE:PEAK:RAMP_S:HOLD_S[:START_S] (requests/s; steady:10)\n"
          "  --duration S       seconds of arrivals (default 10)\n"
          "  --arrivals A       poisson (default) | uniform\n"
          "  --retry R          none (default) | immediate:N | bounded:N:DELAY_MS |\n"
          "                     backoff:N:BASE_MS:CAP_MS | budget:RATIO\n"
          "  --terminal LIST    statuses never retried (default 403,429; none)\n"
          "  --timeout-ms MS    per attempt (default 2000); also the drain at exit\n"
          "  --max-in-flight N  logical requests at once; more arrivals are dropped\n"
          "                     (default 1000)\n"
          "  --seed N           arrivals and jitter (default 1)\n"
          "  --metrics-addr A   serve /metrics on HOST:PORT (default off)\n"
          "  --summary FILE     also write the summary line to FILE\n",
          to);
}

static void install_signals(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* Serve /metrics when asked; *server NULL otherwise. false when it cannot bind. */
static bool start_server(const ms_load_options_t *opt, ms_metrics_t *registry, ms_server_t **server)
{
    ms_server_options_t so = {
        .metrics_addr = opt->metrics_addr, .health_addr = "0", .metrics = registry};
    char errbuf[MS_ERRBUF_SIZE] = "";

    *server = NULL;
    if (opt->metrics_addr == NULL)
        return true;
    if ((*server = ms_server_start(&so, errbuf, sizeof errbuf)) == NULL) {
        MS_LOG_ERROR("cannot serve /metrics", MS_S("addr", opt->metrics_addr),
                     MS_S("error", errbuf));
        return false;
    }
    MS_LOG_INFO("serving /metrics", MS_I("port", ms_server_metrics_port(*server)));
    return true;
}

int main(int argc, char **argv)
{
    ms_load_options_t opt;
    char errbuf[MS_ERRBUF_SIZE] = "";
    ms_server_t *server = NULL;
    static run_t run; /* about 20 KB of counters: not on the stack */
    int rc = 1;

    switch (ms_load_options_parse(argc, argv, &opt, errbuf, sizeof errbuf)) {
    case MS_LOAD_ARGS_HELP:
        usage(stdout);
        return 0;
    case MS_LOAD_ARGS_INVALID:
        fprintf(stderr, "meshscaler-load: %s (--help lists the flags)\n", errbuf);
        return 2;
    case MS_LOAD_ARGS_RUN:
        break;
    }
    ms_log_setup(MS_LOG_INFO, MS_LOG_TEXT, NULL);
    install_signals();
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        MS_LOG_ERROR("libcurl did not initialise");
        return 1;
    }
    if (!run_init(&run, &opt)) {
        MS_LOG_ERROR("cannot set up the run");
        goto out;
    }
    if (!start_server(&opt, run.metrics.registry, &server))
        goto out;
    MS_LOG_INFO("load started", MS_S("url", opt.url), MS_D("duration_s", opt.duration_s),
                MS_D("peak_rate", ms_load_profile_max(&opt.profile)));
    run_loop(&run);
    run.stats.expected = ms_load_profile_expected(&opt.profile, run.stats.duration_s);
    if (report(&run))
        rc = 0;
out:
    ms_server_stop(server);
    run_cleanup(&run);
    curl_global_cleanup();
    return rc;
}
