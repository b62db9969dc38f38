/*
 * options.c - meshscaler-load's command line, into a plain options value.
 * Every flag takes a value ("--flag VALUE" or "--flag=VALUE").
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load.h"

static void set_defaults(ms_load_options_t *o)
{
    memset(o, 0, sizeof *o);
    o->profile.kind = MS_LOAD_PROFILE_STEADY;
    o->profile.base = 10;
    o->arrivals = MS_LOAD_ARRIVALS_POISSON;
    o->duration_s = 10;
    o->max_in_flight = 1000;
    o->retry.kind = MS_LOAD_RETRY_NONE;
    o->terminal.status[0] = 403;
    o->terminal.status[1] = 429;
    o->terminal.n = 2;
    o->timeout_ms = 2000;
    o->seed = 1;
}

static bool parse_double(const char *text, double lo, double hi, double *out)
{
    char *end;

    errno = 0;
    *out = strtod(text, &end);
    return end != text && *end == '\0' && errno == 0 && isfinite(*out) && *out >= lo && *out <= hi;
}

static bool parse_u64(const char *text, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end;
    unsigned long long v;

    if (*text < '0' || *text > '9') /* strtoull would take "-1" */
        return false;
    errno = 0;
    v = strtoull(text, &end, 10);
    *out = v;
    return *end == '\0' && errno == 0 && v >= lo && v <= hi;
}

/* One flag with its value; false with the reason in errbuf. */
static bool apply_flag(ms_load_options_t *o, const char *flag, const char *value, char *errbuf,
                       size_t errlen)
{
    uint64_t u = 0;
    bool ok = true;

    if (strcmp(flag, "--url") == 0) {
        o->url = value;
        ok = strncmp(value, "http://", 7) == 0 || strncmp(value, "https://", 8) == 0;
    } else if (strcmp(flag, "--profile") == 0) {
        return ms_load_profile_parse(value, &o->profile, errbuf, errlen);
    } else if (strcmp(flag, "--retry") == 0) {
        return ms_load_retry_parse(value, &o->retry, errbuf, errlen);
    } else if (strcmp(flag, "--terminal") == 0) {
        return ms_load_terminal_parse(value, &o->terminal, errbuf, errlen);
    } else if (strcmp(flag, "--arrivals") == 0) {
        ok = strcmp(value, "poisson") == 0 || strcmp(value, "uniform") == 0;
        o->arrivals =
            strcmp(value, "uniform") == 0 ? MS_LOAD_ARRIVALS_UNIFORM : MS_LOAD_ARRIVALS_POISSON;
    } else if (strcmp(flag, "--duration") == 0) {
        ok = parse_double(value, 0.001, 86400, &o->duration_s);
    } else if (strcmp(flag, "--max-in-flight") == 0) {
        ok = parse_u64(value, 1, 100000, &u);
        o->max_in_flight = (unsigned)u;
    } else if (strcmp(flag, "--timeout-ms") == 0) {
        ok = parse_u64(value, 1, 600000, &u);
        o->timeout_ms = (long)u;
    } else if (strcmp(flag, "--seed") == 0) {
        ok = parse_u64(value, 0, UINT64_MAX, &o->seed);
    } else if (strcmp(flag, "--metrics-addr") == 0) {
        o->metrics_addr = strcmp(value, "0") == 0 ? NULL : value;
    } else if (strcmp(flag, "--summary") == 0) {
        o->summary_path = value;
    } else {
        ms_errf(errbuf, errlen, MS_ERR_INVALID, "unknown flag %s", flag);
        return false;
    }
    if (!ok)
        ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s \"%s\": not a valid value", flag, value);
    return ok;
}

ms_load_args_t ms_load_options_parse(int argc, char *const *argv, ms_load_options_t *out,
                                     char *errbuf, size_t errlen)
{
    set_defaults(out);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *eq = strchr(arg, '='), *value;
        char flag[32];

        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0)
            return MS_LOAD_ARGS_HELP;
        if (strncmp(arg, "--", 2) != 0 || (eq != NULL && (size_t)(eq - arg) >= sizeof flag)) {
            ms_errf(errbuf, errlen, MS_ERR_INVALID, "unexpected argument \"%s\"", arg);
            return MS_LOAD_ARGS_INVALID;
        }
        if (eq != NULL) {
            memcpy(flag, arg, (size_t)(eq - arg));
            flag[eq - arg] = '\0';
            value = eq + 1;
        } else if (i + 1 < argc) {
            snprintf(flag, sizeof flag, "%s", arg);
            value = argv[++i];
        } else {
            ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s needs a value", arg);
            return MS_LOAD_ARGS_INVALID;
        }
        if (!apply_flag(out, flag, value, errbuf, errlen))
            return MS_LOAD_ARGS_INVALID;
    }
    if (out->url == NULL) {
        ms_errf(errbuf, errlen, MS_ERR_INVALID, "--url is required");
        return MS_LOAD_ARGS_INVALID;
    }
    return MS_LOAD_ARGS_RUN;
}
