/* cmd.h - subcommands of the meshscaler tool; each returns an exit code. */
#ifndef MESHSCALER_CMD_H
#define MESHSCALER_CMD_H

int ms_cmd_decide(int argc, char **argv);
int ms_cmd_controller(int argc, char **argv);
int ms_cmd_convert(int argc, char **argv);
int ms_cmd_replay(int argc, char **argv);

/* "meshscaler CMD: <message>", a blank line and usage on stderr; returns 2,
 * the exit code of a usage error. */
int ms_cmd_usage_error(const char *cmd, const char *usage, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int ms_cmd_probe(int argc, char **argv);

#endif
