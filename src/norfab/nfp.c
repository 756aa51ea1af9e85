/* nfp.c - NFP messages (nfp.h). */
#include "lib/wq.h"
#include "norfab/nfp.h"

#include <string.h>

/* The command in frame f, in either form; false if it is none. */
static bool
nfp_cmd_of(struct nfp_frame f, uint8_t *cmd, bool *ascii)
{
    if (f.n == 1) {
        *cmd = (uint8_t)f.p[0];
        *ascii = false;
        return true;
    }
    if (f.n != 4 || f.p[0] != '0' || f.p[1] != 'x')
        return false;
    unsigned v = 0;
    for (int i = 2; i < 4; i++) {
        char c = f.p[i];
        unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                            : 16u;
        if (d == 16)
            return false;
        v = v * 16 + d;
    }
    *cmd = (uint8_t)v;
    *ascii = true;
    return true;
}

/* The frames after the command that cmd needs from role, or -1 when role
 * never sends cmd. */
static int
nfp_args_needed(enum nfp_role role, uint8_t cmd)
{
    if (role == NFP_FROM_CLIENT) {
        switch (cmd) {
        case NFP_OPEN:
        case NFP_DISCONNECT:
            return 0;
        case NFP_POST:
        case NFP_GET:
        case NFP_DELETE:
        case NFP_PUT:
        case NFP_MMI:
            return 4; /* service, target, uuid, body */
        default:
            return -1;
        }
    }
    switch (cmd) {
    case NFP_OPEN:
    case NFP_KEEPALIVE:
    case NFP_DISCONNECT:
        return 0;
    case NFP_READY:
        return 1; /* service */
    case NFP_RESPONSE:
    case NFP_EVENT:
    case NFP_STREAM:
        return 4; /* client, "", uuid, status (then the body) */
    default:
        return -1;
    }
}

enum nfp_check
nfp_parse(const struct nfp_frame *frames, size_t n, struct nfp_msg *m)
{
    memset(m, 0, sizeof *m);
    if (n < 4)
        return NFP_SHORT;
    m->peer = frames[0];
    if (m->peer.n == 0)
        return NFP_NO_PEER;
    if (frames[1].n != 0)
        return NFP_NO_EMPTY;
    struct nfp_frame h = frames[2];
    if (h.n == NFP_HEADER_LEN && memcmp(h.p, NFP_CLIENT, NFP_HEADER_LEN) == 0)
        m->role = NFP_FROM_CLIENT;
    else if (h.n == NFP_HEADER_LEN && memcmp(h.p, NFP_WORKER, NFP_HEADER_LEN) == 0)
        m->role = NFP_FROM_WORKER;
    else
        return NFP_BAD_HEADER;
    int need;
    if (!nfp_cmd_of(frames[3], &m->cmd, &m->ascii) || (need = nfp_args_needed(m->role, m->cmd)) < 0)
        return NFP_BAD_CMD;
    m->args = frames + 4;
    m->nargs = n - 4;
    if (m->nargs < (size_t)need)
        return NFP_BAD_ARGS;
    if ((m->cmd == NFP_RESPONSE || m->cmd == NFP_EVENT || m->cmd == NFP_STREAM) &&
        (m->args[0].n == 0 || m->args[1].n != 0))
        return NFP_BAD_ARGS; /* a client's address, then an empty frame */
    if (m->cmd == NFP_READY && (m->args[0].n == 0 || m->args[0].n > WQ_MAX_NAME))
        return NFP_BAD_ARGS; /* a service is 1 to 255 bytes */
    return NFP_VALID;
}

const char *
nfp_check_text(enum nfp_check check)
{
    static const char *const texts[] = {
        [NFP_VALID] = "valid",
        [NFP_SHORT] = "too few frames",
        [NFP_NO_EMPTY] = "no empty frame after the address",
        [NFP_BAD_HEADER] = "unknown header",
        [NFP_BAD_CMD] = "unknown command",
        [NFP_BAD_ARGS] = "too few frames for its command",
        [NFP_NO_PEER] = "no identity",
    };
    return texts[check];
}

struct nfp_frame
nfp_cmd_frame(uint8_t cmd, bool ascii, char buf[4])
{
    static const char hex[] = "0123456789abcdef";
    if (!ascii) {
        buf[0] = (char)cmd;
        return (struct nfp_frame){buf, 1};
    }
    buf[0] = '0';
    buf[1] = 'x';
    buf[2] = hex[cmd >> 4];
    buf[3] = hex[cmd & 15];
    return (struct nfp_frame){buf, 4};
}

const char *
nfp_cmd_name(uint8_t cmd)
{
    switch (cmd) {
    case NFP_OPEN:
        return "OPEN";
    case NFP_READY:
        return "READY";
    case NFP_KEEPALIVE:
        return "KEEPALIVE";
    case NFP_DISCONNECT:
        return "DISCONNECT";
    case NFP_POST:
        return "POST";
    case NFP_RESPONSE:
        return "RESPONSE";
    case NFP_GET:
        return "GET";
    case NFP_DELETE:
        return "DELETE";
    case NFP_EVENT:
        return "EVENT";
    case NFP_STREAM:
        return "STREAM";
    case NFP_PUT:
        return "PUT";
    case NFP_MMI:
        return "MMI";
    default:
        return "?";
    }
}
