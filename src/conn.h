/* conn.h - one client connection: a bufferevent, the parser state, the
 * parked waiter.  Commands are taken from the input in order; while a
 * command is parked, later input waits.  Handlers answer through
 * conn_reply; they never see libevent. */
#ifndef WQ_CONN_H
#define WQ_CONN_H

#include "wq.h"

struct conn;
struct server;
struct waiter;

/* The size of a connection record, for the server's pool of them. */
size_t conn_size(void);
/* Take over accepted socket fd (aborts if memory is exhausted). */
struct conn *conn_new(struct server *srv, int fd);
/* Close at once, cancelling any parked command; NULL is ignored. */
void         conn_free(struct conn *c);

/* Take no more commands: cancel a parked one, write the replies already
 * due, then close.  With linger (after an error of ours), also drain the
 * peer's input for a while so that the last reply is not lost to a reset.
 * May free c at once. */
void conn_close_soon(struct conn *c, bool linger);

/* Send the held replies of every connection whose last held reply waited
 * for a record at or below released (cmdlog_released). */
void conn_release_held(struct server *srv, uint64_t released);

/* Close (writing what is due) every connection silent since before
 * before_ms (Unix ms) that is not waiting for something. */
void conn_close_idle(struct server *srv, uint64_t before_ms);

/* The next connection of the server's list, for walks that may free c. */
struct conn *conn_next(const struct conn *c);

/* Queue reply bytes (copied) for the client. */
void conn_reply(struct conn *c, const void *data, size_t len);
/* Queue the bytes of payload p (from payload_new): copied when small,
 * else sent by reference (payload.h). */
void conn_reply_payload(struct conn *c, char *p, size_t len);
/* Queue "-CLIENT-ERROR <msg>\r\n". */
void conn_client_error(struct conn *c, const char *msg);

/* The command being handled has parked waiter w: stop taking input. */
void conn_park(struct conn *c, struct waiter *w);
/* The parked command has been answered: take input again (soon, not from
 * inside the caller). */
void conn_wake(struct conn *c);

#endif /* WQ_CONN_H */
