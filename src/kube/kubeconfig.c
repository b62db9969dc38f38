/*
 * kubeconfig.c - kubeconfig files (libyaml), merged the way kubectl merges
 * $KUBECONFIG (config.c decides which files to read), and freeing a
 * configuration (the struct this file builds; config.c's in-cluster path
 * frees through it too).
 *
 * Every file is parsed into a libyaml document; the context, cluster and
 * user are then looked up by name across the documents in order (first file
 * wins), and each entry is read relative to the file it came from.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <yaml.h>

#include "kube_internal.h"
#include "meshscaler/json.h"
#include "meshscaler/kubeconfig.h"
#include "meshscaler/log.h"
#include "meshscaler/xalloc.h"

typedef struct {
    yaml_document_t doc;
    bool loaded;
    char *name; /* the file, for messages */
    char *dir;  /* relative paths resolve here */
} kdoc_t;

/* One entry found by name: which document, and its position in the list. */
typedef struct {
    kdoc_t *kd;
    yaml_node_t *body; /* the "cluster"/"user"/"context" mapping */
    ms_jpath_t path;   /* e.g. users[2].user */
} entry_t;

/* ---- YAML access ---- */

static ms_err_t fail(char *errbuf, size_t errlen, const kdoc_t *kd, const ms_jpath_t *p,
                     const char *what)
{
    return ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s: %s: %s", kd->name, ms_jpath_str(p), what);
}

static yaml_node_t *map_get(yaml_document_t *d, yaml_node_t *map, const char *key)
{
    if (map == NULL || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top;
         pr++) {
        yaml_node_t *k = yaml_document_get_node(d, pr->key);
        if (k != NULL && k->type == YAML_SCALAR_NODE && k->data.scalar.length == strlen(key) &&
            memcmp(k->data.scalar.value, key, k->data.scalar.length) == 0)
            return yaml_document_get_node(d, pr->value);
    }
    return NULL;
}

/* A YAML null ("", "~", "null") counts as absent, like Go's decoder. */
static bool is_null(const yaml_node_t *n)
{
    if (n == NULL)
        return true;
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *v = (const char *)n->data.scalar.value;
    return n->data.scalar.length == 0 || strcmp(v, "~") == 0 || strcmp(v, "null") == 0;
}

/* Optional string field: *out NULL when absent. Scalars with NUL bytes are refused. */
static ms_err_t get_str(kdoc_t *kd, yaml_node_t *map, const char *key, ms_jpath_t *p, char **out,
                        char *errbuf, size_t errlen)
{
    yaml_node_t *n = map_get(&kd->doc, map, key);
    size_t mark = ms_jpath_push_key(p, key);
    ms_err_t err = MS_OK;

    *out = NULL;
    if (!is_null(n)) {
        if (n->type != YAML_SCALAR_NODE ||
            strlen((const char *)n->data.scalar.value) != n->data.scalar.length)
            err = fail(errbuf, errlen, kd, p, "not a string");
        else
            *out = ms_xstrdup((const char *)n->data.scalar.value);
    }
    ms_jpath_pop(p, mark);
    return err;
}

static ms_err_t get_bool(kdoc_t *kd, yaml_node_t *map, const char *key, ms_jpath_t *p, bool *out,
                         char *errbuf, size_t errlen)
{
    char *s = NULL;
    ms_err_t err = get_str(kd, map, key, p, &s, errbuf, errlen);
    size_t mark;

    *out = false;
    if (err != MS_OK || s == NULL)
        return err;
    if (strcmp(s, "true") == 0 || strcmp(s, "True") == 0) {
        *out = true;
    } else if (strcmp(s, "false") != 0 && strcmp(s, "False") != 0) {
        mark = ms_jpath_push_key(p, key);
        err = fail(errbuf, errlen, kd, p, "not true or false");
        ms_jpath_pop(p, mark);
    }
    free(s);
    return err;
}

/* Make path absolute against the file's directory. */
static char *resolve(const kdoc_t *kd, const char *path)
{
    if (path[0] == '/' || kd->dir[0] == '\0')
        return ms_xstrdup(path);
    return ms_xasprintf("%s/%s", kd->dir, path);
}

/* A file-or-data pair (certificate-authority / certificate-authority-data):
 * the file must be readable; the data must be base64. */
static ms_err_t get_file_or_data(kdoc_t *kd, yaml_node_t *map, ms_jpath_t *p, const char *fkey,
                                 const char *dkey, char **file, char **pem, size_t *pem_len,
                                 char *errbuf, size_t errlen)
{
    char *f = NULL, *d = NULL, why[MS_ERRBUF_SIZE];
    ms_err_t err;
    size_t mark;

    if ((err = get_str(kd, map, fkey, p, &f, errbuf, errlen)) != MS_OK ||
        (err = get_str(kd, map, dkey, p, &d, errbuf, errlen)) != MS_OK)
        goto out;
    if (f != NULL && d != NULL) {
        char msg[128];
        snprintf(msg, sizeof msg, "%s and %s are both set", fkey, dkey);
        err = fail(errbuf, errlen, kd, p, msg);
        goto out;
    }
    if (f != NULL) {
        ms_buf_t b;
        *file = resolve(kd, f);
        if (ms__kube_read_file(*file, &b, why, sizeof why) != MS_OK) {
            mark = ms_jpath_push_key(p, fkey);
            err = fail(errbuf, errlen, kd, p, why);
            ms_jpath_pop(p, mark);
            goto out;
        }
        ms_buf_cleanup(&b);
    } else if (d != NULL) {
        if (ms__kube_base64_decode(d, strlen(d), pem, pem_len) != MS_OK || *pem_len == 0) {
            mark = ms_jpath_push_key(p, dkey);
            err = fail(errbuf, errlen, kd, p, "not valid base64");
            ms_jpath_pop(p, mark);
            goto out;
        }
    }
out:
    free(f);
    free(d);
    return err;
}

/* ---- loading documents ---- */

static ms_err_t load_doc(kdoc_t *kd, const char *text, size_t len, char *errbuf, size_t errlen)
{
    yaml_parser_t parser;
    yaml_node_t *root;
    ms_err_t err = MS_OK;

    if (!yaml_parser_initialize(&parser))
        return ms_errf(errbuf, errlen, MS_ERR_NOMEM, "%s: out of memory", kd->name);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &kd->doc)) {
        err = ms_errf(errbuf, errlen, MS_ERR_PARSE, "%s: line %zu column %zu: %s", kd->name,
                      parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                      parser.problem ? parser.problem : "invalid YAML");
        goto out;
    }
    kd->loaded = true;
    root = yaml_document_get_root_node(&kd->doc);
    /* An empty file is an empty config, as kubectl treats it. */
    if (root != NULL && !is_null(root) && root->type != YAML_MAPPING_NODE)
        err = ms_errf(errbuf, errlen, MS_ERR_INVALID,
                      "%s: not a kubeconfig (the document is not a mapping)", kd->name);
out:
    yaml_parser_delete(&parser);
    return err;
}

static void kdoc_cleanup(kdoc_t *kd)
{
    if (kd->loaded)
        yaml_document_delete(&kd->doc);
    free(kd->name);
    free(kd->dir);
    memset(kd, 0, sizeof *kd);
}

static void kdoc_set_name(kdoc_t *kd, const char *name, const char *dir)
{
    kd->name = ms_xstrdup(name);
    if (dir != NULL) {
        kd->dir = ms_xstrdup(dir);
    } else {
        const char *slash = strrchr(name, '/');
        if (slash == name) {
            kd->dir = ms_xstrdup("/");
        } else {
            kd->dir = ms_xstrdup(name);
            kd->dir[slash ? (size_t)(slash - name) : 0] = '\0';
        }
    }
}

/* Find the entry called name in list `list` ("clusters") of kd, whose body
 * is under `field` ("cluster"). Also validates the list's shape. */
static ms_err_t find_entry(kdoc_t *kd, const char *list, const char *field, const char *name,
                           entry_t *out, bool *found, char *errbuf, size_t errlen)
{
    yaml_node_t *root = yaml_document_get_root_node(&kd->doc);
    yaml_node_t *seq = map_get(&kd->doc, root, list);
    ms_jpath_t p;
    size_t i = 0;

    *found = false;
    ms_jpath_init(&p, list);
    if (is_null(seq))
        return MS_OK;
    if (seq->type != YAML_SEQUENCE_NODE)
        return fail(errbuf, errlen, kd, &p, "not a list");
    for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top;
         it++, i++) {
        yaml_node_t *item = yaml_document_get_node(&kd->doc, *it);
        size_t mark = ms_jpath_push_index(&p, i);
        char *n = NULL;
        ms_err_t err;

        if (item == NULL || item->type != YAML_MAPPING_NODE)
            return fail(errbuf, errlen, kd, &p, "not a mapping");
        if ((err = get_str(kd, item, "name", &p, &n, errbuf, errlen)) != MS_OK)
            return err;
        if (n != NULL && strcmp(n, name) == 0) {
            yaml_node_t *body = map_get(&kd->doc, item, field);
            free(n);
            ms_jpath_push_key(&p, field);
            if (body == NULL || body->type != YAML_MAPPING_NODE)
                return fail(errbuf, errlen, kd, &p, is_null(body) ? "missing" : "not a mapping");
            out->kd = kd;
            out->body = body;
            out->path = p;
            *found = true;
            return MS_OK;
        }
        free(n);
        ms_jpath_pop(&p, mark);
    }
    return MS_OK;
}

static ms_err_t find_merged(kdoc_t *docs, size_t n, const char *list, const char *field,
                            const char *name, entry_t *out, bool *found, char *errbuf,
                            size_t errlen)
{
    ms_err_t err;

    for (size_t i = 0; i < n; i++) {
        if ((err = find_entry(&docs[i], list, field, name, out, found, errbuf, errlen)) != MS_OK)
            return err;
        if (*found)
            return MS_OK;
    }
    return MS_OK;
}

/* ---- reading the three entries ---- */

static ms_err_t read_cluster(entry_t *e, ms_kube_config_t *c, char *errbuf, size_t errlen)
{
    kdoc_t *kd = e->kd;
    ms_err_t err;
    size_t mark, len;

    if ((err = get_str(kd, e->body, "server", &e->path, &c->server, errbuf, errlen)) != MS_OK)
        return err;
    mark = ms_jpath_push_key(&e->path, "server");
    if (c->server == NULL)
        return fail(errbuf, errlen, kd, &e->path, "missing");
    if (strncmp(c->server, "https://", 8) != 0 && strncmp(c->server, "http://", 7) != 0)
        return fail(errbuf, errlen, kd, &e->path, "not an http:// or https:// URL");
    len = strlen(c->server);
    while (len > 0 && c->server[len - 1] == '/')
        c->server[--len] = '\0';
    /* "https://" or "https:///" has no host left once the slashes go. */
    if (strstr(c->server, "://") == NULL || strstr(c->server, "://")[3] == '\0')
        return fail(errbuf, errlen, kd, &e->path, "the URL names no host");
    ms_jpath_pop(&e->path, mark);
    if ((err = get_file_or_data(kd, e->body, &e->path, "certificate-authority",
                                "certificate-authority-data", &c->ca_file, &c->ca_pem,
                                &c->ca_pem_len, errbuf, errlen)) != MS_OK ||
        (err = get_bool(kd, e->body, "insecure-skip-tls-verify", &e->path,
                        &c->insecure_skip_tls_verify, errbuf, errlen)) != MS_OK ||
        (err = get_str(kd, e->body, "tls-server-name", &e->path, &c->tls_server_name, errbuf,
                       errlen)) != MS_OK ||
        (err = get_str(kd, e->body, "proxy-url", &e->path, &c->proxy_url, errbuf, errlen)) != MS_OK)
        return err;
    if (c->insecure_skip_tls_verify && (c->ca_file || c->ca_pem))
        return fail(errbuf, errlen, kd, &e->path,
                    "insecure-skip-tls-verify and a certificate authority are both set");
    return MS_OK;
}

static ms_err_t read_string_list(kdoc_t *kd, yaml_node_t *seq, ms_jpath_t *p, char ***out,
                                 size_t *n, char *errbuf, size_t errlen)
{
    size_t i = 0, count;

    if (is_null(seq))
        return MS_OK;
    if (seq->type != YAML_SEQUENCE_NODE)
        return fail(errbuf, errlen, kd, p, "not a list");
    count = (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);
    *out = ms_xcalloc(count + 1, sizeof **out);
    for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top;
         it++, i++) {
        yaml_node_t *s = yaml_document_get_node(&kd->doc, *it);
        if (s == NULL || s->type != YAML_SCALAR_NODE) {
            ms_jpath_push_index(p, i);
            return fail(errbuf, errlen, kd, p, "not a string");
        }
        (*out)[(*n)++] = ms_xstrdup((const char *)s->data.scalar.value);
    }
    return MS_OK;
}

static ms_err_t read_exec(kdoc_t *kd, yaml_node_t *ex, ms_jpath_t *p, ms_kube_config_t *c,
                          char *errbuf, size_t errlen)
{
    ms_kube_exec_config_t *x = ms_xcalloc(1, sizeof *x);
    yaml_node_t *env;
    ms_err_t err;
    size_t mark;

    c->exec = x;
    if (ex->type != YAML_MAPPING_NODE)
        return fail(errbuf, errlen, kd, p, "not a mapping");
    if ((err = get_str(kd, ex, "command", p, &x->command, errbuf, errlen)) != MS_OK ||
        (err = get_str(kd, ex, "apiVersion", p, &x->api_version, errbuf, errlen)) != MS_OK)
        return err;
    if (x->command == NULL || x->command[0] == '\0') {
        ms_jpath_push_key(p, "command");
        return fail(errbuf, errlen, kd, p, "missing");
    }
    if (x->api_version == NULL ||
        (strcmp(x->api_version, "client.authentication.k8s.io/v1") != 0 &&
         strcmp(x->api_version, "client.authentication.k8s.io/v1beta1") != 0)) {
        ms_jpath_push_key(p, "apiVersion");
        return fail(errbuf, errlen, kd, p,
                    x->api_version ? "not client.authentication.k8s.io/v1 or v1beta1" : "missing");
    }
    mark = ms_jpath_push_key(p, "args");
    err =
        read_string_list(kd, map_get(&kd->doc, ex, "args"), p, &x->args, &x->nargs, errbuf, errlen);
    ms_jpath_pop(p, mark);
    if (err != MS_OK)
        return err;
    env = map_get(&kd->doc, ex, "env");
    mark = ms_jpath_push_key(p, "env");
    if (!is_null(env)) {
        size_t i = 0, count;
        if (env->type != YAML_SEQUENCE_NODE)
            return fail(errbuf, errlen, kd, p, "not a list");
        count = (size_t)(env->data.sequence.items.top - env->data.sequence.items.start);
        x->env = ms_xcalloc(count + 1, sizeof *x->env);
        for (yaml_node_item_t *it = env->data.sequence.items.start;
             it < env->data.sequence.items.top; it++, i++) {
            yaml_node_t *kv = yaml_document_get_node(&kd->doc, *it);
            char *name = NULL, *value = NULL;
            size_t m2 = ms_jpath_push_index(p, i);

            if (kv == NULL || kv->type != YAML_MAPPING_NODE)
                return fail(errbuf, errlen, kd, p, "not a mapping");
            if ((err = get_str(kd, kv, "name", p, &name, errbuf, errlen)) != MS_OK ||
                (err = get_str(kd, kv, "value", p, &value, errbuf, errlen)) != MS_OK) {
                free(name);
                return err;
            }
            if (name == NULL || name[0] == '\0' || strchr(name, '=') != NULL) {
                free(name);
                free(value);
                ms_jpath_push_key(p, "name");
                return fail(errbuf, errlen, kd, p, "missing or not a variable name");
            }
            x->env[x->nenv++] = ms_xasprintf("%s=%s", name, value ? value : "");
            free(name);
            free(value);
            ms_jpath_pop(p, m2);
        }
    }
    ms_jpath_pop(p, mark);
    return MS_OK;
}

static ms_err_t read_user(entry_t *e, ms_kube_config_t *c, char *errbuf, size_t errlen)
{
    kdoc_t *kd = e->kd;
    yaml_node_t *ex;
    ms_err_t err;
    char *tf = NULL, why[MS_ERRBUF_SIZE];
    size_t mark;

    if (map_get(&kd->doc, e->body, "auth-provider") != NULL)
        return fail(errbuf, errlen, kd, &e->path,
                    "auth-provider is not supported (use an exec credential plugin)");
    if (map_get(&kd->doc, e->body, "username") != NULL || map_get(&kd->doc, e->body, "password"))
        return fail(errbuf, errlen, kd, &e->path,
                    "username/password (basic authentication) is not supported");
    if ((err = get_file_or_data(kd, e->body, &e->path, "client-certificate",
                                "client-certificate-data", &c->cert_file, &c->cert_pem,
                                &c->cert_pem_len, errbuf, errlen)) != MS_OK ||
        (err = get_file_or_data(kd, e->body, &e->path, "client-key", "client-key-data",
                                &c->key_file, &c->key_pem, &c->key_pem_len, errbuf, errlen)) !=
            MS_OK ||
        (err = get_str(kd, e->body, "token", &e->path, &c->token, errbuf, errlen)) != MS_OK ||
        (err = get_str(kd, e->body, "tokenFile", &e->path, &tf, errbuf, errlen)) != MS_OK)
        goto out;
    if ((c->cert_file || c->cert_pem) != (c->key_file || c->key_pem)) {
        err = fail(errbuf, errlen, kd, &e->path,
                   "a client certificate needs a client key, and a key a certificate");
        goto out;
    }
    if (tf != NULL) {
        ms_buf_t b;
        c->token_file = resolve(kd, tf);
        if (ms__kube_read_file(c->token_file, &b, why, sizeof why) != MS_OK) {
            mark = ms_jpath_push_key(&e->path, "tokenFile");
            err = fail(errbuf, errlen, kd, &e->path, why);
            ms_jpath_pop(&e->path, mark);
            goto out;
        }
        ms_buf_cleanup(&b);
    }
    ex = map_get(&kd->doc, e->body, "exec");
    if (!is_null(ex)) {
        if (c->token || c->token_file) {
            err = fail(errbuf, errlen, kd, &e->path, "token and exec are both set");
            goto out;
        }
        mark = ms_jpath_push_key(&e->path, "exec");
        err = read_exec(kd, ex, &e->path, c, errbuf, errlen);
        ms_jpath_pop(&e->path, mark);
    }
out:
    free(tf);
    return err;
}

/* ---- putting it together ---- */

static ms_err_t current_context(kdoc_t *docs, size_t n, char **out, char *errbuf, size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        ms_jpath_t p;
        yaml_node_t *root = yaml_document_get_root_node(&docs[i].doc);
        ms_err_t err;

        ms_jpath_init(&p, "");
        if ((err = get_str(&docs[i], root, "current-context", &p, out, errbuf, errlen)) != MS_OK)
            return err;
        if (*out != NULL && (*out)[0] != '\0')
            return MS_OK;
        free(*out);
        *out = NULL;
    }
    return MS_OK;
}

static void source_of(kdoc_t *docs, size_t n, char *buf, size_t cap)
{
    size_t used = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < n && used + 1 < cap; i++) {
        int w = snprintf(buf + used, cap - used, "%s%s", i ? ":" : "", docs[i].name);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

/* The entry of LIST (clusters, users) named NAME, which the context's ITEM
 * field (cluster, user) names; its absence is an error at that field. */
static ms_err_t find_named(kdoc_t *docs, size_t n, const char *list, const char *item,
                           const char *name, entry_t *ctx, entry_t *out, char *errbuf,
                           size_t errlen)
{
    char msg[MS_ERRBUF_SIZE];
    bool found;
    ms_err_t err = find_merged(docs, n, list, item, name, out, &found, errbuf, errlen);

    if (err != MS_OK || found)
        return err;
    snprintf(msg, sizeof msg, "%s \"%s\" not found", item, name);
    ms_jpath_push_key(&ctx->path, item);
    return fail(errbuf, errlen, ctx->kd, &ctx->path, msg);
}

static ms_err_t resolve_docs(kdoc_t *docs, size_t n, const char *context, ms_kube_config_t **out,
                             char *errbuf, size_t errlen)
{
    ms_kube_config_t *c = ms_xcalloc(1, sizeof *c);
    char *cur = NULL, *cluster = NULL, *user = NULL, src[1024];
    entry_t ctx, ce, ue;
    bool found;
    ms_err_t err;

    source_of(docs, n, src, sizeof src);
    c->source = ms_xstrdup(src);
    if (context == NULL || context[0] == '\0') {
        if ((err = current_context(docs, n, &cur, errbuf, errlen)) != MS_OK)
            goto out;
        if (cur == NULL) {
            err = ms_errf(errbuf, errlen, MS_ERR_INVALID,
                          "%s: no current-context is set and no context was given", src);
            goto out;
        }
        context = cur;
    }
    c->context = ms_xstrdup(context);
    if ((err = find_merged(docs, n, "contexts", "context", context, &ctx, &found, errbuf,
                           errlen)) != MS_OK)
        goto out;
    if (!found) {
        err = ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s: context \"%s\" not found", src, context);
        goto out;
    }
    if ((err = get_str(ctx.kd, ctx.body, "cluster", &ctx.path, &cluster, errbuf, errlen)) !=
            MS_OK ||
        (err = get_str(ctx.kd, ctx.body, "user", &ctx.path, &user, errbuf, errlen)) != MS_OK ||
        (err = get_str(ctx.kd, ctx.body, "namespace", &ctx.path, &c->namespace_, errbuf, errlen)) !=
            MS_OK)
        goto out;
    if (cluster == NULL) {
        ms_jpath_push_key(&ctx.path, "cluster");
        err = fail(errbuf, errlen, ctx.kd, &ctx.path, "missing");
        goto out;
    }
    if ((err = find_named(docs, n, "clusters", "cluster", cluster, &ctx, &ce, errbuf, errlen)) !=
            MS_OK ||
        (err = read_cluster(&ce, c, errbuf, errlen)) != MS_OK)
        goto out;
    if (user != NULL && user[0] != '\0' &&
        ((err = find_named(docs, n, "users", "user", user, &ctx, &ue, errbuf, errlen)) != MS_OK ||
         (err = read_user(&ue, c, errbuf, errlen)) != MS_OK))
        goto out;
    if (c->namespace_ == NULL || c->namespace_[0] == '\0') {
        free(c->namespace_);
        c->namespace_ = ms_xstrdup("default");
    }
    if (c->insecure_skip_tls_verify)
        MS_LOG_WARN("TLS verification of the API server is off (insecure-skip-tls-verify)",
                    MS_S("server", c->server), MS_S("kubeconfig", src));
out:
    free(cur);
    free(cluster);
    free(user);
    if (err != MS_OK) {
        ms_kube_config_free(c);
        c = NULL;
    }
    *out = c;
    return err;
}

ms_err_t ms_kube_config_parse(const char *text, size_t len, const char *name, const char *dir,
                              const char *context, ms_kube_config_t **out, char *errbuf,
                              size_t errlen)
{
    kdoc_t kd;
    ms_err_t err;

    *out = NULL;
    memset(&kd, 0, sizeof kd);
    kdoc_set_name(&kd, name, dir ? dir : "");
    err = load_doc(&kd, text, len, errbuf, errlen);
    if (err == MS_OK)
        err = resolve_docs(&kd, 1, context, out, errbuf, errlen);
    kdoc_cleanup(&kd);
    return err;
}

ms_err_t ms_kube_config_load_files(const char *const *paths, size_t n, bool required,
                                   const char *context, ms_kube_config_t **out, char *errbuf,
                                   size_t errlen)
{
    kdoc_t docs[MS__KUBE_MAX_FILES];
    size_t nd = 0;
    ms_err_t err = MS_OK;

    *out = NULL;
    memset(docs, 0, sizeof docs);
    for (size_t i = 0; i < n; i++) {
        ms_buf_t b;
        char why[MS_ERRBUF_SIZE];

        if (paths[i][0] == '\0')
            continue;
        if (nd == MS__KUBE_MAX_FILES) {
            err = ms_errf(errbuf, errlen, MS_ERR_RANGE, "more than %d kubeconfig files",
                          MS__KUBE_MAX_FILES);
            goto out;
        }
        err = ms__kube_read_file(paths[i], &b, why, sizeof why);
        if (err == MS_ERR_NOTFOUND && !required) {
            err = MS_OK;
            continue; /* kubectl skips missing files in $KUBECONFIG */
        }
        if (err != MS_OK) {
            ms_errf(errbuf, errlen, err, "kubeconfig: %s", why);
            goto out;
        }
        kdoc_set_name(&docs[nd], paths[i], NULL);
        err = load_doc(&docs[nd], b.data ? b.data : "", b.len, errbuf, errlen);
        ms_buf_cleanup(&b);
        nd++;
        if (err != MS_OK)
            goto out;
    }
    if (nd == 0) {
        err = ms_errf(errbuf, errlen, MS_ERR_NOTFOUND, "no kubeconfig file found (looked for %s%s)",
                      n ? paths[0] : "nothing", n > 1 ? " and others" : "");
        goto out;
    }
    err = resolve_docs(docs, nd, context, out, errbuf, errlen);
out:
    for (size_t i = 0; i < nd; i++)
        kdoc_cleanup(&docs[i]);
    return err;
}

void ms_kube_config_free(ms_kube_config_t *c)
{
    if (c == NULL)
        return;
    free(c->server);
    free(c->ca_file);
    free(c->ca_pem);
    free(c->cert_file);
    free(c->cert_pem);
    free(c->key_file);
    free(c->key_pem);
    free(c->tls_server_name);
    free(c->proxy_url);
    free(c->token);
    free(c->token_file);
    free(c->namespace_);
    free(c->context);
    free(c->source);
    if (c->exec != NULL) {
        for (size_t i = 0; i < c->exec->nargs; i++)
            free(c->exec->args[i]);
        for (size_t i = 0; i < c->exec->nenv; i++)
            free(c->exec->env[i]);
        free(c->exec->args);
        free(c->exec->env);
        free(c->exec->command);
        free(c->exec->api_version);
        free(c->exec);
    }
    free(c);
}
