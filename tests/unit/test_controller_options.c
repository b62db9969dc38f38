/*
 * test_controller_options.c - `meshscaler controller` flags and --config:
 * every flag, the defaults, flags over the file, and every refusal with its
 * exact one-line message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "meshscaler/controller_options.h"
#include "meshscaler/duration.h"

#define URL "--prometheus-url=http://prom:9090"

/* Parse a NULL-terminated list of arguments. */
static ms_err_t parse_list(ms_controller_options_t *o, char *errbuf, const char *const *args)
{
    int argc = 0;

    while (args[argc])
        argc++;
    errbuf[0] = '\0';
    return ms_controller_options_parse(argc, (char *const *)args, o, errbuf, MS_ERRBUF_SIZE);
}

#define PARSE(o, err, ...) parse_list((o), (err), (const char *const[]){__VA_ARGS__, NULL})

/* Expect a refusal whose message is exactly `want`. */
#define EXPECT_ERROR(want, ...)                                                                    \
    do {                                                                                           \
        ms_controller_options_t o_;                                                                \
        char e_[MS_ERRBUF_SIZE];                                                                   \
        assert_int_not_equal(PARSE(&o_, e_, __VA_ARGS__), MS_OK);                                  \
        assert_string_equal(e_, want);                                                             \
        assert_null(strchr(e_, '\n'));                                                             \
        ms_controller_options_cleanup(&o_);                                                        \
    } while (0)

/* A config file with the given text; the path is written to path[64]. */
static void write_config(char *path, const char *text)
{
    FILE *f;
    int fd;

    snprintf(path, 64, "%s", "/tmp/ms-config-XXXXXX.yaml");
    fd = mkstemps(path, 5);
    assert_true(fd >= 0);
    f = fdopen(fd, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Parse with a config file holding text plus extra flags. */
static ms_err_t parse_with_config(ms_controller_options_t *o, char *errbuf, const char *text,
                                  const char *const *flags)
{
    char path[64], arg[96];
    const char *args[16];
    int n = 0;
    ms_err_t err;

    write_config(path, text);
    snprintf(arg, sizeof arg, "--config=%s", path);
    args[n++] = arg;
    for (; flags && *flags && n < 15; flags++)
        args[n++] = *flags;
    args[n] = NULL;
    err = parse_list(o, errbuf, args);
    unlink(path);
    /* Messages name the file: make them comparable. */
    for (char *at = strstr(errbuf, path); at; at = strstr(at, path)) {
        size_t plen = strlen(path);
        memmove(at + 11, at + plen, strlen(at + plen) + 1);
        memcpy(at, "config.yaml", 11);
    }
    return err;
}

#define EXPECT_CONFIG_ERROR(text, want)                                                            \
    do {                                                                                           \
        ms_controller_options_t o_;                                                                \
        char e_[MS_ERRBUF_SIZE];                                                                   \
        assert_int_not_equal(parse_with_config(&o_, e_, text, NULL), MS_OK);                       \
        assert_string_equal(e_, want);                                                             \
        ms_controller_options_cleanup(&o_);                                                        \
    } while (0)

/* ---- defaults ---- */

static void test_defaults(void **state)
{
    ms_controller_options_t o;
    char err[MS_ERRBUF_SIZE], ns[256];

    (void)state;
    assert_int_equal(PARSE(&o, err, URL), MS_OK);
    assert_string_equal(o.prometheus_url, "http://prom:9090");
    assert_null(o.config_file);
    assert_null(o.kubeconfig);
    assert_null(o.context);
    assert_null(o.namespace_); /* every namespace */
    assert_true(o.kube_api_qps == 300);
    assert_int_equal(o.kube_api_burst, 600);
    assert_null(o.prometheus_bearer_token_file);
    assert_null(o.prometheus_basic_auth_username);
    assert_null(o.prometheus_basic_auth_password_file);
    assert_int_equal(o.nprometheus_headers, 0);
    assert_null(o.prometheus_ca_file);
    assert_false(o.prometheus_insecure_skip_verify);
    assert_true(o.prometheus_timeout == 10);
    assert_true(o.sync_period == 15);
    assert_int_equal(o.concurrent_syncs, 4);
    assert_false(o.dry_run);
    assert_int_equal(o.output, MS_OUTPUT_TABLE);
    assert_false(o.leader_elect);
    assert_string_equal(o.leader_election_id, "meshscaler");
    if (ms_controller_options_namespace_file(MS_CONTROLLER_NAMESPACE_FILE, ns, sizeof ns))
        assert_string_equal(o.leader_election_namespace, ns); /* running in a pod */
    else
        assert_string_equal(o.leader_election_namespace, "meshscaler-system");
    assert_string_equal(o.metrics_bind_address, ":8080");
    assert_string_equal(o.health_probe_bind_address, ":8081");
    assert_int_equal(o.log_format, MS_LOG_TEXT);
    assert_int_equal(o.log_level, MS_LOG_INFO);
    assert_false(o.help);
    ms_controller_options_cleanup(&o);
    ms_controller_options_cleanup(NULL);
}

static void test_init_then_cleanup(void **state)
{
    ms_controller_options_t o;

    (void)state;
    ms_controller_options_init(&o);
    assert_string_equal(o.leader_election_namespace, "meshscaler-system");
    assert_true(o.sync_period == 15);
    ms_controller_options_cleanup(&o);
    assert_null(o.leader_election_id);
}

/* ---- every flag ---- */

static void test_every_flag_space_separated(void **state)
{
    ms_controller_options_t o;
    char err[MS_ERRBUF_SIZE];

    (void)state;
    assert_int_equal(
        PARSE(&o, err, "--kubeconfig", "/k/config", "--context", "kind-a", "--namespace", "shop",
              "--prometheus-url", "https://prom.example:9091/prometheus",
              "--prometheus-bearer-token-file", "/var/run/token", "--prometheus-header",
              "X-Scope-OrgID: team-a", "--prometheus-header", "X-Extra:1", "--prometheus-ca-file",
              "/etc/ca.pem", "--prometheus-insecure-skip-verify", "--prometheus-timeout", "2.5s",
              "--sync-period", "1m30s", "--leader-elect", "--leader-election-id", "mesh-a",
              "--leader-election-namespace", "ops", "--metrics-bind-address", "127.0.0.1:9090",
              "--health-probe-bind-address", "[::1]:0", "--kube-api-qps", "12.5",
              "--kube-api-burst", "30", "--log-format", "json", "--log-level", "debug", "--dry-run",
              "--output", "json", "--concurrent-syncs", "16"),
        MS_OK);
    assert_string_equal(err, "");
    assert_string_equal(o.kubeconfig, "/k/config");
    assert_string_equal(o.context, "kind-a");
    assert_string_equal(o.namespace_, "shop");
    assert_string_equal(o.prometheus_url, "https://prom.example:9091/prometheus");
    assert_string_equal(o.prometheus_bearer_token_file, "/var/run/token");
    assert_int_equal(o.nprometheus_headers, 2);
    assert_string_equal(o.prometheus_headers[0], "X-Scope-OrgID: team-a");
    assert_string_equal(o.prometheus_headers[1], "X-Extra:1");
    assert_string_equal(o.prometheus_ca_file, "/etc/ca.pem");
    assert_true(o.prometheus_insecure_skip_verify);
    assert_true(o.prometheus_timeout == 2.5);
    assert_true(o.sync_period == 90);
    assert_true(o.leader_elect);
    assert_string_equal(o.leader_election_id, "mesh-a");
    assert_string_equal(o.leader_election_namespace, "ops");
    assert_string_equal(o.metrics_bind_address, "127.0.0.1:9090");
    assert_string_equal(o.health_probe_bind_address, "[::1]:0");
    assert_true(o.kube_api_qps == 12.5);
    assert_int_equal(o.kube_api_burst, 30);
    assert_int_equal(o.log_format, MS_LOG_JSON);
    assert_int_equal(o.log_level, MS_LOG_DEBUG);
    assert_true(o.dry_run);
    assert_int_equal(o.output, MS_OUTPUT_JSON);
    assert_int_equal(o.concurrent_syncs, 16);
    ms_controller_options_cleanup(&o);
}

static void test_every_flag_with_equals(void **state)
{
    ms_controller_options_t o;
    char err[MS_ERRBUF_SIZE];

    (void)state;
    assert_int_equal(PARSE(&o, err, "--kubeconfig=/k", "--context=c", "--namespace=ns", URL,
                           "--prometheus-basic-auth-username=bob",
                           "--prometheus-basic-auth-password-file=/pw",
                           "--prometheus-header=A: b=c", "--prometheus-ca-file=/ca",
                           "--prometheus-insecure-skip-verify=true", "--prometheus-timeout=500ms",
                           "--sync-period=1h", "--leader-elect=true", "--leader-election-id=x",
                           "--leader-election-namespace=y", "--metrics-bind-address=0",
                           "--health-probe-bind-address=:18081", "--kube-api-qps=-1",
                           "--kube-api-burst=1", "--log-format=text", "--log-level=warn",
                           "--dry-run=true", "--output=table", "--concurrent-syncs=1"),
                     MS_OK);
    assert_string_equal(o.kubeconfig, "/k");
    assert_string_equal(o.context, "c");
    assert_string_equal(o.namespace_, "ns");
    assert_string_equal(o.prometheus_basic_auth_username, "bob");
    assert_string_equal(o.prometheus_basic_auth_password_file, "/pw");
    assert_int_equal(o.nprometheus_headers, 1);
    assert_string_equal(o.prometheus_headers[0], "A: b=c"); /* only the first '=' splits */
    assert_string_equal(o.prometheus_ca_file, "/ca");
    assert_true(o.prometheus_insecure_skip_verify);
    assert_true(o.prometheus_timeout == 0.5);
    assert_true(o.sync_period == 3600);
    assert_true(o.leader_elect);
    assert_string_equal(o.leader_election_id, "x");
    assert_string_equal(o.leader_election_namespace, "y");
    assert_string_equal(o.metrics_bind_address, "0");
    assert_string_equal(o.health_probe_bind_address, ":18081");
    assert_true(o.kube_api_qps == -1);
    assert_int_equal(o.kube_api_burst, 1);
    assert_int_equal(o.log_format, MS_LOG_TEXT);
    assert_int_equal(o.log_level, MS_LOG_WARN);
    assert_true(o.dry_run);
    assert_int_equal(o.output, MS_OUTPUT_TABLE);
    assert_int_equal(o.concurrent_syncs, 1);
    ms_controller_options_cleanup(&o);
}

static void test_bools(void **state)
{
    ms_controller_options_t o;
    char err[MS_ERRBUF_SIZE];

    (void)state;
    /* Bare means true; =false turns a default or an earlier flag off. */
    assert_int_equal(PARSE(&o, err, URL, "--dry-run", "--leader-elect", "--leader-elect=false"),
                     MS_OK);
    assert_true(o.dry_run);
    assert_false(o.leader_elect);
    ms_controller_options_cleanup(&o);
    /* strconv.ParseBool spellings, as pflag. */
    const char *yes[] = {"--dry-run=1", "--dry-run=t", "--dry-run=T", "--dry-run=TRUE",
                         "--dry-run=True"};
    const char *no[] = {"--dry-run=0", "--dry-run=f", "--dry-run=F", "--dry-run=FALSE",
                        "--dry-run=False"};
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(PARSE(&o, err, URL, yes[i]), MS_OK);
        assert_true(o.dry_run);
        ms_controller_options_cleanup(&o);
        assert_int_equal(PARSE(&o, err, URL, "--dry-run", no[i]), MS_OK);
        assert_false(o.dry_run);
        ms_controller_options_cleanup(&o);
    }
    /* A bool never swallows the next argument. */
    EXPECT_ERROR("unexpected argument \"false\" (flags start with --; see --help)", URL,
                 "--dry-run", "false");
}

static void test_last_flag_wins_and_empty_namespace(void **state)
{
    ms_controller_options_t o;
    char err[MS_ERRBUF_SIZE];

    (void)state;
    assert_int_equal(PARSE(&o, err, URL, "--sync-period=5s", "--sync-period", "7s", "--namespace=a",
                           "--namespace="),
                     MS_OK);
    assert_true(o.sync_period == 7);
    assert_null(o.namespace_); /* "" is every namespace again */
    ms_controller_options_cleanup(&o);
}

static void test_values_starting_with_dashes_need_equals(void **state)
{
    ms_controller_options_t o;
    char err[MS_ERRBUF_SIZE];

    (void)state;
    assert_int_equal(PARSE(&o, err, URL, "--leader-election-id=--odd", "--context", "-x"), MS_OK);
    assert_string_equal(o.leader_election_id, "--odd");
    assert_string_equal(o.context, "-x");
    ms_controller_options_cleanup(&o);
    EXPECT_ERROR("--kubeconfig: needs a value", URL, "--kubeconfig", "--context=x");
    EXPECT_ERROR("--kubeconfig: needs a value", URL, "--kubeconfig");
}

static void test_help(void **state)
{
    ms_controller_options_t o;
    char err[MS_ERRBUF_SIZE];
    const char *h = ms_controller_options_help();

    (void)state;
    /* --help needs nothing else, not even --prometheus-url. */
    assert_int_equal(PARSE(&o, err, "--help"), MS_OK);
    assert_true(o.help);
    ms_controller_options_cleanup(&o);
    assert_int_equal(PARSE(&o, err, "--sync-period=1s", "-h", "--sync-period=nonsense"), MS_OK);
    assert_true(o.help);
    ms_controller_options_cleanup(&o);
    assert_non_null(strstr(h, "Usage: meshscaler controller"));
    static const char *const flags[] = {"--kubeconfig",
                                        "--context",
                                        "--namespace",
                                        "--kube-api-qps",
                                        "--kube-api-burst",
                                        "--prometheus-url",
                                        "--prometheus-bearer-token-file",
                                        "--prometheus-basic-auth-username",
                                        "--prometheus-basic-auth-password-file",
                                        "--prometheus-header",
                                        "--prometheus-ca-file",
                                        "--prometheus-insecure-skip-verify",
                                        "--prometheus-timeout",
                                        "--sync-period",
                                        "--concurrent-syncs",
                                        "--dry-run",
                                        "--output",
                                        "--leader-elect",
                                        "--leader-election-id",
                                        "--leader-election-namespace",
                                        "--metrics-bind-address",
                                        "--health-probe-bind-address",
                                        "--log-format",
                                        "--log-level",
                                        "--config",
                                        "syncPeriod",
                                        "prometheusHeaders",
                                        "healthProbeBindAddress"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        assert_non_null(strstr(h, flags[i]));
    assert_int_equal(h[strlen(h) - 1], '\n');
    /* Generated from the options table and wrapped: it fits a terminal. */
    for (const char *line = h; *line; line += strcspn(line, "\n") + 1)
        if (strcspn(line, "\n") > 80)
            fail_msg("help line wider than 80 columns: %.*s", (int)strcspn(line, "\n"), line);
    assert_non_null(strstr(h, "  --prometheus-basic-auth-password-file FILE\n"));
    assert_non_null(strstr(h, "prometheusHeaders (a list),"));
    assert_non_null(strstr(h, "logLevel. Flags win"));
}

/* ---- durations ---- */

static void test_durations_like_go(void **state)
{
    static const struct {
        const char *text;
        double want;
    } ok[] = {
        {"0", 0},
        {"15s", 15},
        {"500ms", 0.5},
        {"1m30s", 90},
        {"1h", 3600},
        {"1.5h", 5400},
        {"2h45m", 9900},
        {".5s", 0.5},
        {"1.s", 1},
        {"+5s", 5},
        {"1000us", 1e-3},
        {"1000\xc2\xb5s", 1e-3},
        {"2000000ns", 2e-3},
        {"1h1m1s1ms", 3661.001},
    };
    static const char *const bad[] = {"",    "15", "15x",  "s",  "-5s", "1.5", "5 s", " 5s",
                                      "5s ", "1d", "..5s", "5S", "+",   "0s0", "1e3s"};
    double d;

    (void)state;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        assert_true(ms_duration_parse(ok[i].text, &d));
        assert_float_equal(d, ok[i].want, 1e-9);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        d = 42;
        assert_false(ms_duration_parse(bad[i], &d));
        assert_true(d == 42);
    }
}

/* ---- every refusal ---- */

static void test_flag_errors(void **state)
{
    (void)state;
    EXPECT_ERROR("--prometheus-url is required (or prometheusUrl in a --config file)",
                 "--sync-period=15s");
    EXPECT_ERROR("unknown flag --sync-perod (see --help)", URL, "--sync-perod=15s");
    EXPECT_ERROR("unexpected argument \"extra\" (flags start with --; see --help)", URL, "extra");
    EXPECT_ERROR("unexpected argument \"-v\" (flags start with --; see --help)", URL, "-v");
    EXPECT_ERROR("unexpected argument \"---x\" (flags start with --; see --help)", URL, "---x");
    EXPECT_ERROR("unexpected argument \"--\" (flags start with --; see --help)", URL, "--");
    EXPECT_ERROR("--sync-period: \"15x\" is not a duration (want e.g. 15s, 1m)", URL,
                 "--sync-period=15x");
    EXPECT_ERROR("--sync-period: 500ms is out of range (1s..1h)", URL, "--sync-period=500ms");
    EXPECT_ERROR("--sync-period: 2h is out of range (1s..1h)", URL, "--sync-period", "2h");
    EXPECT_ERROR("--prometheus-timeout: \"ten\" is not a duration (want e.g. 15s, 1m)", URL,
                 "--prometheus-timeout=ten");
    EXPECT_ERROR("--prometheus-timeout: 0s is out of range (1ms..10m)", URL,
                 "--prometheus-timeout=0s");
    EXPECT_ERROR("--prometheus-timeout: 11m is out of range (1ms..10m)", URL,
                 "--prometheus-timeout=11m");
    EXPECT_ERROR("--leader-elect: \"yes\" is not a boolean (want true or false)", URL,
                 "--leader-elect=yes");
    EXPECT_ERROR("--dry-run: \"\" is not a boolean (want true or false)", URL, "--dry-run=");
    EXPECT_ERROR("--concurrent-syncs: \"four\" is not an integer", URL, "--concurrent-syncs=four");
    EXPECT_ERROR("--concurrent-syncs: \"4.0\" is not an integer", URL, "--concurrent-syncs=4.0");
    EXPECT_ERROR("--concurrent-syncs: 0 is out of range (1..256)", URL, "--concurrent-syncs=0");
    EXPECT_ERROR("--concurrent-syncs: 257 is out of range (1..256)", URL, "--concurrent-syncs=257");
    EXPECT_ERROR("--concurrent-syncs: \"99999999999999999999\" is not an integer", URL,
                 "--concurrent-syncs=99999999999999999999");
    EXPECT_ERROR("--kube-api-burst: 0 is out of range (1..100000)", URL, "--kube-api-burst=0");
    EXPECT_ERROR("--kube-api-burst: \" 5\" is not an integer", URL, "--kube-api-burst= 5");
    EXPECT_ERROR("--kube-api-qps: \"fast\" is not a number", URL, "--kube-api-qps=fast");
    EXPECT_ERROR("--kube-api-qps: \"inf\" is not a number", URL, "--kube-api-qps=inf");
    EXPECT_ERROR("--kube-api-qps: 0 is out of range (above 0 up to 100000, or -1 for no limit)",
                 URL, "--kube-api-qps=0");
    EXPECT_ERROR("--kube-api-qps: -2 is out of range (above 0 up to 100000, or -1 for no limit)",
                 URL, "--kube-api-qps=-2");
    EXPECT_ERROR("--log-format: \"xml\" is not one of text, json", URL, "--log-format=xml");
    EXPECT_ERROR("--log-level: \"trace\" is not one of error, warn, info, debug", URL,
                 "--log-level=trace");
    EXPECT_ERROR("--output: \"yaml\" is not one of table, json", URL, "--output=yaml");
    EXPECT_ERROR("--prometheus-url: \"prom:9090\" is not an http:// or https:// URL",
                 "--prometheus-url=prom:9090");
    EXPECT_ERROR("--prometheus-url: \"http://\" is not an http:// or https:// URL",
                 "--prometheus-url=http://");
    EXPECT_ERROR("--prometheus-url: \"http://a b\" is not an http:// or https:// URL",
                 "--prometheus-url=http://a b");
    EXPECT_ERROR("--prometheus-url: the URL carries credentials (user@ or user:password@), which "
                 "would reach logs; give them with --prometheus-basic-auth-username and "
                 "--prometheus-basic-auth-password-file, or a bearer token file",
                 "--prometheus-url=https://admin:s3cret@prom:9090/");
    EXPECT_ERROR("--prometheus-url: the URL carries credentials (user@ or user:password@), which "
                 "would reach logs; give them with --prometheus-basic-auth-username and "
                 "--prometheus-basic-auth-password-file, or a bearer token file",
                 "--prometheus-url=http://token@prom");
    EXPECT_ERROR("--metrics-bind-address: \"8080\" is not HOST:PORT, :PORT or 0 (off)", URL,
                 "--metrics-bind-address=8080");
    EXPECT_ERROR("--metrics-bind-address: \":70000\" is not HOST:PORT, :PORT or 0 (off)", URL,
                 "--metrics-bind-address=:70000");
    EXPECT_ERROR("--health-probe-bind-address: \"host:\" is not HOST:PORT, :PORT or 0 (off)", URL,
                 "--health-probe-bind-address=host:");
    EXPECT_ERROR("--health-probe-bind-address: \"[::1:80\" is not HOST:PORT, :PORT or 0 (off)", URL,
                 "--health-probe-bind-address=[::1:80");
    EXPECT_ERROR("--prometheus-header: \"NoColon\" is not a header \"Name: value\"", URL,
                 "--prometheus-header=NoColon");
    EXPECT_ERROR("--prometheus-header: \": v\" is not a header \"Name: value\"", URL,
                 "--prometheus-header=: v");
    EXPECT_ERROR("--prometheus-header: \"Bad Name: v\" is not a header \"Name: value\"", URL,
                 "--prometheus-header=Bad Name: v");
    EXPECT_ERROR("--prometheus-header: \"Empty:  \" is not a header \"Name: value\"", URL,
                 "--prometheus-header=Empty:  ");
    /* ms_errf keeps messages on one line: the CR reads as a space. */
    EXPECT_ERROR("--prometheus-header: \"X: a b\" is not a header \"Name: value\"", URL,
                 "--prometheus-header=X: a\rb");
    EXPECT_ERROR("--context: needs a non-empty value", URL, "--context=");
    EXPECT_ERROR("--leader-election-id: needs a non-empty value", URL, "--leader-election-id=");
    EXPECT_ERROR("--config: needs a file name", URL, "--config=");
    EXPECT_ERROR("--prometheus-basic-auth-username needs --prometheus-basic-auth-password-file "
                 "as well",
                 URL, "--prometheus-basic-auth-username=bob");
    EXPECT_ERROR("--prometheus-basic-auth-password-file needs --prometheus-basic-auth-username "
                 "as well",
                 URL, "--prometheus-basic-auth-password-file=/pw");
    EXPECT_ERROR("--prometheus-bearer-token-file and --prometheus-basic-auth-username cannot be "
                 "used together (bearer token or basic auth)",
                 URL, "--prometheus-bearer-token-file=/t", "--prometheus-basic-auth-username=u",
                 "--prometheus-basic-auth-password-file=/p");
}

static void test_too_many_headers_and_long_values(void **state)
{
    const char *args[MS_CONTROLLER_MAX_HEADERS + 3];
    char storage[MS_CONTROLLER_MAX_HEADERS + 1][40];
    char long_value[5000];
    ms_controller_options_t o;
    char err[MS_ERRBUF_SIZE];
    int n = 0;

    (void)state;
    /* One header more than the limit. */
    args[n++] = URL;
    for (int i = 0; i <= MS_CONTROLLER_MAX_HEADERS; i++) {
        snprintf(storage[i], sizeof storage[i], "--prometheus-header=X-%d: v", i);
        args[n++] = storage[i];
    }
    args[n] = NULL;
    assert_int_not_equal(parse_list(&o, err, args), MS_OK);
    assert_string_equal(err, "--prometheus-header: more than 32 headers");
    ms_controller_options_cleanup(&o);

    memset(long_value, 'a', sizeof long_value - 1);
    memcpy(long_value, "--context=", 10);
    long_value[sizeof long_value - 1] = '\0';
    EXPECT_ERROR("--context: value longer than 4096 bytes", URL, long_value);
}

/* ---- the config file ---- */

static void test_config_every_key(void **state)
{
    ms_controller_options_t o;
    char err[MS_ERRBUF_SIZE];

    (void)state;
    assert_int_equal(parse_with_config(&o, err,
                                       "# meshscaler controller settings\n"
                                       "kubeconfig: /etc/kube/config\n"
                                       "context: prod\n"
                                       "namespace: shop\n"
                                       "kubeApiQps: 100\n"
                                       "kubeApiBurst: 200\n"
                                       "prometheusUrl: http://prom:9090\n"
                                       "prometheusBasicAuthUsername: meshscaler\n"
                                       "prometheusBasicAuthPasswordFile: /etc/pw\n"
                                       "prometheusHeaders:\n"
                                       "  - 'X-Scope-OrgID: team-a'\n"
                                       "  - 'X-Other: 2'\n"
                                       "prometheusCaFile: /etc/ca.pem\n"
                                       "prometheusInsecureSkipVerify: true\n"
                                       "prometheusTimeout: 3s\n"
                                       "syncPeriod: 30s\n"
                                       "concurrentSyncs: 8\n"
                                       "dryRun: true\n"
                                       "output: json\n"
                                       "leaderElect: true\n"
                                       "leaderElectionId: mesh-b\n"
                                       "leaderElectionNamespace: ops\n"
                                       "metricsBindAddress: \":9090\"\n"
                                       "healthProbeBindAddress: \"0\"\n"
                                       "logFormat: json\n"
                                       "logLevel: error\n",
                                       NULL),
                     MS_OK);
    assert_string_equal(err, "");
    assert_non_null(o.config_file);
    assert_string_equal(o.kubeconfig, "/etc/kube/config");
    assert_string_equal(o.context, "prod");
    assert_string_equal(o.namespace_, "shop");
    assert_true(o.kube_api_qps == 100);
    assert_int_equal(o.kube_api_burst, 200);
    assert_string_equal(o.prometheus_url, "http://prom:9090");
    assert_string_equal(o.prometheus_basic_auth_username, "meshscaler");
    assert_string_equal(o.prometheus_basic_auth_password_file, "/etc/pw");
    assert_int_equal(o.nprometheus_headers, 2);
    assert_string_equal(o.prometheus_headers[0], "X-Scope-OrgID: team-a");
    assert_string_equal(o.prometheus_headers[1], "X-Other: 2");
    assert_string_equal(o.prometheus_ca_file, "/etc/ca.pem");
    assert_true(o.prometheus_insecure_skip_verify);
    assert_true(o.prometheus_timeout == 3);
    assert_true(o.sync_period == 30);
    assert_int_equal(o.concurrent_syncs, 8);
    assert_true(o.dry_run);
    assert_int_equal(o.output, MS_OUTPUT_JSON);
    assert_true(o.leader_elect);
    assert_string_equal(o.leader_election_id, "mesh-b");
    assert_string_equal(o.leader_election_namespace, "ops");
    assert_string_equal(o.metrics_bind_address, ":9090");
    assert_string_equal(o.health_probe_bind_address, "0");
    assert_int_equal(o.log_format, MS_LOG_JSON);
    assert_int_equal(o.log_level, MS_LOG_ERROR);
    ms_controller_options_cleanup(&o);

    /* The token file, from the file too; flow style works. */
    assert_int_equal(parse_with_config(&o, err,
                                       "{prometheusUrl: 'http://p:1', "
                                       "prometheusBearerTokenFile: /t, namespace: ''}",
                                       NULL),
                     MS_OK);
    assert_string_equal(o.prometheus_bearer_token_file, "/t");
    assert_null(o.namespace_);
    ms_controller_options_cleanup(&o);
}

static void test_flags_win_over_config(void **state)
{
    ms_controller_options_t o;
    char err[MS_ERRBUF_SIZE];
    const char *flags[] = {"--sync-period=5s",
                           "--leader-elect=false",
                           "--prometheus-header=X-Flag: 1",
                           "--namespace",
                           "flagged",
                           NULL};

    (void)state;
    assert_int_equal(parse_with_config(&o, err,
                                       "prometheusUrl: http://prom:9090\n"
                                       "syncPeriod: 1m\n"
                                       "leaderElect: true\n"
                                       "namespace: from-file\n"
                                       "concurrentSyncs: 9\n"
                                       "prometheusHeaders: ['X-File: 1', 'X-File2: 2']\n",
                                       flags),
                     MS_OK);
    assert_true(o.sync_period == 5);
    assert_false(o.leader_elect);
    assert_string_equal(o.namespace_, "flagged");
    assert_int_equal(o.concurrent_syncs, 9); /* the file's, no flag */
    /* A list flag replaces the file's list. */
    assert_int_equal(o.nprometheus_headers, 1);
    assert_string_equal(o.prometheus_headers[0], "X-Flag: 1");
    assert_string_equal(o.prometheus_url, "http://prom:9090");
    ms_controller_options_cleanup(&o);

    /* The url given by flag while the file lacks it; --config may come last. */
    const char *flags2[] = {URL, NULL};
    assert_int_equal(parse_with_config(&o, err, "syncPeriod: 20s\n", flags2), MS_OK);
    assert_true(o.sync_period == 20);
    ms_controller_options_cleanup(&o);

    /* A flag fixes a bad value...no: the file is checked on its own first. */
    const char *flags3[] = {"--sync-period=5s", URL, NULL};
    assert_int_not_equal(parse_with_config(&o, err, "syncPeriod: 15x\n", flags3), MS_OK);
    assert_string_equal(err,
                        "config.yaml: syncPeriod: \"15x\" is not a duration (want e.g. 15s, 1m)");
    ms_controller_options_cleanup(&o);
}

static void test_config_empty_file(void **state)
{
    ms_controller_options_t o;
    char err[MS_ERRBUF_SIZE];
    const char *flags[] = {URL, NULL};

    (void)state;
    assert_int_equal(parse_with_config(&o, err, "", flags), MS_OK);
    assert_true(o.sync_period == 15);
    ms_controller_options_cleanup(&o);
    assert_int_equal(parse_with_config(&o, err, "# only a comment\n---\n", flags), MS_OK);
    ms_controller_options_cleanup(&o);
}

static void test_config_errors(void **state)
{
    (void)state;
    EXPECT_CONFIG_ERROR("syncPeriod: 15x\n",
                        "config.yaml: syncPeriod: \"15x\" is not a duration (want e.g. 15s, 1m)");
    EXPECT_CONFIG_ERROR("syncPeriod: 15\n",
                        "config.yaml: syncPeriod: \"15\" is not a duration (want e.g. 15s, 1m)");
    EXPECT_CONFIG_ERROR("syncPeriod: 2h\n", "config.yaml: syncPeriod: 2h is out of range (1s..1h)");
    EXPECT_CONFIG_ERROR("leaderElect: yes\n",
                        "config.yaml: leaderElect: \"yes\" is not a boolean (want true or false)");
    EXPECT_CONFIG_ERROR("concurrentSyncs: 0\n",
                        "config.yaml: concurrentSyncs: 0 is out of range (1..256)");
    EXPECT_CONFIG_ERROR(
        "logLevel: verbose\n",
        "config.yaml: logLevel: \"verbose\" is not one of error, warn, info, debug");
    EXPECT_CONFIG_ERROR("sync-period: 15s\n",
                        "config.yaml: sync-period: unknown key (see meshscaler controller --help)");
    EXPECT_CONFIG_ERROR("config: other.yaml\n",
                        "config.yaml: config: unknown key (see meshscaler controller --help)");
    EXPECT_CONFIG_ERROR("syncPeriod: 15s\nsyncPeriod: 20s\n",
                        "config.yaml: syncPeriod: given twice");
    EXPECT_CONFIG_ERROR("syncPeriod:\n", "config.yaml: syncPeriod: needs a value");
    EXPECT_CONFIG_ERROR("context: ~\n", "config.yaml: context: needs a value");
    EXPECT_CONFIG_ERROR("context: ''\n", "config.yaml: context: needs a non-empty value");
    EXPECT_CONFIG_ERROR("syncPeriod: [15s]\n",
                        "config.yaml: syncPeriod: want a single value, not a list");
    EXPECT_CONFIG_ERROR("syncPeriod: {a: 1}\n",
                        "config.yaml: syncPeriod: want a single value, not a mapping");
    EXPECT_CONFIG_ERROR("prometheusHeaders: 'X-A: 1'\n",
                        "config.yaml: prometheusHeaders: want a list, e.g. "
                        "[\"X-Scope-OrgID: team-a\"]");
    EXPECT_CONFIG_ERROR("prometheusHeaders: [[a]]\n",
                        "config.yaml: prometheusHeaders: items must be strings");
    EXPECT_CONFIG_ERROR("prometheusHeaders: ['NoColon']\n",
                        "config.yaml: prometheusHeaders: \"NoColon\" is not a header \"Name: "
                        "value\"");
    EXPECT_CONFIG_ERROR("- syncPeriod: 15s\n",
                        "config.yaml: want a mapping of settings (e.g. syncPeriod: 15s)");
    EXPECT_CONFIG_ERROR("just text\n",
                        "config.yaml: want a mapping of settings (e.g. syncPeriod: 15s)");
    EXPECT_CONFIG_ERROR("[a]: 1\n", "config.yaml: keys must be plain names");
    EXPECT_CONFIG_ERROR("syncPeriod: 15s\n  bad: indent\n",
                        "config.yaml:2:6: not valid YAML: mapping values are not allowed in this "
                        "context");
    EXPECT_CONFIG_ERROR("a: 1\n---\nb: 2\n",
                        "config.yaml: a: unknown key (see meshscaler controller --help)");
    EXPECT_CONFIG_ERROR("syncPeriod: 15s\n---\nsyncPeriod: 20s\n",
                        "config.yaml: holds more than one YAML document");
    EXPECT_CONFIG_ERROR("prometheusUrl: http://p:1\nprometheusBasicAuthUsername: u\n",
                        "config.yaml: prometheusBasicAuthUsername needs "
                        "--prometheus-basic-auth-password-file as well");
    EXPECT_CONFIG_ERROR("prometheusUrl: http://p:1\nprometheusBearerTokenFile: /t\n"
                        "prometheusBasicAuthUsername: u\n"
                        "prometheusBasicAuthPasswordFile: /p\n",
                        "config.yaml: prometheusBearerTokenFile and config.yaml: "
                        "prometheusBasicAuthUsername cannot be used together (bearer token or "
                        "basic auth)");
}

static void test_config_missing_file(void **state)
{
    ms_controller_options_t o;
    char err[MS_ERRBUF_SIZE];

    (void)state;
    assert_int_equal(PARSE(&o, err, URL, "--config", "/nonexistent/meshscaler.yaml"), MS_ERR_IO);
    assert_string_equal(err,
                        "/nonexistent/meshscaler.yaml: cannot read: No such file or directory");
    ms_controller_options_cleanup(&o);
    /* Syntax errors in the flags come first, before the file is read. */
    assert_int_equal(PARSE(&o, err, "--config", "/nonexistent/x.yaml", "--bogus"), MS_ERR_INVALID);
    assert_string_equal(err, "unknown flag --bogus (see --help)");
    ms_controller_options_cleanup(&o);
}

/* --user-queries / userQueries: allow (the default, for compatibility),
 * namespaced or deny. */
static void test_user_queries(void **state)
{
    ms_controller_options_t o;
    char err[MS_ERRBUF_SIZE];
    const char *flags[] = {"--user-queries=deny", NULL};

    (void)state;
    assert_int_equal(PARSE(&o, err, URL), MS_OK);
    assert_int_equal(o.user_queries, MS_USER_QUERIES_ALLOW);
    ms_controller_options_cleanup(&o);
    assert_int_equal(PARSE(&o, err, URL, "--user-queries", "namespaced"), MS_OK);
    assert_int_equal(o.user_queries, MS_USER_QUERIES_NAMESPACED);
    ms_controller_options_cleanup(&o);
    assert_int_equal(PARSE(&o, err, URL, "--user-queries=deny", "--user-queries=allow"), MS_OK);
    assert_int_equal(o.user_queries, MS_USER_QUERIES_ALLOW); /* the last one wins */
    ms_controller_options_cleanup(&o);
    EXPECT_ERROR("--user-queries: \"Namespaced\" is not one of allow, namespaced, deny", URL,
                 "--user-queries=Namespaced");
    EXPECT_ERROR("--user-queries: \"\" is not one of allow, namespaced, deny", URL,
                 "--user-queries=");
    EXPECT_ERROR("--user-queries: needs a value", URL, "--user-queries");

    /* From the file, and the flag over the file. */
    assert_int_equal(parse_with_config(&o, err,
                                       "prometheusUrl: http://prom:9090\n"
                                       "userQueries: namespaced\n",
                                       NULL),
                     MS_OK);
    assert_int_equal(o.user_queries, MS_USER_QUERIES_NAMESPACED);
    ms_controller_options_cleanup(&o);
    assert_int_equal(parse_with_config(&o, err,
                                       "prometheusUrl: http://prom:9090\n"
                                       "userQueries: namespaced\n",
                                       flags),
                     MS_OK);
    assert_int_equal(o.user_queries, MS_USER_QUERIES_DENY);
    ms_controller_options_cleanup(&o);
    EXPECT_CONFIG_ERROR("prometheusUrl: http://prom:9090\nuserQueries: all\n",
                        "config.yaml: userQueries: \"all\" is not one of allow, namespaced, deny");

    assert_non_null(strstr(ms_controller_options_help(), "--user-queries allow|namespaced|deny"));
    assert_non_null(strstr(ms_controller_options_help(), "userQueries"));
}

/* --metrics-secure / --metrics-cert-dir (metricsSecure / metricsCertDir):
 * off by default, a directory only together with --metrics-secure. */
static void test_metrics_secure(void **state)
{
    ms_controller_options_t o;
    char err[MS_ERRBUF_SIZE];
    const char *off[] = {"--metrics-secure=false", NULL};
    const char *h = ms_controller_options_help();

    (void)state;
    assert_int_equal(PARSE(&o, err, URL), MS_OK);
    assert_false(o.metrics_secure); /* HTTP scrapes of earlier set-ups keep working */
    assert_null(o.metrics_cert_dir);
    ms_controller_options_cleanup(&o);
    assert_int_equal(PARSE(&o, err, URL, "--metrics-secure"), MS_OK);
    assert_true(o.metrics_secure);
    assert_null(o.metrics_cert_dir); /* a self-signed certificate */
    ms_controller_options_cleanup(&o);
    assert_int_equal(PARSE(&o, err, URL, "--metrics-secure=true", "--metrics-cert-dir",
                           "/etc/meshscaler/metrics-tls"),
                     MS_OK);
    assert_true(o.metrics_secure);
    assert_string_equal(o.metrics_cert_dir, "/etc/meshscaler/metrics-tls");
    ms_controller_options_cleanup(&o);
    EXPECT_ERROR("--metrics-cert-dir needs --metrics-secure as well", URL,
                 "--metrics-cert-dir=/tls");
    EXPECT_ERROR("--metrics-cert-dir: needs a non-empty value", URL, "--metrics-secure",
                 "--metrics-cert-dir=");
    EXPECT_ERROR("--metrics-secure: \"yes\" is not a boolean (want true or false)", URL,
                 "--metrics-secure=yes");

    /* From the file; a flag turns it off again, and then the file's
     * directory is refused by name. */
    assert_int_equal(parse_with_config(&o, err,
                                       "prometheusUrl: http://prom:9090\n"
                                       "metricsSecure: true\n"
                                       "metricsCertDir: /tls\n",
                                       NULL),
                     MS_OK);
    assert_true(o.metrics_secure);
    assert_string_equal(o.metrics_cert_dir, "/tls");
    ms_controller_options_cleanup(&o);
    assert_int_not_equal(parse_with_config(&o, err,
                                           "prometheusUrl: http://prom:9090\n"
                                           "metricsSecure: true\n"
                                           "metricsCertDir: /tls\n",
                                           off),
                         MS_OK);
    assert_string_equal(err, "config.yaml: metricsCertDir needs --metrics-secure as well");
    ms_controller_options_cleanup(&o);
    EXPECT_CONFIG_ERROR("prometheusUrl: http://prom:9090\nmetricsSecure: on\n",
                        "config.yaml: metricsSecure: \"on\" is not a boolean (want true or "
                        "false)");

    assert_non_null(strstr(h, "--metrics-secure"));
    assert_non_null(strstr(h, "--metrics-cert-dir DIR"));
    assert_non_null(strstr(h, "metricsSecure"));
    assert_non_null(strstr(h, "metricsCertDir"));
}

static void test_namespace_file(void **state)
{
    char path[64], ns[64];

    (void)state;
    write_config(path, "  team-ops \n");
    assert_true(ms_controller_options_namespace_file(path, ns, sizeof ns));
    assert_string_equal(ns, "team-ops");
    assert_false(ms_controller_options_namespace_file(path, ns, 5)); /* too long for buf */
    unlink(path);
    write_config(path, "\n");
    assert_false(ms_controller_options_namespace_file(path, ns, sizeof ns));
    unlink(path);
    assert_false(ms_controller_options_namespace_file("/nonexistent/namespace", ns, sizeof ns));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_init_then_cleanup),
        cmocka_unit_test(test_every_flag_space_separated),
        cmocka_unit_test(test_every_flag_with_equals),
        cmocka_unit_test(test_bools),
        cmocka_unit_test(test_last_flag_wins_and_empty_namespace),
        cmocka_unit_test(test_values_starting_with_dashes_need_equals),
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_durations_like_go),
        cmocka_unit_test(test_flag_errors),
        cmocka_unit_test(test_too_many_headers_and_long_values),
        cmocka_unit_test(test_config_every_key),
        cmocka_unit_test(test_flags_win_over_config),
        cmocka_unit_test(test_config_empty_file),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_config_missing_file),
        cmocka_unit_test(test_namespace_file),
        cmocka_unit_test(test_metrics_secure),
        cmocka_unit_test(test_user_queries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
