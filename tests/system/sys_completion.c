/* sys_completion.c - the bash completion (contrib/bash-completion/workq)
 * against the real programs: its option lists are exactly what
 * workq-server, workq-cli and workq-bench --help list (and which of them
 * take a value), its words are workq-cli's commands, inspect subjects and
 * worker actions and workq-bench's workloads and protocols, so that the
 * file cannot drift from the programs; and its functions, run in bash,
 * complete what they should.
 *
 * Environment: WQ_SERVER, WQ_CLI, WQ_BENCH (the binaries) and WQ_SRCDIR
 * (the source tree), set by make check. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "systest.h"

#define MAX_WORDS 128

/* A list of words, in the order found. */
struct words {
    char *w[MAX_WORDS];
    size_t n;
};

static void
words_add(struct words *l, const char *w, size_t len)
{
    ck_assert_msg(l->n < MAX_WORDS, "too many words");
    l->w[l->n++] = strndup(w, len);
}

static void
words_free(struct words *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->w[i]);
    l->n = 0;
}

static bool
words_has(const struct words *l, const char *w)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->w[i], w) == 0)
            return true;
    return false;
}

/* Add w[0..len) unless l has it. */
static void
words_add_once(struct words *l, const char *w, size_t len)
{
    for (size_t i = 0; i < l->n; i++)
        if (strlen(l->w[i]) == len && memcmp(l->w[i], w, len) == 0)
            return;
    words_add(l, w, len);
}

/* Fail unless a and b hold the same words (in any order), naming the
 * differences. */
static void
expect_same(const char *what, const struct words *help, const struct words *file)
{
    char diff[2048] = "";
    for (size_t i = 0; i < help->n; i++)
        if (!words_has(file, help->w[i]))
            snprintf(diff + strlen(diff), sizeof diff - strlen(diff), " %s (not in the file)",
                     help->w[i]);
    for (size_t i = 0; i < file->n; i++)
        if (!words_has(help, file->w[i]))
            snprintf(diff + strlen(diff), sizeof diff - strlen(diff), " %s (not in --help)",
                     file->w[i]);
    ck_assert_msg(diff[0] == '\0', "%s:%s", what, diff);
    ck_assert_uint_eq(help->n, file->n); /* no word twice */
}

/* The whole output of a shell command, and its exit status in *status. */
static char *
run(const char *cmd, int *status)
{
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    struct sb out = {0};
    sb_add(&out, "");
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0)
        sb_addn(&out, buf, n);
    int st = pclose(p);
    if (status != NULL)
        *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return out.p;
}

static const char *
env(const char *name)
{
    const char *v = getenv(name);
    ck_assert_msg(v != NULL, "%s is not set (run through make check)", name);
    return v;
}

/* The completion file. */
static const char *
file(void)
{
    return f("%s/contrib/bash-completion/workq", env("WQ_SRCDIR"));
}

/* The words of a variable of the completion file. */
static struct words
file_words(const char *var)
{
    char *out = run(f("bash -c '. \"%s\" && printf \"%%s\\n\" $%s'", file(), var), NULL);
    struct words l = {0};
    for (char *line = strtok(out, "\n"); line != NULL; line = strtok(NULL, "\n"))
        words_add(&l, line, strlen(line));
    free(out);
    ck_assert_msg(l.n > 0, "%s is empty or missing in %s", var, file());
    return l;
}

/* The options of a program's --help: lines that start with 1 to 6 spaces
 * and a dash, "-x, --long METAVAR  text"; into opts, and those followed by
 * an upper-case METAVAR into valued. */
static void
help_options(const char *help, struct words *opts, struct words *valued)
{
    for (const char *line = help; *line != '\0'; line = strchr(line, '\n') + 1) {
        size_t sp = strspn(line, " ");
        const char *p = line + sp;
        if (sp >= 1 && sp <= 6 && p[0] == '-') {
            const char *names[2];
            size_t lens[2], k = 0;
            for (;;) {
                size_t len = strcspn(p, " ,\n");
                names[k] = p;
                lens[k++] = len;
                words_add(opts, p, len);
                p += len;
                if (k == 2 || strncmp(p, ", -", 3) != 0)
                    break;
                p += 2;
            }
            if (p[0] == ' ' && p[1] >= 'A' && p[1] <= 'Z')
                for (size_t i = 0; i < k; i++)
                    words_add(valued, names[i], lens[i]);
        }
        if (strchr(line, '\n') == NULL)
            break;
    }
}

/* Check the options of program (the variable naming its binary) against
 * the file's variables prefix_opts and prefix_valued. */
static void
check_options(const char *program, const char *prefix)
{
    const char *name = strrchr(env(program), '/') != NULL ? strrchr(env(program), '/') + 1 : "";
    char *help = run(f("\"%s\" --help", env(program)), NULL);
    struct words hopts = {0}, hvalued = {0};
    help_options(help, &hopts, &hvalued);
    struct words fopts = file_words(f("%s_opts", prefix)),
                 fvalued = file_words(f("%s_valued", prefix));
    expect_same(f("%s options", name), &hopts, &fopts);
    expect_same(f("%s options with a value", name), &hvalued, &fvalued);
    words_free(&hopts);
    words_free(&hvalued);
    words_free(&fopts);
    words_free(&fvalued);
    free(help);
}

START_TEST(test_server_options)
{
    check_options("WQ_SERVER", "_workq_server");
}
END_TEST

START_TEST(test_cli_options)
{
    check_options("WQ_CLI", "_workq_cli");
}
END_TEST

START_TEST(test_bench_options)
{
    check_options("WQ_BENCH", "_workq_bench");
}
END_TEST

/* workq-cli's commands, inspect subjects and worker actions: from the
 * command list that ends its --help ("  add <id> ...", "  quit, exit"). */
START_TEST(test_cli_words)
{
    char *help = run(f("\"%s\" --help", env("WQ_CLI")), NULL);
    const char *list = strstr(help, "\nCommands");
    ck_assert_ptr_nonnull(list);
    struct words cmds = {0}, inspect = {0}, worker = {0};
    for (const char *line = strchr(list + 1, '\n') + 1; strncmp(line, "  ", 2) == 0;
         line = strchr(line, '\n') + 1) {
        const char *w = line + 2;
        size_t len = strcspn(w, " ,\n");
        words_add_once(&cmds, w, len);
        if (strncmp(w, "quit, ", 6) == 0)
            words_add(&cmds, w + 6, strcspn(w + 6, " \n"));
        const char *sub = w + len + 1;
        if (strncmp(w, "inspect ", 8) == 0)
            words_add(&inspect, sub, strcspn(sub, " \n"));
        if (strncmp(w, "worker ", 7) == 0)
            words_add(&worker, sub, strcspn(sub, " \n"));
    }
    struct words fcmds = file_words("_workq_cli_commands"),
                 finspect = file_words("_workq_cli_inspect"),
                 fworker = file_words("_workq_cli_worker");
    expect_same("workq-cli commands", &cmds, &fcmds);
    expect_same("inspect subjects", &inspect, &finspect);
    expect_same("worker actions", &worker, &fworker);
    words_free(&cmds);
    words_free(&inspect);
    words_free(&worker);
    words_free(&fcmds);
    words_free(&finspect);
    words_free(&fworker);
    free(help);
}
END_TEST

/* workq-bench's workloads (its --help's "Workloads:" list) and protocols
 * (each one --protocol takes). */
START_TEST(test_bench_words)
{
    char *help = run(f("\"%s\" --help", env("WQ_BENCH")), NULL);
    const char *list = strstr(help, "\nWorkloads:\n");
    ck_assert_ptr_nonnull(list);
    struct words loads = {0};
    for (const char *line = list + 12; strncmp(line, "  ", 2) == 0; line = strchr(line, '\n') + 1)
        if (line[2] != ' ')
            words_add(&loads, line + 2, strcspn(line + 2, " \n"));
    struct words floads = file_words("_workq_bench_workloads");
    expect_same("workloads", &loads, &floads);
    struct words protos = file_words("_workq_bench_protocols");
    int status;
    for (size_t i = 0; i < protos.n; i++) {
        free(run(f("\"%s\" --protocol %s -V", env("WQ_BENCH"), protos.w[i]), &status));
        ck_assert_msg(status == 0, "--protocol %s: exit status %d", protos.w[i], status);
    }
    free(run(f("\"%s\" --protocol nothing -V 2>/dev/null", env("WQ_BENCH")), &status));
    ck_assert_int_eq(status, 64);
    words_free(&loads);
    words_free(&floads);
    words_free(&protos);
    free(help);
}
END_TEST

/* What the completion function for the line (its last word being typed)
 * offers, in bash, as one line of words. */
static char *
complete(const char *function, const char *line)
{
    char *script = strdup(f(". \"%s\" || exit 1\n"
                            "COMP_LINE='%s'\n"
                            "COMP_POINT=${#COMP_LINE}\n"
                            "read -ra COMP_WORDS <<<\"$COMP_LINE\"\n"
                            "COMP_CWORD=${#COMP_WORDS[@]}\n"
                            "%s\n"
                            "echo \"${COMPREPLY[*]}\"\n",
                            file(), line, function));
    char path[] = "/tmp/sys_completion.XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *fp = fdopen(fd, "w");
    fputs(script, fp);
    fclose(fp);
    free(script);
    char *out = run(f("bash '%s'", path), NULL);
    remove(path);
    out[strcspn(out, "\n")] = '\0';
    return out;
}

#define expect_complete(function, line, want)                                                      \
    do {                                                                                           \
        char *got_ = complete(function, line);                                                     \
        ck_assert_msg(strcmp(got_, want) == 0, "[%s]: \"%s\", not \"%s\"", line, got_, want);      \
        free(got_);                                                                                \
    } while (0)

START_TEST(test_complete)
{
    expect_complete("_workq_server", "workq-server -log-l", "-log-level");
    expect_complete("_workq_server", "workq-server -log-level ", "error warn info debug");
    expect_complete("_workq_server", "workq-server -log-level=d", "debug");
    expect_complete("_workq_server", "workq-server --cmdlog-sync a", "always");
    expect_complete("_workq_server", "workq-server --tls-c", "--tls-cert --tls-ca");
    expect_complete("_workq_server", "workq-server -listen 127.0.0.1:1 -d",
                    "-dead-ttl -dead-max -d -daemonize");
    expect_complete("_workq_server", "workq-server -max-line ", "");
    expect_complete("_workq_cli", "workq-cli ins", "inspect");
    expect_complete("_workq_cli", "workq-cli -a h:1 -r inspect sch", "scheduled-jobs");
    expect_complete("_workq_cli", "workq-cli --addr=h:1 worker ", "quiet terminate");
    expect_complete("_workq_cli", "workq-cli --t", "--timeout --tls");
    expect_complete("_workq_cli", "workq-cli -t ", "");
    expect_complete("_workq_cli", "workq-cli delete ", "");
    expect_complete("_workq_bench", "workq-bench -c 4 -t l", "lease-complete");
    expect_complete("_workq_bench", "workq-bench --protocol=f", "faktory");
    expect_complete("_workq_bench", "workq-bench --k", "--keep --key");
}
END_TEST

static Suite *
completion_suite(void)
{
    const struct systest_group groups[] = {
        {"lists",
         {test_server_options, test_cli_options, test_bench_options, test_cli_words,
          test_bench_words, NULL}},
        {"complete", {test_complete, NULL}},
    };
    return systest_suite("completion", groups, sizeof groups / sizeof groups[0]);
}

int
main(void)
{
    if (system("bash -c 'exit 0' >/dev/null 2>&1") != 0) {
        fprintf(stderr, "bash not found: skipped\n");
        return 77;
    }
    return systest_main(completion_suite());
}
