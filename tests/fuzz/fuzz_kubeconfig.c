/*
 * fuzz_kubeconfig.c - libFuzzer target for the kubeconfig parser (libyaml
 * documents, merged lookups, base64 *-data fields, exec blocks).
 *
 * Besides crashes and leaks it holds the parser to its contract: success
 * yields a config with a server URL and a namespace; failure yields no
 * config and a one-line, NUL-terminated message that names the document.
 * Paths the document names are resolved against a directory that does not
 * exist, so file fields fail cleanly instead of reading the fuzzer's disk.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/kubeconfig.h"
#include "meshscaler/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    char errbuf[MS_ERRBUF_SIZE];
    ms_kube_config_t *cfg = (ms_kube_config_t *)1;
    ms_err_t err;

    if (!quiet) {
        ms_log_setup(MS_LOG_ERROR, MS_LOG_TEXT, NULL); /* no insecure-skip warnings */
        quiet = 1;
    }
    memset(errbuf, 'x', sizeof errbuf);
    err = ms_kube_config_parse((const char *)data, size, "fuzz.yaml", "/nonexistent-fuzz-dir", NULL,
                               &cfg, errbuf, sizeof errbuf);
    if (err == MS_OK) {
        if (cfg == NULL || cfg->server == NULL || cfg->namespace_ == NULL ||
            (strncmp(cfg->server, "https://", 8) != 0 && strncmp(cfg->server, "http://", 7) != 0))
            abort();
        if (cfg->ca_file != NULL && cfg->ca_pem != NULL)
            abort(); /* file and data are exclusive */
        if ((cfg->cert_file || cfg->cert_pem) != (cfg->key_file || cfg->key_pem))
            abort(); /* a certificate always comes with its key */
        ms_kube_config_free(cfg);
    } else {
        if (cfg != NULL)
            abort(); /* no half-built config on failure */
        if (memchr(errbuf, '\0', sizeof errbuf) == NULL || strchr(errbuf, '\n') != NULL ||
            strncmp(errbuf, "fuzz.yaml", 9) != 0)
            abort();
    }
    return 0;
}
