/*
 * fuzz_convert.c - libFuzzer target for `meshscaler convert`'s reader: YAML
 * streams (util/yaml.c), HPAs of every version, Lists, and the writer.
 *
 * Besides crashes and leaks it holds the converter to its contract: on
 * success every MeshAutoscaler written reads back as YAML and its spec passes
 * the project's own spec reader (what the controller would accept); on
 * failure the message is one NUL-terminated line naming the input. Any
 * input the YAML reader accepts has no mapping with a key twice (strict
 * decoding, yaml.h).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/convert.h"
#include "meshscaler/spec_json.h"
#include "meshscaler/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_output(const ms_buf_t *out)
{
    char errbuf[MS_ERRBUF_SIZE];
    cJSON *docs = NULL;

    if (ms_yaml_load_all(out->data, out->len, &docs, errbuf, sizeof errbuf) != MS_OK)
        abort(); /* the writer wrote YAML it cannot read back */
    for (const cJSON *d = docs->child; d != NULL; d = d->next) {
        ms_spec_t spec;
        ms_jpath_t p;

        ms_jpath_init(&p, "spec");
        ms_spec_init(&spec);
        if (ms_spec_from_json(cJSON_GetObjectItemCaseSensitive(d, "spec"), &p, false, &spec, errbuf,
                              sizeof errbuf) != MS_OK)
            abort(); /* a MeshAutoscaler the controller would refuse */
        ms_spec_cleanup(&spec);
    }
    cJSON_Delete(docs);
}

/* Aborts when a mapping anywhere under node holds a key twice. */
static void check_unique_keys(const cJSON *node)
{
    for (const cJSON *a = node->child; a != NULL; a = a->next) {
        if (cJSON_IsObject(node))
            for (const cJSON *b = a->next; b != NULL; b = b->next)
                if (strcmp(a->string, b->string) == 0)
                    abort(); /* the reader kept a duplicate key */
        check_unique_keys(a);
    }
}

static void check_reader(const uint8_t *data, size_t size)
{
    char errbuf[MS_ERRBUF_SIZE];
    cJSON *docs = NULL;

    if (ms_yaml_load_all((const char *)data, size, &docs, errbuf, sizeof errbuf) != MS_OK)
        return;
    check_unique_keys(docs);
    cJSON_Delete(docs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const ms_convert_mapping_t map[] = {{"http_requests", "sum(rate(x[1m]))"}};
    ms_convert_options_t o = {.proxy = MS_CONVERT_PROXY_ENVOY, .map = map, .nmap = 1};
    char errbuf[MS_ERRBUF_SIZE];
    ms_buf_t out, report;
    ms_err_t err;

    /* The first byte picks options, so both paths of each are fuzzed. */
    if (size > 0) {
        o.keep_app_cpu = data[0] & 1;
        o.proxy = (data[0] & 2) ? MS_CONVERT_PROXY_LINKERD : MS_CONVERT_PROXY_ENVOY;
        o.concurrency_limit = (data[0] & 4) ? 100 : 0;
    }
    ms_buf_init(&out, 1u << 24);
    ms_buf_init(&report, 1u << 24);
    memset(errbuf, 'x', sizeof errbuf);
    err = ms_convert_text("fuzz.yaml", (const char *)data, size, &o, &out, &report, errbuf,
                          sizeof errbuf);
    if (err == MS_OK) {
        if (out.len == 0)
            abort();
        check_output(&out);
    } else if (err == MS_ERR_INVALID) {
        if (memchr(errbuf, '\0', sizeof errbuf) == NULL || strchr(errbuf, '\n') != NULL ||
            strncmp(errbuf, "fuzz.yaml: ", 11) != 0)
            abort();
    }
    ms_buf_cleanup(&out);
    ms_buf_cleanup(&report);
    check_reader(data, size);
    return 0;
}
