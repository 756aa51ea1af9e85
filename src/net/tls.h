/* tls.h - TLS for the listeners: one server context made from the
 * certificate, key and optional client CA files (TLS 1.2 and 1.3 only),
 * re-read on SIGHUP without touching open connections, and the
 * bufferevents that wrap accepted sockets in it (OpenSSL through
 * libevent's bufferevent_openssl).  The connection layer and the metrics
 * endpoint take these as their transports; no protocol sees TLS. */
#ifndef WQ_TLS_H
#define WQ_TLS_H

#include "lib/wq.h"

struct bufferevent;
struct conn_service;
struct event_base;
struct tls;

/* A context from the PEM files cert (the chain, leaf first), key and, if
 * ca is not NULL, the CAs a client certificate must chain to (one is then
 * required).  NULL after logging why. */
struct tls *tls_new(const char *cert, const char *key, const char *ca);
/* Read the files again; connections made from now on use them, open ones
 * keep theirs.  0, or -1 after logging (the context in use is kept). */
int tls_reload(struct tls *t);
void tls_free(struct tls *t);

/* conn_transport_fn: accepted socket fd as the server's end of a TLS
 * connection (t is the arg); the handshake runs as data flows. */
struct bufferevent *tls_accept_bev(struct event_base *base, int fd, void *t);
/* metrics_bev_fn: the same for an HTTP connection, whose socket evhttp
 * sets afterwards. */
struct bufferevent *tls_http_bev(struct event_base *base, void *t);
/* Log why TLS connection bev failed (its handshake, mostly), with the
 * peer's address: the conn_service's transport_failed. */
void tls_log_failure(struct bufferevent *bev, const char *peer);
/* *out: the service plain over TLS connections made from t. */
void tls_service(struct conn_service *out, const struct conn_service *plain, struct tls *t);

#endif /* WQ_TLS_H */
