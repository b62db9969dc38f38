/*
 * budgets.c - which MeshAutoscalers share a downstream budget (§2b of
 * docs/decision-rules.md), so that the round thread makes them due together
 * and hands them to one worker, which splits the budget's room between them
 * (docs/controller.md, "Shared budgets").
 *
 * The registry is kept by the MeshAutoscaler handler from the specs it
 * parses and read by the round thread, both under the objects table's lock
 * (it lives in ms__objects_t). ms__budget_groups() is pure: it groups one
 * round's entries.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controller_internal.h"
#include "meshscaler/xalloc.h"

/* One object's part: the budgets its downstream entries name (unique) and
 * its own sync period. */
typedef struct {
    double period; /* spec.syncPeriodSeconds; 0: the controller's */
    size_t n;
    char names[MS_MAX_DOWNSTREAMS][MS_NAME_MAX + 1];
} member_t;

/* One budget's members' keys, owned, unordered. */
typedef struct {
    size_t n, cap;
    char **keys;
} budget_t;

void ms__budgets_init(ms__budgets_t *b)
{
    ms_strmap_init(&b->by_budget);
    ms_strmap_init(&b->by_key);
}

void ms__budgets_cleanup(ms__budgets_t *b)
{
    size_t pos = 0;
    const char *key;
    void *val;

    while (ms_strmap_next(&b->by_budget, &pos, &key, &val)) {
        budget_t *bg = val;
        for (size_t i = 0; i < bg->n; i++)
            free(bg->keys[i]);
        free(bg->keys);
        free(bg);
    }
    pos = 0;
    while (ms_strmap_next(&b->by_key, &pos, &key, &val))
        free(val);
    ms_strmap_cleanup(&b->by_budget);
    ms_strmap_cleanup(&b->by_key);
}

static bool names_has(const member_t *m, const char *name)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->names[i], name) == 0)
            return true;
    return false;
}

/* The budgets spec names, once each. */
static void member_from_spec(const ms_spec_t *spec, member_t *m)
{
    memset(m, 0, sizeof *m);
    if (spec == NULL)
        return;
    m->period = spec->sync_period_seconds;
    for (size_t i = 0; i < spec->ndownstreams; i++) {
        const char *name = spec->downstreams[i].budget;
        if (name[0] != '\0' && !names_has(m, name))
            snprintf(m->names[m->n++], sizeof m->names[0], "%s", name);
    }
}

/* Remove key from budget name; true when it was its last member (the
 * budget is freed). */
static bool budget_leave(ms__budgets_t *b, const char *name, const char *key)
{
    budget_t *bg = ms_strmap_get(&b->by_budget, name);

    if (bg == NULL)
        return false;
    for (size_t i = 0; i < bg->n; i++) {
        if (strcmp(bg->keys[i], key) != 0)
            continue;
        free(bg->keys[i]);
        bg->keys[i] = bg->keys[--bg->n];
        break;
    }
    if (bg->n > 0)
        return false;
    ms_strmap_del(&b->by_budget, name);
    free(bg->keys);
    free(bg);
    return true;
}

static void budget_join(ms__budgets_t *b, const char *name, const char *key)
{
    budget_t *bg = ms_strmap_get(&b->by_budget, name);

    if (bg == NULL) {
        bg = ms_xcalloc(1, sizeof *bg);
        ms_strmap_put(&b->by_budget, name, bg);
    }
    bg->keys = ms_xgrow(bg->keys, &bg->cap, bg->n + 1, sizeof *bg->keys);
    bg->keys[bg->n++] = ms_xstrdup(key);
}

void ms__budgets_set(ms__budgets_t *b, const char *key, const ms_spec_t *spec,
                     ms__budget_gone_fn gone, void *ctx)
{
    member_t now, *was = ms_strmap_get(&b->by_key, key);

    member_from_spec(spec, &now);
    for (size_t i = 0; was != NULL && i < was->n; i++) {
        if (names_has(&now, was->names[i]))
            continue;
        bool last = budget_leave(b, was->names[i], key);
        if (gone != NULL)
            gone(ctx, key, was->names[i], last);
    }
    for (size_t i = 0; i < now.n; i++)
        if (was == NULL || !names_has(was, now.names[i]))
            budget_join(b, now.names[i], key);
    if (now.n == 0) {
        free(ms_strmap_del(&b->by_key, key));
        return;
    }
    if (was == NULL) {
        was = ms_xmalloc(sizeof *was);
        ms_strmap_put(&b->by_key, key, was);
    }
    *was = now;
}

size_t ms__budgets_each_peer(const ms__budgets_t *b, const char *key,
                             void (*fn)(void *ctx, const char *peer), void *ctx)
{
    const member_t *m = ms_strmap_get(&b->by_key, key);
    size_t calls = 0;

    for (size_t i = 0; m != NULL && i < m->n; i++) {
        const budget_t *bg = ms_strmap_get(&b->by_budget, m->names[i]);
        for (size_t k = 0; bg != NULL && k < bg->n; k++) {
            if (strcmp(bg->keys[k], key) == 0)
                continue;
            if (fn != NULL)
                fn(ctx, bg->keys[k]);
            calls++;
        }
    }
    return calls;
}

static double resolved(double period, double def)
{
    return period > 0 ? period : def;
}

double ms__budgets_period(const ms__budgets_t *b, const char *key, double own, double def)
{
    const member_t *m = ms_strmap_get(&b->by_key, key);
    double p = own;

    for (size_t i = 0; m != NULL && i < m->n; i++) {
        const budget_t *bg = ms_strmap_get(&b->by_budget, m->names[i]);
        for (size_t k = 0; bg != NULL && k < bg->n; k++) {
            const member_t *peer = ms_strmap_get(&b->by_key, bg->keys[k]);
            if (peer != NULL && resolved(peer->period, def) < p)
                p = resolved(peer->period, def);
        }
    }
    return p;
}

bool ms__spec_names_budget(const ms_spec_t *spec)
{
    for (size_t i = 0; spec != NULL && i < spec->ndownstreams; i++)
        if (spec->downstreams[i].budget[0] != '\0')
            return true;
    return false;
}

bool ms__budgets_is_member(const ms__budgets_t *b, const char *key, const char *budget)
{
    const member_t *m = ms_strmap_get(&b->by_key, key);

    return m != NULL && names_has(m, budget);
}

bool ms__budgets_any(const ms__budgets_t *b)
{
    return ms_strmap_size(&b->by_key) > 0;
}

/* An object takes a share of a budget's room when its decision is written
 * as decided. One that pausing (paused, paused-replicas, a cancelled
 * scale-out), its own spec.dryRun or a conflicting autoscaler keeps from
 * writing takes none, and keeps its own step-7 cap: a share it would never
 * use is room the others lose. A cancelled scale-in asks nothing anyway.
 * (Missing metrics hold: such an object takes part, asks nothing, and its
 * starting pods still reserve their flows.) */
bool ms__budget_takes_share(bool spec_dry_run, bool conflict, const ms_pause_t *pause,
                            int32_t current, int32_t desired)
{
    ms_pause_effect_t e;

    if (spec_dry_run || conflict)
        return false;
    e = ms_pause_apply(pause, current, &desired);
    return e == MS_PAUSE_NONE || e == MS_PAUSE_SCALE_IN;
}

/* ---- one round's groups ---- */

static size_t find_root(size_t *parent, size_t i)
{
    while (parent[i] != i) {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    return i;
}

/* Entries naming one budget, and so transitively the budgets they name, are
 * one group: the room of each budget is split among all of its members at
 * once, and a member of two budgets ties them together. */
void ms__budget_groups(const ms_spec_t *const *specs, size_t n, size_t *next)
{
    size_t *parent = ms_xcalloc(n ? n : 1, sizeof *parent),
           *last = ms_xcalloc(n ? n : 1, sizeof *last);
    ms_strmap_t first; /* budget name -> 1 + the first entry naming it */

    ms_strmap_init(&first);
    for (size_t i = 0; i < n; i++)
        parent[i] = i;
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; specs[i] != NULL && k < specs[i]->ndownstreams; k++) {
            const char *name = specs[i]->downstreams[k].budget;
            uintptr_t j = (uintptr_t)ms_strmap_get(&first, name);

            if (name[0] == '\0')
                continue;
            if (j == 0)
                ms_strmap_put(&first, name, (void *)(uintptr_t)(i + 1));
            else
                parent[find_root(parent, i)] = find_root(parent, (size_t)j - 1);
        }
    }
    /* Chain each group's entries in ascending index, the last back to the first. */
    for (size_t i = 0; i < n; i++)
        last[i] = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        size_t r = find_root(parent, i);
        next[i] = i;
        if (last[r] != SIZE_MAX) {
            next[i] = next[last[r]];
            next[last[r]] = i;
        }
        last[r] = i;
    }
    ms_strmap_cleanup(&first);
    free(parent);
    free(last);
}
