/* nfp_curve.c - CURVE and its ZAP handler for the NORFAB broker
 * (nfp_curve.h).  The handler answers ZeroMQ's authentication requests
 * (ZAP, ZeroMQ RFC 27) on inproc://zeromq.zap.01 from the server's event
 * loop, as NORFAB's broker answers them from a thread of its own. */
#include "lib/wq.h"
#include "norfab/nfp_curve.h"

#include <errno.h>
#include <event2/event.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>
#include <zmq.h>

#include "lib/alloc.h"
#include "lib/log.h"
#include "lib/registry.h"
#include "net/password_file.h"
#include "norfab/nfp_zmq.h"

#define NFP_KEY_LEN     32 /* a CURVE key's bytes */
#define NFP_KEY_Z85_LEN 40 /* and its Z85 text */
#define NFP_ZAP_FRAMES  7  /* version, id, domain, address, identity, mechanism, key */

/* A client key let in. */
struct nfp_key {
    uint8_t key[NFP_KEY_LEN];
};

struct nfp_curve {
    void *zap;                /* the REP socket of ZAP requests */
    struct event *ev;         /* its ZMQ_FD */
    struct registry *allowed; /* struct nfp_key; NULL: any key */
    uint64_t let_in, refused;
};

static void
nfp_key_free(void *elem, void *arg)
{
    (void)arg;
    wq_free(elem);
}

static void
nfp_key_key(const void *elem, const void **key, size_t *len)
{
    *key = ((const struct nfp_key *)elem)->key;
    *len = NFP_KEY_LEN;
}

/* text (its first 40 characters) as a key into out: false if it is no
 * Z85 key. */
static bool
nfp_key_decode(const char *text, uint8_t out[NFP_KEY_LEN])
{
    char z85[NFP_KEY_Z85_LEN + 1];
    if (strlen(text) < NFP_KEY_Z85_LEN)
        return false;
    memcpy(z85, text, NFP_KEY_Z85_LEN);
    z85[NFP_KEY_Z85_LEN] = '\0';
    return zmq_z85_decode(out, z85) != NULL;
}

/* The client keys of file, one Z85 key per line (blank lines and lines
 * starting with '#' skipped).  NULL after logging. */
static struct registry *
nfp_keys_load(const char *file)
{
    FILE *fp = fopen(file, "r");
    if (fp == NULL) {
        wq_log(LOG_LVL_ERROR, "cannot read the NORFAB client keys file=%s error=\"%s\"", file,
               strerror(errno));
        return NULL;
    }
    struct registry *r = registry_new(nfp_key_key);
    char line[256];
    for (unsigned n = 1; fgets(line, sizeof line, fp) != NULL; n++) {
        char *p = line + strspn(line, " \t");
        p[strcspn(p, "\r\n")] = '\0';
        if (*p == '\0' || *p == '#')
            continue;
        struct nfp_key k;
        if (strlen(p) != NFP_KEY_Z85_LEN || !nfp_key_decode(p, k.key)) {
            wq_log(LOG_LVL_ERROR,
                   "the NORFAB client keys file=%s line=%u is not a 40-character Z85 key", file, n);
            fclose(fp);
            registry_foreach(r, nfp_key_free, NULL);
            registry_free(r);
            return NULL;
        }
        if (registry_find(r, k.key, NFP_KEY_LEN) == NULL) {
            struct nfp_key *copy = wq_malloc(sizeof *copy);
            *copy = k;
            registry_insert(r, copy);
        }
    }
    fclose(fp);
    return r;
}

/* Answer one ZAP request: let the key in, or not. */
static void
nfp_zap_answer(struct nfp_curve *cv, zmq_msg_t *f, size_t n)
{
    const char *status = "200", *text = "OK";
    if (n != NFP_ZAP_FRAMES || zmq_msg_size(&f[0]) != 3 ||
        memcmp(zmq_msg_data(&f[0]), "1.0", 3) != 0) {
        status = "500";
        text = "not a ZAP 1.0 request";
    } else if (zmq_msg_size(&f[5]) != 5 || memcmp(zmq_msg_data(&f[5]), "CURVE", 5) != 0 ||
               zmq_msg_size(&f[6]) != NFP_KEY_LEN) {
        status = "400";
        text = "CURVE only";
    } else if (cv->allowed != NULL &&
               registry_find(cv->allowed, zmq_msg_data(&f[6]), NFP_KEY_LEN) == NULL) {
        status = "400";
        text = "this client key is not let in (-norfab-curve-clients)";
    }
    bool ok = strcmp(status, "200") == 0;
    if (ok) {
        cv->let_in++;
    } else {
        cv->refused++;
        char key[NFP_KEY_Z85_LEN + 1] = "";
        if (n == NFP_ZAP_FRAMES && zmq_msg_size(&f[6]) == NFP_KEY_LEN)
            zmq_z85_encode(key, zmq_msg_data(&f[6]), NFP_KEY_LEN);
        wq_log(LOG_LVL_INFO, "NORFAB client refused key=%s why=\"%s\"", key, text);
    }
    const char *id = n >= 2 ? zmq_msg_data(&f[1]) : "";
    size_t idn = n >= 2 ? zmq_msg_size(&f[1]) : 0;
    zmq_send(cv->zap, "1.0", 3, ZMQ_SNDMORE);
    zmq_send(cv->zap, id, idn, ZMQ_SNDMORE);
    zmq_send(cv->zap, status, 3, ZMQ_SNDMORE);
    zmq_send(cv->zap, text, strlen(text), ZMQ_SNDMORE);
    zmq_send(cv->zap, "", 0, ZMQ_SNDMORE); /* user id */
    zmq_send(cv->zap, "", 0, 0);           /* metadata */
}

/* The ZAP socket's edge: answer every request it holds. */
static void
nfp_zap_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct nfp_curve *cv = arg;
    while (nfp_zmq_readable(cv->zap)) {
        zmq_msg_t f[NFP_ZAP_FRAMES + 1];
        bool whole;
        size_t n = nfp_zmq_recv(cv->zap, f, WQ_ARRAY_LEN(f), &whole);
        if (n > 0)
            nfp_zap_answer(cv, f, whole ? n : 0);
        for (size_t i = 0; i < n; i++)
            zmq_msg_close(&f[i]);
    }
}

struct nfp_curve *
nfp_curve_open(void *zctx, void *sock, struct event_base *base, const char *secret_file,
               const char *clients_file, char public_z85[41], bool *bad_file)
{
    *bad_file = true;
    char line[256];
    uint8_t secret[NFP_KEY_LEN];
    if (password_file_read(secret_file, "NORFAB CURVE secret key", line, sizeof line) != 0)
        return NULL;
    if (strlen(line) != NFP_KEY_Z85_LEN || !nfp_key_decode(line, secret) ||
        zmq_curve_public(public_z85, line) != 0) {
        wq_log(LOG_LVL_ERROR,
               "the NORFAB CURVE secret key file=%s does not start with a 40-character Z85 key",
               secret_file);
        return NULL;
    }
    struct nfp_curve *cv = wq_calloc(1, sizeof *cv);
    if (clients_file != NULL && (cv->allowed = nfp_keys_load(clients_file)) == NULL) {
        wq_free(cv);
        return NULL;
    }
    *bad_file = false;
    /* the handler first: libzmq asks it from the first connection on */
    cv->zap = zmq_socket(zctx, ZMQ_REP);
    int fd, one = 1, zero = 0;
    size_t size = sizeof fd;
    if (cv->zap == NULL || zmq_setsockopt(cv->zap, ZMQ_LINGER, &zero, sizeof zero) != 0 ||
        zmq_bind(cv->zap, "inproc://zeromq.zap.01") != 0 ||
        zmq_getsockopt(cv->zap, ZMQ_FD, &fd, &size) != 0 ||
        zmq_setsockopt(sock, ZMQ_CURVE_SERVER, &one, sizeof one) != 0 ||
        zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, secret, NFP_KEY_LEN) != 0 ||
        zmq_setsockopt(sock, ZMQ_ZAP_DOMAIN, "norfab", 6) != 0) {
        wq_log(LOG_LVL_ERROR, "cannot set up CURVE on the NORFAB socket error=\"%s\"",
               zmq_strerror(errno));
        nfp_curve_close(cv);
        return NULL;
    }
    OPENSSL_cleanse(secret, sizeof secret);
    OPENSSL_cleanse(line, sizeof line);
    cv->ev = event_new(base, fd, EV_READ | EV_PERSIST, nfp_zap_cb, cv);
    event_add(cv->ev, NULL);
    wq_log(LOG_LVL_INFO, "NORFAB CURVE on public_key=%s clients=%s", public_z85,
           clients_file != NULL ? clients_file : "any key");
    return cv;
}

void
nfp_curve_close(struct nfp_curve *cv)
{
    if (cv == NULL)
        return;
    if (cv->ev != NULL)
        event_free(cv->ev);
    if (cv->zap != NULL)
        zmq_close(cv->zap);
    if (cv->allowed != NULL) {
        registry_foreach(cv->allowed, nfp_key_free, NULL);
        registry_free(cv->allowed);
    }
    wq_free(cv);
}
