/*
 * fakekube.h - an in-process stand-in for the kube-apiserver's list and
 * watch of one collection, for tests and benchmarks of the informer that
 * need no real server: plain HTTP/1.1 on 127.0.0.1, one thread per
 * connection, every response closed after it is sent.
 *
 * It keeps objects (by metadata.name) and a revision counter; each change
 * gives the object the next resourceVersion and appends an event to a log
 * that watches replay from their resourceVersion. A watch from before the
 * compacted revision, or one still streaming when a compaction drops events
 * it has not sent, gets an ERROR event with code 410, as from the real
 * server, never a silent gap; "down" ends every watch (also one admitted
 * just before it) and answers 503 until "up", so tests can change objects
 * while an informer cannot see them. Any path is the one collection;
 * labelSelector is ignored; no bookmarks are sent.
 *
 * Threads: every function may be called from any thread. The caller owns
 * the fakekube_t and the client it makes; strings are borrowed.
 */
#ifndef MS_FAKEKUBE_H
#define MS_FAKEKUBE_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "meshscaler/kube.h"

typedef struct fakekube fakekube_t;

/* Listen on a free port of 127.0.0.1 and serve; NULL when that fails. */
fakekube_t *fakekube_start(void);
/* End every connection, join its threads, free everything. NULL does nothing. */
void fakekube_stop(fakekube_t *fk);
/* A client for the fake (unlimited QPS); the caller frees it. NULL on error. */
ms_kube_client_t *fakekube_client(fakekube_t *fk);

/* Create or replace the object named obj.metadata.name (obj is borrowed and
 * copied): it gets the next resourceVersion; an ADDED or MODIFIED event is
 * logged. Returns the new resourceVersion, 0 when obj has no name. */
long fakekube_put(fakekube_t *fk, const cJSON *obj);
/* fakekube_put() of a JSON text; 0 also when it does not parse. */
long fakekube_put_text(fakekube_t *fk, const char *json);
/* Delete the object: a DELETED event carries it with a new resourceVersion.
 * Returns that resourceVersion, 0 when there is no such object. */
long fakekube_delete(fakekube_t *fk, const char *name);
/* A copy of the stored object (the caller's), NULL when absent. */
cJSON *fakekube_get(fakekube_t *fk, const char *name);
/* Forget the event log: watches from an older resourceVersion get 410. */
void fakekube_compact(fakekube_t *fk);
/* down: end every watch and answer every request 503 until up again. */
void fakekube_set_down(fakekube_t *fk, bool down);
/* Requests served so far: lists (pages) and watches. */
void fakekube_counts(fakekube_t *fk, unsigned long *lists, unsigned long *watches);

#endif
