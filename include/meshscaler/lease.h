/*
 * lease.h - leader election on a coordination.k8s.io/v1 Lease, with
 * client-go's algorithm and defaults: lease duration 15 s, renew deadline
 * 10 s, retry period 2 s, optimistic (resourceVersion) updates, and release
 * on shutdown so a successor does not wait out the lease.
 *
 * One writer, always: every acquire and renew (a GET and a PUT) runs under a
 * deadline (ms_kube_deadline_set): the last good renewal plus the renew
 * deadline for a leader, so a slow or black-holed API server can never keep
 * a renewal going past it (give the elector a client with max_retries < 0,
 * so no Retry-After wait stretches it either). The elector keeps "valid
 * until" on the monotonic clock: the start of the last successful renewal
 * plus its term, the renew deadline or the lease duration minus a safety
 * margin, whichever is shorter (ms_kube_elector_term: 10 s by default). No
 * other candidate can take the lease before that instant, so a write sent
 * before it, and bounded by it, cannot overlap a successor's term
 * (ms_kube_elector_valid_until).
 *
 * A candidate takes the lease when it is absent, released (no holder), or
 * has not changed for a lease duration as measured on the candidate's own
 * monotonic clock (never the holder's timestamps: clocks may be skewed). It
 * dates a change to its previous look (which still saw the old version, at
 * most (duration - renew deadline)/2 back) and wakes when the lease expires,
 * so a crashed leader is replaced within the lease duration of its last
 * renewal. A leader renews every retry period and gives up leadership when
 * it could not renew for the renew deadline, so it stops acting at least
 * (duration - renew deadline)/2 = 2.5 s before anyone else can take over.
 * The safety margin must cover that back-dating plus MS_KUBE_LEASE_SLACK
 * (default margin 2.5 + 0.5 = 3 s), so even a term of duration - margin
 * ends before a successor's can begin.
 *
 * Threads: the elector runs one thread; the callbacks run on it, one at a
 * time. ms_kube_elector_is_leader() may be called from any thread. Needs
 * get, create and update on leases.
 */
#ifndef MESHSCALER_LEASE_H
#define MESHSCALER_LEASE_H

#include <stdbool.h>

#include "meshscaler/kube.h"

typedef struct {
    const char *namespace_;
    const char *name;
    const char *identity;  /* unique per process: "hostname_pid" */
    double lease_duration; /* 0: 15 s */
    double renew_deadline; /* 0: 10 s */
    double retry_period;   /* 0: 2 s */
    double safety_margin;  /* 0: (duration - deadline)/2 + slack = 3 s; at least that, < duration */
    void (*on_started_leading)(void *ctx);
    void (*on_stopped_leading)(void *ctx);
    void (*on_new_leader)(void *ctx, const char *identity); /* "" when released */
    void *ctx;
} ms_kube_lease_options_t;

/* Seconds the safety margin must exceed a successor's back-dating by. */
#define MS_KUBE_LEASE_SLACK 0.5

typedef struct ms_kube_elector ms_kube_elector_t;

/* Strings are copied. NULL with errbuf set when the options are invalid
 * (renew_deadline must be < lease_duration, retry_period < renew_deadline,
 * safety margin at least (duration - deadline)/2 + MS_KUBE_LEASE_SLACK and
 * below the duration). */
ms_kube_elector_t *ms_kube_elector_new(ms_kube_client_t *c, const ms_kube_lease_options_t *o,
                                       char *errbuf, size_t errlen);
/* Start campaigning on the elector's thread. MS_ERR_IO if it cannot start. */
ms_err_t ms_kube_elector_start(ms_kube_elector_t *e);
bool ms_kube_elector_is_leader(ms_kube_elector_t *e);
/* How long after the start of a successful renewal this process may act:
 * min(renew deadline, lease duration - safety margin). Any thread. */
double ms_kube_elector_term(const ms_kube_elector_t *e);
/* The monotonic time until which this process may act as the leader (the
 * start of the last good renewal plus the term): 0 when it is not the
 * leader. Any thread. */
double ms_kube_elector_valid_until(ms_kube_elector_t *e);
/* Stop: a leader releases the lease (holder "" and duration 1 s), calls
 * on_stopped_leading, then the thread is joined. NULL does nothing. */
void ms_kube_elector_free(ms_kube_elector_t *e);

#endif
