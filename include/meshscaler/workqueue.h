/*
 * workqueue.h - the controller's rate-limited work queue of string keys
 * ("namespace/name"), with client-go's semantics:
 *
 *  - a key is queued at most once however often it is added (the dirty set);
 *  - a key handed out by get() is *processing* until done(); adding it
 *    meanwhile marks it dirty, and done() queues it again, so no key is ever
 *    handed to two workers at once and no add is lost;
 *  - add_after() holds a key in a min-heap until its deadline (the per-object
 *    sync timer); a later add_after() for a key already waiting keeps the
 *    earlier deadline;
 *  - add_rate_limited() waits base * 2^failures (5 ms .. 1000 s by default,
 *    client-go's item exponential limiter) and counts a failure; forget()
 *    clears the count after a success.
 *
 * Time: delays are measured on the queue's clock, a function returning
 * monotonic seconds (CLOCK_MONOTONIC unless the options give another), so
 * tests time-travel instead of sleeping: advance the clock and call
 * ms_workqueue_wake().
 *
 * Threads: every function may be called from any thread at once (one mutex,
 * one condition variable). Keys are copied on add; a key returned by get()
 * is the caller's to free() after it called done() with it.
 */
#ifndef MESHSCALER_WORKQUEUE_H
#define MESHSCALER_WORKQUEUE_H

#include <stdbool.h>
#include <stddef.h>

/* Monotonic seconds on any scale; called with the queue's lock held, so it
 * must not call back into the queue. */
typedef double (*ms_workqueue_clock_fn)(void *ctx);

typedef struct {
    double base_delay;           /* first rate-limited delay, seconds; 0: 0.005 */
    double max_delay;            /* cap of rate-limited delays, seconds; 0: 1000 */
    ms_workqueue_clock_fn clock; /* NULL: CLOCK_MONOTONIC */
    void *clock_ctx;
} ms_workqueue_options_t;

typedef struct ms_workqueue ms_workqueue_t;

/* New empty queue; opts may be NULL (defaults). Aborts with a log line when
 * memory runs out (as for every small allocation here). */
ms_workqueue_t *ms_workqueue_new(const ms_workqueue_options_t *opts);
/* Free the queue and every key it holds. No thread may be inside a queue
 * call any more (shut down and join the workers first). NULL does nothing. */
void ms_workqueue_free(ms_workqueue_t *q);

/* Queue key now unless it is already queued (then nothing changes) or is
 * being processed (then it is queued again when done() is called). Ignored
 * after shutdown. key is copied. */
void ms_workqueue_add(ms_workqueue_t *q, const char *key);
/* Add key once delay_seconds have passed on the queue's clock (<= 0: now).
 * When the key is already waiting, the earlier deadline wins. */
void ms_workqueue_add_after(ms_workqueue_t *q, const char *key, double delay_seconds);
/* add_after with the key's backoff, base * 2^failures capped at max, then
 * count one more failure. */
void ms_workqueue_add_rate_limited(ms_workqueue_t *q, const char *key);
/* Clear the key's failure count (call after a successful sync). It does not
 * cancel a pending add. */
void ms_workqueue_forget(ms_workqueue_t *q, const char *key);
/* Failures counted for key since the last forget(). */
unsigned ms_workqueue_num_requeues(ms_workqueue_t *q, const char *key);

/* Block until a key is ready, mark it processing and return true with
 * *key set (the caller owns it: call done() with it, then free() it).
 * Returns false with *key NULL once the queue is shut down. */
bool ms_workqueue_get(ms_workqueue_t *q, char **key);
/* Like get() but never blocks: false with *key NULL when nothing is ready
 * now or the queue is shut down. */
bool ms_workqueue_try_get(ms_workqueue_t *q, char **key);
/* The caller finished key (from get()). If it was added while processing,
 * it is queued again now. Unknown keys are ignored. */
void ms_workqueue_done(ms_workqueue_t *q, const char *key);

/* Keys ready to be handed out (the queue-depth metric). */
size_t ms_workqueue_len(ms_workqueue_t *q);
/* Keys waiting for a deadline (add_after, add_rate_limited). */
size_t ms_workqueue_delayed_len(ms_workqueue_t *q);
/* Keys handed out and not yet done(). */
size_t ms_workqueue_processing(ms_workqueue_t *q);

/* Re-check deadlines against the clock and wake getters (after a test
 * advanced an injected clock; never needed with the default clock). */
void ms_workqueue_wake(ms_workqueue_t *q);

/* Stop: adds are ignored, queued and waiting keys are dropped, every
 * blocked and future get() returns false. Keys already handed out may still
 * be done(). Idempotent. */
void ms_workqueue_shutdown(ms_workqueue_t *q);
/* shutdown(), then wait up to timeout_seconds (real monotonic time, not the
 * queue's clock) for every key being processed to be done(). Returns true
 * when none is left. */
bool ms_workqueue_shutdown_with_drain(ms_workqueue_t *q, double timeout_seconds);
bool ms_workqueue_shutting_down(ms_workqueue_t *q);

#endif
