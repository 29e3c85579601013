/*
 * The warm pool: a few TLS connections to the server, handshake done and
 * nothing sent, so a new flow's request header and first bytes leave at
 * once instead of after a TCP and a TLS round trip.  Each connection
 * carries at most one flow; a taken one is replaced in the background.
 *
 * Its size follows demand (pool_demand.h): between pool_min and pool
 * while flows arrive, by their rate times the handshake time, and 0 once
 * none has arrived for pool_idle -- an idle client opens no connection
 * until a flow asks for one (that flow dials directly, and warms the
 * pool for those after it).  The pool never closes a connection to
 * shrink: surplus ones expire unused and are not replaced.  One timer
 * serves the whole pool (the earliest deadline), none per connection.
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
struct dialgate;
struct loop;
struct outer;
struct ssl_ctx_st;

struct pool_stats {
	uint64_t	 opened;	/* handshakes completed */
	uint64_t	 taken;		/* handed to flows */
	uint64_t	 expired;	/* lifetime ended unused */
	uint64_t	 failed;	/* connect/TLS failure or died while idle */
	uint64_t	 returned;	/* given back after a flow, offered again */
	uint64_t	 reused;	/* of taken: carried a flow before */
	unsigned	 ready;		/* ready now */
	unsigned	 connecting;	/* connect or handshake in progress */
	unsigned	 target;	/* what demand asked for, last look */
	struct stats_hist handshake;	/* connect start to TLS done */
	struct stats_contact contact;	/* with the server */
};

struct pool;

/* gate: the outbound's dial gate (dialgate.h), whose slots the pool's
 * dials take too, or NULL (no cap). */
struct pool *pool_new(struct loop *l, const struct conf *c,
    const struct conf_outbound *co, struct ssl_ctx_st *ctx,
    const struct addr *server, struct dialgate *gate);
void pool_free(struct pool *p);		/* accepts NULL */
/* The same while the loop runs (a reload): closed now, freed at the end
 * of the iteration.  NULL ok. */
void pool_retire(struct pool *p);

/* A ready outer stream (TLS done, fd no longer in the loop), or NULL.
 * The caller owns it from now on. */
struct outer *pool_take(struct pool *p);
const struct pool_stats *pool_stats(const struct pool *p);
/* A flow of the group p's outbound is a member of went to another
 * member: p holds its floor (pool_demand.h).  NULL ok. */
void pool_standby(struct pool *p);
/* A native (version 3) connection whose flow ended cleanly, both end
 * markers crossed (outer_frame_idle): the pool waits for the server's
 * offer, then hands it to a later flow, within the outbound's reuse and
 * reuse_age, while it holds fewer than twice its size.  0: the pool owns
 * it; -1: not taken (the caller closes). */
int pool_give(struct pool *p, struct outer *out);

#endif
