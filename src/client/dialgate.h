/*
 * The dial gate: how many outer connections one tunsplit or trojan
 * outbound has in its TCP connect and TLS handshake at once, its warm
 * pool's dials and its flows' own together.  Each is a connection the
 * server holds unauthenticated, and the server caps those per source
 * (server.max_preauth_per_source, waiting ones at most four times that)
 * and resets the excess: a client that opened a thousand flows at once
 * would see its flows past that reset.
 *
 * At most DIALGATE_MAX dials go at once; a flow past the cap waits in
 * the outbound's FIFO (its connect_timeout running) for a dial slot or
 * for a pool connection that becomes ready (a new one, or one given back
 * for reuse), whichever comes first.  A waiting flow that ends (the
 * app's reset, its timeout, a drain or the stop) leaves the queue.  The
 * queue is bounded by the flows the client admits (client.max_flows).
 *
 * Waiters are woken from a timer, never from inside the slot's giver:
 * a slot freed while a flow or pool connection is being torn down starts
 * the next dial only once that is over.
 */
#ifndef TUNSPLIT_DIALGATE_H
#define TUNSPLIT_DIALGATE_H

#include <stdbool.h>
#include <sys/queue.h>

#include "core/loop.h"

#define DIALGATE_MAX	64	/* dials in flight per outbound */

/* A client of N worker processes (workers.h) dials through N gates per
 * outbound, one in each: each takes DIALGATE_MAX / N (rounded up), so
 * the server sees no more at once than from one process.  Once, before
 * any dial. */
void dialgate_share(unsigned workers);

struct dialgate_waiter {
	TAILQ_ENTRY(dialgate_waiter) entry;
	bool	 queued;
	/* Woken: a slot is free, or a pool connection ready.  The waiter
	 * dials again (pool first), or calls dialgate_wait once more. */
	void	(*cb)(struct dialgate_waiter *w);
};

struct dialgate {
	struct loop	*loop;		/* set on first use */
	unsigned	 active;	/* dials holding a slot */
	unsigned	 waiting;
	unsigned	 ready;		/* pool connections ready since the
					 * last wake-up, to hand out */
	bool		 waking;	/* inside the wake-up */
	struct loop_timer timer;	/* the wake-up */
	TAILQ_HEAD(, dialgate_waiter) queue;
};

void dialgate_init(struct dialgate *g);
/* Cancels the wake-up; after every waiter has left. */
void dialgate_fini(struct dialgate *g);
/* A slot for a new dial: true (give it back with dialgate_give when the
 * handshake is over, failed or cancelled), or false: all taken, or flows
 * wait before the caller. */
bool dialgate_take(struct dialgate *g, struct loop *l);
void dialgate_give(struct dialgate *g);
/* Whether flows wait for a dial now (a new one queues behind them). */
bool dialgate_queued(const struct dialgate *g);
/* A pool connection of this outbound is ready for a waiting flow. */
void dialgate_ready(struct dialgate *g, struct loop *l);
/* Queues w (at the back; at the front when it was just woken and found
 * nothing); dialgate_leave takes it out (idempotent). */
void dialgate_wait(struct dialgate *g, struct loop *l,
    struct dialgate_waiter *w, void (*cb)(struct dialgate_waiter *));
void dialgate_leave(struct dialgate *g, struct dialgate_waiter *w);

#endif
