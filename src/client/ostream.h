/*
 * A TCP stream the client opens itself, through an outbound: DNS over
 * TCP, TLS and HTTPS to an upstream (client/dns/dnsup.c).  Flows from the
 * TUN have their own machinery (client/tcp); this is the small version
 * without an app on the other end:
 *
 *   tunsplit  TLS to the server (a warm pool connection when there is
 *             one), the native request header, the server's status byte
 *   trojan    TLS to the server, the trojan request (no status)
 *   socks5    the proxy's SOCKS5 negotiation (flow_socks5.h), CONNECT
 *   direct    a marked connection to the target itself
 *   block     refused at once (ECONNREFUSED), as is a group none of
 *             whose members is up (client_route answers the group)
 *
 * With tls_ctx the stream then carries TLS to the target (tls/tlsmem.h),
 * verified against tls_name: ready means that handshake is done too.
 *
 * The owner's callback runs on every change: ready, bytes to read, failed
 * (ostream_why says why).  It may write and read in it, not free.  Until
 * ready (the outbound's connect_timeout_ms at most), writes are queued.
 * ostream_free must not run inside the stream's own callback (or in the
 * same loop batch): the owner frees at the end of the iteration.
 */
#ifndef TUNSPLIT_OSTREAM_H
#define TUNSPLIT_OSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct addr;
struct loop;
struct outbound;
struct ostream;
struct ssl_ctx_st;

#define OSTREAM_TXQ	65536	/* bytes queued for the target at most */

typedef void ostream_cb(struct ostream *s, void *arg);

/* NULL with errno when it cannot start (ECONNREFUSED: block).  Holds a
 * reference to ob and counts on it as a flow would. */
struct ostream *ostream_open(struct loop *l, struct outbound *ob,
    const struct addr *dst, struct ssl_ctx_st *tls_ctx, const char *tls_name,
    ostream_cb *cb, void *arg);
bool ostream_ready(const struct ostream *s);
/* Why it failed, or NULL while it has not. */
const char *ostream_why(const struct ostream *s);
/* Queues len bytes: 0, or -1 (no room, failed). */
int  ostream_write(struct ostream *s, const void *buf, size_t len);
/* > 0 bytes; 0 the target closed; -1 errno EAGAIN (wait for the
 * callback), else failed. */
ssize_t ostream_read(struct ostream *s, void *buf, size_t len);
void ostream_free(struct ostream *s);		/* accepts NULL */

#endif
