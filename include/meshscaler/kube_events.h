/*
 * kube_events.h - core/v1 Events for scaling actions, deduplicated: the same
 * event about the same object (same type, reason and message) is written
 * once and then only its count and lastTimestamp are patched, as client-go's
 * EventCorrelator does, so a controller that repeats itself does not flood
 * the API server or `kubectl describe`.
 *
 * Needs only create and patch on events (no get, list or watch).
 *
 * Threads: a recorder may be used from several threads (one lock). It keeps
 * at most MS_KUBE_EVENT_CACHE keys (oldest forgotten first). The client must
 * outlive the recorder.
 */
#ifndef MESHSCALER_KUBE_EVENTS_H
#define MESHSCALER_KUBE_EVENTS_H

#include "meshscaler/kube.h"

#define MS_KUBE_EVENT_CACHE 4096

/* The object an event is about (involvedObject). Borrowed for the call. */
typedef struct {
    const char *api_version;
    const char *kind;
    const char *namespace_;
    const char *name;
    const char *uid;
} ms_kube_object_ref_t;

typedef struct ms_kube_recorder ms_kube_recorder_t;

/* component: source.component/reportingComponent ("meshscaler");
 * instance: reportingInstance (the pod or host name). Strings are copied. */
ms_kube_recorder_t *ms_kube_recorder_new(ms_kube_client_t *c, const char *component,
                                         const char *instance);
/* NULL does nothing. */
void ms_kube_recorder_free(ms_kube_recorder_t *r);

/* Record an event; type is "Normal" or "Warning"; now is wall seconds.
 * A repeat of a known event patches count+1 and lastTimestamp (one PATCH); a
 * new one, or one whose Event has expired on the server (404), is created.
 * *count_out (may be NULL) receives the event's count. */
ms_err_t ms_kube_record(ms_kube_recorder_t *r, const ms_kube_object_ref_t *obj, const char *type,
                        const char *reason, const char *message, double now, int *count_out,
                        ms_kube_error_t *kerr);

/* client-go's EventAggregator prefix: an aggregate's message starts with it. */
#define MS_KUBE_EVENT_COMBINED "(combined from similar events)"

/* Record n similar events of obj (same type and reason, messages that
 * differ) as one aggregate Event, as client-go's EventAggregator does: one
 * Event per object, type and reason whose message is
 * "(combined from similar events): <message>" (the latest) and whose count
 * rises by n (created with n; a repeat patches count, lastTimestamp and
 * message). */
ms_err_t ms_kube_record_combined(ms_kube_recorder_t *r, const ms_kube_object_ref_t *obj,
                                 const char *type, const char *reason, const char *message, int n,
                                 double now, int *count_out, ms_kube_error_t *kerr);

#endif
