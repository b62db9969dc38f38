/* kube_util.c - clock, files, base64, timestamps and URL encoding for src/kube. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube_internal.h"
#include "meshscaler/clock.h"
#include "meshscaler/kubeconfig.h"

bool ms__kube_sleep(double seconds, const atomic_bool *cancel)
{
    double end = ms_clock_monotonic() + seconds;

    for (;;) {
        double left = end - ms_clock_monotonic();

        if (cancel != NULL && atomic_load(cancel))
            return false;
        if (left <= 0)
            return true;
        ms_clock_sleep(left < 0.05 ? left : 0.05); /* notice cancellation within 50 ms */
    }
}

ms_err_t ms__kube_read_file(const char *path, ms_buf_t *b, char *errbuf, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    ms_err_t err;

    ms_buf_init(b, MS_KUBE_MAX_FILE);
    if (f == NULL)
        return ms_errf(errbuf, errlen, errno == ENOENT ? MS_ERR_NOTFOUND : MS_ERR_IO,
                       "cannot read \"%s\": %s", path, strerror(errno));
    err = ms_buf_read_stream(b, f);
    fclose(f);
    if (err == MS_ERR_TOOLARGE)
        ms_errf(errbuf, errlen, err, "cannot read \"%s\": larger than %u bytes", path,
                MS_KUBE_MAX_FILE);
    else if (err != MS_OK)
        ms_errf(errbuf, errlen, err, "cannot read \"%s\": read error", path);
    if (err != MS_OK)
        ms_buf_cleanup(b);
    return err;
}

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

ms_err_t ms__kube_base64_decode(const char *in, size_t len, char **out, size_t *out_len)
{
    unsigned char *dst = malloc(len / 4 * 3 + 4);
    uint32_t acc = 0;
    size_t n = 0, bits = 0, pad = 0, sym = 0;

    if (dst == NULL)
        return MS_ERR_NOMEM;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];
        int v;

        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            continue;
        if (c == '=') {
            pad++;
            continue;
        }
        v = b64_value(c);
        if (v < 0 || pad > 0)
            goto bad; /* bad symbol, or data after padding */
        sym++;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            dst[n++] = (unsigned char)(acc >> bits);
        }
    }
    /* 1 leftover symbol cannot encode a byte; padding must complete a quad. */
    if (sym % 4 == 1 || pad > 2 || (pad > 0 && (sym + pad) % 4 != 0))
        goto bad;
    dst[n] = '\0';
    *out = (char *)dst;
    *out_len = n;
    return MS_OK;
bad:
    free(dst);
    return MS_ERR_PARSE;
}

ms_err_t ms__kube_urlencode(ms_buf_t *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    ms_err_t err = MS_OK;

    for (; *s && err == MS_OK; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~') {
            err = ms_buf_append(b, s, 1);
        } else {
            char enc[3] = {'%', hex[c >> 4], hex[c & 15]};
            err = ms_buf_append(b, enc, 3);
        }
    }
    return err;
}
