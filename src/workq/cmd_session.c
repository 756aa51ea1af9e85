/* cmd_session.c - the commands for a person at a terminal (ours): quit and
 * help. */
#include "lib/wq.h"
#include "workq/cmd.h"

#include <stdio.h>
#include <string.h>

#include "net/reply.h"

/* quit: +OK, then the connection closes (what it pipelined behind is not
 * read). */
void
cmd_quit(struct cmd_ctx *ctx, struct reply *out, const struct request *r)
{
    reply_bytes(out, "+OK\r\n", 5);
    reply_close(out);
}

/* help: one record, "help <k>", then a line per command: its name and its
 * arguments. */
void
cmd_help(struct cmd_ctx *ctx, struct reply *out, const struct request *r)
{
    size_t n = cmd_count() - 1; /* without "unknown" */
    char line[96];
    snprintf(line, sizeof line, "+OK 1\r\nhelp %zu\r\n", n);
    reply_str(out, line);
    for (size_t i = 0; i < n; i++) {
        const struct cmd_spec *c = cmd_spec_at(i);
        reply_str(out, c->syntax.name);
        if (c->usage[0] != '\0') {
            reply_bytes(out, " ", 1);
            reply_str(out, c->usage);
        }
        reply_bytes(out, "\r\n", 2);
    }
}
