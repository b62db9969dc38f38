/*
 * cmd_decide.c - `meshscaler decide [-f FILE] [-o json|text]`.
 *
 * On invalid input stdout stays empty and stderr gets exactly one line, the
 * JSON path and the fault, as docs/decide.md promises.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "meshscaler/buf.h"
#include "meshscaler/decide.h"

static int emit_line(void *ctx, const char *line, size_t len)
{
    FILE *out = ctx;

    if (fwrite(line, 1, len, out) != len || fputc('\n', out) == EOF)
        return 1;
    return 0;
}

static int decide_usage(void)
{
    fputs("Usage: meshscaler decide [-f FILE] [-o json|text]\n", stderr);
    return 2;
}

int ms_cmd_decide(int argc, char **argv)
{
    const char *file = NULL;
    ms_decide_format_t format = MS_DECIDE_JSON;
    char errbuf[MS_ERRBUF_SIZE] = "";
    ms_buf_t input;
    FILE *in = stdin;
    ms_err_t err;
    int rc = 1;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((strcmp(a, "-f") == 0 || strcmp(a, "--file") == 0) && i + 1 < argc) {
            file = argv[++i];
        } else if ((strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) && i + 1 < argc) {
            const char *f = argv[++i];
            if (strcmp(f, "json") == 0)
                format = MS_DECIDE_JSON;
            else if (strcmp(f, "text") == 0)
                format = MS_DECIDE_TEXT;
            else
                return decide_usage();
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs("Usage: meshscaler decide [-f FILE] [-o json|text]\n", stdout);
            return 0;
        } else {
            fprintf(stderr, "meshscaler decide: unexpected argument \"%s\"\n", a);
            return decide_usage();
        }
    }

    ms_buf_init(&input, MS_DECIDE_MAX_INPUT_BYTES);
    if (file != NULL && strcmp(file, "-") != 0) {
        in = fopen(file, "rb");
        if (in == NULL) {
            fprintf(stderr, "meshscaler decide: cannot open %s: %s\n", file, strerror(errno));
            goto out;
        }
    }
    err = ms_buf_read_stream(&input, in);
    if (err == MS_ERR_TOOLARGE) {
        fprintf(stderr, "$: input is larger than %u bytes\n", MS_DECIDE_MAX_INPUT_BYTES);
        rc = 2;
        goto out;
    }
    if (err != MS_OK) {
        fprintf(stderr, "meshscaler decide: cannot read %s: %s\n", file ? file : "stdin",
                ms_strerror(err));
        goto out;
    }
    err = ms_decide_run(input.data, input.len, format, emit_line, stdout, errbuf, sizeof errbuf);
    if (err == MS_ERR_INVALID) {
        fprintf(stderr, "%s\n", errbuf);
        rc = 2;
        goto out;
    }
    if (err != MS_OK || fflush(stdout) != 0) {
        fprintf(stderr, "meshscaler decide: %s\n", errbuf[0] ? errbuf : "cannot write output");
        goto out;
    }
    rc = 0;
out:
    if (in != NULL && in != stdin)
        fclose(in);
    ms_buf_cleanup(&input);
    return rc;
}
