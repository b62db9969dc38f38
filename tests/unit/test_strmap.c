/*
 * test_strmap.c - the string map against a plain array under random puts and
 * deletes (backward-shift deletion must never lose a key); insert, replace,
 * delete and growth one by one; its walk, from the first slot and after
 * deletions; and the intrusive kind the informer, work queue and metrics use.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/strmap.h"

#define KEYS 500

static void test_against_reference(void **state)
{
    static char names[KEYS][24];
    static int values[KEYS];
    bool present[KEYS] = {0};
    ms_strmap_t m;
    uint64_t rng = 42;

    (void)state;
    ms_strmap_init(&m);
    for (int i = 0; i < KEYS; i++)
        snprintf(names[i], sizeof names[i], "ns/obj-%d", i);
    for (int step = 0; step < 200000; step++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        int k = (int)((rng >> 33) % KEYS);
        if ((rng >> 20) & 1) {
            void *old = ms_strmap_put(&m, names[k], &values[k]);
            assert_true(old == (present[k] ? &values[k] : NULL));
            present[k] = true;
        } else {
            void *old = ms_strmap_del(&m, names[k]);
            assert_true(old == (present[k] ? &values[k] : NULL));
            present[k] = false;
        }
        if (step % 997 == 0) {
            size_t n = 0;
            for (int i = 0; i < KEYS; i++) {
                assert_true(ms_strmap_get(&m, names[i]) == (present[i] ? &values[i] : NULL));
                n += present[i];
            }
            assert_int_equal(ms_strmap_size(&m), n);
        }
    }
    ms_strmap_cleanup(&m);
}

static void test_walk_and_lengths(void **state)
{
    ms_strmap_t m;
    int a = 1, b = 2, seen = 0;
    size_t pos = 0;
    const char *key;
    void *val;

    (void)state;
    ms_strmap_init(&m);
    assert_null(ms_strmap_get(&m, "x"));
    assert_null(ms_strmap_del(&m, "x"));
    ms_strmap_put(&m, "alpha", &a);
    ms_strmap_put(&m, "beta", &b);
    assert_ptr_equal(ms_strmap_getn(&m, "alphabet", 5), &a);
    assert_null(ms_strmap_getn(&m, "alp", 3));
    while (ms_strmap_next(&m, &pos, &key, &val))
        seen += *(int *)val;
    assert_int_equal(seen, 3);
    ms_strmap_cleanup(&m);
}

/* A key whose first probe is slot 0 of any table up to 65,536 slots. */
static void first_slot_key(char *buf, size_t cap)
{
    for (int i = 0;; i++) {
        snprintf(buf, cap, "ns/first-%d", i);
        if ((ms_strmap_hash(buf, strlen(buf)) & 0xffff) == 0)
            return;
    }
}

/* The number of members the walk yields, each checked against get (a walk
 * that yields a stale or repeated slot shows as a wrong count or value). */
static size_t walk_count(const ms_strmap_t *m)
{
    size_t pos = 0, n = 0;
    const char *key;
    void *val;

    while (ms_strmap_next(m, &pos, &key, &val)) {
        assert_ptr_equal(ms_strmap_get(m, key), val);
        n++;
    }
    return n;
}

static void test_insert_replace_delete(void **state)
{
    ms_strmap_t m;
    int a = 1, b = 2;
    char key[16] = "ns/a";

    (void)state;
    ms_strmap_init(&m);
    assert_null(ms_strmap_put(&m, key, &a));
    key[3] = 'z'; /* the map holds its own copy */
    assert_ptr_equal(ms_strmap_get(&m, "ns/a"), &a);
    assert_null(ms_strmap_get(&m, "ns/z"));
    assert_ptr_equal(ms_strmap_put(&m, "ns/a", &b), &a); /* replace: the old value back */
    assert_int_equal(ms_strmap_size(&m), 1);
    assert_ptr_equal(ms_strmap_get(&m, "ns/a"), &b);
    assert_ptr_equal(ms_strmap_del(&m, "ns/a"), &b);
    assert_null(ms_strmap_del(&m, "ns/a"));
    assert_null(ms_strmap_get(&m, "ns/a"));
    assert_int_equal(ms_strmap_size(&m), 0);
    assert_int_equal(walk_count(&m), 0);
    ms_strmap_cleanup(&m);
}

/* The walk starts at the first slot, and still yields every member after
 * growth and after deletions moved members back (backward shift). */
static void test_walk_from_first_slot_after_growth_and_deletes(void **state)
{
    static char names[300][24];
    ms_strmap_t m;
    char first[32];
    int v[300], fv = 0;
    size_t pos = 0, caps = 0, last_cap = 0;
    const char *key;
    void *val;
    bool seen_first = false;

    (void)state;
    first_slot_key(first, sizeof first);
    ms_strmap_init(&m);
    ms_strmap_put(&m, first, &fv);
    assert_ptr_equal(m.vals[0], &fv); /* in slot 0 */
    for (int i = 0; i < 300; i++) {
        snprintf(names[i], sizeof names[i], "ns/o%d", i);
        ms_strmap_put(&m, names[i], &v[i]);
        if (m.cap != last_cap) {
            caps++;
            last_cap = m.cap;
        }
        assert_true(ms_strmap_size(&m) * 2 <= m.cap); /* at most half full */
    }
    assert_true(caps >= 5); /* 16 -> 1024: it grew, keeping every member */
    assert_ptr_equal(m.vals[0], &fv);
    assert_int_equal(walk_count(&m), 301);
    while (ms_strmap_next(&m, &pos, &key, &val))
        seen_first = seen_first || val == &fv;
    assert_true(seen_first);
    for (int i = 0; i < 300; i += 2)
        assert_ptr_equal(ms_strmap_del(&m, names[i]), &v[i]);
    assert_int_equal(ms_strmap_size(&m), 151);
    assert_int_equal(walk_count(&m), 151);
    for (int i = 0; i < 300; i++)
        assert_ptr_equal(ms_strmap_get(&m, names[i]), i % 2 ? &v[i] : NULL);
    assert_ptr_equal(ms_strmap_get(&m, first), &fv);
    ms_strmap_cleanup(&m);
}

typedef struct {
    int n;
    char key[16];
} item_t;

static const char *item_key(const void *val, const void *ctx)
{
    assert_ptr_equal(ctx, &item_key); /* the ctx given at init */
    return ((const item_t *)val)->key;
}

/* An intrusive map stores no keys: it reads them from its values, through
 * growth and backward-shift deletion too, and frees none of them. */
static void test_intrusive_keys(void **state)
{
    static item_t items[100];
    ms_strmap_t m;
    item_t again = {.key = "ns/i7"};
    size_t pos = 0;
    const char *key;
    void *val;

    (void)state;
    ms_strmap_init_intrusive(&m, item_key, &item_key);
    for (int i = 0; i < 100; i++) {
        items[i].n = i;
        snprintf(items[i].key, sizeof items[i].key, "ns/i%d", i);
        assert_null(ms_strmap_put(&m, items[i].key, &items[i]));
    }
    assert_null(m.keys);
    assert_ptr_equal(ms_strmap_put(&m, again.key, &again), &items[7]);
    assert_ptr_equal(ms_strmap_get(&m, "ns/i7"), &again);
    for (int i = 0; i < 100; i += 3)
        ms_strmap_del(&m, items[i].key);
    assert_int_equal(ms_strmap_size(&m), 66);
    assert_int_equal(walk_count(&m), 66);
    while (ms_strmap_next(&m, &pos, &key, &val))
        assert_ptr_equal(key, ((item_t *)val)->key); /* the value's own */
    for (int i = 1; i < 100; i++)
        if (i % 3 != 0 && i != 7)
            assert_ptr_equal(ms_strmap_get(&m, items[i].key), &items[i]);
    ms_strmap_cleanup(&m);
    assert_ptr_equal(m.key_of, item_key); /* still intrusive after cleanup */
    assert_null(ms_strmap_put(&m, items[1].key, &items[1]));
    ms_strmap_cleanup(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_reference),
        cmocka_unit_test(test_walk_and_lengths),
        cmocka_unit_test(test_insert_replace_delete),
        cmocka_unit_test(test_walk_from_first_slot_after_growth_and_deletes),
        cmocka_unit_test(test_intrusive_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
