/*
 * DNS over streams to client.dns.upstreams entries of protocol tcp, tls
 * and https: the client asks them itself, each over a connection through
 * the outbound the rules pick for the upstream's address (as a TCP flow
 * to it would go: client/ostream.h), never another way -- an upstream
 * whose outbound is block, down or failing answers SERVFAIL.
 *
 * Per upstream one connection, kept open for the next queries (closed
 * after DNSUP_IDLE_MS without one) and opened again when the upstream
 * closed it; at most DNSUP_QUERIES queries waiting or in flight (more are
 * refused at once: SERVFAIL).  tcp and tls pipeline them (each carries
 * an id of the connection's own, the app's restored in the answer);
 * https sends one POST at a time on its keep-alive connection.  A query
 * not answered within DNSUP_TIMEOUT_MS, or whose connection failed, gets
 * SERVFAIL; one sent on a reused connection that the upstream closed
 * before answering is sent once more, on a new one.
 */
#ifndef TUNSPLIT_DNSUP_H
#define TUNSPLIT_DNSUP_H

#include <stddef.h>
#include <stdint.h>

struct conf;
struct loop;
struct outbounds;
struct dnsup;

#define DNSUP_QUERIES		64
#define DNSUP_TIMEOUT_MS	5000
#define DNSUP_IDLE_MS		30000
#define DNSUP_CTX_MAX		64	/* caller's bytes per query */

/* The answer to a query (its id the app's), or reply NULL: failed, the
 * app gets SERVFAIL.  ctx: the caller's bytes given with the query, and
 * the query itself. */
typedef void dnsup_done(void *arg, const void *ctx, const uint8_t *query,
    size_t qlen, const uint8_t *reply, size_t len);

/* The stream upstreams of c; obs: its generation's outbounds.  NULL:
 * out of memory. */
struct dnsup *dnsup_new(struct loop *l, const struct conf *c,
    struct outbounds *obs, dnsup_done *done, void *arg);
/* Pending queries fail (SERVFAIL), connections close at the end of the
 * loop iteration (retire, while the loop runs) or now (free).  NULL ok. */
void dnsup_retire(struct dnsup *d);
void dnsup_free(struct dnsup *d);
/* Whether upstream i is asked here (protocol tcp, tls, https). */
int  dnsup_wants(const struct conf *c, int i);
/* Asks upstream i the query msg (len bytes); done gets its answer or
 * failure later, or at once.  -1: refused now (too many waiting, no
 * memory), done is not called.  An upstream of protocol udp is asked
 * over TCP here, and i DNSUP_SERVER is client.dns's server (over TCP
 * too): the way a query the app sent over TCP goes (flow_dns.h). */
#define DNSUP_SERVER		(-1)
int  dnsup_query(struct dnsup *d, int i, const uint8_t *msg, size_t len,
    const void *ctx, size_t ctxlen);

#endif
