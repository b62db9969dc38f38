/*
 * retry.c - which attempts are retried, when, and the retry budget.
 *
 * The incident's amplifier was optimistic retrying (INCIDENT.md: 7-9 k requests/s
 * became 70-100 k); these policies let the lab reproduce it (immediate) and
 * compare it with the usual cures (bounded, backoff with jitter, a budget).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "load.h"

/* What budget:RATIO does with the retries its budget allows. */
#define BUDGET_MAX_RETRIES 3u
#define MAX_RETRIES 100.0
#define MAX_DELAY_MS 3600000.0

static const char *const result_names[MS_LOAD_RESULT_COUNT] = {"2xx", "4xx", "5xx", "error",
                                                               "timeout"};

const char *ms_load_result_name(ms_load_result_t r)
{
    return (unsigned)r < MS_LOAD_RESULT_COUNT ? result_names[r] : "error";
}

ms_load_result_t ms_load_result_of_status(long status)
{
    if (status >= 500)
        return MS_LOAD_RESULT_5XX;
    if (status >= 400)
        return MS_LOAD_RESULT_4XX;
    return MS_LOAD_RESULT_2XX;
}

static bool is_count(double v)
{
    return v >= 0 && v <= MAX_RETRIES && v == floor(v);
}

static bool is_delay_ms(double v)
{
    return v >= 0 && v <= MAX_DELAY_MS;
}

/* The fields after "name:", exactly want of them. */
static bool retry_fields(const char *text, const char *name, double *v, size_t want)
{
    size_t len = strlen(name), n = 0;

    if (strncmp(text, name, len) != 0 || text[len] != ':')
        return false;
    return ms__load_numbers(text + len + 1, v, want, &n) && n == want;
}

/* Fill *out from the text; false when no form matches or a field is out of range. */
static bool retry_forms(const char *text, ms_load_retry_t *out)
{
    double v[3] = {0};

    if (strcmp(text, "none") == 0) {
        out->kind = MS_LOAD_RETRY_NONE;
        return true;
    }
    if (retry_fields(text, "immediate", v, 1)) {
        out->kind = MS_LOAD_RETRY_IMMEDIATE;
    } else if (retry_fields(text, "bounded", v, 2)) {
        out->kind = MS_LOAD_RETRY_BOUNDED;
        out->delay_s = v[1] / 1000;
        if (!is_delay_ms(v[1]))
            return false;
    } else if (retry_fields(text, "backoff", v, 3)) {
        out->kind = MS_LOAD_RETRY_BACKOFF;
        out->base_s = v[1] / 1000;
        out->cap_s = v[2] / 1000;
        if (!(v[1] > 0) || !is_delay_ms(v[2]) || v[2] < v[1])
            return false;
    } else if (retry_fields(text, "budget", v, 1)) {
        out->kind = MS_LOAD_RETRY_BUDGET;
        out->ratio = v[0];
        out->max_retries = BUDGET_MAX_RETRIES;
        return v[0] >= 0 && v[0] <= MAX_RETRIES;
    } else {
        return false;
    }
    out->max_retries = (unsigned)v[0];
    return is_count(v[0]);
}

bool ms_load_retry_parse(const char *text, ms_load_retry_t *out, char *errbuf, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (retry_forms(text, out))
        return true;
    ms_errf(errbuf, errlen, MS_ERR_INVALID,
            "--retry \"%s\": want none, immediate:N, bounded:N:DELAY_MS, "
            "backoff:N:BASE_MS:CAP_MS (0 < BASE_MS <= CAP_MS) or budget:RATIO; N is 0..100",
            text);
    return false;
}

bool ms_load_terminal_parse(const char *text, ms_load_terminal_t *out, char *errbuf, size_t errlen)
{
    const char *p = text;

    memset(out, 0, sizeof *out);
    if (*text == '\0' || strcmp(text, "none") == 0)
        return true;
    for (;;) {
        char *end;
        long status;

        errno = 0;
        status = strtol(p, &end, 10);
        if (end == p || errno != 0 || status < 100 || status > 599 ||
            (*end != ',' && *end != '\0') || out->n == MS_LOAD_TERMINAL_MAX) {
            ms_errf(errbuf, errlen, MS_ERR_INVALID,
                    "--terminal \"%s\": want up to 16 HTTP statuses like 403,429 (or none)", text);
            return false;
        }
        out->status[out->n++] = status;
        if (*end == '\0')
            return true;
        p = end + 1;
    }
}

static bool is_terminal(const ms_load_terminal_t *t, long status)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->status[i] == status)
            return true;
    return false;
}

double ms_load_backoff_delay(double base_s, double cap_s, unsigned retries_done, ms_load_rng_t *rng)
{
    /* 2^40 times any positive base is past any cap: stop doubling there. */
    double ceiling = ldexp(base_s, retries_done < 40 ? (int)retries_done : 40);

    if (ceiling > cap_s)
        ceiling = cap_s;
    return ms_load_rng_uniform(rng) * ceiling;
}

void ms_load_budget_init(ms_load_budget_t *b, double ratio)
{
    memset(b, 0, sizeof *b);
    b->ratio = ratio;
    for (size_t i = 0; i < MS_LOAD_BUDGET_SLOTS; i++)
        b->second[i] = -1;
}

/* The slot counting second floor(now), emptied when it last counted an older one. */
static size_t budget_slot(ms_load_budget_t *b, double now)
{
    int64_t second = (int64_t)floor(now);
    size_t i = (size_t)(second % MS_LOAD_BUDGET_SLOTS);

    if (b->second[i] != second) {
        b->second[i] = second;
        b->logical[i] = 0;
        b->retries[i] = 0;
    }
    return i;
}

void ms_load_budget_note_logical(ms_load_budget_t *b, double now)
{
    b->logical[budget_slot(b, now)]++;
}

bool ms_load_budget_try_retry(ms_load_budget_t *b, double now)
{
    int64_t second = (int64_t)floor(now);
    size_t slot = budget_slot(b, now);
    uint64_t logical = 0, retries = 0;

    for (size_t i = 0; i < MS_LOAD_BUDGET_SLOTS; i++) {
        if (b->second[i] > second - MS_LOAD_BUDGET_SLOTS && b->second[i] <= second) {
            logical += b->logical[i];
            retries += b->retries[i];
        }
    }
    if ((double)(retries + 1) > b->ratio * (double)logical)
        return false;
    b->retries[slot]++;
    return true;
}

static bool retryable(const ms_load_terminal_t *terminal, const ms_load_attempt_t *a)
{
    if (a->status != 0 && is_terminal(terminal, a->status))
        return false;
    return a->result == MS_LOAD_RESULT_5XX || a->result == MS_LOAD_RESULT_ERROR ||
           a->result == MS_LOAD_RESULT_TIMEOUT;
}

bool ms_load_retry_next(const ms_load_retry_t *policy, const ms_load_terminal_t *terminal,
                        const ms_load_attempt_t *attempt, ms_load_budget_t *budget,
                        ms_load_rng_t *rng, double *delay_s)
{
    *delay_s = 0;
    if (policy->kind == MS_LOAD_RETRY_NONE || attempt->retries_done >= policy->max_retries ||
        !retryable(terminal, attempt))
        return false;
    switch (policy->kind) {
    case MS_LOAD_RETRY_BOUNDED:
        *delay_s = policy->delay_s;
        return true;
    case MS_LOAD_RETRY_BACKOFF:
        *delay_s = ms_load_backoff_delay(policy->base_s, policy->cap_s, attempt->retries_done, rng);
        return true;
    case MS_LOAD_RETRY_BUDGET:
        return ms_load_budget_try_retry(budget, attempt->now);
    case MS_LOAD_RETRY_IMMEDIATE:
    default:
        return true;
    }
}
