/*
 * convert.h - a HorizontalPodAutoscaler (autoscaling/v1, v2beta1, v2beta2,
 * v2) turned into a MeshAutoscaler, as commented YAML: `meshscaler convert`.
 *
 * What becomes what (the output's comments say it again, per object):
 *  - scaleTargetRef, minReplicas (1 when omitted, as the HPA defaults) and
 *    maxReplicas are copied; behavior (v2beta2, v2) is copied rule by rule,
 *    and omitted when the HPA has none (both default alike).
 *  - Resource and ContainerResource metrics (cpu, memory: the application's
 *    own load) become the proxy's metrics: SidecarConcurrency and SidecarCPU,
 *    once however many there were. A Utilization target U% carries over as
 *    U% of the proxy's limits (the same headroom the HPA kept); an
 *    AverageValue target has no share to carry, so the proxy gets
 *    MS_CONVERT_DEFAULT_UTILIZATION. With keep_app_cpu, a cpu metric stays
 *    too, as a Prometheus metric computing what the HPA computed (usage over
 *    requests of the application's containers).
 *  - Pods, Object and External metrics become Prometheus metrics when the
 *    metric map names them, with the same target; otherwise they are listed
 *    as not converted, in the output and in the report. Never dropped silently.
 *  - dryRun is true unless the options say otherwise: the first apply is
 *    shadow mode.
 * The HPA's own defaults are applied first: v1 without a target, and v2
 * without metrics, mean cpu at 80%.
 *
 * Pure: no I/O, no globals. Strings of the options are borrowed.
 */
#ifndef MESHSCALER_CONVERT_H
#define MESHSCALER_CONVERT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "meshscaler/buf.h"
#include "meshscaler/error.h"
#include "meshscaler/json.h"

#define MS_CONVERT_DEFAULT_UTILIZATION 70
/* The HPA's target when none is given (v1 targetCPUUtilizationPercentage). */
#define MS_CONVERT_HPA_DEFAULT_CPU 80

typedef enum {
    MS_CONVERT_PROXY_AUTO, /* from containers[] (a live target's pod template) */
    MS_CONVERT_PROXY_ENVOY,
    MS_CONVERT_PROXY_HAPROXY,
    MS_CONVERT_PROXY_LINKERD,
} ms_convert_proxy_t;

typedef struct {
    const char *metric; /* the HPA's metric name */
    const char *query;  /* a PromQL template ({{namespace}}, {{podRegex}}, ...) */
} ms_convert_mapping_t;

typedef struct {
    ms_convert_proxy_t proxy;
    /* The target's pod template containers, for MS_CONVERT_PROXY_AUTO. */
    const char *const *containers;
    size_t ncontainers;
    /* The proxy's container for SidecarCPU; NULL: the proxy's usual name
     * (istio-proxy, linkerd-proxy, haproxy) or the one auto found. */
    const char *sidecar_container;
    int32_t concurrency_limit; /* > 0: sidecarConcurrency.limit (Linkerd exports none) */
    bool keep_app_cpu;
    bool live; /* dryRun: false instead of true */
    const ms_convert_mapping_t *map;
    size_t nmap;
} ms_convert_options_t;

/* A container name: a DNS label (what --sidecar-container must be). */
bool ms_convert_is_dns_label(const char *s);

/* Convert the HorizontalPodAutoscaler `hpa` (at path p, for messages) and
 * append the MeshAutoscaler as one YAML document (no "---") to out. Each
 * metric not converted, and each warning, is appended to report as one line
 * ("shop/api: External queue_depth not converted: ..."). MS_ERR_INVALID with
 * "path: reason" in errbuf when hpa is no valid HPA, when auto cannot tell
 * the proxy, or when no metric could be converted; out and report may then
 * hold a partial append. MS_ERR_NOMEM, MS_ERR_TOOLARGE from the buffers. */
ms_err_t ms_convert_hpa(const cJSON *hpa, ms_jpath_t *p, const ms_convert_options_t *o,
                        ms_buf_t *out, ms_buf_t *report, char *errbuf, size_t errlen);

/* Every document of text (YAML or JSON; name, e.g. the file's, starts each
 * error) converted in turn, "---" between the MeshAutoscalers; a document
 * may be an HPA or a List of HPAs. Paths name the document when there are
 * several ("documents[1].spec.maxReplicas"). Errors as ms_convert_hpa, the
 * first one stopping the run; MS_ERR_INVALID also for YAML syntax and for
 * text without any document. */
ms_err_t ms_convert_text(const char *name, const char *text, size_t len,
                         const ms_convert_options_t *o, ms_buf_t *out, ms_buf_t *report,
                         char *errbuf, size_t errlen);

/* The metric map file's text (YAML or JSON: metric name -> PromQL template)
 * read into *map / *n. The strings point into *tree, which the caller keeps
 * and deletes (cJSON_Delete) after the map; free(*map). MS_ERR_INVALID
 * naming the entry. */
ms_err_t ms_convert_map_parse(const char *text, size_t len, cJSON **tree,
                              ms_convert_mapping_t **map, size_t *n, char *errbuf, size_t errlen);

#endif
