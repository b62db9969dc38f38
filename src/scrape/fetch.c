/*
 * fetch.c - one read of a workload's sidecars: the sample, the requests
 * through one kept ms_http_batch (one libcurl multi handle, so a pod read
 * again reuses its open connection), each answer streamed into the scrape
 * parser, and a reason for every pod that gave nothing.
 *
 * A failed pod is replaced from its own on_done, while the other reads go
 * on (http.h lets on_done add to the running batch): waiting for the whole
 * first wave before replacing would make one hung pod delay every
 * replacement by the per-read timeout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/clock.h"
#include "meshscaler/http.h"
#include "meshscaler/scrape_fetch.h"
#include "meshscaler/xalloc.h"

struct ms_scrape_fetcher {
    ms_http_client_t *client;
    ms_http_batch_t *batch; /* kept across reads: its multi handle keeps the connections */
    long timeout_ms;
    size_t max_in_flight;
    size_t max_bytes;
    size_t sample; /* 0: Knative's size */
};

typedef struct read read_t;

/* One pod's read: what libcurl and the parser need until it ends. */
typedef struct {
    read_t *rd;
    size_t pod;
    ms_http_request_t req;
    ms_http_response_t resp;
    ms_scrape_fetch_reason_t stop; /* set when the sink stopped the transfer; OK: it did not */
    char why[MS_ERRBUF_SIZE];
    char url[512];
    ms_scrape_parser_t parser; /* ~4 KiB: one per read in progress, not per pod */
} attempt_t;

struct read {
    ms_scrape_fetcher_t *f;
    const ms_scrape_preset_t *preset;
    const ms_scrape_fetch_pod_t *pods;
    size_t npods;
    size_t *order; /* the sample order; order[next..] are unread */
    size_t next;
    double now, deadline;
    double start; /* monotonic, when the read began */
    ms_scrape_rates_t *rates;
    ms_scrape_fetch_result_t *results;
    ms_scrape_fetch_summary_t *sum;
    char accept[160];
    const char *headers[1];
    attempt_t **attempts; /* every read started, freed when the read ends */
    size_t nattempts, cap;
};

static const char *const reason_names[] = {
#define MS__SCRAPE_FETCH_NAME(name, sentence) #name,
    MS_SCRAPE_FETCH_REASON_MAP(MS__SCRAPE_FETCH_NAME)
#undef MS__SCRAPE_FETCH_NAME
};

static const char *const reason_sentences[] = {
#define MS__SCRAPE_FETCH_SENTENCE(name, sentence) sentence,
    MS_SCRAPE_FETCH_REASON_MAP(MS__SCRAPE_FETCH_SENTENCE)
#undef MS__SCRAPE_FETCH_SENTENCE
};

const char *ms_scrape_fetch_reason_name(ms_scrape_fetch_reason_t r)
{
    return (unsigned)r < MS_SCRAPE_FETCH__COUNT ? reason_names[r] : "UNKNOWN";
}

const char *ms_scrape_fetch_reason_sentence(ms_scrape_fetch_reason_t r)
{
    return (unsigned)r < MS_SCRAPE_FETCH__COUNT ? reason_sentences[r] : "unknown reason";
}

ms_scrape_fetcher_t *ms_scrape_fetcher_new(const ms_scrape_fetch_options_t *o, char *errbuf,
                                           size_t errlen)
{
    ms_http_options_t ho = {.user_agent = o->user_agent};
    ms_scrape_fetcher_t *f = ms_xcalloc(1, sizeof *f);

    f->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : MS_SCRAPE_FETCH_TIMEOUT_MS;
    f->max_in_flight = o->max_in_flight > 0 ? o->max_in_flight : MS_SCRAPE_FETCH_IN_FLIGHT;
    f->max_bytes = o->max_bytes > 0 ? o->max_bytes : MS_SCRAPE_FETCH_MAX_BYTES;
    f->sample = o->sample;
    /* The connect phase is inside the per-read timeout too. */
    ho.connect_timeout_ms = f->timeout_ms;
    f->client = ms_http_client_new(&ho, errbuf, errlen);
    if (f->client == NULL)
        goto fail;
    f->batch = ms_http_batch_new(f->client, f->max_in_flight);
    if (f->batch == NULL) {
        ms_errf(errbuf, errlen, MS_ERR_NOMEM, "cannot create the scrape batch");
        goto fail;
    }
    ms_http_batch_keep_connections(f->batch, o->keep_connections > 0 ? o->keep_connections
                                                                     : MS_SCRAPE_FETCH_KEEP);
    return f;
fail:
    ms_scrape_fetcher_free(f);
    return NULL;
}

void ms_scrape_fetcher_free(ms_scrape_fetcher_t *f)
{
    if (f == NULL)
        return;
    ms_http_batch_free(f->batch); /* before the client it points at */
    ms_http_client_free(f->client);
    free(f);
}

/* The body as it arrives: only a 200's goes to the parser. Non-zero stops
 * the transfer, with the reason in a->stop. */
static int sink(void *ctx, const char *data, size_t len)
{
    attempt_t *a = ctx;
    ms_err_t err;

    if (a->resp.status != 200) {
        a->stop = MS_SCRAPE_FETCH_HTTP_STATUS;
        return 1; /* an error page is not worth reading */
    }
    err = ms_scrape_parser_feed(&a->parser, data, len, a->why, sizeof a->why);
    if (err == MS_OK)
        return 0;
    a->stop = err == MS_ERR_TOOLARGE ? MS_SCRAPE_FETCH_TOO_BIG : MS_SCRAPE_FETCH_PARSE;
    return 1;
}

static bool past_deadline(const read_t *rd)
{
    return rd->deadline > 0 && ms_clock_monotonic() >= rd->deadline;
}

/* A transport failure's reason. */
static ms_scrape_fetch_reason_t transport_reason(const attempt_t *a)
{
    switch (a->resp.err) {
    case MS_ERR_UNAVAILABLE:
        return MS_SCRAPE_FETCH_REFUSED;
    case MS_ERR_TIMEOUT:
        return past_deadline(a->rd) ? MS_SCRAPE_FETCH_DEADLINE : MS_SCRAPE_FETCH_TIMEOUT;
    default:
        return MS_SCRAPE_FETCH_TRANSPORT;
    }
}

/* The pod's reason and message from its ended transfer; OK when the
 * parser has the whole answer. */
static ms_scrape_fetch_reason_t judge(attempt_t *a, ms_scrape_fetch_result_t *r)
{
    const char *uid = a->rd->pods[a->pod].uid;

    if (a->stop == MS_SCRAPE_FETCH_HTTP_STATUS || (a->resp.err == MS_OK && a->resp.status != 200)) {
        ms_errf(r->message, sizeof r->message, MS_ERR_IO, "pod %s: GET %s: HTTP status %ld", uid,
                a->url, a->resp.status);
        return MS_SCRAPE_FETCH_HTTP_STATUS;
    }
    if (a->stop != MS_SCRAPE_FETCH_OK) {
        ms_errf(r->message, sizeof r->message, MS_ERR_IO, "pod %s: GET %s: %s", uid, a->url,
                a->why);
        return a->stop;
    }
    if (a->resp.err != MS_OK) {
        ms_errf(r->message, sizeof r->message, a->resp.err, "pod %s: %s", uid, a->resp.error);
        return transport_reason(a);
    }
    if (ms_scrape_parser_finish(&a->parser, a->why, sizeof a->why) != MS_OK) {
        ms_errf(r->message, sizeof r->message, MS_ERR_PARSE, "pod %s: GET %s: %s", uid, a->url,
                a->why);
        return MS_SCRAPE_FETCH_PARSE;
    }
    r->message[0] = '\0';
    return MS_SCRAPE_FETCH_OK;
}

static bool start_next(read_t *rd);

/* A pod's read ended (on the batch's thread): its result, and a
 * replacement when it failed. */
static void on_done(void *ctx, ms_http_response_t *resp)
{
    attempt_t *a = ctx;
    read_t *rd = a->rd;
    ms_scrape_fetch_result_t *r = &rd->results[a->pod];
    const ms_scrape_fetch_pod_t *p = &rd->pods[a->pod];

    (void)resp;
    r->reason = judge(a, r);
    r->http_status = a->resp.status;
    r->bytes = a->parser.bytes;
    r->seconds = a->resp.total_seconds;
    r->ended = ms_clock_monotonic() - rd->start;
    rd->sum->bytes += a->parser.bytes;
    rd->sum->new_connections += a->resp.new_connections;
    if (r->reason == MS_SCRAPE_FETCH_OK) {
        memcpy(r->totals, a->parser.totals, sizeof r->totals);
        ms_scrape_pod_values(rd->preset, r->totals, rd->rates, p->uid, rd->now, &r->values);
        rd->sum->ok++;
        return;
    }
    rd->sum->failed++;
    if (!past_deadline(rd))
        start_next(rd);
}

/* The URL of pod p: the preset with the pod's overrides. */
static ms_err_t pod_url(const read_t *rd, const ms_scrape_fetch_pod_t *p, char *url, size_t len,
                        char *errbuf, size_t errlen)
{
    ms_scrape_preset_t eff = *rd->preset;

    if (p->port != 0)
        eff.port = p->port;
    if (p->path != NULL)
        eff.path = p->path;
    return ms_scrape_url(&eff, p->ip, url, len, errbuf, errlen);
}

/* Queue pod i's read; false (the result written) when it has no URL. */
static bool start_pod(read_t *rd, size_t i)
{
    ms_scrape_fetch_result_t *r = &rd->results[i];
    attempt_t *a = ms_xcalloc(1, sizeof *a);
    char why[MS_ERRBUF_SIZE];

    rd->sum->attempted++;
    if (pod_url(rd, &rd->pods[i], a->url, sizeof a->url, why, sizeof why) != MS_OK) {
        r->reason = MS_SCRAPE_FETCH_BAD_ADDRESS;
        ms_errf(r->message, sizeof r->message, MS_ERR_INVALID, "pod %s: %s",
                rd->pods[i].uid ? rd->pods[i].uid : "(no uid)", why);
        rd->sum->failed++;
        free(a);
        return false;
    }
    a->rd = rd;
    a->pod = i;
    ms_http_response_init(&a->resp, 1); /* the body goes to the sink, never here */
    ms_scrape_parser_init(&a->parser, rd->preset->families, rd->preset->nfamilies,
                          rd->f->max_bytes);
    a->req = (ms_http_request_t){.url = a->url,
                                 .headers = rd->headers,
                                 .nheaders = 1,
                                 .timeout_ms = rd->f->timeout_ms,
                                 .sink = sink,
                                 .sink_ctx = a,
                                 .on_done = on_done,
                                 .done_ctx = a};
    rd->attempts = ms_xgrow(rd->attempts, &rd->cap, rd->nattempts + 1, sizeof *rd->attempts);
    rd->attempts[rd->nattempts++] = a;
    ms_http_batch_add(rd->f->batch, &a->req, &a->resp);
    return true;
}

/* Queue the next unread pod of the order; false when none is left. */
static bool start_next(read_t *rd)
{
    while (rd->next < rd->npods)
        if (start_pod(rd, rd->order[rd->next++]))
            return true;
    return false;
}

static void read_cleanup(read_t *rd)
{
    for (size_t i = 0; i < rd->nattempts; i++) {
        ms_http_response_cleanup(&rd->attempts[i]->resp);
        free(rd->attempts[i]);
    }
    free(rd->attempts);
    free(rd->order);
}

ms_err_t ms_scrape_fetch_read(ms_scrape_fetcher_t *f, const ms_scrape_preset_t *preset,
                              const ms_scrape_fetch_pod_t *pods, size_t npods, uint64_t seed,
                              double now, double deadline, ms_scrape_rates_t *rates,
                              ms_scrape_fetch_result_t *results, ms_scrape_fetch_summary_t *sum,
                              char *errbuf, size_t errlen)
{
    read_t rd = {.f = f,
                 .preset = preset,
                 .pods = pods,
                 .npods = npods,
                 .now = now,
                 .deadline = deadline,
                 .rates = rates,
                 .results = results,
                 .sum = sum};
    ms_err_t err;

    rd.start = ms_clock_monotonic();
    memset(sum, 0, sizeof *sum);
    for (size_t i = 0; i < npods; i++)
        results[i] = (ms_scrape_fetch_result_t){.reason = MS_SCRAPE_FETCH_NOT_READ};
    snprintf(rd.accept, sizeof rd.accept, "Accept: %s", preset->accept ? preset->accept : "*/*");
    rd.headers[0] = rd.accept;
    rd.order = ms_xcalloc(npods > 0 ? npods : 1, sizeof *rd.order);
    ms_scrape_sample_order(npods, seed, rd.order);
    sum->sample = f->sample == 0      ? ms_scrape_sample_size(npods)
                  : f->sample < npods ? f->sample
                                      : npods;
    for (size_t i = 0; i < sum->sample && start_next(&rd); i++)
        ;
    err = ms_http_batch_run_until(f->batch, deadline, NULL);
    if (err != MS_OK)
        ms_errf(errbuf, errlen, err, "the scrape batch failed (libcurl's multi handle)");
    sum->seconds = ms_clock_monotonic() - rd.start;
    read_cleanup(&rd);
    return err;
}
