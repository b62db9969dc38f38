/*
 * cli_check.c - runs `meshscaler decide -f SCENARIO` and checks the result.
 *
 *   cli_check match        MESHSCALER SCENARIO EXPECTED.jsonl
 *       exit 0, as many output lines as expected lines, and each output line
 *       equals its expected line (numbers within 1e-9 relative, strings,
 *       booleans and null exactly, arrays item by item with equal lengths).
 *       Strict: every top-level key of the output must be in the expected
 *       line, unless the expected line lists it in "ignore"
 *       ("ignore": ["message"] - a list of top-level output key names; the
 *       "ignore" key itself is never compared). A key the output has and the
 *       expected line neither gives nor ignores fails the line, naming the key.
 *       Nested values: "metrics", "downstream", "budgets" (round lines) and
 *       "state" are compared
 *       exactly at every depth (no key or array item in the output that the
 *       expected value lacks); any other nested object (none today) is
 *       compared by its expected keys only.
 *   cli_check match-subset MESHSCALER SCENARIO EXPECTED.jsonl
 *       the lenient check, for scenarios written by others with only some of
 *       the keys (../shared/scenarios): each output line has every field of
 *       its expected line, objects compared by their expected keys at every
 *       depth; output keys the expected line does not give are not checked.
 *   cli_check invalid      MESHSCALER SCENARIO EXPECTED.err
 *       exit 2, nothing on stdout, one line on stderr containing the text of
 *       EXPECTED.err.
 *
 * Prints what differed and exits 1 on a mismatch.
 */
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

extern char **environ;

static char *read_all_fd(int fd)
{
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    ssize_t n;

    if (buf == NULL)
        abort();
    while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
        len += (size_t)n;
        if (cap - len < 2) {
            cap *= 2;
            buf = realloc(buf, cap);
            if (buf == NULL)
                abort();
        }
    }
    buf[len] = '\0';
    return buf;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *text;

    if (f == NULL) {
        perror(path);
        exit(1);
    }
    text = read_all_fd(fileno(f));
    fclose(f);
    return text;
}

/* Run bin decide -f scenario; collect stdout and stderr (via temp files, so
 * neither pipe can fill and block the child). */
static int run(const char *bin, const char *scenario, char **out, char **err)
{
    char outname[] = "/tmp/cli_check_out_XXXXXX", errname[] = "/tmp/cli_check_err_XXXXXX";
    int outfd = mkstemp(outname), errfd = mkstemp(errname), status;
    posix_spawn_file_actions_t fa;
    char *argv[] = {(char *)bin, "decide", "-f", (char *)scenario, NULL};
    pid_t pid;

    if (outfd < 0 || errfd < 0)
        abort();
    unlink(outname);
    unlink(errname);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, outfd, 1);
    posix_spawn_file_actions_adddup2(&fa, errfd, 2);
    if (posix_spawn(&pid, bin, &fa, NULL, argv, environ) != 0) {
        perror(bin);
        exit(1);
    }
    posix_spawn_file_actions_destroy(&fa);
    waitpid(pid, &status, 0);
    lseek(outfd, 0, SEEK_SET);
    lseek(errfd, 0, SEEK_SET);
    *out = read_all_fd(outfd);
    *err = read_all_fd(errfd);
    close(outfd);
    close(errfd);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Does actual have every field of expected, with equal values? With exact,
 * also no object key that expected lacks, at every depth (array lengths are
 * always compared). */
static int compare(const cJSON *expected, const cJSON *actual, int exact, char *path,
                   size_t pathlen)
{
    if (cJSON_IsObject(expected)) {
        const cJSON *e;
        if (!cJSON_IsObject(actual)) {
            printf("  %s: expected an object\n", path);
            return 0;
        }
        cJSON_ArrayForEach(e, expected)
        {
            size_t len = strlen(path);
            int ok;
            snprintf(path + len, pathlen - len, ".%s", e->string);
            ok = compare(e, cJSON_GetObjectItemCaseSensitive(actual, e->string), exact, path,
                         pathlen);
            path[len] = '\0';
            if (!ok)
                return 0;
        }
        if (exact) {
            const cJSON *a;
            cJSON_ArrayForEach(a, actual)
            {
                if (cJSON_GetObjectItemCaseSensitive(expected, a->string) == NULL) {
                    printf("  %s: the output has key \"%s\" that the expected value lacks\n",
                           path[0] ? path : ".", a->string);
                    return 0;
                }
            }
        }
        return 1;
    }
    if (cJSON_IsNumber(expected)) {
        double a, b = expected->valuedouble;
        if (!cJSON_IsNumber(actual)) {
            printf("  %s: expected %g, got %s\n", path, b, actual ? "a non-number" : "nothing");
            return 0;
        }
        a = actual->valuedouble;
        if (fabs(a - b) > 1e-9 * fmax(1.0, fabs(b))) {
            printf("  %s: expected %.17g, got %.17g\n", path, b, a);
            return 0;
        }
        return 1;
    }
    if (cJSON_IsString(expected)) {
        if (!cJSON_IsString(actual) || strcmp(actual->valuestring, expected->valuestring) != 0) {
            printf("  %s: expected \"%s\", got %s%s%s\n", path, expected->valuestring,
                   cJSON_IsString(actual) ? "\"" : "",
                   cJSON_IsString(actual) ? actual->valuestring : "a non-string",
                   cJSON_IsString(actual) ? "\"" : "");
            return 0;
        }
        return 1;
    }
    if (cJSON_IsBool(expected) || cJSON_IsNull(expected)) {
        if (actual == NULL || (actual->type & 0xFF) != (expected->type & 0xFF)) {
            printf("  %s: expected %s\n", path,
                   cJSON_IsNull(expected)   ? "null"
                   : cJSON_IsTrue(expected) ? "true"
                                            : "false");
            return 0;
        }
        return 1;
    }
    if (cJSON_IsArray(expected)) {
        int n = cJSON_GetArraySize(expected);
        if (!cJSON_IsArray(actual) || cJSON_GetArraySize(actual) != n) {
            printf("  %s: expected an array of %d\n", path, n);
            return 0;
        }
        for (int i = 0; i < n; i++) {
            size_t len = strlen(path);
            int ok;
            snprintf(path + len, pathlen - len, "[%d]", i);
            ok = compare(cJSON_GetArrayItem(expected, i), cJSON_GetArrayItem(actual, i), exact,
                         path, pathlen);
            path[len] = '\0';
            if (!ok)
                return 0;
        }
        return 1;
    }
    return 1;
}

/* Top-level output keys compared exactly at every depth in strict mode. */
static const char *const exact_keys[] = {"metrics", "downstream", "budgets", "state"};

static int is_exact_key(const char *key)
{
    for (size_t i = 0; i < sizeof exact_keys / sizeof exact_keys[0]; i++)
        if (strcmp(key, exact_keys[i]) == 0)
            return 1;
    return 0;
}

/* Is key listed in the expected line's "ignore" array? */
static int ignored(const cJSON *ignore, const char *key)
{
    const cJSON *k;

    cJSON_ArrayForEach(k,
                       ignore) if (cJSON_IsString(k) && strcmp(k->valuestring, key) == 0) return 1;
    return 0;
}

/* One output line against its expected line. strict: see the header. */
static int check_line(const cJSON *e, const cJSON *a, int strict, const char *scenario, int line)
{
    const cJSON *ignore = cJSON_GetObjectItemCaseSensitive(e, "ignore"), *item;
    char path[512];
    char unchecked[1024] = "";
    int ok = 1;

    if (!cJSON_IsObject(e) || !cJSON_IsObject(a)) {
        printf("FAIL %s: line %d: %s is not a JSON object\n", scenario, line,
               cJSON_IsObject(e) ? "the output" : "the expected line");
        return 0;
    }
    if (ignore != NULL) {
        int good = cJSON_IsArray(ignore);
        cJSON_ArrayForEach(item, ignore) good = good && cJSON_IsString(item);
        if (!good) {
            printf("FAIL %s: expected line %d: \"ignore\" must be a list of key names\n", scenario,
                   line);
            return 0;
        }
    }
    cJSON_ArrayForEach(item, e)
    {
        if (strcmp(item->string, "ignore") == 0 || ignored(ignore, item->string))
            continue;
        snprintf(path, sizeof path, "%s", item->string);
        if (!compare(item, cJSON_GetObjectItemCaseSensitive(a, item->string),
                     strict && is_exact_key(item->string), path, sizeof path))
            ok = 0;
    }
    if (strict) {
        cJSON_ArrayForEach(item, a)
        {
            size_t len = strlen(unchecked);
            if (cJSON_GetObjectItemCaseSensitive(e, item->string) != NULL ||
                ignored(ignore, item->string))
                continue;
            snprintf(unchecked + len, sizeof unchecked - len, "%s%s", len ? ", " : "",
                     item->string);
        }
        if (unchecked[0] != '\0') {
            printf("FAIL %s: line %d: output key(s) not checked: %s (give them in the expected "
                   "line, or list them in its \"ignore\")\n",
                   scenario, line, unchecked);
            ok = 0;
        }
    }
    return ok;
}

static int check_match(const char *bin, const char *scenario, const char *expected_path, int strict)
{
    char *out, *err, *expected = read_file(expected_path);
    int rc = run(bin, scenario, &out, &err), line = 0, ok = 1;
    char *es = expected, *as = out;

    if (rc != 0) {
        printf("FAIL %s: exit %d, stderr: %s\n", scenario, rc, err);
        return 1;
    }
    for (;;) {
        char *enl, *anl;
        cJSON *e, *a;

        while (*es == '\n')
            es++;
        if (*es == '\0')
            break;
        line++;
        enl = strchr(es, '\n');
        if (enl)
            *enl = '\0';
        anl = strchr(as, '\n');
        if (*as == '\0') {
            printf("FAIL %s: line %d missing from the output\n", scenario, line);
            ok = 0;
            break;
        }
        if (anl)
            *anl = '\0';
        e = cJSON_Parse(es);
        a = cJSON_Parse(as);
        if (e == NULL || a == NULL) {
            printf("FAIL %s: line %d is not JSON (%s)\n", scenario, line,
                   e ? "output" : "expected");
            ok = 0;
        } else if (!check_line(e, a, strict, scenario, line)) {
            printf("FAIL %s: line %d differs\n  got: %s\n", scenario, line, as);
            ok = 0;
        }
        cJSON_Delete(e);
        cJSON_Delete(a);
        es = enl ? enl + 1 : es + strlen(es);
        as = anl ? anl + 1 : as + strlen(as);
    }
    if (ok && *as != '\0') {
        printf("FAIL %s: output has more lines than the %d expected\n", scenario, line);
        ok = 0;
    }
    if (ok)
        printf("ok %s: %d lines match\n", scenario, line);
    free(out);
    free(err);
    free(expected);
    return ok ? 0 : 1;
}

static int check_invalid(const char *bin, const char *scenario, const char *expected_path)
{
    char *out, *err, *expected = read_file(expected_path);
    int rc = run(bin, scenario, &out, &err), ok = 1;
    char *nl = strchr(expected, '\n');
    size_t errlines = 0;

    if (nl)
        *nl = '\0';
    for (char *c = err; *c; c++)
        errlines += *c == '\n';
    if (rc != 2) {
        printf("FAIL %s: exit %d, want 2\n", scenario, rc);
        ok = 0;
    }
    if (out[0] != '\0') {
        printf("FAIL %s: stdout not empty: %.200s\n", scenario, out);
        ok = 0;
    }
    if (errlines != 1 || strstr(err, expected) == NULL) {
        printf("FAIL %s: stderr should be one line containing \"%s\", got: %s\n", scenario,
               expected, err);
        ok = 0;
    }
    if (ok)
        printf("ok %s: %s", scenario, err);
    free(out);
    free(err);
    free(expected);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr,
                "usage: cli_check match|match-subset|invalid MESHSCALER SCENARIO EXPECTED\n");
        return 2;
    }
    if (strcmp(argv[1], "match") == 0)
        return check_match(argv[2], argv[3], argv[4], 1);
    if (strcmp(argv[1], "match-subset") == 0)
        return check_match(argv[2], argv[3], argv[4], 0);
    if (strcmp(argv[1], "invalid") == 0)
        return check_invalid(argv[2], argv[3], argv[4]);
    fprintf(stderr, "cli_check: unknown mode %s\n", argv[1]);
    return 2;
}
