/*
 * ratelimit.c - the client-side token bucket (client-go's flowcontrol
 * default: 5 requests per second, bursts of 10) and the exponential backoff
 * with jitter that watches use to reconnect. Both take the time as an
 * argument, so tests drive them with a fake clock.
 */
#include "kube_internal.h"

void ms__kube_ratelimit_init(ms__kube_ratelimit_t *rl, double qps, int burst)
{
    pthread_mutex_init(&rl->lock, NULL);
    rl->qps = qps;
    rl->burst = burst > 0 ? burst : 1;
    rl->tokens = rl->burst;
    rl->floor_tokens = 1;
    rl->last = -1;
}

void ms__kube_ratelimit_cleanup(ms__kube_ratelimit_t *rl)
{
    pthread_mutex_destroy(&rl->lock);
}

/* Under rl->lock: both buckets refilled up to now. */
static void refill(ms__kube_ratelimit_t *rl, double now)
{
    if (rl->last >= 0 && now > rl->last) {
        rl->tokens += (now - rl->last) * rl->qps;
        if (rl->tokens > rl->burst)
            rl->tokens = rl->burst;
        rl->floor_tokens += (now - rl->last) * rl->qps * MS__KUBE_BACKGROUND_FLOOR;
        if (rl->floor_tokens > 1)
            rl->floor_tokens = 1;
    }
    if (rl->last < 0 || now > rl->last)
        rl->last = now;
}

double ms__kube_ratelimit_reserve(ms__kube_ratelimit_t *rl, double now)
{
    double wait = 0;

    if (rl->qps <= 0)
        return 0;
    pthread_mutex_lock(&rl->lock);
    refill(rl, now);
    /* Taking a token may drive the count negative: a reservation on the
     * future, repaid at qps (golang.org/x/time/rate's Reserve). */
    rl->tokens -= 1;
    if (rl->tokens < 0)
        wait = -rl->tokens / rl->qps;
    pthread_mutex_unlock(&rl->lock);
    return wait;
}

double ms__kube_ratelimit_try_background(ms__kube_ratelimit_t *rl, double now)
{
    double wait = 0, shared, floor;

    if (rl->qps <= 0)
        return 0;
    pthread_mutex_lock(&rl->lock);
    refill(rl, now);
    if (rl->tokens >= 1) {
        rl->tokens -= 1;
    } else if (rl->floor_tokens >= 1) {
        /* The floor's turn: from the shared count too, which the
         * foreground then repays (the sum stays within qps). */
        rl->floor_tokens -= 1;
        rl->tokens -= 1;
    } else {
        /* When the shared count would hold a token if nobody reserved
         * meanwhile, or the floor's comes, whichever is first. */
        shared = (1 - rl->tokens) / rl->qps;
        floor = (1 - rl->floor_tokens) / (rl->qps * MS__KUBE_BACKGROUND_FLOOR);
        wait = shared < floor ? shared : floor;
        if (wait < 1e-3)
            wait = 1e-3;
    }
    pthread_mutex_unlock(&rl->lock);
    return wait;
}

void ms__kube_backoff_init(ms__kube_backoff_t *b, double initial, double max, uint64_t seed)
{
    b->initial = initial > 0 ? initial : 0.8;
    b->max = max > b->initial ? max : b->initial;
    b->factor = 2;
    b->jitter = 0.5;
    b->reset_after = 2 * b->max;
    b->current = 0;
    b->last_failure = -1;
    b->rng = seed ? seed : 0x9E3779B97F4A7C15ull;
}

static double rand01(ms__kube_backoff_t *b)
{
    /* xorshift64*: small, and reproducible with a given seed */
    b->rng ^= b->rng >> 12;
    b->rng ^= b->rng << 25;
    b->rng ^= b->rng >> 27;
    return (double)((b->rng * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

double ms__kube_backoff_next(ms__kube_backoff_t *b, double now)
{
    double d;

    /* A long quiet spell since the last failure starts over (client-go's
     * backoff manager resets after resetDuration). */
    if (b->last_failure >= 0 && now - b->last_failure > b->reset_after)
        b->current = 0;
    b->current = b->current == 0 ? b->initial : b->current * b->factor;
    if (b->current > b->max)
        b->current = b->max;
    b->last_failure = now;
    d = b->current * (1 + b->jitter * rand01(b));
    return d;
}

void ms__kube_backoff_reset(ms__kube_backoff_t *b)
{
    b->current = 0;
    b->last_failure = -1;
}
