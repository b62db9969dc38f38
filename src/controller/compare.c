/* compare.c - meshscaler's decisions beside an HPA's (compare.h). */
#include <stdbool.h>
#include <stdlib.h>

#include "meshscaler/compare.h"

void ms_compare_init(ms_compare_t *c)
{
    *c = (ms_compare_t){.last_lead = -1, .prev_meshscaler = -1, .prev_hpa = -1};
}

static void close_race(ms_compare_t *c, double now)
{
    if (c->leader == MS_COMPARE_MESHSCALER)
        c->meshscaler_first++;
    else
        c->hpa_first++;
    c->last_lead = now - c->race_start;
    c->leader = MS_COMPARE_NOBODY;
}

static void race(ms_compare_t *c, double now, int32_t meshscaler, int32_t hpa)
{
    bool mas_up = c->prev_meshscaler >= 0 && meshscaler > c->prev_meshscaler;
    bool hpa_up = c->prev_hpa >= 0 && hpa > c->prev_hpa;

    if (c->leader != MS_COMPARE_NOBODY && now - c->race_start >= MS_COMPARE_RACE_SECONDS) {
        c->race_start = now - MS_COMPARE_RACE_SECONDS;
        close_race(c, now);
    }
    if (c->leader == MS_COMPARE_MESHSCALER && hpa_up) {
        close_race(c, now);
    } else if (c->leader == MS_COMPARE_HPA && mas_up) {
        close_race(c, now);
    } else if (c->leader == MS_COMPARE_NOBODY && mas_up != hpa_up) {
        c->leader = mas_up ? MS_COMPARE_MESHSCALER : MS_COMPARE_HPA;
        c->race_start = now;
    } else if (c->leader == MS_COMPARE_NOBODY && mas_up && hpa_up) {
        c->last_lead = 0; /* a tie */
    }
}

void ms_compare_add(ms_compare_t *c, double now, int32_t meshscaler, int32_t hpa)
{
    int32_t diff = meshscaler - hpa;

    c->samples++;
    if (diff != 0)
        c->differing++;
    c->abs_sum += abs(diff);
    if (abs(diff) > abs(c->max_difference))
        c->max_difference = diff;
    race(c, now, meshscaler, hpa);
    c->prev_meshscaler = meshscaler;
    c->prev_hpa = hpa;
}

double ms_compare_mean_difference(const ms_compare_t *c)
{
    return c->samples > 0 ? c->abs_sum / (double)c->samples : 0;
}
