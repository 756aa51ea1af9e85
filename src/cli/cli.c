/* cli.c - workq-cli, an interactive client for people who would otherwise
 * talk to workq-server with telnet: options, the connection, one-shot,
 * script and interactive modes (with Ctrl-C and tab completion), and what
 * it tells people when the address or the password is not right.  Its
 * output is its purpose, so unlike the server it prints with stdio
 * directly (house rule R10 covers daemons). */
#include "lib/wq.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>
#if defined(HAVE_LIBEDIT)
#include <editline/readline.h>
#define CLI_LINE_EDITING 1
#elif defined(HAVE_READLINE)
#include <readline/readline.h>
#include <readline/history.h>
#define CLI_LINE_EDITING 1
#endif

#include "cli/cli_cmd.h"
#include "cli/cli_conn.h"
#include "cli/cli_reply.h"
#include "lib/util.h"

#define CLI_DEFAULT_TIMEOUT_S 10
#define CLI_MAX_TIMEOUT_S     86400
#define CLI_HISTORY_FILE      "/.workq_history"
#define CLI_HISTORY_MAX       1000
/* Tab completion of queue names asks the server (inspect queues) on a
 * connection of its own, for at most this long in all, and keeps the
 * answer this long for the next Tab. */
#define CLI_COMPLETE_MS       500
#define CLI_COMPLETE_CACHE_MS 3000
#define CLI_COMPLETE_PAGE     1000 /* inspect's largest limit */
#define CLI_COMPLETE_MAX      10000

/* Exit statuses besides EX_* of sysexits.h. */
#define CLI_EXIT_OK    0
#define CLI_EXIT_ERROR 1 /* a - reply, or a refused line in a script */
/* Internal: Ctrl-C ended a command (interactive mode carries on). */
#define CLI_EXIT_INTERRUPTED (-1)

struct cli {
    char host[256], port[8];
    char addr[272]; /* host:port as shown, [v6]:port for IPv6 */
    char prompt[288];
    bool raw;
    char *password; /* sent with auth on every connection; NULL: none */
    struct cli_conn conn;
    bool connected_once;
    unsigned replies; /* read on this connection: the first may show a foreign server */
    struct cli_reply reply;
    unsigned long line; /* script mode: the line being run (0: not a script) */
    bool auth_hinted;   /* the hint about passwords was given */
    bool answered;      /* a reply came in this session (so no TLS port) */
    /* Tab completion's queue names, and when they were asked for. */
    char **queues;
    size_t nqueues;
    int64_t queues_ms;
};

/* Ctrl-C in interactive mode: set by the handler, read by every wait. */
static volatile sig_atomic_t cli_sigint;

static void
cli_usage(FILE *out)
{
    fputs("Usage: workq-cli [OPTIONS] [COMMAND ARGUMENTS...]\n"
          "A client for a Workq server.  With a command, send it once, print the reply\n"
          "and exit; without, read commands from the terminal (with line editing and\n"
          "history) or, when standard input is not a terminal, one per line from it.\n"
          "\n"
          "Options:\n"
          "  -a, --addr HOST:PORT   server address (default $WORKQ_ADDR, else " WQ_DEFAULT_HOST
          ":" WQ_DEFAULT_PORT ")\n"
          "  -t, --timeout SECONDS  limit for connecting and for each reply; lease, run\n"
          "                         and result may also take their wait-timeout\n"
          "                         (default 10, 0 = no limit)\n"
          "  -r, --raw              show each reply's bytes, escaped, not pretty output\n"
          "      --password-file F  authenticate with F's first line (default\n"
          "                         $WORKQ_PASSWORD, if set)\n"
          "      --tls              connect over TLS, checking the server's certificate\n"
          "      --cacert FILE      trust the CAs in FILE (PEM; default: the system's)\n"
          "      --cert FILE        show this client certificate (PEM), with --key\n"
          "      --key FILE         the client certificate's private key (PEM)\n"
          "  -h, --help             show this help and exit\n"
          "  -V, --version          show the version and exit\n"
          "\n"
          "Exit status: 0 after a + reply, 1 after a - reply (in a script: if any\n"
          "line failed), 64 on a usage error, 69 if the server cannot be reached or\n"
          "the connection (or its TLS handshake) fails, 76 if a reply cannot be\n"
          "parsed, 77 if the server refuses the password, 78 if the TLS files cannot\n"
          "be loaded.\n"
          "\n",
          out);
    cli_cmd_print_help(out);
}

/* Report a usage error: "workq-cli: " what, with arg quoted. */
static int
cli_usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "workq-cli: %s \"%s\" (see workq-cli --help)\n", what, arg);
    return EX_USAGE;
}

/* The option getopt_long just refused, as written: a long one, or the
 * letter (which may stand in a group such as -rx). */
static const char *
cli_option_name(char **argv, bool missing_value)
{
    static char letter[3] = "-?";
    const char *word = argv[optind - 1];
    if (optopt == 0 || (missing_value && strncmp(word, "--", 2) == 0))
        return word;
    letter[1] = (char)optopt;
    return letter;
}

/* Split HOST:PORT, [HOST]:PORT, HOST or :PORT into c->host and c->port. */
static int
cli_parse_addr(struct cli *c, const char *s)
{
    const char *host = s, *port = NULL;
    size_t host_len;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (close == NULL || (close[1] != '\0' && close[1] != ':'))
            return -1;
        host++;
        host_len = (size_t)(close - host);
        port = close[1] == ':' ? close + 2 : NULL;
    } else {
        const char *colon = strchr(s, ':');
        bool one_colon = colon != NULL && strchr(colon + 1, ':') == NULL;
        host_len = one_colon ? (size_t)(colon - s) : strlen(s);
        port = one_colon ? colon + 1 : NULL;
    }
    if (host_len == 0) {
        host = WQ_DEFAULT_HOST;
        host_len = strlen(host);
    }
    if (port == NULL)
        port = WQ_DEFAULT_PORT;
    uint64_t p;
    if (host_len >= sizeof c->host || util_parse_u64(port, strlen(port), 65535, &p) != 0 || p == 0)
        return -1;
    memcpy(c->host, host, host_len);
    c->host[host_len] = '\0';
    snprintf(c->port, sizeof c->port, "%u", (unsigned)p);
    bool v6 = strchr(c->host, ':') != NULL;
    snprintf(c->addr, sizeof c->addr, "%s%s%s:%s", v6 ? "[" : "", c->host, v6 ? "]" : "", c->port);
    snprintf(c->prompt, sizeof c->prompt, "workq %s> ", c->addr);
    return 0;
}

static void
cli_disconnect(struct cli *c)
{
    cli_conn_close(&c->conn);
    cli_reply_clear(&c->reply);
}

/* Connect to the server (and do the TLS handshake when TLS is on).
 * Reports the failure on stderr. */
static int
cli_connect(struct cli *c)
{
    if (cli_conn_open(&c->conn, c->host, c->port, c->addr) != 0)
        return -1;
    cli_reply_init(&c->reply);
    c->replies = 0;
    if (c->connected_once)
        fprintf(stderr, "workq-cli: reconnected to %s\n", c->addr);
    c->connected_once = true;
    return 0;
}

/* Send cmd and read its reply into c->reply.  The first reply of a
 * connection may show that another server answered: FOREIGN then. */
static enum cli_reply_status
cli_roundtrip(struct cli *c, const struct cli_cmd *cmd)
{
    cli_reply_start(&c->reply, cmd->view);
    if (cli_conn_send(&c->conn, cmd->wire, cmd->wire_len) != 0) {
        if (errno == ETIMEDOUT)
            return CLI_REPLY_TIMEOUT;
        if (errno == EINTR)
            return CLI_REPLY_INTERRUPTED;
        /* The server may have answered before it closed: read that. */
        if (errno != EPIPE && errno != ECONNRESET)
            return CLI_REPLY_IO_ERROR;
    }
    int first = -1;
    if (c->conn.timeout_ms >= 0)
        first = (int)WQ_MIN(cmd->wait_ms + (uint64_t)c->conn.timeout_ms, (uint64_t)INT_MAX);
    enum cli_reply_status st = cli_conn_read_reply(&c->conn, &c->reply, first);
    if (c->replies++ == 0 && c->reply.len > 0 && st != CLI_REPLY_INTERRUPTED &&
        cli_reply_foreign(&c->reply) != CLI_FOREIGN_NONE)
        return CLI_REPLY_FOREIGN;
    return st;
}

/* Say what answered instead of a Workq server, and what to do. */
static void
cli_report_foreign(const struct cli *c)
{
    switch (cli_reply_foreign(&c->reply)) {
    case CLI_FOREIGN_FAKTORY:
        fprintf(stderr,
                "workq-cli: %s is a Faktory listener (it greeted with +HI), not a Workq one\n"
                "workq-cli: hint: give the address of the server's -listen, not of its "
                "-faktory-listen\n",
                c->addr);
        break;
    case CLI_FOREIGN_HTTP:
        fprintf(stderr,
                "workq-cli: %s answered in HTTP: it is a metrics listener, not a Workq one\n"
                "workq-cli: hint: give the address of the server's -listen, not of its "
                "-metrics-listen\n",
                c->addr);
        break;
    default:
        fprintf(stderr,
                "workq-cli: %s answered in TLS: it is a tls:// listener\n"
                "workq-cli: hint: add --tls (and --cacert FILE if the system does not trust "
                "its certificate's CA)\n",
                c->addr);
        break;
    }
}

/* Report a reply that did not come (st is not DONE), close the connection
 * and return the exit status.  err is errno as the reply ended; fresh says
 * that the connection was opened for this request. */
static int
cli_reply_failed(struct cli *c, enum cli_reply_status st, int err, bool fresh)
{
    int status = EX_UNAVAILABLE;
    switch (st) {
    case CLI_REPLY_FOREIGN:
        cli_report_foreign(c);
        status = EX_PROTOCOL;
        break;
    case CLI_REPLY_INTERRUPTED:
        /* on a new line: the terminal showed ^C */
        fprintf(stderr, "\nworkq-cli: interrupted (connection closed: the server cancels the "
                        "waiting command)\n");
        status = CLI_EXIT_INTERRUPTED;
        break;
    case CLI_REPLY_MALFORMED:
        fprintf(stderr, "workq-cli: malformed reply from %s: %s\n", c->addr, c->reply.error);
        status = EX_PROTOCOL;
        break;
    case CLI_REPLY_CLOSED:
        fprintf(stderr, "workq-cli: connection closed by %s%s\n", c->addr,
                c->reply.len > 0 ? " in the middle of a reply" : "");
        /* A tls:// listener closes a plain-text connection without a word. */
        if (fresh && c->reply.len == 0 && c->conn.tls == NULL && !c->answered)
            fprintf(stderr, "workq-cli: hint: if %s is a tls:// listener, add --tls\n", c->addr);
        break;
    case CLI_REPLY_TIMEOUT:
        fprintf(stderr, "workq-cli: no reply from %s in time\n", c->addr);
        break;
    default:
        fprintf(stderr, "workq-cli: %s: %s\n", c->addr, strerror(err));
        break;
    }
    cli_disconnect(c);
    return status;
}

/* Send auth with the password on a new connection.  0, or the exit status
 * (EX_NOPERM for a refusal, which is shown). */
static int
cli_authenticate(struct cli *c)
{
    struct cli_cmd auth = {.kind = CLI_CMD_SEND, .view = CLI_VIEW_STATUS};
    size_t n = strlen(c->password) + 7;
    auth.wire = malloc(n + 1);
    if (auth.wire == NULL)
        return EX_OSERR;
    auth.wire_len = (size_t)snprintf(auth.wire, n + 1, "auth %s\r\n", c->password);
    enum cli_reply_status st = cli_roundtrip(c, &auth);
    int err = errno;
    free(auth.wire);
    if (st != CLI_REPLY_DONE)
        return cli_reply_failed(c, st, err, true);
    if (cli_reply_is_error(&c->reply)) {
        fprintf(stderr, "workq-cli: %s refused the password: %.*s\n", c->addr,
                (int)c->reply.line_len, c->reply.buf);
        cli_disconnect(c);
        return EX_NOPERM;
    }
    return 0;
}

/* After an error reply: a hint when the server wants a password (once). */
static void
cli_hint(struct cli *c)
{
    static const char auth[] = "-CLIENT-ERROR Authentication required";
    if (c->auth_hinted || c->reply.line_len != sizeof auth - 1 ||
        memcmp(c->reply.buf, auth, sizeof auth - 1) != 0)
        return;
    fprintf(stderr,
            "workq-cli: hint: %s wants a password: give --password-file FILE, or set "
            "WORKQ_PASSWORD\n",
            c->addr);
    c->auth_hinted = true;
}

/* Print the complete reply in c->reply: the id cmd made (once the server
 * took the job), in a script the line number before an error. */
static int
cli_print_reply(struct cli *c, const struct cli_cmd *cmd)
{
    bool error = cli_reply_is_error(&c->reply);
    c->answered = true;
    if (cmd->id[0] != '\0' && !error) /* with --raw, stdout holds only the bytes received */
        fprintf(c->raw ? stderr : stdout, "id %s\n", cmd->id);
    if (c->raw) {
        cli_reply_print_raw(&c->reply, stdout);
    } else {
        if (error && c->line > 0)
            printf("line %lu: ", c->line);
        cli_reply_print(&c->reply, stdout);
    }
    fflush(stdout);
    if (error)
        cli_hint(c);
    return error ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}

/* Run one command against the server and print its reply.  A connection
 * the server closed while idle is reopened once, and a command whose
 * connection turns out to be closed before any reply byte is sent again on
 * a new one (the server executes nothing it does not answer).  Returns an
 * exit status: 0, CLI_EXIT_ERROR, EX_UNAVAILABLE, EX_PROTOCOL, EX_NOPERM
 * or CLI_EXIT_INTERRUPTED. */
static int
cli_execute(struct cli *c, const struct cli_cmd *cmd)
{
    enum cli_reply_status st;
    bool fresh;
    for (bool retried = false;; retried = true) {
        if (c->conn.fd >= 0 && cli_conn_peer_closed(&c->conn))
            cli_disconnect(c);
        fresh = c->conn.fd < 0;
        if (fresh && cli_connect(c) != 0)
            return cli_sigint ? CLI_EXIT_INTERRUPTED : EX_UNAVAILABLE;
        int auth = fresh && c->password != NULL ? cli_authenticate(c) : 0;
        if (auth != 0)
            return auth;
        st = cli_roundtrip(c, cmd);
        if (st != CLI_REPLY_CLOSED || c->reply.len > 0 || fresh || retried)
            break;
        cli_disconnect(c);
    }
    if (st == CLI_REPLY_DONE)
        return cli_print_reply(c, cmd);
    return cli_reply_failed(c, st, errno, fresh);
}

#ifdef HAVE_READLINE
/* GNU readline reads on after Ctrl-C (libedit returns NULL): while it has
 * the prompt, the handler jumps out of it, after readline has put the
 * terminal back and handed the signal on. */
static sigjmp_buf cli_prompt_jmp;
static volatile sig_atomic_t cli_at_prompt;
#endif
#ifdef HAVE_LIBEDIT
static sigjmp_buf cli_getc_jmp;
static volatile sig_atomic_t cli_in_getc;
#endif

static void
cli_on_sigint(int sig)
{
    (void)sig;
    cli_sigint = 1;
#ifdef HAVE_READLINE
    if (cli_at_prompt) {
        cli_at_prompt = 0;
        siglongjmp(cli_prompt_jmp, 1);
    }
#endif
#ifdef HAVE_LIBEDIT
    if (cli_in_getc) {
        cli_in_getc = 0;
        siglongjmp(cli_getc_jmp, 1);
    }
#endif
}

#ifdef HAVE_LIBEDIT
/* libedit's key reader.  A Ctrl-C that lands between two keys (after the
 * editor's handler ran, before its read(2) began, or after the terminal
 * flushed the keys poll saw) would leave its read blocked until the next
 * key: here one before the read is seen by the check, and one during it
 * jumps out of it.  -1 (end of input) ends readline. */
static int
cli_getc(FILE *in)
{
    if (sigsetjmp(cli_getc_jmp, 1) != 0)
        return -1;
    cli_in_getc = 1;
    unsigned char c;
    ssize_t n;
    do
        n = cli_sigint ? -1 : read(fileno(in), &c, 1);
    while (n < 0 && errno == EINTR && !cli_sigint);
    cli_in_getc = 0;
    return n == 1 ? c : -1;
}
#endif

/* The next line: from the line editor on a terminal, else from stdin with
 * its line end removed.  NULL at the end of input, or after Ctrl-C at the
 * prompt (cli_sigint set).  Free the result. */
static char *
cli_read_line(const struct cli *c, bool interactive)
{
    cli_sigint = 0;
#ifdef CLI_LINE_EDITING
    if (interactive) {
#ifdef HAVE_READLINE
        if (sigsetjmp(cli_prompt_jmp, 1) != 0)
            return NULL;
        cli_at_prompt = 1;
#endif
        char *line = readline(c->prompt);
#ifdef HAVE_READLINE
        cli_at_prompt = 0;
#endif
        if (cli_sigint) {
            free(line);
            return NULL;
        }
        /* a typed password stays out of the history file */
        if (line != NULL && line[strspn(line, " \t")] != '\0' &&
            strncmp(line + strspn(line, " \t"), "auth ", 5) != 0)
            add_history(line);
        return line;
    }
#endif
    if (interactive) {
        fputs(c->prompt, stdout);
        fflush(stdout);
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, stdin);
    if (n < 0) {
        free(line);
        return NULL;
    }
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    return line;
}

#ifdef CLI_LINE_EDITING
/* ~/.workq_history, or NULL without HOME.  Free the result. */
static char *
cli_history_path(void)
{
    const char *home = getenv("HOME");
    if (home == NULL || home[0] == '\0')
        return NULL;
    size_t n = strlen(home) + sizeof CLI_HISTORY_FILE;
    char *path = malloc(n);
    if (path != NULL)
        snprintf(path, n, "%s%s", home, CLI_HISTORY_FILE);
    return path;
}

/* The session, for the line editor's callbacks, which take no argument. */
static struct cli *cli_session;

static void
cli_queues_clear(struct cli *c)
{
    for (size_t i = 0; i < c->nqueues; i++)
        free(c->queues[i]);
    free(c->queues);
    c->queues = NULL;
    c->nqueues = 0;
}

/* Append the names of the queue blocks in r to c->queues. */
static void
cli_queues_add(struct cli *c, const struct cli_reply *r)
{
    char **more = realloc(c->queues, (c->nqueues + r->nblocks) * sizeof *more);
    if (more == NULL)
        return;
    c->queues = more;
    for (size_t i = 0; i < r->nblocks; i++) {
        char *name = strndup(r->buf + r->blocks[i].head, r->blocks[i].head_len);
        if (name != NULL)
            c->queues[c->nqueues++] = name;
    }
}

/* Send line and read a reply of view into r over q; true for a + reply. */
static bool
cli_queues_ask(struct cli_conn *q, struct cli_reply *r, const char *line, enum cli_view view)
{
    cli_reply_start(r, view);
    return cli_conn_send(q, line, strlen(line)) == 0 &&
           cli_conn_read_reply(q, r, q->timeout_ms) == CLI_REPLY_DONE && !cli_reply_is_error(r) &&
           cli_reply_foreign(r) == CLI_FOREIGN_NONE;
}

/* The queue names, for completion: asked for with inspect queues on a new
 * connection (so a slow answer never holds up the session's), within
 * CLI_COMPLETE_MS in all; kept for CLI_COMPLETE_CACHE_MS, even when the
 * server did not answer, so that Tab never waits twice in a row. */
static void
cli_queues_fetch(struct cli *c)
{
    int64_t now = cli_conn_now_ms();
    if (c->queues_ms > 0 && now - c->queues_ms < CLI_COMPLETE_CACHE_MS)
        return;
    cli_queues_clear(c);
    c->queues_ms = now;
    struct cli_conn q = {.fd = -1,
                         .tls = c->conn.tls,
                         .timeout_ms = CLI_COMPLETE_MS,
                         .deadline_ms = now + CLI_COMPLETE_MS,
                         .interrupt = &cli_sigint,
                         .quiet = true};
    struct cli_reply r;
    cli_reply_init(&r);
    char line[1100];
    bool ok = cli_conn_open(&q, c->host, c->port, c->addr) == 0;
    if (ok && c->password != NULL) {
        snprintf(line, sizeof line, "auth %s\r\n", c->password);
        ok = cli_queues_ask(&q, &r, line, CLI_VIEW_STATUS);
    }
    for (size_t offset = 0; ok && c->nqueues < CLI_COMPLETE_MAX; offset += CLI_COMPLETE_PAGE) {
        snprintf(line, sizeof line, "inspect queues %zu %d\r\n", offset, CLI_COMPLETE_PAGE);
        if (!cli_queues_ask(&q, &r, line, CLI_VIEW_QUEUES))
            break;
        cli_queues_add(c, &r);
        ok = r.nblocks == CLI_COMPLETE_PAGE;
    }
    cli_conn_close(&q); /* the TLS context is the session's */
    cli_reply_clear(&r);
}

/* The words completion offers: static ones, or NULL for c->queues. */
static const char *const *cli_candidates;

/* readline's generator: the next candidate that starts with text. */
static char *
cli_complete_next(const char *text, int state)
{
    static size_t i;
    size_t n = strlen(text);
    if (state == 0)
        i = 0;
    for (;;) {
        const char *w = cli_candidates != NULL     ? cli_candidates[i]
                        : i < cli_session->nqueues ? cli_session->queues[i]
                                                   : NULL;
        if (w == NULL)
            return NULL;
        i++;
        if (strncmp(w, text, n) == 0)
            return strdup(w);
    }
}

/* Tab: commands, subjects, flags, or queue names from the server. */
static char **
cli_complete(const char *text, int start, int end)
{
    struct cli_complete what;
    rl_attempted_completion_over = 1; /* never file names */
    cli_cmd_complete(&what, rl_line_buffer, (size_t)start, (size_t)end);
    if (what.kind == CLI_COMPLETE_NOTHING)
        return NULL;
    cli_candidates = what.words;
    if (what.kind == CLI_COMPLETE_QUEUES)
        cli_queues_fetch(cli_session);
    char **m = rl_completion_matches(text, cli_complete_next);
    /* A flag that wants its value goes on without a space.  One match is
     * {match, NULL} in GNU readline, {match, match, NULL} in libedit. */
    bool one = m != NULL && (m[1] == NULL || m[2] == NULL);
    bool more = one && m[0][0] != '\0' && m[0][strlen(m[0]) - 1] == '=';
    rl_completion_append_character = more ? '\0' : ' ';
    return m;
}
#endif

/* Interactive and script mode: a command per line until quit, the end of
 * input or, interactively, Ctrl-C at the prompt.  In a script, a refused
 * line and an error reply are shown with their line number.  Returns the
 * exit status. */
static int
cli_loop(struct cli *c, bool interactive)
{
    int status = CLI_EXIT_OK;
    unsigned long lineno = 0;
    char *line;
    while ((line = cli_read_line(c, interactive)) != NULL) {
        struct cli_cmd cmd;
        lineno++;
        c->line = interactive ? 0 : lineno;
        int rc = cli_cmd_parse_line(&cmd, line, strlen(line));
        free(line);
        if (rc != 0) {
            if (interactive)
                fprintf(stderr, "workq-cli: %s\n", cmd.error);
            else
                fprintf(stderr, "workq-cli: line %lu: %s\n", lineno, cmd.error);
            status = CLI_EXIT_ERROR;
            continue;
        }
        if (cmd.kind == CLI_CMD_QUIT)
            return interactive ? CLI_EXIT_OK : status;
        if (cmd.kind == CLI_CMD_HELP)
            cli_cmd_print_help(stdout);
        if (cmd.kind != CLI_CMD_SEND)
            continue;
        rc = cli_execute(c, &cmd);
        cli_cmd_clear(&cmd);
        if (rc == CLI_EXIT_ERROR) {
            status = rc;
        } else if (rc != CLI_EXIT_OK && !interactive) {
            fprintf(stderr, "workq-cli: script stopped at line %lu\n", lineno);
            return rc;
        }
    }
    if (interactive)
        fputc('\n', stdout);
    return interactive ? CLI_EXIT_OK : status;
}

/* Interactive mode, with history in ~/.workq_history when there is one,
 * and tab completion.  Ctrl-C ends a waiting command (its connection is
 * closed, which makes the server cancel it); at the prompt it ends the
 * session, as Ctrl-D does. */
static int
cli_interactive(struct cli *c)
{
    struct sigaction sa = {.sa_handler = cli_on_sigint};
    sigemptyset(&sa.sa_mask);
#ifdef CLI_LINE_EDITING
    /* The editor's own handler makes its read fail; restarting ours keeps
     * a Ctrl-C during output from breaking stdio's writes. */
    sa.sa_flags = SA_RESTART;
#endif
    sigaction(SIGINT, &sa, NULL);
    c->conn.interrupt = &cli_sigint;
    if (cli_connect(c) != 0)
        return EX_UNAVAILABLE;
#ifdef CLI_LINE_EDITING
    cli_session = c;
    rl_attempted_completion_function = cli_complete;
#ifdef HAVE_LIBEDIT
    rl_getc_function = cli_getc; /* before the editor starts: it reads this once */
#endif
    /* Words are separated by spaces alone: "-priority=" is one word. */
    rl_basic_word_break_characters = (char *)" \t";
    rl_completer_word_break_characters = (char *)" \t";
    char *history = cli_history_path();
    stifle_history(CLI_HISTORY_MAX);
    if (history != NULL)
        read_history(history); /* none yet is fine */
    int status = cli_loop(c, true);
    if (history != NULL)
        write_history(history); /* an unwritable HOME only loses history */
    free(history);
    cli_queues_clear(c);
    return status;
#else
    return cli_loop(c, true);
#endif
}

/* One-shot mode: the words form one command. */
static int
cli_one_shot(struct cli *c, char *const *words, size_t n)
{
    struct cli_cmd cmd;
    if (cli_cmd_parse_words(&cmd, words, n) != 0) {
        fprintf(stderr, "workq-cli: %s\n", cmd.error);
        return EX_USAGE;
    }
    if (cmd.kind == CLI_CMD_HELP)
        cli_cmd_print_help(stdout);
    if (cmd.kind != CLI_CMD_SEND)
        return CLI_EXIT_OK;
    int status = cli_execute(c, &cmd);
    cli_cmd_clear(&cmd);
    return status;
}

/* The password: the first line of file (without its line end), else
 * WORKQ_PASSWORD if set and not empty, else none.  0, or -1 (reported). */
static int
cli_read_password(struct cli *c, const char *file)
{
    char line[1100];
    if (file == NULL) {
        const char *env = getenv("WORKQ_PASSWORD");
        if (env != NULL && env[0] != '\0')
            c->password = strdup(env);
        return 0;
    }
    FILE *fp = fopen(file, "r");
    if (fp == NULL) {
        fprintf(stderr, "workq-cli: %s: %s\n", file, strerror(errno));
        return -1;
    }
    bool got = fgets(line, sizeof line, fp) != NULL;
    fclose(fp);
    line[got ? strcspn(line, "\r\n") : 0] = '\0';
    if (line[0] == '\0') {
        fprintf(stderr, "workq-cli: %s: the first line must hold the password\n", file);
        return -1;
    }
    c->password = strdup(line);
    return 0;
}

int
main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"addr", required_argument, NULL, 'a'},
        {"timeout", required_argument, NULL, 't'},
        {"raw", no_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {"password-file", required_argument, NULL, 'p'},
        {"tls", no_argument, NULL, 'T'},
        {"cacert", required_argument, NULL, 'C'},
        {"cert", required_argument, NULL, 'E'},
        {"key", required_argument, NULL, 'K'},
        {NULL, 0, NULL, 0},
    };
    const char *password_file = NULL, *cacert = NULL, *cert = NULL, *key = NULL;
    bool tls = false;
    struct cli c = {.conn = {.fd = -1, .timeout_ms = CLI_DEFAULT_TIMEOUT_S * 1000}};
    const char *addr = getenv("WORKQ_ADDR");
    if (addr == NULL || addr[0] == '\0')
        addr = WQ_DEFAULT_HOST ":" WQ_DEFAULT_PORT;
    uint64_t secs;
    int ch;
    opterr = 0;
    /* "+": stop at the first command word, so -priority=N stays a flag. */
    while ((ch = getopt_long(argc, argv, "+:a:t:rhV", longopts, NULL)) != -1) {
        switch (ch) {
        case 'a':
            addr = optarg;
            break;
        case 't':
            if (util_parse_u64(optarg, strlen(optarg), CLI_MAX_TIMEOUT_S, &secs) != 0)
                return cli_usage_error("bad timeout", optarg);
            c.conn.timeout_ms = secs == 0 ? -1 : (int)secs * 1000;
            break;
        case 'r':
            c.raw = true;
            break;
        case 'p':
            password_file = optarg;
            break;
        case 'T':
            tls = true;
            break;
        case 'C':
            cacert = optarg;
            break;
        case 'E':
            cert = optarg;
            break;
        case 'K':
            key = optarg;
            break;
        case 'h':
            cli_usage(stdout);
            return CLI_EXIT_OK;
        case 'V':
            puts("workq-cli " PACKAGE_VERSION);
            return CLI_EXIT_OK;
        case ':':
            return cli_usage_error("missing value for option", cli_option_name(argv, true));
        default:
            return cli_usage_error("unknown option", cli_option_name(argv, false));
        }
    }
    if (cli_parse_addr(&c, addr) != 0)
        return cli_usage_error("bad address", addr);
    if (cli_read_password(&c, password_file) != 0)
        return EX_NOINPUT;
    if ((cacert != NULL || cert != NULL || key != NULL) && !tls)
        return cli_usage_error("--cacert, --cert and --key need", "--tls");
    if (tls && cli_conn_tls(&c.conn, cacert, cert, key) != 0) {
        cli_conn_free(&c.conn);
        free(c.password);
        return EX_CONFIG;
    }

    int status;
    if (optind < argc)
        status = cli_one_shot(&c, argv + optind, (size_t)(argc - optind));
    else if (isatty(STDIN_FILENO))
        status = cli_interactive(&c);
    else
        status = cli_loop(&c, false);
    cli_disconnect(&c);
    cli_conn_free(&c.conn);
    free(c.password);
    return status;
}
