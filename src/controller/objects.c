/*
 * objects.c - per-object controller state: engine memory and what the
 * last sync reported, keyed by "namespace/name" and valid for one uid.
 */
#include <stdlib.h>
#include <string.h>

#include "controller_internal.h"
#include "meshscaler/log.h"

void ms__objects_init(ms__objects_t *t)
{
    pthread_mutex_init(&t->lock, NULL);
    t->head = NULL;
    t->count = 0;
}

void ms__objects_cleanup(ms__objects_t *t)
{
    ms__object_t *o = t->head;

    while (o != NULL) {
        ms__object_t *next = o->next;
        free(o);
        o = next;
    }
    t->head = NULL;
    t->count = 0;
    pthread_mutex_destroy(&t->lock);
}

static void reset(ms__object_t *o, const char *key, const char *uid)
{
    ms__object_t *next = o->next;

    memset(o, 0, sizeof *o);
    o->next = next;
    snprintf(o->key, sizeof o->key, "%s", key);
    snprintf(o->uid, sizeof o->uid, "%s", uid);
    ms_engine_memory_init(&o->memory);
}

ms__object_t *ms__objects_get(ms__objects_t *t, const char *key, const char *uid)
{
    ms__object_t *o;

    pthread_mutex_lock(&t->lock);
    for (o = t->head; o != NULL; o = o->next)
        if (strcmp(o->key, key) == 0)
            break;
    if (o == NULL) {
        o = calloc(1, sizeof *o);
        if (o == NULL) {
            MS_LOG_ERROR("out of memory", MS_S("what", "object state"));
            abort();
        }
        o->next = t->head;
        t->head = o;
        t->count++;
        reset(o, key, uid);
    } else if (strcmp(o->uid, uid) != 0) {
        MS_LOG_INFO("object re-created, starting fresh", MS_S("object", key), MS_S("uid", uid));
        reset(o, key, uid);
    }
    pthread_mutex_unlock(&t->lock);
    return o;
}

bool ms__objects_remove(ms__objects_t *t, const char *key)
{
    ms__object_t **pp;
    bool found = false;

    pthread_mutex_lock(&t->lock);
    for (pp = &t->head; *pp != NULL; pp = &(*pp)->next) {
        if (strcmp((*pp)->key, key) == 0) {
            ms__object_t *o = *pp;
            *pp = o->next;
            free(o);
            t->count--;
            found = true;
            break;
        }
    }
    pthread_mutex_unlock(&t->lock);
    return found;
}

size_t ms__objects_count(ms__objects_t *t)
{
    size_t n;

    pthread_mutex_lock(&t->lock);
    n = t->count;
    pthread_mutex_unlock(&t->lock);
    return n;
}
