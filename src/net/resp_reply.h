/* resp_reply.h - RESP2 replies as Redis 7 writes them, onto any reply
 * (reply.h): simple strings, errors, integers, bulk strings, arrays and
 * their nulls.  For the front-ends that speak RESP. */
#ifndef WQ_RESP_REPLY_H
#define WQ_RESP_REPLY_H

#include "lib/wq.h"
#include "net/reply.h"

/* "+OK\r\n". */
void resp_reply_ok(struct reply *out);
/* "+<s>\r\n" (s holds no CR or LF). */
void resp_reply_simple(struct reply *out, const char *s);
/* "-<code> <text>\r\n" (code: "ERR", "WRONGTYPE", ...); a CR or LF in
 * text (a client's bytes quoted) becomes a space, as Redis writes it, so
 * that the line stays one. */
void resp_reply_error(struct reply *out, const char *code, const char *text);
/* A line of a type and a number: "<type><v>\r\n" (a bulk's or an array's
 * head, an integer). */
void resp_reply_head(struct reply *out, char type, int64_t v);
/* ":<v>\r\n". */
void resp_reply_integer(struct reply *out, int64_t v);
/* "$<n>\r\n<bytes>\r\n". */
void resp_reply_bulk(struct reply *out, const void *p, size_t n);
/* "$-1\r\n": no value. */
void resp_reply_null(struct reply *out);
/* "*<n>\r\n": n elements follow. */
void resp_reply_array(struct reply *out, size_t n);
/* "*-1\r\n": no array (a blocking pop that timed out). */
void resp_reply_null_array(struct reply *out);

#endif /* WQ_RESP_REPLY_H */
