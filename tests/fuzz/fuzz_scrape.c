/*
 * fuzz_scrape.c - libFuzzer target for the sidecar-statistics parser
 * (scrape.h).
 *
 * Input: one answer of a proxy's statistics endpoint, any bytes. Besides
 * crashes and overreads (each chunk sits in an exact-size buffer), it holds
 * the parser to its contract:
 *   - the result (code, totals) is the same whether the answer is fed at
 *     once or in chunks whose sizes come from the input's first byte;
 *   - an error is MS_ERR_PARSE or MS_ERR_TOOLARGE with a one-line message
 *     that names a line ("line N: ..." or the byte cap);
 *   - totals count only what they say: samples + NaN never exceed the
 *     sample lines read, and a family with no sample sums to 0.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/scrape.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_BYTES 65536

static void one_line(const char *s, size_t cap)
{
    if (memchr(s, '\0', cap) == NULL || strchr(s, '\n') != NULL || strchr(s, '\r') != NULL)
        abort();
}

static const ms_scrape_family_t families[] = {
    {.name = "m"},
    {.name = "m", .matchers = {{"a", "x", MS_SCRAPE_MATCH_EQ}}, .nmatchers = 1},
    {.name = "envoy_cluster_upstream_rq_active",
     .matchers = {{"cluster_name", "inbound|", MS_SCRAPE_MATCH_PREFIX}},
     .nmatchers = 1},
    {.name = "haproxy_server_limit_sessions", .positive_only = true},
    {.name = "response_latency_ms_sum",
     .matchers = {{"direction", "inbound", MS_SCRAPE_MATCH_EQ}, {"le", "", MS_SCRAPE_MATCH_EQ}},
     .nmatchers = 2},
};
#define NFAM (sizeof families / sizeof families[0])

/* Feed text in chunks of `chunk` bytes, each an exact-size copy. */
static ms_err_t feed_chunked(ms_scrape_parser_t *p, const uint8_t *text, size_t len, size_t chunk,
                             char *err, size_t errlen)
{
    ms_err_t rc = MS_OK;

    for (size_t off = 0; off < len && rc == MS_OK; off += chunk) {
        size_t n = len - off < chunk ? len - off : chunk;
        char *piece = malloc(n);
        if (piece == NULL)
            abort();
        memcpy(piece, text + off, n);
        rc = ms_scrape_parser_feed(p, piece, n, err, errlen);
        free(piece);
    }
    return rc == MS_OK ? ms_scrape_parser_finish(p, err, errlen) : rc;
}

static void check_totals(const ms_scrape_parser_t *p)
{
    for (size_t i = 0; i < NFAM; i++) {
        const ms_scrape_total_t *t = &p->totals[i];
        if (t->samples + t->nan > p->lines)
            abort();
        if (t->samples == 0 && t->sum != 0)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static ms_scrape_parser_t whole, parts;
    char err1[MS_ERRBUF_SIZE] = "", err2[MS_ERRBUF_SIZE] = "";
    size_t chunk;
    ms_err_t rc1, rc2;

    if (size == 0)
        return 0;
    chunk = (size_t)data[0] % 64 + 1;
    data++, size--;
    ms_scrape_parser_init(&whole, families, NFAM, MAX_BYTES);
    rc1 = feed_chunked(&whole, data, size, size ? size : 1, err1, sizeof err1);
    ms_scrape_parser_init(&parts, families, NFAM, MAX_BYTES);
    rc2 = feed_chunked(&parts, data, size, chunk, err2, sizeof err2);
    /* The same lines in the same order: bit for bit the same totals. */
    if (rc1 != rc2 ||
        (rc1 == MS_OK && memcmp(whole.totals, parts.totals, sizeof whole.totals) != 0))
        abort();
    if (rc1 == MS_OK) {
        check_totals(&whole);
        return 0;
    }
    if (rc1 != MS_ERR_PARSE && rc1 != MS_ERR_TOOLARGE)
        abort();
    one_line(err1, sizeof err1);
    if (strncmp(err1, "line ", 5) != 0 && strstr(err1, "larger than") == NULL)
        abort();
    if (strcmp(err1, err2) != 0)
        abort(); /* the same line, the same words, however the answer was cut */
    return 0;
}
