/* cli_cmd.c - from a typed line to the bytes of a protocol command. */
#include "lib/wq.h"
#include "cli/cli_cmd.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <uuid.h>

#include "cli/cli_reply.h"
#include "lib/util.h"

/* Positional-argument index meaning "the last one". */
#define CLI_ARG_LAST (-2)
#define CLI_ARG_NONE (-1)
/* A command's largest number of positional arguments when any number will do. */
#define CLI_ARGS_ANY UINT8_MAX

/* A command as workq-cli knows it: what it checks itself (the name, the
 * number of positional arguments, the subject of inspect and worker), how
 * it turns the typed line into protocol bytes, and how long the reply may
 * rightly take.  The values (ids, names, numbers, flags) are the server's
 * to judge. */
struct cli_cmd_spec {
    const char *name;
    enum cli_cmd_kind kind;
    uint8_t min_args, max_args; /* positional arguments; flags not counted */
    bool payload;               /* the last positional argument is a data block */
    bool new_id;                /* the first positional argument may be "-" */
    bool subject;               /* the first positional argument picks a row of cli_cmd_subs */
    enum cli_view view;
    int8_t wait_arg;          /* the wait-timeout in ms, or CLI_ARG_NONE */
    int8_t ttr_arg;           /* run also waits for the TTR once leased */
    int8_t name_arg;          /* a queue name (CLI_ARG_LAST: every one), for completion */
    const char *const *flags; /* for completion; NULL: none */
    const char *usage;
};

static const char *const cli_job_flags[] = {
    "-priority=", "-max-attempts=", "-max-fails=",      "-after=", "-idempotent=1",
    "-worker=",   "-target=all",    "-backoff=faktory", "-dead=1", NULL};
static const char *const cli_run_flags[] = {"-priority=", NULL};
static const char *const cli_lease_flags[] = {"-fencing=1", NULL};
static const char *const cli_attempt_flags[] = {"-attempt=", NULL};
static const char *const cli_hello_flags[] = {"-labels=", NULL};

static const struct cli_cmd_spec cli_cmd_table[] = {
    {"add", CLI_CMD_SEND, 5, 5, true, true, false, CLI_VIEW_STATUS, CLI_ARG_NONE, CLI_ARG_NONE, 1,
     cli_job_flags,
     "add <id> <name> <ttr> <ttl> <payload> [-priority=N] [-max-attempts=N] [-max-fails=N] "
     "[-after=ID,...] [-idempotent=1] [-worker=NAME,...] [-target=all] [-backoff=faktory] "
     "[-dead=1]"},
    {"schedule", CLI_CMD_SEND, 6, 6, true, true, false, CLI_VIEW_STATUS, CLI_ARG_NONE, CLI_ARG_NONE,
     1, cli_job_flags,
     "schedule <id> <name> <ttr> <ttl> <time> <payload> [-priority=N] [-max-attempts=N] "
     "[-max-fails=N] "
     "[-after=ID,...] [-idempotent=1] [-worker=NAME,...] [-target=all] [-backoff=faktory] "
     "[-dead=1]"},
    {"run", CLI_CMD_SEND, 5, 5, true, true, false, CLI_VIEW_RESULT, 3, 2, 1, cli_run_flags,
     "run <id> <name> <ttr> <wait-timeout> <payload> [-priority=N]"},
    {"result", CLI_CMD_SEND, 2, 2, false, false, false, CLI_VIEW_RESULT, 1, CLI_ARG_NONE,
     CLI_ARG_NONE, NULL, "result <id> <wait-timeout>"},
    {"lease", CLI_CMD_SEND, 2, CLI_ARGS_ANY, false, false, false, CLI_VIEW_LEASE, CLI_ARG_LAST,
     CLI_ARG_NONE, CLI_ARG_LAST, cli_lease_flags, "lease <name>... <wait-timeout> [-fencing=1]"},
    {"complete", CLI_CMD_SEND, 2, 2, true, false, false, CLI_VIEW_STATUS, CLI_ARG_NONE,
     CLI_ARG_NONE, CLI_ARG_NONE, cli_attempt_flags, "complete <id> <result> [-attempt=N]"},
    {"fail", CLI_CMD_SEND, 2, 2, true, false, false, CLI_VIEW_STATUS, CLI_ARG_NONE, CLI_ARG_NONE,
     CLI_ARG_NONE, cli_attempt_flags, "fail <id> <result> [-attempt=N]"},
    {"touch", CLI_CMD_SEND, 1, 2, false, false, false, CLI_VIEW_STATUS, CLI_ARG_NONE, CLI_ARG_NONE,
     CLI_ARG_NONE, cli_attempt_flags, "touch <id> [<ttr>] [-attempt=N]"},
    {"cancel", CLI_CMD_SEND, 1, 1, false, false, false, CLI_VIEW_STATUS, CLI_ARG_NONE, CLI_ARG_NONE,
     CLI_ARG_NONE, NULL, "cancel <id>"},
    {"wait", CLI_CMD_SEND, 2, CLI_ARGS_ANY, false, false, false, CLI_VIEW_RESULT, 0, CLI_ARG_NONE,
     CLI_ARG_NONE, NULL, "wait <wait-timeout> <id>..."},
    {"delete", CLI_CMD_SEND, 1, 1, false, false, false, CLI_VIEW_STATUS, CLI_ARG_NONE, CLI_ARG_NONE,
     CLI_ARG_NONE, NULL, "delete <id>"},
    {"revive", CLI_CMD_SEND, 1, 1, false, false, false, CLI_VIEW_STATUS, CLI_ARG_NONE, CLI_ARG_NONE,
     CLI_ARG_NONE, NULL, "revive <id>"},
    {"inspect", CLI_CMD_SEND, 1, CLI_ARGS_ANY, false, false, true, CLI_VIEW_SERVER, CLI_ARG_NONE,
     CLI_ARG_NONE, CLI_ARG_NONE, NULL,
     "inspect server\n"
     "inspect queues <offset> <limit>\n"
     "inspect queue <name>\n"
     "inspect job <id>\n"
     "inspect jobs <name> <offset> <limit>\n"
     "inspect scheduled-jobs <name> <offset> <limit>\n"
     "inspect dead-jobs <offset> <limit>\n"
     "inspect workers <offset> <limit>"},
    {"hello", CLI_CMD_SEND, 1, 1, false, false, false, CLI_VIEW_STATUS, CLI_ARG_NONE, CLI_ARG_NONE,
     CLI_ARG_NONE, cli_hello_flags, "hello <name> [-labels=a,b]"},
    {"worker", CLI_CMD_SEND, 2, 2, false, false, true, CLI_VIEW_STATUS, CLI_ARG_NONE, CLI_ARG_NONE,
     CLI_ARG_NONE, NULL,
     "worker quiet <wid>\n"
     "worker terminate <wid>"},
    {"auth", CLI_CMD_SEND, 1, 1, false, false, false, CLI_VIEW_STATUS, CLI_ARG_NONE, CLI_ARG_NONE,
     CLI_ARG_NONE, NULL, "auth <password>"},
    {"help", CLI_CMD_HELP, 0, CLI_ARGS_ANY, false, false, false, CLI_VIEW_STATUS, CLI_ARG_NONE,
     CLI_ARG_NONE, CLI_ARG_NONE, NULL, "help"},
    {"quit", CLI_CMD_QUIT, 0, CLI_ARGS_ANY, false, false, false, CLI_VIEW_STATUS, CLI_ARG_NONE,
     CLI_ARG_NONE, CLI_ARG_NONE, NULL, "quit, exit"},
    {"exit", CLI_CMD_QUIT, 0, CLI_ARGS_ANY, false, false, false, CLI_VIEW_STATUS, CLI_ARG_NONE,
     CLI_ARG_NONE, CLI_ARG_NONE, NULL, NULL},
};

/* The subjects of inspect and the actions of worker: how many positional
 * arguments follow the subject, where a queue name stands among them (for
 * completion), and how the reply is shown. */
struct cli_cmd_sub {
    const char *cmd, *name;
    uint8_t args;
    int8_t name_arg; /* counted from the subject (0), or CLI_ARG_NONE */
    enum cli_view view;
};

static const struct cli_cmd_sub cli_cmd_subs[] = {
    {"inspect", "server", 0, CLI_ARG_NONE, CLI_VIEW_SERVER},
    {"inspect", "queues", 2, CLI_ARG_NONE, CLI_VIEW_QUEUES},
    {"inspect", "queue", 1, 1, CLI_VIEW_QUEUES},
    {"inspect", "job", 1, CLI_ARG_NONE, CLI_VIEW_JOB},
    {"inspect", "jobs", 3, 1, CLI_VIEW_JOBS},
    {"inspect", "scheduled-jobs", 3, 1, CLI_VIEW_JOBS},
    {"inspect", "dead-jobs", 2, CLI_ARG_NONE, CLI_VIEW_JOBS},
    {"inspect", "workers", 2, CLI_ARG_NONE, CLI_VIEW_QUEUES}, /* blocks of keys, as a table */
    {"worker", "quiet", 1, CLI_ARG_NONE, CLI_VIEW_STATUS},
    {"worker", "terminate", 1, CLI_ARG_NONE, CLI_VIEW_STATUS},
};

/* Every command name and every subject, for completion (NULL terminated). */
static const char *const cli_cmd_names[] = {"add",      "schedule", "run",     "result", "lease",
                                            "complete", "fail",     "touch",   "cancel", "wait",
                                            "delete",   "revive",   "inspect", "hello",  "worker",
                                            "auth",     "help",     "quit",    "exit",   NULL};
_Static_assert(WQ_ARRAY_LEN(cli_cmd_names) == WQ_ARRAY_LEN(cli_cmd_table) + 1,
               "cli_cmd_names out of sync");
static const char *const cli_inspect_subjects[] = {
    "server", "queues", "queue", "job", "jobs", "scheduled-jobs", "dead-jobs", "workers", NULL};
static const char *const cli_worker_actions[] = {"quiet", "terminate", NULL};
_Static_assert(WQ_ARRAY_LEN(cli_inspect_subjects) + WQ_ARRAY_LEN(cli_worker_actions) ==
                   WQ_ARRAY_LEN(cli_cmd_subs) + 2,
               "cli_inspect_subjects or cli_worker_actions out of sync");

struct cli_token {
    const char *p;
    size_t n;
    bool quoted; /* a quoted token is never a flag nor "-" */
};

static int cli_cmd_fail(struct cli_cmd *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
cli_cmd_fail(struct cli_cmd *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd->error, sizeof cmd->error, fmt, ap);
    va_end(ap);
    return -1;
}

static bool
cli_token_is(const struct cli_token *t, const char *s)
{
    return !t->quoted && t->n == strlen(s) && memcmp(t->p, s, t->n) == 0;
}

/* A flag is "-key=value", as in doc/protocol-reference.md section 1. */
static bool
cli_token_is_flag(const struct cli_token *t)
{
    return !t->quoted && t->n > 0 && t->p[0] == '-' && memchr(t->p, '=', t->n) != NULL;
}

static int
cli_hex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decode the quoted string that starts after the quote at line[*i] into
 * out; *i ends after the closing quote. */
static int
cli_cmd_unquote(struct cli_cmd *cmd, const char *line, size_t len, size_t *i, char *out,
                size_t *out_n)
{
    size_t o = 0, k = *i + 1;
    for (; k < len && line[k] != '"'; k++) {
        if (line[k] != '\\') {
            out[o++] = line[k];
            continue;
        }
        if (++k == len)
            break;
        switch (line[k]) {
        case 'n':
            out[o++] = '\n';
            break;
        case 'r':
            out[o++] = '\r';
            break;
        case 't':
            out[o++] = '\t';
            break;
        case '\\':
        case '"':
            out[o++] = line[k];
            break;
        case 'x':
            if (k + 2 >= len || cli_hex(line[k + 1]) < 0 || cli_hex(line[k + 2]) < 0)
                return cli_cmd_fail(cmd, "\\x needs two hex digits");
            out[o++] = (char)(cli_hex(line[k + 1]) * 16 + cli_hex(line[k + 2]));
            k += 2;
            break;
        default:
            return cli_cmd_fail(cmd, "unknown escape \\%c in a quoted string", line[k]);
        }
    }
    if (k >= len)
        return cli_cmd_fail(cmd, "unterminated quoted string");
    *i = k + 1;
    *out_n = o;
    return 0;
}

/* Split a typed line into tokens on spaces and tabs.  Decoded quoted
 * strings go to store (len bytes suffice: decoding never grows a string). */
static int
cli_cmd_tokenize(struct cli_cmd *cmd, const char *line, size_t len, char *store,
                 struct cli_token *tok, size_t *ntok)
{
    size_t i = 0, n = 0, used = 0;
    for (;;) {
        while (i < len && (line[i] == ' ' || line[i] == '\t'))
            i++;
        if (i == len)
            break;
        if (line[i] == '"') {
            size_t dn = 0;
            if (cli_cmd_unquote(cmd, line, len, &i, store + used, &dn) != 0)
                return -1;
            if (i < len && line[i] != ' ' && line[i] != '\t')
                return cli_cmd_fail(cmd, "text after a closing quote");
            tok[n++] = (struct cli_token){store + used, dn, true};
            used += dn;
        } else {
            size_t start = i;
            while (i < len && line[i] != ' ' && line[i] != '\t')
                i++;
            tok[n++] = (struct cli_token){line + start, i - start, false};
        }
    }
    *ntok = n;
    return 0;
}

static const struct cli_cmd_spec *
cli_cmd_lookup(const struct cli_token *name)
{
    for (size_t i = 0; i < WQ_ARRAY_LEN(cli_cmd_table); i++)
        if (cli_token_is(name, cli_cmd_table[i].name))
            return &cli_cmd_table[i];
    return NULL;
}

/* A wait-timeout or TTR in ms; 0 if it is not a number (the server will
 * refuse it at once). */
static uint64_t
cli_cmd_ms(const struct cli_token *t)
{
    uint64_t v;
    return util_parse_u64(t->p, t->n, UINT32_MAX, &v) == 0 ? v : 0;
}

/* The index in tok of positional argument k (0 = the first after the
 * name), or 0 if there are not that many; with k == SIZE_MAX, their count. */
static size_t
cli_cmd_arg(const struct cli_token *tok, size_t n, size_t k)
{
    size_t seen = 0;
    for (size_t i = 1; i < n; i++) {
        if (cli_token_is_flag(&tok[i]))
            continue;
        if (seen++ == k)
            return i;
    }
    return k == SIZE_MAX ? seen : 0;
}

/* The row of cli_cmd_subs for the subject token t of command cmd, or NULL. */
static const struct cli_cmd_sub *
cli_cmd_sub_lookup(const char *cmd, const struct cli_token *t)
{
    for (size_t i = 0; i < WQ_ARRAY_LEN(cli_cmd_subs); i++)
        if (strcmp(cli_cmd_subs[i].cmd, cmd) == 0 && cli_token_is(t, cli_cmd_subs[i].name))
            return &cli_cmd_subs[i];
    return NULL;
}

/* The subjects of cmd, as "a, b or c". */
static const char *
cli_cmd_sub_list(const char *cmd)
{
    static char list[128];
    size_t o = 0, n = 0, total = 0;
    for (size_t i = 0; i < WQ_ARRAY_LEN(cli_cmd_subs); i++)
        total += strcmp(cli_cmd_subs[i].cmd, cmd) == 0;
    list[0] = '\0';
    for (size_t i = 0; i < WQ_ARRAY_LEN(cli_cmd_subs) && o < sizeof list; i++) {
        if (strcmp(cli_cmd_subs[i].cmd, cmd) != 0)
            continue;
        n++;
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", cli_cmd_subs[i].name,
                              n + 1 == total ? " or "
                              : n < total    ? ", "
                                             : "");
    }
    return list;
}

/* Refuse a command with the usage line of sub (or of the whole command). */
static int
cli_cmd_usage(struct cli_cmd *cmd, const struct cli_cmd_spec *spec, const struct cli_cmd_sub *sub)
{
    if (sub == NULL)
        return cli_cmd_fail(cmd, "usage: %s", spec->usage);
    /* The usage of a subject is its line of spec->usage. */
    size_t want = strlen(sub->name);
    for (const char *u = spec->usage; *u != '\0';) {
        size_t line = strcspn(u, "\n"), cmd_n = strlen(spec->name);
        if (line > cmd_n + want && strncmp(u + cmd_n + 1, sub->name, want) == 0 &&
            (u[cmd_n + 1 + want] == ' ' || u[cmd_n + 1 + want] == '\n' ||
             u[cmd_n + 1 + want] == '\0'))
            return cli_cmd_fail(cmd, "usage: %.*s", (int)line, u);
        u += line + (u[line] == '\n');
    }
    return cli_cmd_fail(cmd, "usage: %s %s", spec->name, sub->name);
}

/* What the cli checks before sending (the rule of workq-cli(1), "Usage
 * errors"): the number of positional arguments, and for inspect and worker
 * the subject.  Values are the server's to judge.  *sub gets the subject's
 * row. */
static int
cli_cmd_check(struct cli_cmd *cmd, const struct cli_cmd_spec *spec, const struct cli_token *tok,
              size_t n, const struct cli_cmd_sub **sub)
{
    size_t npos = cli_cmd_arg(tok, n, SIZE_MAX);
    *sub = NULL;
    if (spec->subject) {
        bool worker = strcmp(spec->name, "worker") == 0;
        const char *noun = worker ? "action" : "subject";
        if (npos == 0)
            return cli_cmd_fail(cmd, "%s needs %s %s: %s", spec->name, worker ? "an" : "a", noun,
                                cli_cmd_sub_list(spec->name));
        const struct cli_token *t = &tok[cli_cmd_arg(tok, n, 0)];
        if ((*sub = cli_cmd_sub_lookup(spec->name, t)) == NULL)
            return cli_cmd_fail(cmd, "unknown %s %s \"%.*s\" (%s)", spec->name, noun,
                                (int)WQ_MIN(t->n, 64), t->p, cli_cmd_sub_list(spec->name));
        return npos == 1u + (*sub)->args ? 0 : cli_cmd_usage(cmd, spec, *sub);
    }
    if (npos < spec->min_args || (spec->max_args != CLI_ARGS_ANY && npos > spec->max_args))
        return cli_cmd_usage(cmd, spec, NULL);
    return 0;
}

/* The view of the reply, and how long the server may rightly wait. */
static void
cli_cmd_expect(struct cli_cmd *cmd, const struct cli_cmd_spec *spec, const struct cli_cmd_sub *sub,
               const struct cli_token *tok, size_t n)
{
    size_t npos = cli_cmd_arg(tok, n, SIZE_MAX);
    cmd->view = sub != NULL ? sub->view : spec->view;
    if (strcmp(spec->name, "lease") == 0)
        for (size_t i = 1; i < n; i++)
            if (cli_token_is(&tok[i], "-fencing=1"))
                cmd->view = CLI_VIEW_FENCED;
    if (spec->wait_arg == CLI_ARG_NONE || npos == 0)
        return;
    size_t w =
        cli_cmd_arg(tok, n, spec->wait_arg == CLI_ARG_LAST ? npos - 1 : (size_t)spec->wait_arg);
    if (w > 0)
        cmd->wait_ms = cli_cmd_ms(&tok[w]);
    size_t ttr = spec->ttr_arg == CLI_ARG_NONE ? 0 : cli_cmd_arg(tok, n, (size_t)spec->ttr_arg);
    if (ttr > 0)
        cmd->wait_ms += cli_cmd_ms(&tok[ttr]);
}

/* Make the wire bytes of tokens tok[0..n), the command name first. */
static int
cli_cmd_build(struct cli_cmd *cmd, const struct cli_token *tok, size_t n)
{
    if (n == 0 || (tok[0].n > 0 && tok[0].p[0] == '#' && !tok[0].quoted)) {
        cmd->kind = CLI_CMD_EMPTY;
        return 0;
    }
    const struct cli_cmd_spec *spec = cli_cmd_lookup(&tok[0]);
    if (spec == NULL)
        return cli_cmd_fail(cmd, "unknown command \"%.*s\" (help lists them)",
                            (int)WQ_MIN(tok[0].n, 64), tok[0].p);
    cmd->kind = spec->kind;
    if (spec->kind != CLI_CMD_SEND)
        return 0;
    /* (For a payload, a wrong count would also make the server read the
     * data block as a command.) */
    const struct cli_cmd_sub *sub;
    if (cli_cmd_check(cmd, spec, tok, n, &sub) != 0)
        return -1;
    cli_cmd_expect(cmd, spec, sub, tok, n);
    size_t payload = spec->payload ? cli_cmd_arg(tok, n, spec->max_args - 1u) : 0;
    size_t id = spec->new_id ? cli_cmd_arg(tok, n, 0) : 0;

    struct cli_text b = {0};
    cli_text_add(&b, spec->name, strlen(spec->name));
    for (size_t i = 1; i < n; i++) {
        const struct cli_token *t = &tok[i];
        cli_text_add(&b, " ", 1);
        if (i == payload) {
            char size[24];
            cli_text_add(&b, size, (size_t)snprintf(size, sizeof size, "%zu", t->n));
        } else if (i == id && cli_token_is(t, "-")) {
            uuid_t u;
            uuid_generate_random(u);
            uuid_unparse_lower(u, cmd->id);
            cli_text_add(&b, cmd->id, strlen(cmd->id));
        } else if (t->n == 0 || memchr(t->p, ' ', t->n) || memchr(t->p, '\r', t->n) ||
                   memchr(t->p, '\n', t->n)) {
            free(b.p);
            cmd->id[0] = '\0';
            return cli_cmd_fail(cmd,
                                "\"%.*s\": only a payload may be empty or hold spaces or "
                                "line breaks",
                                (int)WQ_MIN(t->n, 64), t->p);
        } else {
            cli_text_add(&b, t->p, t->n);
        }
    }
    cli_text_add(&b, "\r\n", 2);
    if (spec->payload) {
        cli_text_add(&b, tok[payload].p, tok[payload].n);
        cli_text_add(&b, "\r\n", 2);
    }
    cmd->wire = b.p;
    cmd->wire_len = b.n;
    return 0;
}

int
cli_cmd_parse_line(struct cli_cmd *cmd, const char *line, size_t len)
{
    memset(cmd, 0, sizeof *cmd);
    /* At most one token per two bytes, plus one. */
    struct cli_token *tok = malloc((len / 2 + 1) * sizeof *tok);
    char *store = malloc(len + 1);
    if (tok == NULL || store == NULL) {
        fputs("workq-cli: out of memory\n", stderr);
        abort();
    }
    size_t n = 0;
    int rc = cli_cmd_tokenize(cmd, line, len, store, tok, &n);
    if (rc == 0)
        rc = cli_cmd_build(cmd, tok, n);
    free(tok);
    free(store);
    return rc;
}

int
cli_cmd_parse_words(struct cli_cmd *cmd, char *const *words, size_t n)
{
    memset(cmd, 0, sizeof *cmd);
    struct cli_token *tok = malloc((n + 1) * sizeof *tok);
    if (tok == NULL) {
        fputs("workq-cli: out of memory\n", stderr);
        abort();
    }
    for (size_t i = 0; i < n; i++)
        tok[i] = (struct cli_token){words[i], strlen(words[i]), false};
    int rc = cli_cmd_build(cmd, tok, n);
    free(tok);
    return rc;
}

/* The end of the word of line[0..len) that starts at i: after its closing
 * quote for a quoted one (len if it has none), else at the next space or
 * tab. */
static size_t
cli_cmd_word_end(const char *line, size_t len, size_t i)
{
    if (line[i] != '"') {
        while (i < len && line[i] != ' ' && line[i] != '\t')
            i++;
        return i;
    }
    for (i++; i < len && line[i] != '"'; i++)
        if (line[i] == '\\')
            i++;
    return i < len ? i + 1 : len;
}

void
cli_cmd_complete(struct cli_complete *out, const char *line, size_t start, size_t end)
{
    struct cli_token name = {0}, subject = {0};
    size_t words = 0, npos = 0; /* words before line[start]; positional ones after the name */
    *out = (struct cli_complete){CLI_COMPLETE_NOTHING, NULL};
    for (size_t i = 0;;) {
        while (i < start && (line[i] == ' ' || line[i] == '\t'))
            i++;
        if (i >= start)
            break;
        size_t e = cli_cmd_word_end(line, start, i);
        if (line[i] == '"' && e == start && (line[e - 1] != '"' || e - i < 2))
            return; /* line[start] is inside a quoted string */
        struct cli_token t = {line + i, e - i, line[i] == '"'};
        if (words++ == 0)
            name = t;
        else if (!cli_token_is_flag(&t) && npos++ == 0)
            subject = t;
        i = e;
    }
    if (words == 0) {
        *out = (struct cli_complete){CLI_COMPLETE_WORDS, cli_cmd_names};
        return;
    }
    const struct cli_cmd_spec *spec = cli_cmd_lookup(&name);
    if (spec == NULL || spec->kind != CLI_CMD_SEND)
        return;
    /* At the id of add, schedule and run, "-" is a new id, not a flag. */
    if (end > start && line[start] == '-' && spec->flags != NULL && !(spec->new_id && npos == 0)) {
        *out = (struct cli_complete){CLI_COMPLETE_WORDS, spec->flags};
        return;
    }
    int name_arg = spec->name_arg;
    if (spec->subject) {
        if (npos == 0) {
            bool worker = strcmp(spec->name, "worker") == 0;
            *out = (struct cli_complete){CLI_COMPLETE_WORDS,
                                         worker ? cli_worker_actions : cli_inspect_subjects};
            return;
        }
        const struct cli_cmd_sub *sub = cli_cmd_sub_lookup(spec->name, &subject);
        name_arg = sub != NULL ? sub->name_arg : CLI_ARG_NONE;
    }
    if (name_arg == CLI_ARG_LAST || (name_arg >= 0 && (size_t)name_arg == npos))
        out->kind = CLI_COMPLETE_QUEUES;
}

void
cli_cmd_clear(struct cli_cmd *cmd)
{
    free(cmd->wire);
    cmd->wire = NULL;
    cmd->wire_len = 0;
}

void
cli_cmd_print_help(FILE *out)
{
    fputs("Commands, as in the Workq protocol but with the payload typed in place of "
          "its size:\n",
          out);
    for (size_t i = 0; i < WQ_ARRAY_LEN(cli_cmd_table); i++) {
        const char *u = cli_cmd_table[i].usage;
        while (u != NULL && *u != '\0') {
            size_t n = strcspn(u, "\n");
            fprintf(out, "  %.*s\n", (int)n, u);
            u += n + (u[n] == '\n');
        }
    }
    fputs("Times (ttr, ttl, wait-timeout) are in milliseconds; <time> is "
          "YYYY-MM-DDTHH:MM:SSZ (UTC).\n"
          "An <id> of - makes a new random id (UUID v4) and prints it.\n"
          "A payload or result is a bare word or a \"quoted string\" with the escapes\n"
          "\\n \\r \\t \\\\ \\\" and \\xHH; a word that looks like a flag (-a=b) must be "
          "quoted.\n",
          out);
}
