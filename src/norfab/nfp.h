/* nfp.h - messages of the NORFAB Protocol (NFP) as NORFAB's clients and
 * workers send them over ZeroMQ: the frames a ROUTER socket receives (the
 * peer's identity first), checked and named.  NORFAB writes a command as
 * the four ASCII bytes of its hex literal ("0x04" for POST); the protocol's
 * text writes one byte (0x04): both are read, and a peer is answered in
 * the form it used last.  doc/norfab.md has the whole wire. */
#ifndef WQ_NFP_H
#define WQ_NFP_H

#include "lib/wq.h"

#define NFP_CLIENT     "NFPC01"
#define NFP_WORKER     "NFPW01"
#define NFP_BROKER     "NFPB01"
#define NFP_HEADER_LEN 6

enum nfp_cmd {
    NFP_OPEN = 0x00,
    NFP_READY = 0x01,
    NFP_KEEPALIVE = 0x02,
    NFP_DISCONNECT = 0x03,
    NFP_POST = 0x04,
    NFP_RESPONSE = 0x05,
    NFP_GET = 0x06,
    NFP_DELETE = 0x07,
    NFP_EVENT = 0x08,
    NFP_STREAM = 0x09,
    NFP_PUT = 0x10,
    NFP_MMI = 0x11,
};

enum nfp_role { NFP_FROM_CLIENT, NFP_FROM_WORKER };

/* One frame's bytes. */
struct nfp_frame {
    const char *p;
    size_t n;
};

/* A message as received: who sent it, as what, which command, and the
 * frames after the command. */
struct nfp_msg {
    struct nfp_frame peer; /* the ROUTER's identity frame */
    enum nfp_role role;
    uint8_t cmd;                  /* enum nfp_cmd */
    bool ascii;                   /* the command came as "0xNN" */
    const struct nfp_frame *args; /* the frames after the command */
    size_t nargs;
};

/* Why a message is dropped (NFP_VALID: it is not). */
enum nfp_check {
    NFP_VALID,
    NFP_SHORT,      /* fewer frames than the header and command need */
    NFP_NO_EMPTY,   /* the frame after the identity is not empty */
    NFP_BAD_HEADER, /* neither a client's nor a worker's */
    NFP_BAD_CMD,    /* not a command, or not one this peer sends */
    NFP_BAD_ARGS,   /* too few frames for its command */
    NFP_NO_PEER,    /* an empty identity (a ROUTER never gives one) */
};

/* Read frames[0..n), as the ROUTER socket received them, into m (whose
 * pointers are into frames). */
enum nfp_check nfp_parse(const struct nfp_frame *frames, size_t n, struct nfp_msg *m);

/* What check says, for a log line. */
const char *nfp_check_text(enum nfp_check check);

/* The command frame of cmd in a form: "0xNN" (4 bytes) or the byte. */
struct nfp_frame nfp_cmd_frame(uint8_t cmd, bool ascii, char buf[4]);

/* A command's name (POST...), "?" for none. */
const char *nfp_cmd_name(uint8_t cmd);

#endif /* WQ_NFP_H */
