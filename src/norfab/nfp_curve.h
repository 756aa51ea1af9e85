/* nfp_curve.h - CURVE on the NORFAB broker's socket, as NORFAB sets it up:
 * the broker's secret key (-norfab-curve-secret), and a ZAP handler in the
 * event loop that lets in any client key, or only those of
 * -norfab-curve-clients.  Built only with libzmq. */
#ifndef WQ_NFP_CURVE_H
#define WQ_NFP_CURVE_H

#include "lib/wq.h"

struct event_base;
struct nfp_curve;

/* Make sock (of context zctx, not yet bound) a CURVE server with the Z85
 * secret key on the first line of secret_file, and start the ZAP handler
 * on base; clients_file (NULL: any key) holds the client public keys let
 * in, one Z85 key per line.  The broker's public key, Z85, into
 * public_z85.  NULL after logging, with *bad_file true when a file is to
 * blame (unreadable, not keys). */
struct nfp_curve *nfp_curve_open(void *zctx, void *sock, struct event_base *base,
                                 const char *secret_file, const char *clients_file,
                                 char public_z85[41], bool *bad_file);
void nfp_curve_close(struct nfp_curve *cv);

#endif /* WQ_NFP_CURVE_H */
