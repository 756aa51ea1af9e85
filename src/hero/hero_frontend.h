/* hero_frontend.h - the Hero Dispatcher's RESP protocol as a front-end of
 * the server (net/frontend.h): its context, its key store, its services
 * over TCP and TLS, its password (-hero-password-file) and its series on
 * /metrics. */
#ifndef WQ_HERO_FRONTEND_H
#define WQ_HERO_FRONTEND_H

#include "lib/wq.h"

struct frontend_env;

extern const struct frontend_ops hero_frontend_ops;

/* Open the Hero front-end on env (listening: it has addresses, and its
 * series are shown), with the password of password_file (NULL: none);
 * NULL after logging (a password file it cannot read). */
void *hero_frontend_open(const struct frontend_env *env, bool listening, const char *password_file);

#endif /* WQ_HERO_FRONTEND_H */
