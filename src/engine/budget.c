/*
 * budget.c - §2b of docs/decision-rules.md: objects whose downstream entries
 * name one budget share its room within a round instead of each taking all
 * of it.
 *
 * Runs between steps 7 and 8 over every decision of the round. The room is
 * handed out one replica at a time, namespaces first, then objects, max-min
 * by flows, ties by key, so the result does not depend on the order the
 * round listed its objects in. The hand-out costs O(log n) per granted
 * replica (bench/budget.c); grants never exceed the asks, which step 6's
 * rate and step 7's own cap already bound, and stop at
 * MS_BUDGET_MAX_GRANTS replicas per budget per round: asks of a billion
 * replicas in a room of a billion flows (an object's spec and limit can say
 * so) took 48 s, a round's worth of every other object's time.
 *
 * Pure: no I/O, no globals. Scratch arrays are owned by the call and freed
 * before it returns.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "meshscaler/xalloc.h"

/* Replicas one budget hands out in one round at most: a cluster holds
 * 150,000 pods at most (Kubernetes' documented limit), so real rounds never
 * reach it; past it the rest of the asks are not granted, on the guardrail's
 * safe side (fewer replicas than the room would take). About 25 ms. */
#define MS_BUDGET_MAX_GRANTS 1000000

/* One member's part in one budget. */
typedef struct {
    ms_round_member_t *member;
    size_t ns;          /* namespace group: members of one namespace share it */
    int downstream;     /* its entry in the budget with the largest perReplica, or -1 */
    double room;        /* min room over its entries in the budget */
    double per_replica; /* p_i */
    int32_t ask, grant;
} share_t;

/* Step 4's hand-out state. The next replica goes to the lexicographically
 * smallest (namespace flows, own flows, key) among shares that still ask
 * and fit. Two levels of binary heaps find it in O(log n): per namespace a
 * heap of its shares by (own flows, key), and a heap of namespaces by
 * (namespace flows, their top share). One namespace's shares are
 * neighbours in key order, so its heap lives in place in members[first ..
 * first + size). A share that no longer fits is dropped when it comes to a
 * top (the room only shrinks); until then it can only make its namespace
 * look better than it is, so it is always found before a grant. */
typedef struct {
    share_t *sh;
    size_t *members; /* per namespace heaps of share indices, in place */
    size_t *size;    /* by namespace (its first share's index): heap size */
    size_t *ns_heap; /* namespaces, by first share's index */
    size_t ns_count;
    double *ns_flows; /* by namespace: flows granted */
} handout_t;

/* Scratch of one call, indexed by the members in key order. */
typedef struct {
    ms_round_member_t **sorted; /* members in ascending key */
    share_t *shares;            /* one per member, rebuilt per budget */
    handout_t handout;          /* step 4's heaps, n slots each */
    const char **names;         /* every budget name, sorted, unique */
    size_t nnames;
} scratch_t;

static int by_key(const void *a, const void *b)
{
    const ms_round_member_t *const *x = a, *const *y = b;
    return strcmp((*x)->key, (*y)->key);
}

static int by_name(const void *a, const void *b)
{
    const char *const *x = a, *const *y = b;
    return strcmp(*x, *y);
}

/* Length of key's namespace: up to its first '/', or the whole key. */
static size_t namespace_len(const char *key)
{
    const char *slash = strchr(key, '/');
    return slash ? (size_t)(slash - key) : strlen(key);
}

static bool same_namespace(const char *a, const char *b)
{
    size_t n = namespace_len(a);
    return n == namespace_len(b) && strncmp(a, b, n) == 0;
}

/* The budget names of entries that were observed (only those take part),
 * sorted and unique. */
static void collect_names(scratch_t *s, size_t n)
{
    s->nnames = 0;
    for (size_t i = 0; i < n; i++) {
        const ms_spec_t *spec = s->sorted[i]->spec;
        const ms_decision_t *d = s->sorted[i]->decision;

        for (size_t k = 0; k < d->ndownstreams && k < spec->ndownstreams; k++)
            if (spec->downstreams[k].budget[0] != '\0' && d->downstreams[k].observed)
                s->names[s->nnames++] = spec->downstreams[k].budget;
    }
    qsort(s->names, s->nnames, sizeof *s->names, by_name);
    size_t u = 0;
    for (size_t i = 0; i < s->nnames; i++)
        if (u == 0 || strcmp(s->names[u - 1], s->names[i]) != 0)
            s->names[u++] = s->names[i];
    s->nnames = u;
}

/* Step 1 of §2b for one member: its observed entries naming the budget,
 * counted once with the larger perReplica and the smaller room. */
static void member_share(ms_round_member_t *m, const char *budget, share_t *sh)
{
    const ms_decision_t *d = m->decision;

    sh->member = m;
    sh->downstream = -1;
    sh->ask = sh->grant = 0;
    for (size_t k = 0; k < d->ndownstreams && k < m->spec->ndownstreams; k++) {
        const ms_downstream_spec_t *ds = &m->spec->downstreams[k];

        if (!d->downstreams[k].observed || strcmp(ds->budget, budget) != 0)
            continue;
        if (sh->downstream < 0 || d->downstreams[k].room < sh->room)
            sh->room = d->downstreams[k].room;
        if (sh->downstream < 0 || ds->per_replica > sh->per_replica) {
            sh->per_replica = ds->per_replica;
            sh->downstream = (int)k;
        }
    }
    if (d->desired_replicas > d->current_replicas) /* step 3: only growth asks */
        sh->ask = d->desired_replicas - d->current_replicas;
}

static double own_flows(const share_t *s)
{
    return s->grant * s->per_replica;
}

static bool share_before(const handout_t *h, size_t a, size_t b)
{
    double fa = own_flows(&h->sh[a]), fb = own_flows(&h->sh[b]);
    return fa < fb || (fa == fb && a < b); /* shares are in key order */
}

static bool ns_before(const handout_t *h, size_t s, size_t t)
{
    if (h->ns_flows[s] != h->ns_flows[t])
        return h->ns_flows[s] < h->ns_flows[t];
    return share_before(h, h->members[s], h->members[t]);
}

typedef bool (*before_fn)(const handout_t *h, size_t a, size_t b);

static void sift_up(const handout_t *h, size_t *heap, size_t i, before_fn before)
{
    while (i > 0 && before(h, heap[i], heap[(i - 1) / 2])) {
        size_t up = (i - 1) / 2, tmp = heap[i];
        heap[i] = heap[up];
        heap[up] = tmp;
        i = up;
    }
}

static void sift_down(const handout_t *h, size_t *heap, size_t n, before_fn before)
{
    size_t i = 0;

    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i, tmp;

        if (l < n && before(h, heap[l], heap[m]))
            m = l;
        if (r < n && before(h, heap[r], heap[m]))
            m = r;
        if (m == i)
            return;
        tmp = heap[i];
        heap[i] = heap[m];
        heap[m] = tmp;
        i = m;
    }
}

/* Remove namespace ns's top share (its heap is members + ns). */
static void drop_top_share(handout_t *h, size_t ns)
{
    size_t *heap = h->members + ns;

    heap[0] = heap[--h->size[ns]];
    sift_down(h, heap, h->size[ns], share_before);
}

static void push_ns(handout_t *h, size_t ns)
{
    h->ns_heap[h->ns_count] = ns;
    sift_up(h, h->ns_heap, h->ns_count++, ns_before);
}

static size_t pop_ns(handout_t *h)
{
    size_t ns = h->ns_heap[0];

    h->ns_heap[0] = h->ns_heap[--h->ns_count];
    sift_down(h, h->ns_heap, h->ns_count, ns_before);
    return ns;
}

/* Step 4 of §2b: one replica at a time to the fittest share, until none
 * asks and fits. */
static void hand_out(share_t *sh, size_t n, handout_t *h, double room)
{
    int64_t granted = 0;

    h->sh = sh;
    h->ns_count = 0;
    for (size_t i = 0; i < n; i++) {
        h->size[i] = 0;
        h->ns_flows[i] = 0;
    }
    for (size_t i = 0; i < n; i++) { /* every share that asks, in its namespace's heap */
        size_t ns = sh[i].ns;

        if (sh[i].downstream < 0 || sh[i].ask <= 0)
            continue;
        h->members[ns + h->size[ns]] = i;
        sift_up(h, h->members + ns, h->size[ns]++, share_before);
    }
    for (size_t i = 0; i < n; i++)
        if (sh[i].ns == i && h->size[i] > 0)
            push_ns(h, i);
    while (h->ns_count > 0 && granted < MS_BUDGET_MAX_GRANTS) {
        size_t ns = pop_ns(h);
        share_t *best = &sh[h->members[ns]];

        if (!(best->per_replica <= room)) {
            drop_top_share(h, ns); /* it never fits again */
        } else {
            best->grant++;
            granted++;
            h->ns_flows[ns] += best->per_replica;
            room -= best->per_replica;
            if (best->grant >= best->ask)
                drop_top_share(h, ns);
            else
                sift_down(h, h->members + ns, h->size[ns], share_before);
        }
        if (h->size[ns] > 0)
            push_ns(h, ns);
    }
}

/* Step 5 of §2b, and the record every member of the budget gets. */
static void apply_grants(share_t *sh, size_t n, double room, uint32_t members)
{
    for (size_t i = 0; i < n; i++) {
        ms_decision_t *d = sh[i].member->decision;
        ms_budget_result_t *b;

        if (sh[i].downstream < 0 || d->nbudgets >= MS_MAX_DOWNSTREAMS)
            continue;
        b = &d->budgets[d->nbudgets++];
        *b = (ms_budget_result_t){.downstream = (uint8_t)sh[i].downstream,
                                  .bound = sh[i].grant < sh[i].ask,
                                  .members = members,
                                  .room = room,
                                  .ask = sh[i].ask,
                                  .grant = sh[i].grant};
        if (b->bound) {
            d->desired_replicas = d->current_replicas + sh[i].grant;
            d->reason = MS_REASON_DownstreamLimit;
            d->scaled = d->desired_replicas != d->current_replicas;
        }
    }
}

/* Steps 1-5 of §2b for one budget. */
static void share_budget(scratch_t *s, size_t n, const char *budget)
{
    double entries_room = INFINITY, reserved = 0, asked = 0, room;
    uint32_t members = 0;

    for (size_t i = 0; i < n; i++) {
        share_t *sh = &s->shares[i];

        member_share(s->sorted[i], budget, sh);
        if (sh->downstream < 0)
            continue;
        members++;
        entries_room = fmin(entries_room, sh->room);
        reserved += sh->per_replica * sh->member->decision->starting_replicas;
        asked += sh->ask * sh->per_replica;
    }
    if (members == 0)
        return;
    room = entries_room - reserved;
    if (asked <= room) {
        for (size_t i = 0; i < n; i++)
            s->shares[i].grant = s->shares[i].ask;
    } else {
        hand_out(s->shares, n, &s->handout, room);
    }
    apply_grants(s->shares, n, room, members);
}

ms_err_t ms_engine_share_budgets(ms_round_member_t *members, size_t n)
{
    scratch_t s = {0};
    ms_err_t err = MS_OK;

    if (n == 0)
        return MS_OK;
    s.sorted = ms_xcalloc(n, sizeof *s.sorted);
    s.shares = ms_xcalloc(n, sizeof *s.shares);
    s.handout.members = ms_xcalloc(n, sizeof *s.handout.members);
    s.handout.size = ms_xcalloc(n, sizeof *s.handout.size);
    s.handout.ns_heap = ms_xcalloc(n, sizeof *s.handout.ns_heap);
    s.handout.ns_flows = ms_xcalloc(n, sizeof *s.handout.ns_flows);
    s.names = ms_xcalloc(n * MS_MAX_DOWNSTREAMS, sizeof *s.names);
    for (size_t i = 0; i < n; i++)
        s.sorted[i] = &members[i];
    qsort(s.sorted, n, sizeof *s.sorted, by_key);
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && strcmp(s.sorted[i - 1]->key, s.sorted[i]->key) == 0) {
            err = MS_ERR_INVALID;
            goto out;
        }
        /* Keys are sorted, so one namespace's members are neighbours. */
        s.shares[i].ns = i > 0 && same_namespace(s.sorted[i - 1]->key, s.sorted[i]->key)
                             ? s.shares[i - 1].ns
                             : i;
    }
    for (size_t i = 0; i < n; i++)
        s.sorted[i]->decision->nbudgets = 0;
    collect_names(&s, n);
    for (size_t b = 0; b < s.nnames; b++)
        share_budget(&s, n, s.names[b]);
out:
    free(s.sorted);
    free(s.shares);
    free(s.handout.members);
    free(s.handout.size);
    free(s.handout.ns_heap);
    free(s.handout.ns_flows);
    free(s.names);
    return err;
}
