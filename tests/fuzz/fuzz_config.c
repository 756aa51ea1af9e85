/* fuzz_config.c - libFuzzer target: the config-file reader of
 * src/daemon/options.c.  The input is the file that -config names; the server's
 * own options_parse reads it, applies every line, and frees what it kept.
 * The file is a memfd, so a run costs no disk: options_parse opens it by
 * its /proc/self/fd path as it would open any path.  Errors are printed
 * on stderr, as the server prints them (`make fuzz` sends that to
 * /dev/null). */
#include "lib/wq.h"
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/options.h"

static int config_fd = -1;
static char config_path[64];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    config_fd = memfd_create("workq.conf", MFD_CLOEXEC);
    if (config_fd < 0) {
        perror("fuzz_config: memfd_create");
        abort();
    }
    snprintf(config_path, sizeof config_path, "/proc/self/fd/%d", config_fd);
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (ftruncate(config_fd, 0) != 0 || pwrite(config_fd, data, size, 0) != (ssize_t)size)
        abort();
    char arg0[] = "workq-server", arg1[] = "-config";
    char *argv[] = {arg0, arg1, config_path, NULL};
    struct options opts;
    options_parse(&opts, 3, argv);
    options_free(&opts);
    return 0;
}
