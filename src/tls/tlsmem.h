/*
 * A TLS client over memory: no socket of its own, for TLS carried inside
 * another stream (DNS over TLS and over HTTPS reached through an
 * outbound, which may itself be TLS to the tunsplit server).  The owner
 * moves the bytes: what the peer sent goes in with tlsmem_feed, what TLS
 * has to send comes out with tlsmem_take.
 *
 * The certificate is verified by the context (outer_ctx_client: the
 * system store or a CA file) and against name, sent as SNI too (an
 * address is checked against the IP SAN and sends no SNI).
 */
#ifndef TUNSPLIT_TLSMEM_H
#define TUNSPLIT_TLSMEM_H

#include <stddef.h>
#include <sys/types.h>

struct ssl_ctx_st;
struct tlsmem;

/* NULL (logged) on error. */
struct tlsmem *tlsmem_new(struct ssl_ctx_st *ctx, const char *name);
void tlsmem_free(struct tlsmem *t);		/* accepts NULL */
/* Bytes from the peer: 0, or -1 out of memory. */
int  tlsmem_feed(struct tlsmem *t, const void *buf, size_t len);
/* Bytes for the peer, up to len: how many (0: none now). */
size_t tlsmem_take(struct tlsmem *t, void *buf, size_t len);
/* 1 done, 0 more bytes wanted (feed, take), -1 failed (logged). */
int  tlsmem_handshake(struct tlsmem *t);
/* Plaintext: > 0 bytes; 0 the peer closed (close_notify); -1 with errno
 * EAGAIN (feed more) or EPROTO. */
ssize_t tlsmem_read(struct tlsmem *t, void *buf, size_t len);
/* All len bytes are taken (TLS records queued for tlsmem_take), or -1. */
int  tlsmem_write(struct tlsmem *t, const void *buf, size_t len);

#endif
