/* cli_conn.h - workq-cli's connection to the server: TCP with a time limit
 * on every wait, optionally TLS over it (--tls, --cacert, --cert, --key),
 * sending a request and reading a reply into cli_reply. */
#ifndef WQ_CLI_CONN_H
#define WQ_CLI_CONN_H

#include "lib/wq.h"
#include "cli/cli_reply.h"

#include <openssl/ssl.h>
#include <signal.h>

struct cli_conn {
    int fd;         /* -1 while not connected */
    SSL *ssl;       /* NULL: plain TCP */
    SSL_CTX *tls;   /* NULL: TLS is off (not owned when borrowed from another) */
    int timeout_ms; /* for connecting and each wait; -1: none */
    /* Every wait also ends at this CLOCK_MONOTONIC time in ms (0: none). */
    int64_t deadline_ms;
    /* When set and *interrupt is non-zero, a wait that a signal broke
     * gives up with EINTR (Ctrl-C in interactive mode); NULL: never. */
    const volatile sig_atomic_t *interrupt;
    bool quiet; /* say nothing on stderr (tab completion's connection) */
};

/* CLOCK_MONOTONIC in milliseconds (for deadline_ms). */
int64_t cli_conn_now_ms(void);

/* Make c->tls from the PEM files cacert (NULL: the system's CAs), cert and
 * key (both NULL: no client certificate).  0, or -1 after saying why on
 * stderr. */
int cli_conn_tls(struct cli_conn *c, const char *cacert, const char *cert, const char *key);
/* Connect to host:port (each address it resolves to in turn), then the
 * TLS handshake when TLS is on, checking the server's certificate names
 * host.  0, or -1 after saying why on stderr (addr is how to name it). */
int cli_conn_open(struct cli_conn *c, const char *host, const char *port, const char *addr);
void cli_conn_close(struct cli_conn *c);
/* Free the TLS context (after the last close). */
void cli_conn_free(struct cli_conn *c);
/* Has the server closed the idle connection? */
bool cli_conn_peer_closed(struct cli_conn *c);
/* Send all of p[0..len).  0, or -1 with errno (ETIMEDOUT for the time
 * limit, EINTR when interrupted). */
int cli_conn_send(struct cli_conn *c, const char *p, size_t len);
/* Read until the reply in r is complete.  Waits up to first_ms for the
 * first byte and c->timeout_ms between later ones (-1: forever).  DONE,
 * MALFORMED, CLOSED (r->len tells whether any byte came), TIMEOUT,
 * INTERRUPTED or IO_ERROR. */
enum cli_reply_status cli_conn_read_reply(struct cli_conn *c, struct cli_reply *r, int first_ms);

#endif /* WQ_CLI_CONN_H */
