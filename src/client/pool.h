/*
 * The warm pool: a few TLS connections to the server, handshake done and
 * nothing sent, so a new flow's request header and first bytes leave at
 * once instead of after a TCP and a TLS round trip.  Each connection
 * carries at most one flow; a taken one is replaced in the background.
 *
 * Idle pool connections live for a random time in [lifetime/2, lifetime]
 * (no fixed cadence to fingerprint) and must be used or closed before the
 * server's header deadline (server.handshake_timeout).  They are watched
 * for readability: tickets are consumed, EOF or errors retire them.  A
 * server that cannot be reached backs the pool off exponentially; flows
 * then dial directly, so a broken pool never stalls them.
 */
#ifndef TUNSPLIT_POOL_H
#define TUNSPLIT_POOL_H

#include <stdint.h>

#include "core/stats.h"

struct addr;
struct conf;
struct conf_outbound;
struct loop;
struct outer;
struct ssl_ctx_st;

struct pool_stats {
	uint64_t	 opened;	/* handshakes completed */
	uint64_t	 taken;		/* handed to flows */
	uint64_t	 expired;	/* lifetime ended unused */
	uint64_t	 failed;	/* connect/TLS failure or died while idle */
	unsigned	 ready;		/* ready now */
	unsigned	 connecting;	/* connect or handshake in progress */
	struct stats_hist handshake;	/* connect start to TLS done */
	struct stats_contact contact;	/* with the server */
};

struct pool;

/* size 0: returns a pool that never holds anything (pool_take -> NULL). */
struct pool *pool_new(struct loop *l, const struct conf *c,
    const struct conf_outbound *co, struct ssl_ctx_st *ctx,
    const struct addr *server);
void pool_free(struct pool *p);		/* accepts NULL */
/* The same while the loop runs (a reload): closed now, freed at the end
 * of the iteration.  NULL ok. */
void pool_retire(struct pool *p);

/* A ready outer stream (TLS done, fd no longer in the loop), or NULL.
 * The caller owns it from now on. */
struct outer *pool_take(struct pool *p);
const struct pool_stats *pool_stats(const struct pool *p);

#endif
