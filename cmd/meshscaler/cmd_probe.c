/*
 * cmd_probe.c - `meshscaler probe [--timeout SECONDS] URL`: GET URL and exit 0
 * on a 2xx answer, 1 otherwise (one line on stderr says what came back).
 *
 * The image has no shell, curl or wget, so checks that run inside it — the
 * chart's `helm test`, a Docker HEALTHCHECK — use this.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "meshscaler/http.h"

static int probe_usage(FILE *to, int rc)
{
    fputs("Usage: meshscaler probe [--timeout SECONDS] URL\n"
          "GET URL; exit 0 on 2xx, 1 otherwise. Default timeout 5 s.\n",
          to);
    return rc;
}

int ms_cmd_probe(int argc, char **argv)
{
    const char *url = NULL;
    double timeout = 5;
    char errbuf[MS_ERRBUF_SIZE] = "";
    ms_http_client_t *client = NULL;
    ms_http_response_t resp;
    ms_http_request_t req = {0};
    int rc = 1;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) {
            char *end;
            errno = 0;
            timeout = strtod(argv[++i], &end);
            if (errno != 0 || *end != '\0' || !(timeout > 0 && timeout <= 3600))
                return probe_usage(stderr, 2);
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            return probe_usage(stdout, 0);
        } else if (url == NULL && strncmp(argv[i], "--", 2) != 0) {
            url = argv[i];
        } else {
            return probe_usage(stderr, 2);
        }
    }
    if (url == NULL || (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0))
        return probe_usage(stderr, 2);

    if (ms_http_global_init() != MS_OK) {
        fputs("meshscaler probe: libcurl did not initialise\n", stderr);
        return 1;
    }
    client = ms_http_client_new(&(ms_http_options_t){0}, errbuf, sizeof errbuf);
    if (client == NULL) {
        fprintf(stderr, "meshscaler probe: %s\n", errbuf);
        goto out;
    }
    ms_http_response_init(&resp, 64 * 1024);
    req.url = url;
    req.timeout_ms = (long)(timeout * 1000);
    if (ms_http_do(client, &req, &resp) != MS_OK) {
        fprintf(stderr, "meshscaler probe: %s\n", resp.error);
    } else if (resp.status >= 200 && resp.status < 300) {
        fprintf(stderr, "meshscaler probe: %s: %ld\n", url, resp.status);
        rc = 0;
    } else {
        /* The first line of the body, at most 200 bytes: one line of output. */
        size_t n = 0;
        while (n < resp.body.len && n < 200 && resp.body.data[n] != '\n' &&
               resp.body.data[n] != '\r')
            n++;
        fprintf(stderr, "meshscaler probe: %s: %ld %.*s\n", url, resp.status, (int)n,
                n > 0 ? resp.body.data : "");
    }
    ms_http_response_cleanup(&resp);
out:
    ms_http_client_free(client);
    ms_http_global_cleanup();
    return rc;
}
