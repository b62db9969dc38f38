/*
 * informer.h - list, watch, and a local cache of watched objects that hands
 * the controller add/update/delete notifications (client-go's reflector +
 * store + informer, smaller).
 *
 * An informer lists a collection page by page (limit/continue), then watches
 * from the list's resourceVersion with bookmarks and a server-side timeout.
 * It resumes from the last resourceVersion it saw after any disconnect, with
 * exponential backoff and jitter, and relists in full on 410 Gone / "too old
 * resource version" (an HTTP 410 or an ERROR event with code 410). A relist
 * is diffed against the cache, so deletions made while the watch was down
 * arrive as DELETED notifications.
 *
 * A watch that receives nothing (no event, no bookmark) for the idle timeout
 * is taken for dead (a connection dropped silently, a hung server) and ended,
 * then resumed like any other disconnect, on a new connection. The API
 * server sends a watch that asked for bookmarks one about every minute, but
 * only once its resource's resourceVersion moved past the watch's start (any
 * change of that resource in the cluster, or etcd's progress reports): a
 * watch on a resource nothing changes may get no bookmark for a while and
 * is then restarted each idle timeout, a cheap request from the same
 * resourceVersion (logged at info; silence after an event or a bookmark,
 * a surely dead watch, is logged as a warning).
 *
 * The cache holds each object as a cJSON tree, or with `compact` as its
 * minified JSON text (plus its resourceVersion, for the relist diff) that
 * every read parses again: a parse per read for a fifth of the memory. A
 * cJSON node costs 64 bytes plus a malloc per member name and string, so a
 * MeshAutoscaler of 2.2 KB of JSON costs about 12 KB of heap as a tree and
 * 2.4 KB as text, and parsing it back costs about 10-20 us
 * (bench/informer.sh).
 *
 * Threads: each informer runs one background thread. Notifications are
 * called on that thread, one at a time, with no lock held: a handler may call
 * ms_kube_informer_get() but must not block for long or free the informer.
 * Objects passed to a handler are borrowed for the duration of the call and
 * are read-only. ms_kube_informer_get/size/foreach/stats may be called from
 * any thread. The client must outlive the informer.
 *
 * Implemented in src/kube/ by watch.c (one watch stream) and informer.c
 * (list, watch, resume and the cache).
 */
#ifndef MESHSCALER_INFORMER_H
#define MESHSCALER_INFORMER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "meshscaler/kube.h"

/* Longest watch line (one event) accepted; longer ones end the watch. */
#define MS_KUBE_MAX_EVENT (16u * 1024u * 1024u)

/* ---- one list, one watch ---- */

typedef enum {
    MS_KUBE_EV_ADDED,
    MS_KUBE_EV_MODIFIED,
    MS_KUBE_EV_DELETED,
    MS_KUBE_EV_BOOKMARK,
    MS_KUBE_EV_ERROR
} ms_kube_event_type_t;

/* Decode one watch line {"type": T, "object": {...}}. On success *object is
 * detached from the line and the caller's. The object must be a JSON object
 * with metadata.resourceVersion (ERROR events: a Status). MS_ERR_PARSE with
 * errbuf set otherwise; *object is then NULL. */
ms_err_t ms_kube_watch_decode(const char *line, size_t len, ms_kube_event_type_t *type,
                              cJSON **object, char *errbuf, size_t errlen);

/* Called for every listed item; item is borrowed (detach it to keep it).
 * item NULL: the list starts over, forget the items given so far. */
typedef ms_err_t (*ms_kube_item_fn)(void *ctx, cJSON *item);

/* The cap on one page of a list: what one watch event may carry, so a page
 * of one object always fits. A page over it is asked again for half as many
 * objects (MeshAutoscalers may be hundreds of KB each: 500 of them are more
 * than the memory the chart gives the controller). */
#define MS_KUBE_LIST_PAGE_MAX MS_KUBE_MAX_EVENT

/* List path (a collection) in pages of limit items (0: 500), calling fn per
 * item; rv[rvcap] receives the list's resourceVersion. Each page is read
 * under MS_KUBE_LIST_PAGE_MAX bytes: a page over it is asked again for half
 * as many items, from the same continue token; MS_ERR_TOOLARGE only when one
 * item alone is over it. A continue token that
 * expired mid-list restarts the list once, after fn(ctx, NULL): the pages
 * already read are of an older snapshot, and an object deleted since would
 * otherwise stay. Returns the first error of the requests or of fn. */
ms_err_t ms_kube_list(ms_kube_client_t *c, const char *path, const char *label_selector, long limit,
                      ms_kube_item_fn fn, void *ctx, char *rv, size_t rvcap, unsigned long *pages,
                      ms_kube_error_t *kerr);

/* Called for ADDED, MODIFIED, DELETED and BOOKMARK events; the object is
 * passed to fn, which owns it afterwards. A non-OK return ends the watch
 * with that error. */
typedef ms_err_t (*ms_kube_watch_fn)(void *ctx, ms_kube_event_type_t type, cJSON *object);

/* Default idle timeout of a watch: a little over two bookmark intervals. */
#define MS_KUBE_WATCH_IDLE_TIMEOUT 150

/* How a watch is made; zero is the default of every member. */
typedef struct {
    const char *label_selector; /* NULL: everything */
    long timeout_seconds;       /* server side (timeoutSeconds); 0: 300 */
    long idle_timeout_seconds;  /* end the watch when no byte arrives for
                                   this long; 0: MS_KUBE_WATCH_IDLE_TIMEOUT */
    const atomic_bool *cancel;  /* the watch stops when it turns true; may be NULL */
    bool drop_managed_fields;   /* objects arrive without metadata.managedFields,
                                   cut from the text before it is parsed (cheaper) */
} ms_kube_watch_options_t;

/* Watch path from resourceVersion rv with bookmarks (allowWatchBookmarks).
 * Returns MS_OK when the server closed the watch normally, MS_ERR_GONE for
 * 410 (status or ERROR event; relist), MS_ERR_TIMEOUT when nothing arrived
 * for the idle timeout (*idle is then set to true; idle may be NULL), or
 * the connection could not be made in time, MS_ERR_TOOLARGE for an
 * oversized line, MS_ERR_PARSE for a line that is not an event,
 * MS_ERR_CANCELLED when *cancel turned true, else the transport or status
 * error. o may be NULL (all defaults). */
ms_err_t ms_kube_watch_with(ms_kube_client_t *c, const char *path, const char *rv,
                            const ms_kube_watch_options_t *o, ms_kube_watch_fn fn, void *ctx,
                            bool *idle, ms_kube_error_t *kerr);
/* ms_kube_watch_with() with the default idle timeout. */
ms_err_t ms_kube_watch(ms_kube_client_t *c, const char *path, const char *rv,
                       const char *label_selector, long timeout_seconds, ms_kube_watch_fn fn,
                       void *ctx, const atomic_bool *cancel, ms_kube_error_t *kerr);

/* ---- the informer ---- */

typedef enum { MS_KUBE_ADDED, MS_KUBE_UPDATED, MS_KUBE_DELETED } ms_kube_change_t;

/* Called on every object before it enters the cache (after `keep` pruned it):
 * it may change obj in place, e.g. fold a pod's conditions into one field.
 * It must keep metadata.name, metadata.namespace and metadata.resourceVersion. */
typedef void (*ms_kube_transform_fn)(void *ctx, cJSON *obj);

/* obj: the new object (the last known one for DELETED); old: the previous
 * one for UPDATED, else NULL. Both borrowed for the call. */
typedef void (*ms_kube_notify_fn)(void *ctx, ms_kube_change_t change, const cJSON *obj,
                                  const cJSON *old);

typedef struct {
    const char *path;           /* collection: "/api/v1/namespaces/ns/configmaps" */
    const char *label_selector; /* NULL: everything */
    long page_size;             /* 0: 500 */
    long watch_timeout_seconds; /* 0: random in [300, 600) as client-go */
    /* End a watch that received no byte (event or bookmark) for this long
     * and resume it from the last resourceVersion, as after any disconnect
     * (no relist unless the server answers 410). 0: MS_KUBE_WATCH_IDLE_TIMEOUT
     * (150 s: bookmarks come about every 60 s, so a live watch is not ended;
     * a dead one is noticed in 150 s plus the backoff). */
    long watch_idle_timeout_seconds;
    double backoff_initial;   /* 0: 0.8 s */
    double backoff_max;       /* 0: 30 s */
    bool keep_managed_fields; /* false: drop metadata.managedFields (memory) */
    /* Only these members are cached, as dotted paths ("spec.replicas",
     * "metadata.labels"), NULL-terminated; metadata.name, .namespace, .uid and
     * .resourceVersion are always kept. NULL: the whole object. Like
     * client-go's transform on a shared informer, it keeps a cache of
     * thousands of workloads small. The array is copied. */
    const char *const *keep;
    ms_kube_transform_fn transform; /* may be NULL; runs after keep */
    /* Cache each object (after keep and transform) as its minified JSON text,
     * not as a tree, and parse it again on every read: get, visit, foreach, the
     * old object of an UPDATED and the objects a relist notifies cost a parse
     * each (a watch event's own object does not); caching one costs a print and
     * a parse; the cache takes about a fifth of the heap (see the top of this
     * file). Reads return the same content in both modes: an object whose text
     * would not parse back bit for bit (cJSON prints a few doubles of 16 or 17
     * significant digits with 15) stays a tree. A text that no longer parses
     * (cJSON out of memory) reads as absent and is logged once. false: trees. */
    bool compact;
    ms_kube_notify_fn notify; /* may be NULL */
    void *ctx;
} ms_kube_informer_options_t;

typedef struct {
    unsigned long lists;   /* full lists (the first one and relists) */
    unsigned long relists; /* lists after 410 */
    unsigned long list_pages;
    unsigned long watches; /* watch requests started */
    unsigned long events;  /* ADDED/MODIFIED/DELETED received */
    unsigned long bookmarks;
    unsigned long errors;        /* failed lists and watches */
    unsigned long idle_timeouts; /* watches ended by watch_idle_timeout_seconds */
    double last_idle_timeout;    /* monotonic time (ms_clock_monotonic) of the last one; 0: none */
    unsigned long notifications;
    size_t objects;
    char resource_version[64]; /* last seen */
} ms_kube_informer_stats_t;

typedef struct ms_kube_informer ms_kube_informer_t;

/* New, not yet running informer; the options' strings are copied. NULL on
 * allocation failure. */
ms_kube_informer_t *ms_kube_informer_new(ms_kube_client_t *c, const ms_kube_informer_options_t *o);
/* Start the background thread. MS_ERR_IO if it cannot be created. */
ms_err_t ms_kube_informer_start(ms_kube_informer_t *inf);
/* Wait until the first list is in the cache; false on timeout. */
bool ms_kube_informer_wait_synced(ms_kube_informer_t *inf, double timeout_seconds);
/* Ask the informer's thread to stop, without waiting for it (free waits):
 * stopping several first lets their watches end together. NULL: nothing. */
void ms_kube_informer_stop(ms_kube_informer_t *inf);
/* Stop the thread (cancelling the watch), join it, free the cache. NULL does nothing. */
void ms_kube_informer_free(ms_kube_informer_t *inf);

/* A deep copy of the cached object with key "namespace/name" (or "name" for
 * cluster-scoped objects), parsed from its text in compact mode; the caller
 * owns it. NULL when absent. */
cJSON *ms_kube_informer_get(ms_kube_informer_t *inf, const char *key);
size_t ms_kube_informer_size(ms_kube_informer_t *inf);
/* Call fn with the cached object with this key (NULL when absent) under the
 * cache's read lock, without copying it (compact mode: a tree parsed for the
 * call and freed after it): fn must be quick, must not call back into the
 * informer, and must not keep obj. Returns whether the key was there. */
bool ms_kube_informer_visit(ms_kube_informer_t *inf, const char *key,
                            void (*fn)(void *ctx, const cJSON *obj), void *ctx);
/* Call fn for every cached object under the cache's read lock: fn must not
 * call back into the informer. obj is borrowed for the call (compact mode:
 * parsed for it, so a pass over N objects costs N parses under the lock). */
void ms_kube_informer_foreach(ms_kube_informer_t *inf,
                              void (*fn)(void *ctx, const char *key, const cJSON *obj), void *ctx);
void ms_kube_informer_stats(ms_kube_informer_t *inf, ms_kube_informer_stats_t *out);

/* "namespace/name" of obj into buf; false when metadata.name is missing or
 * the key does not fit. */
bool ms_kube_object_key(const cJSON *obj, char *buf, size_t cap);

#endif
