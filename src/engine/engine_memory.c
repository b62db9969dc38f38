/*
 * engine_memory.c - the engine's bounded memory: recommendations for the
 * stabilization windows and scale events for the rate policies.
 *
 * Normal operation mirrors the HPA controller exactly: a recommendation
 * reuses a slot older than both windows, a scale event reuses an outdated
 * event of its direction, otherwise a slot is appended.
 *
 * Where HPA would append without bound (long windows at short sync periods),
 * the fixed slots are compacted instead:
 *  1. entries that no future query can see are dropped (older than the
 *     relevant windows or periods): exact;
 *  2. recommendations dominated for both the up-limit (min) and the
 *     down-limit (max) by a newer entry are dropped: exact;
 *  3. only then is information merged, always in the direction that
 *     stabilizes more, never less: two oldest recommendations become one at
 *     the newer time holding the value that matters to the window still
 *     covering them (the larger, when both windows do: replicas are kept
 *     rather than released early); two oldest same-direction scale events
 *     become one at the newer time (the rate limit of that direction stays
 *     at least as tight); failing that the oldest event is dropped.
 */
#include <string.h>

#include "engine_internal.h"

void ms_engine_memory_init(ms_engine_memory_t *mem)
{
    memset(mem, 0, sizeof *mem);
}

typedef struct {
    double time;
    int32_t replicas;
} rec_t;

static void sort_by_time(rec_t *r, size_t n)
{
    for (size_t i = 1; i < n; i++) { /* n <= 33: insertion sort is right */
        rec_t x = r[i];
        size_t j = i;
        while (j > 0 && r[j - 1].time > x.time) {
            r[j] = r[j - 1];
            j--;
        }
        r[j] = x;
    }
}

/* j dominates i for the max (down-limit) when it is at least as new and at
 * least as large; ties in time fall to the later index so identical entries
 * do not remove each other. */
static bool newer(const rec_t *r, size_t j, size_t i)
{
    return r[j].time > r[i].time || (r[j].time == r[i].time && j > i);
}

/* Make room for (time, replicas) when every slot is live; `now` decides what
 * the windows can still see. */
static void compact_recommendations(ms_engine_memory_t *mem, const ms_spec_t *spec, double now,
                                    double time, int32_t replicas)
{
    rec_t r[MS_ENGINE_MAX_RECOMMENDATIONS + 1];
    bool keep[MS_ENGINE_MAX_RECOMMENDATIONS + 1];
    size_t n = mem->nrecs, kept = 0;
    double up_cutoff = now - spec->scale_up.window_seconds;
    double down_cutoff = now - spec->scale_down.window_seconds;

    for (size_t i = 0; i < n; i++)
        r[i] = (rec_t){mem->rec_time[i], mem->rec_replicas[i]};
    r[n++] = (rec_t){time, replicas};

    for (size_t i = 0; i < n; i++) {
        bool max_needed = r[i].time > down_cutoff;
        bool min_needed = r[i].time > up_cutoff;

        for (size_t j = 0; j < n && (max_needed || min_needed); j++) {
            if (j == i || !newer(r, j, i))
                continue;
            if (r[j].replicas >= r[i].replicas)
                max_needed = false;
            if (r[j].replicas <= r[i].replicas)
                min_needed = false;
        }
        /* This tick's entry stays even when no window sees it (both 0 s):
         * the memory must not empty itself. A restored entry older than
         * both windows goes, not merged into a visible one. */
        keep[i] = max_needed || min_needed || (i == n - 1 && r[i].time >= now);
    }
    for (size_t i = 0; i < n; i++)
        if (keep[i])
            r[kept++] = r[i];
    n = kept;
    sort_by_time(r, n);

    while (n > MS_ENGINE_MAX_RECOMMENDATIONS) {
        bool older_in_up = r[0].time > up_cutoff;
        bool in_down = r[0].time > down_cutoff || r[1].time > down_cutoff;
        int32_t a = r[0].replicas, b = r[1].replicas;

        /* The smaller only when no scale-down window sees either: lowering
         * an entry the down window covers would bring a scale-down sooner. */
        if (older_in_up && !in_down)
            r[1].replicas = a < b ? a : b;
        else
            r[1].replicas = a > b ? a : b;
        memmove(&r[0], &r[1], (n - 1) * sizeof r[0]);
        n--;
    }
    for (size_t i = 0; i < n; i++) {
        mem->rec_time[i] = r[i].time;
        mem->rec_replicas[i] = r[i].replicas;
    }
    mem->nrecs = (uint8_t)n;
}

void ms__memory_record(ms_engine_memory_t *mem, const ms_spec_t *spec, double now, int32_t replicas)
{
    double up_cutoff = now - spec->scale_up.window_seconds;
    double down_cutoff = now - spec->scale_down.window_seconds;
    int old = -1;

    for (size_t i = 0; i < mem->nrecs; i++)
        if (mem->rec_time[i] < up_cutoff && mem->rec_time[i] < down_cutoff)
            old = (int)i; /* HPA reuses the last such slot */
    if (old >= 0) {
        mem->rec_time[old] = now;
        mem->rec_replicas[old] = replicas;
    } else if (mem->nrecs < MS_ENGINE_MAX_RECOMMENDATIONS) {
        mem->rec_time[mem->nrecs] = now;
        mem->rec_replicas[mem->nrecs] = replicas;
        mem->nrecs++;
    } else {
        compact_recommendations(mem, spec, now, now, replicas);
    }
}

void ms_engine_memory_add_recommendation(ms_engine_memory_t *mem, const ms_spec_t *spec, double now,
                                         double time, int32_t replicas)
{
    /* Restored entries keep their own time; `now` only decides what is old. */
    if (mem->nrecs < MS_ENGINE_MAX_RECOMMENDATIONS) {
        mem->rec_time[mem->nrecs] = time;
        mem->rec_replicas[mem->nrecs] = replicas;
        mem->nrecs++;
        return;
    }
    compact_recommendations(mem, spec, now, time, replicas);
}

static int32_t longest_period(const ms_scaling_rules_t *rules)
{
    int32_t longest = 0;

    for (size_t i = 0; i < rules->npolicies; i++)
        if (rules->policies[i].period_seconds > longest)
            longest = rules->policies[i].period_seconds;
    return longest;
}

static void compact_events(ms_engine_memory_t *mem, const ms_spec_t *spec, double now)
{
    rec_t e[MS_ENGINE_MAX_EVENTS];
    size_t n = 0;
    double cutoff = now - ms_spec_longest_period(spec);
    bool merged = false;

    /* Exact: an event at or before every period's cutoff is never counted. */
    for (size_t i = 0; i < mem->nevents; i++)
        if (mem->event_time[i] > cutoff)
            e[n++] = (rec_t){mem->event_time[i], mem->event_change[i]};
    sort_by_time(e, n);
    if (n == MS_ENGINE_MAX_EVENTS) {
        for (size_t i = 0; i + 1 < n && !merged; i++) {
            if ((e[i].replicas > 0) != (e[i + 1].replicas > 0))
                continue;
            e[i + 1].replicas = ms__clamp_i64((int64_t)e[i].replicas + e[i + 1].replicas);
            memmove(&e[i], &e[i + 1], (n - i - 1) * sizeof e[0]);
            n--;
            merged = true;
        }
        if (!merged) { /* strictly alternating: drop the oldest */
            memmove(&e[0], &e[1], (n - 1) * sizeof e[0]);
            n--;
        }
    }
    for (size_t i = 0; i < n; i++) {
        mem->event_time[i] = e[i].time;
        mem->event_change[i] = e[i].replicas;
    }
    mem->nevents = (uint8_t)n;
}

void ms__memory_store_event(ms_engine_memory_t *mem, const ms_spec_t *spec, double now,
                            int32_t change)
{
    bool up = change > 0;
    double cutoff = now - longest_period(up ? &spec->scale_up : &spec->scale_down);
    int old = -1;

    if (change == 0)
        return;
    for (size_t i = 0; i < mem->nevents; i++)
        if ((mem->event_change[i] > 0) == up && mem->event_time[i] < cutoff)
            old = (int)i;
    if (old < 0 && mem->nevents == MS_ENGINE_MAX_EVENTS)
        compact_events(mem, spec, now);
    if (old >= 0) {
        mem->event_time[old] = now;
        mem->event_change[old] = change;
    } else {
        mem->event_time[mem->nevents] = now;
        mem->event_change[mem->nevents] = change;
        mem->nevents++;
    }
}

void ms_engine_memory_add_event(ms_engine_memory_t *mem, const ms_spec_t *spec, double now,
                                double time, int32_t change)
{
    if (change == 0)
        return;
    if (mem->nevents == MS_ENGINE_MAX_EVENTS)
        compact_events(mem, spec, now);
    mem->event_time[mem->nevents] = time;
    mem->event_change[mem->nevents] = change;
    mem->nevents++;
}

int32_t ms__stabilize(const ms_engine_memory_t *mem, const ms_spec_t *spec, double now,
                      int32_t current, int32_t recommendation)
{
    double up_cutoff = now - spec->scale_up.window_seconds;
    double down_cutoff = now - spec->scale_down.window_seconds;
    int32_t up_limit = recommendation, down_limit = recommendation;
    int32_t result = current;

    for (size_t i = 0; i < mem->nrecs; i++) {
        if (mem->rec_time[i] > up_cutoff && mem->rec_replicas[i] < up_limit)
            up_limit = mem->rec_replicas[i];
        if (mem->rec_time[i] > down_cutoff && mem->rec_replicas[i] > down_limit)
            down_limit = mem->rec_replicas[i];
    }
    if (result < up_limit)
        result = up_limit;
    if (result > down_limit)
        result = down_limit;
    return result;
}

/* Replicas added (sign > 0) or removed (sign < 0) by events newer than
 * now - period. */
static int64_t change_in_period(const ms_engine_memory_t *mem, double now, int32_t period, int sign)
{
    double cutoff = now - period;
    int64_t sum = 0;

    for (size_t i = 0; i < mem->nevents; i++) {
        if (mem->event_time[i] <= cutoff)
            continue;
        if (sign > 0 && mem->event_change[i] > 0)
            sum += mem->event_change[i];
        else if (sign < 0 && mem->event_change[i] < 0)
            sum -= mem->event_change[i];
    }
    return sum;
}

static int64_t period_start(const ms_engine_memory_t *mem, double now, int32_t period,
                            int32_t current)
{
    return (int64_t)current - change_in_period(mem, now, period, 1) +
           change_in_period(mem, now, period, -1);
}

static int32_t scale_up_limit(const ms_engine_memory_t *mem, const ms_scaling_rules_t *rules,
                              double now, int32_t current)
{
    int64_t result;

    if (rules->select == MS_SELECT_DISABLED)
        return current;
    result = rules->select == MS_SELECT_MIN ? INT64_MAX : INT64_MIN;
    for (size_t i = 0; i < rules->npolicies; i++) {
        const ms_policy_t *p = &rules->policies[i];
        int64_t start = period_start(mem, now, p->period_seconds, current);
        int64_t proposed;

        if (p->type == MS_POLICY_PODS)
            proposed = start + p->value;
        else /* rounded up, or a small target could never grow */
            proposed = ms__clamp_double(ceil((double)start * (1.0 + p->value / 100.0)));
        if (rules->select == MS_SELECT_MIN ? proposed < result : proposed > result)
            result = proposed;
    }
    if (rules->npolicies == 0)
        return current;
    return ms__clamp_i64(result);
}

static int32_t scale_down_limit(const ms_engine_memory_t *mem, const ms_scaling_rules_t *rules,
                                double now, int32_t current)
{
    int64_t result;

    if (rules->select == MS_SELECT_DISABLED)
        return current;
    /* For scaling down the smallest change is the largest count. */
    result = rules->select == MS_SELECT_MIN ? INT64_MIN : INT64_MAX;
    for (size_t i = 0; i < rules->npolicies; i++) {
        const ms_policy_t *p = &rules->policies[i];
        int64_t start = period_start(mem, now, p->period_seconds, current);
        int64_t proposed;

        if (p->type == MS_POLICY_PODS)
            proposed = start - p->value;
        else /* truncated toward zero, as HPA's int32() conversion */
            proposed = ms__clamp_double(trunc((double)start * (1.0 - p->value / 100.0)));
        if (rules->select == MS_SELECT_MIN ? proposed > result : proposed < result)
            result = proposed;
    }
    if (rules->npolicies == 0)
        return current;
    return ms__clamp_i64(result);
}

int32_t ms__apply_rate(const ms_engine_memory_t *mem, const ms_spec_t *spec, double now,
                       int32_t current, int32_t desired, ms_reason_t *reason)
{
    if (desired > current) {
        int32_t limit = scale_up_limit(mem, &spec->scale_up, now, current);
        int32_t allowed = spec->max_replicas;
        ms_reason_t why = MS_REASON_TooManyReplicas;

        if (limit < current) /* wait until the recent events age out */
            limit = current;
        if (allowed > limit) {
            allowed = limit;
            why = MS_REASON_ScaleUpLimit;
        }
        if (desired > allowed) {
            *reason = why;
            return allowed;
        }
    } else if (desired < current) {
        int32_t limit = scale_down_limit(mem, &spec->scale_down, now, current);
        int32_t allowed = spec->min_replicas;
        ms_reason_t why = MS_REASON_TooFewReplicas;

        if (limit > current)
            limit = current;
        if (allowed < limit) {
            allowed = limit;
            why = MS_REASON_ScaleDownLimit;
        }
        if (desired < allowed) {
            *reason = why;
            return allowed;
        }
    }
    *reason = MS_REASON_DesiredWithinRange;
    return desired;
}
