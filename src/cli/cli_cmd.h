/* cli_cmd.h - workq-cli's side of a command: turn what the user typed (or
 * the words given on the command line) into the bytes of one protocol
 * command.  The payload of add, schedule, run, complete and fail is typed
 * inline, as a bare word or a "quoted string" with C escapes, where the
 * protocol wants its size; an id of "-" asks for a new random UUID. */
#ifndef WQ_CLI_CMD_H
#define WQ_CLI_CMD_H

#include "lib/wq.h"
#include "cli/cli_reply.h"

#include <stdio.h>

enum cli_cmd_kind {
    CLI_CMD_EMPTY, /* a blank line or a # comment: nothing to do */
    CLI_CMD_SEND,  /* send wire[0..wire_len) and read a reply of view */
    CLI_CMD_HELP,
    CLI_CMD_QUIT,
};

struct cli_cmd {
    enum cli_cmd_kind kind;
    enum cli_view view;
    char *wire; /* the protocol bytes, CR LF and data block included */
    size_t wire_len;
    uint64_t wait_ms; /* how long the server may rightly take to reply */
    char id[37];      /* the id made for "-", or "" */
    char error[256];  /* why the command was refused */
};

/* Parse one typed line (without its line end) into cmd, which the caller
 * clears with cli_cmd_clear.  0, or -1 with cmd->error set. */
int cli_cmd_parse_line(struct cli_cmd *cmd, const char *line, size_t len);
/* The same for n separate words (one-shot mode): each word is one token,
 * taken as it is, without quotes or escapes. */
int cli_cmd_parse_words(struct cli_cmd *cmd, char *const *words, size_t n);
void cli_cmd_clear(struct cli_cmd *cmd);

/* Tab completion: what may be typed at the word line[start..end) of a line
 * being edited, as the words before it say. */
enum cli_complete_kind {
    CLI_COMPLETE_NOTHING, /* an id, a number, a payload, an unknown command */
    CLI_COMPLETE_WORDS,   /* one of words: a command, a subject, a flag */
    CLI_COMPLETE_QUEUES,  /* a queue name, which only the server knows */
};

struct cli_complete {
    enum cli_complete_kind kind;
    const char *const *words; /* NULL terminated; static */
};

void cli_cmd_complete(struct cli_complete *out, const char *line, size_t start, size_t end);

/* The list of commands with their syntax, for `help`. */
void cli_cmd_print_help(FILE *out);

#endif /* WQ_CLI_CMD_H */
