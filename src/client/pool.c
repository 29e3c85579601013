/*
 * The warm pool of ready TLS connections (see pool.h).
 */
#include "config.h"

#include "client/pool.h"
#include "client/dialer.h"
#include "client/dialgate.h"
#include "client/pool_demand.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/queue.h>

#include <sodium.h>

#include "core/addr.h"
#include "conf/conf.h"
#include "core/log.h"
#include "core/loop.h"
#include "tls/outer.h"
#include "core/sock.h"

#define POOL_BACKOFF_MIN	1000
#define POOL_BACKOFF_MAX	30000

struct pool_conn {
	struct pool	*pool;
	LIST_ENTRY(pool_conn) entry;	/* the pool's conns, or dead */
	struct outer	*out;		/* NULL while a dialer thread has it */
	struct dialer_job *dial;	/* connect and handshake off the loop */
	bool		 gated;		/* holds a slot of the dial gate */
	bool		 connected;	/* TCP connect finished */
	bool		 ready;		/* TLS done, waiting for a flow */
	bool		 offer_wait;	/* given back: the server's offer */
	uint8_t		 offer[2], offer_have;
	uint64_t	 opened_ms;	/* dial time: the server's deadline runs
					 * from its accept, not our handshake */
	struct loop_fd	 lfd;
	uint64_t	 deadline_ms;	/* handshake deadline, then lifetime
					 * (the pool's one timer serves all) */
	uint64_t	 dial_us;	/* connect started (stats) */
};

LIST_HEAD(pool_conn_list, pool_conn);

struct pool {
	struct loop		*loop;
	const struct conf	*conf;
	const struct conf_outbound *co;	/* the outbound it is for */
	struct ssl_ctx_st	*ctx;
	struct dialgate		*gate;		/* the outbound's; may be NULL */
	struct addr		 server;
	struct pool_conn_list	 conns;		/* connecting and ready */
	struct pool_conn_list	 dead;		/* freed at iteration end */
	struct loop_timer	 timer;		/* earliest of the deadlines and
						 * refill_at: one wake-up for all */
	uint64_t		 timer_at;	/* what it is armed for */
	uint64_t		 refill_at;	/* backing off until then; 0: not */
	unsigned		 backoff_ms;
	struct pool_demand	 demand;	/* flow arrivals: the target */
	bool			 stopping;
	bool			 retired;	/* pool_retire: freed by its hook */
	struct pool_stats	 stats;
};

static void pool_fill(struct pool *);
static void pool_on_io(struct loop_fd *, uint32_t);

/* Arms the pool's timer for the earliest thing it waits for, or not at
 * all: an empty pool that is not backing off sleeps. */
static void
pool_arm(struct pool *p)
{
	struct pool_conn *pc;
	uint64_t when = p->refill_at, now = loop_now(p->loop);

	LIST_FOREACH(pc, &p->conns, entry)
		if (when == 0 || pc->deadline_ms < when)
			when = pc->deadline_ms;
	if (when == 0) {
		loop_timer_cancel(p->loop, &p->timer);
		return;
	}
	if (loop_timer_armed(&p->timer) && p->timer_at == when)
		return;
	p->timer_at = when;
	loop_timer_set(p->loop, &p->timer, when > now ? when - now : 0);
}

/* pc's dial is over (ready, failed, cancelled): its slot goes back. */
static void
pool_ungate(struct pool_conn *pc)
{
	if (!pc->gated)
		return;
	pc->gated = false;
	dialgate_give(pc->pool->gate);
}

static void
pool_unlink(struct pool *p, struct pool_conn *pc)
{
	pool_ungate(pc);
	if (pc->ready)
		p->stats.ready--;
	else
		p->stats.connecting--;
	/* Events for it may still be pending in this batch: free later. */
	LIST_REMOVE(pc, entry);
	LIST_INSERT_HEAD(&p->dead, pc, entry);
}

/* Closes pc.  graceful: close_notify first (expiry); else a failure,
 * which backs the pool off before it dials again. */
static void
pool_close(struct pool_conn *pc, bool graceful)
{
	struct pool *p = pc->pool;

	loop_fd_del(p->loop, &pc->lfd);
	dialer_cancel(pc->dial);
	pc->dial = NULL;
	if (graceful && pc->out != NULL) {
		(void)outer_shutdown_write(pc->out);
		outer_free(pc->out);
	} else
		outer_abort(pc->out);
	pc->out = NULL;
	pool_unlink(p, pc);
	if (graceful) {
		pool_fill(p);
		return;
	}
	p->stats.failed++;
	p->backoff_ms = p->backoff_ms == 0 ? POOL_BACKOFF_MIN :
	    p->backoff_ms * 2 > POOL_BACKOFF_MAX ? POOL_BACKOFF_MAX :
	    p->backoff_ms * 2;
	if (p->refill_at == 0)
		p->refill_at = loop_now(p->loop) + p->backoff_ms;
	pool_arm(p);
}

static void
pool_set_ready(struct pool_conn *pc)
{
	struct pool *p = pc->pool;
	uint64_t life = p->co->pool_lifetime_ms;
	uint64_t age = loop_now(p->loop) - pc->opened_ms;

	pc->ready = true;
	p->stats.connecting--;
	p->stats.ready++;
	p->stats.opened++;
	if (outer_flows(pc->out) == 0) {
		stats_hist_add(&p->stats.handshake,
		    stats_now_us() - pc->dial_us);
		pool_demand_handshake(&p->demand,
		    (unsigned)((stats_now_us() - pc->dial_us) / 1000));
	}
	stats_contact_ok(&p->stats.contact, loop_now(p->loop));
	p->backoff_ms = 0;
	life = life / 2 + randombytes_uniform((uint32_t)life / 2 + 1);
	pc->deadline_ms = loop_now(p->loop) + (life > age ? life - age : 0);
	/* A reused one also within its reuse_age. */
	age = outer_age_ms(pc->out);
	age = p->co->reuse_age_ms > age ? p->co->reuse_age_ms - age : 0;
	if (outer_flows(pc->out) > 0 && loop_now(p->loop) + age <
	    pc->deadline_ms)
		pc->deadline_ms = loop_now(p->loop) + age;
	loop_fd_mod(p->loop, &pc->lfd, EPOLLIN);
	pool_arm(p);
	pool_ungate(pc);
	if (p->gate != NULL)	/* a flow waiting for a dial may take it */
		dialgate_ready(p->gate, p->loop);
}

/* A ready connection became readable: session tickets are fine, anything
 * else (data the server never sends unasked, EOF, errors) retires it. */
static void
pool_check_idle(struct pool_conn *pc)
{
	uint8_t buf[512];
	ssize_t n;

	n = outer_read(pc->out, buf, sizeof(buf));
	if (n < 0 && errno == EAGAIN) {
		loop_fd_mod(pc->pool->loop, &pc->lfd,
		    EPOLLIN | outer_events(pc->out));
		return;
	}
	log_debug("pool: idle connection to the server %s",
	    n == 0 ? "closed" : n > 0 ? "sent data" : "failed");
	pool_close(pc, false);
}

/* A connection given back: the server's offer makes it ready; its
 * close (no offer: server.reuse reached) or anything else ends it. */
static void
pool_check_offer(struct pool_conn *pc)
{
	struct pool *p = pc->pool;
	ssize_t n;

	while (pc->offer_have < 2) {
		n = outer_read(pc->out, pc->offer + pc->offer_have,
		    2 - pc->offer_have);
		if (n < 0 && errno == EAGAIN) {
			loop_fd_mod(p->loop, &pc->lfd,
			    EPOLLIN | outer_events(pc->out));
			return;
		}
		if (n <= 0) {
			loop_fd_del(p->loop, &pc->lfd);
			outer_free(pc->out);	/* not offered: fine */
			pc->out = NULL;
			pool_unlink(p, pc);
			pool_fill(p);
			return;
		}
		pc->offer_have += (uint8_t)n;
	}
	if (((unsigned)pc->offer[0] << 8 | pc->offer[1]) != OUTER_FRAME_OFFER) {
		log_debug("pool: bad offer from the server");
		pool_close(pc, false);
		return;
	}
	pc->offer_wait = false;
	p->stats.returned++;
	pool_set_ready(pc);
	p->stats.opened--;	/* no handshake: pool_set_ready counted one */
}

/* A new connection failed: err > 0 its TCP connect (errno), else its
 * TLS handshake (as dialer_cb says). */
static void
pool_dial_failed(struct pool_conn *pc, int err)
{
	if (err > 0)
		log_debug("pool: connect to server: %s", strerror(err));
	stats_contact_fail(&pc->pool->stats.contact, loop_now(pc->pool->loop),
	    err > 0 ? "server unreachable" :
	    "TLS handshake with server failed");
	pool_close(pc, false);
}

/* A dialer thread's answer (dialer.h): the connection is ready. */
static void
pool_on_dialed(void *arg, struct outer *out, int err)
{
	struct pool_conn *pc = arg;

	pc->dial = NULL;
	if (out == NULL) {
		pool_dial_failed(pc, err);
		return;
	}
	pc->out = out;
	pc->connected = true;
	if (loop_fd_add(pc->pool->loop, &pc->lfd, outer_fd(out), EPOLLIN,
	    pool_on_io) < 0) {
		pool_close(pc, false);
		return;
	}
	pool_set_ready(pc);
}

static void
pool_on_io(struct loop_fd *lfd, uint32_t revents)
{
	struct pool_conn *pc = container_of(lfd, struct pool_conn, lfd);
	int err, rc;

	(void)revents;
	if (pc->out == NULL)
		return;
	if (pc->ready) {
		pool_check_idle(pc);
		return;
	}
	if (pc->offer_wait) {
		pool_check_offer(pc);
		return;
	}
	if (!pc->connected) {
		if ((err = sock_connect_error(outer_fd(pc->out))) != 0) {
			pool_dial_failed(pc, err);
			return;
		}
		pc->connected = true;
	}
	if ((rc = outer_handshake(pc->out)) < 0) {
		pool_dial_failed(pc, -1);
		return;
	}
	if (rc == 1)
		pool_set_ready(pc);
	else
		loop_fd_mod(pc->pool->loop, &pc->lfd, outer_events(pc->out));
}

/* The pool's one timer: retire what is due, refill after a backoff. */
static void
pool_on_timer(struct loop_timer *t)
{
	struct pool *p = container_of(t, struct pool, timer);
	struct pool_conn *pc, *next;
	uint64_t now = loop_now(p->loop);

	/* pool_close may open new connections: at the head, not visited. */
	for (pc = LIST_FIRST(&p->conns); pc != NULL; pc = next) {
		next = LIST_NEXT(pc, entry);
		if (pc->deadline_ms > now)
			continue;
		if (pc->ready) {
			p->stats.expired++;
			pool_close(pc, true);
		} else if (pc->offer_wait) {
			log_debug("pool: no offer from the server in time");
			pool_close(pc, false);
		} else {
			log_debug("pool: handshake with the server timed out");
			stats_contact_fail(&p->stats.contact, now,
			    "connect timeout");
			pool_close(pc, false);
		}
	}
	if (p->refill_at != 0 && p->refill_at <= now) {
		p->refill_at = 0;
		pool_fill(p);
	}
	pool_arm(p);
}

/* 0, 1: no dial slot free now (dialgate.h), or -1. */
static int
pool_open(struct pool *p)
{
	const struct conf *c = p->conf;
	struct pool_conn *pc;
	int fd;

	if ((pc = calloc(1, sizeof(*pc))) == NULL)
		return -1;
	if (p->gate != NULL && !dialgate_take(p->gate, p->loop)) {
		free(pc);
		return 1;
	}
	pc->gated = p->gate != NULL;
	pc->pool = p;
	pc->opened_ms = loop_now(p->loop);
	pc->dial_us = stats_now_us();
	if ((fd = sock_connect(&p->server, p->co->congestion,
	    c->client.mark)) < 0 ||
	    (pc->out = outer_new(p->ctx, fd, true, p->co->sni)) == NULL)
		goto fail;
	/* The connect and handshake on a dialer thread, else here. */
	if ((pc->dial = dialer_submit(pc->out, pool_on_dialed, pc)) != NULL)
		pc->out = NULL;
	else if (loop_fd_add(p->loop, &pc->lfd, fd, EPOLLOUT, pool_on_io) < 0)
		goto fail;
	pc->deadline_ms = pc->opened_ms + p->co->connect_timeout_ms;
	LIST_INSERT_HEAD(&p->conns, pc, entry);
	p->stats.connecting++;
	return 0;
fail:
	outer_abort(pc->out);	/* accepts NULL */
	pool_ungate(pc);
	free(pc);
	return -1;
}

/* Opens connections up to the demand's target; never closes any (extra
 * ones expire unused within pool_lifetime, and are not replaced). */
static void
pool_fill(struct pool *p)
{
	const struct conf_outbound *co = p->co;
	unsigned target;
	int rc;

	if (p->stopping || p->refill_at != 0)
		return;		/* backing off */
	target = pool_demand_target(&p->demand, loop_now(p->loop),
	    co->pool_min, co->pool, co->pool_idle_ms);
	p->stats.target = target;
	/* Dial slots all taken (dialgate.h): the next take or give fills. */
	while (p->stats.ready + p->stats.connecting < target &&
	    (rc = pool_open(p)) != 1)
		if (rc < 0) {
			log_warn("pool: cannot open a connection");
			p->refill_at = loop_now(p->loop) + POOL_BACKOFF_MAX;
			break;
		}
	pool_arm(p);
}

static void
pool_on_iteration(void *arg)
{
	struct pool *p = arg;
	struct pool_conn *pc;

	while ((pc = LIST_FIRST(&p->dead)) != NULL) {
		LIST_REMOVE(pc, entry);
		free(pc);
	}
	if (p->retired) {
		loop_off_iteration(p->loop, pool_on_iteration, p);
		free(p);
	}
}

struct outer *
pool_take(struct pool *p)
{
	struct pool_conn *pc;
	struct outer *out;

	if (p == NULL)
		return NULL;
	pool_demand_flow(&p->demand, loop_now(p->loop));
	/* A reused connection first: its handshake is paid, while a fresh
	 * one has its whole lifetime ahead. */
	LIST_FOREACH(pc, &p->conns, entry)
		if (pc->ready && outer_flows(pc->out) > 0)
			break;
	if (pc == NULL)
		LIST_FOREACH(pc, &p->conns, entry)
			if (pc->ready)
				break;
	if (pc == NULL) {
		pool_fill(p);	/* the demand rose: warm up for the next */
		return NULL;
	}
	loop_fd_del(p->loop, &pc->lfd);
	out = pc->out;
	pc->out = NULL;
	pool_unlink(p, pc);
	p->stats.taken++;
	if (outer_flows(out) > 0)
		p->stats.reused++;
	pool_fill(p);
	return out;
}

void
pool_standby(struct pool *p)
{
	if (p == NULL)
		return;
	pool_demand_standby(&p->demand, loop_now(p->loop));
	pool_fill(p);
}

int
pool_give(struct pool *p, struct outer *out)
{
	const struct conf_outbound *co;
	struct pool_conn *pc;

	if (p == NULL || p->stopping || !outer_frame_idle(out))
		return -1;
	co = p->co;
	if (outer_flows(out) >= co->reuse ||
	    outer_age_ms(out) >= co->reuse_age_ms)
		return -1;
	/* A burst of flows ends in a burst of gives: keep no more than
	 * twice the pool's size (each one kept holds a session on the
	 * server too).  Not just the size: the pool refills to its target
	 * while flows hold their connections, and a reused connection,
	 * which costs no handshake, should not be the one turned away. */
	if (p->stats.ready + p->stats.connecting >= 2 * co->pool)
		return -1;
	if ((pc = calloc(1, sizeof(*pc))) == NULL)
		return -1;
	outer_frame_end(out);
	pc->pool = p;
	pc->out = out;
	pc->connected = true;
	pc->offer_wait = true;
	pc->opened_ms = loop_now(p->loop);
	if (loop_fd_add(p->loop, &pc->lfd, outer_fd(out), EPOLLIN,
	    pool_on_io) < 0) {
		free(pc);
		return -1;
	}
	pc->deadline_ms = pc->opened_ms + co->connect_timeout_ms;
	LIST_INSERT_HEAD(&p->conns, pc, entry);
	p->stats.connecting++;
	pool_arm(p);
	pool_check_offer(pc);
	return 0;
}

const struct pool_stats *
pool_stats(const struct pool *p)
{
	static const struct pool_stats none;

	return p != NULL ? &p->stats : &none;
}

struct pool *
pool_new(struct loop *l, const struct conf *c,
    const struct conf_outbound *co, struct ssl_ctx_st *ctx,
    const struct addr *server, struct dialgate *gate)
{
	struct pool *p;

	/* Warm connections are TLS to our server; the plain outbounds
	 * (socks5, direct) and block have none. */
	if (ctx == NULL || (co->protocol != CONF_PROTO_TUNSPLIT &&
	    co->protocol != CONF_PROTO_TROJAN)) {
		log_warnx("pool: only for protocol tunsplit or trojan");
		errno = EINVAL;
		return NULL;
	}
	if ((p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	p->loop = l;
	p->conf = c;
	p->co = co;
	p->ctx = ctx;
	p->gate = gate;
	p->server = *server;
	LIST_INIT(&p->conns);
	LIST_INIT(&p->dead);
	loop_timer_init(&p->timer, pool_on_timer);
	pool_demand_init(&p->demand);
	if (loop_on_iteration(l, pool_on_iteration, p) < 0) {
		free(p);
		return NULL;
	}
	pool_fill(p);
	return p;
}

/* Only once the loop no longer runs: its iteration hook points at p. */
void
pool_free(struct pool *p)
{
	if (p == NULL)
		return;
	p->stopping = true;
	while (!LIST_EMPTY(&p->conns))
		pool_close(LIST_FIRST(&p->conns), true);
	loop_timer_cancel(p->loop, &p->timer);
	pool_on_iteration(p);
	loop_off_iteration(p->loop, pool_on_iteration, p);
	free(p);
}

/* While the loop runs: the connections close now, the memory (which an
 * event of this iteration may still point at) goes in its own hook. */
void
pool_retire(struct pool *p)
{
	if (p == NULL)
		return;
	p->stopping = true;
	while (!LIST_EMPTY(&p->conns))
		pool_close(LIST_FIRST(&p->conns), true);
	loop_timer_cancel(p->loop, &p->timer);
	p->retired = true;
}

