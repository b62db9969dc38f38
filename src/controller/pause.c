/*
 * pause.c - the pausing annotations (and the reservation opt-out read with
 * them): parse, and what they do to a decision.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "meshscaler/pause.h"

/* 1 true, 0 false/absent, -1 unreadable. */
static int flag(const cJSON *annotations, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(annotations, name);

    if (v == NULL)
        return 0;
    if (!cJSON_IsString(v))
        return -1;
    if (strcasecmp(v->valuestring, "true") == 0)
        return 1;
    if (strcasecmp(v->valuestring, "false") == 0 || v->valuestring[0] == '\0')
        return 0;
    return -1;
}

static bool says_false(const cJSON *annotations, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(annotations, name);

    return cJSON_IsString(v) && strcasecmp(v->valuestring, "false") == 0;
}

static bool parse_count(const char *s, int32_t *out)
{
    char *end;
    long v;

    if (s == NULL || *s < '0' || *s > '9')
        return false;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < 0 || v > 1000000000L)
        return false;
    *out = (int32_t)v;
    return true;
}

ms_err_t ms_pause_parse(const cJSON *annotations, ms_pause_t *out, char *errbuf, size_t errlen)
{
    ms_err_t err = MS_OK;
    const cJSON *n;
    int f;

    memset(out, 0, sizeof *out);
    if (!cJSON_IsObject(annotations))
        return MS_OK;
    f = flag(annotations, MS_PAUSE_ANNOTATION);
    out->paused = f != 0; /* unreadable counts as paused */
    if (f < 0)
        err = ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s: want \"true\" or \"false\"",
                      MS_PAUSE_ANNOTATION);
    f = flag(annotations, MS_PAUSE_SCALE_IN_ANNOTATION);
    out->no_scale_in = f == 1;
    if (f < 0)
        err = ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s: want \"true\" or \"false\"",
                      MS_PAUSE_SCALE_IN_ANNOTATION);
    f = flag(annotations, MS_PAUSE_SCALE_OUT_ANNOTATION);
    out->no_scale_out = f == 1;
    if (f < 0)
        err = ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s: want \"true\" or \"false\"",
                      MS_PAUSE_SCALE_OUT_ANNOTATION);
    /* On by default: only "false" turns the rule off. */
    out->no_reservation = says_false(annotations, MS_RESERVATION_ANNOTATION);
    if (flag(annotations, MS_RESERVATION_ANNOTATION) < 0)
        err = ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s: want \"true\" or \"false\"",
                      MS_RESERVATION_ANNOTATION);
    n = cJSON_GetObjectItemCaseSensitive(annotations, MS_PAUSE_REPLICAS_ANNOTATION);
    if (n != NULL) {
        if (cJSON_IsString(n) && parse_count(n->valuestring, &out->replicas))
            out->has_replicas = true;
        else
            err = ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s: want a whole number of replicas",
                          MS_PAUSE_REPLICAS_ANNOTATION);
    }
    return err;
}

ms_pause_effect_t ms_pause_apply(const ms_pause_t *p, int32_t current, int32_t *desired)
{
    /* paused wins over paused-replicas: "never write" is the safer reading. */
    if (p->paused)
        return MS_PAUSE_NO_WRITE;
    if (p->has_replicas) {
        *desired = p->replicas;
        return MS_PAUSE_HELD;
    }
    if (p->no_scale_in && *desired < current) {
        *desired = current;
        return MS_PAUSE_SCALE_IN;
    }
    if (p->no_scale_out && *desired > current) {
        *desired = current;
        return MS_PAUSE_SCALE_OUT;
    }
    return MS_PAUSE_NONE;
}

const char *ms_pause_effect_sentence(ms_pause_effect_t e)
{
    switch (e) {
    case MS_PAUSE_NO_WRITE:
        return "autoscaling is paused by annotation, so the target is not written";
    case MS_PAUSE_HELD:
        return "autoscaling is paused by annotation at a fixed replica count";
    case MS_PAUSE_SCALE_IN:
        return "scale-in is paused by annotation, so the replica count is held";
    case MS_PAUSE_SCALE_OUT:
        return "scale-out is paused by annotation, so the replica count is held";
    default:
        return "";
    }
}
