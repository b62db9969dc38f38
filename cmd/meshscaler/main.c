/*
 * main.c - the meshscaler command: pick the subcommand, hand over.
 * Exit codes: 0 success, 1 runtime failure, 2 usage or invalid input.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "meshscaler/version.h"

static const char usage[] =
    "Usage: meshscaler <command> [options]\n"
    "\n"
    "Commands:\n"
    "  decide [-f FILE] [-o json|text]   run the decision engine over a scenario\n"
    "                                    (stdin when no file) and print each tick\n"
    "  convert [-f FILE] [flags] [NAME]  MeshAutoscalers from HorizontalPodAutoscalers\n"
    "                                    (convert --help lists the flags)\n"
    "  replay -f MAS.yaml --prometheus-url URL --from T1 --to T2\n"
    "                                    what it would have done, from Prometheus history\n"
    "  controller [flags]                watch MeshAutoscalers and scale their targets\n"
    "                                    (controller --help lists the flags)\n"
    "  probe [--timeout S] URL           GET URL; exit 0 on 2xx (checks inside the image)\n"
    "  version                           print the version\n"
    "  help                              print this help\n"
    "\n"
    "A scenario is JSON: {\"spec\": <MeshAutoscaler spec>, \"state\": {...},\n"
    "\"ticks\": [...]}; see README.md and docs/decide.md.\n";

static void print_usage(FILE *to)
{
    fputs(usage, to);
}

int ms_cmd_usage_error(const char *cmd, const char *usage_text, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "meshscaler %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\n\n", stderr);
    fputs(usage_text, stderr);
    return 2;
}

int main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : NULL;

    if (cmd == NULL) {
        print_usage(stderr);
        return 2;
    }
    if (strcmp(cmd, "decide") == 0)
        return ms_cmd_decide(argc - 1, argv + 1);
    if (strcmp(cmd, "convert") == 0)
        return ms_cmd_convert(argc - 1, argv + 1);
    if (strcmp(cmd, "replay") == 0)
        return ms_cmd_replay(argc - 1, argv + 1);
    if (strcmp(cmd, "controller") == 0)
        return ms_cmd_controller(argc - 1, argv + 1);
    if (strcmp(cmd, "probe") == 0)
        return ms_cmd_probe(argc - 1, argv + 1);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("meshscaler %s\n", ms_version());
        return 0;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        print_usage(stdout);
        return 0;
    }
    fprintf(stderr, "meshscaler: unknown command \"%s\"\n\n", cmd);
    print_usage(stderr);
    return 2;
}
