/*
 * The warm pool of ready TLS connections (see pool.h).
 */
#include "config.h"

#include "client/pool.h"

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
	struct outer	*out;
	bool		 connected;	/* TCP connect finished */
	bool		 ready;		/* TLS done, waiting for a flow */
	uint64_t	 opened_ms;	/* dial time: the server's deadline runs
					 * from its accept, not our handshake */
	struct loop_fd	 lfd;
	struct loop_timer timer;	/* handshake deadline, then lifetime */
	uint64_t	 dial_us;	/* connect started (stats) */
};

LIST_HEAD(pool_conn_list, pool_conn);

struct pool {
	struct loop		*loop;
	const struct conf	*conf;
	const struct conf_outbound *co;	/* the outbound it is for */
	struct ssl_ctx_st	*ctx;
	struct addr		 server;
	struct pool_conn_list	 conns;		/* connecting and ready */
	struct pool_conn_list	 dead;		/* freed at iteration end */
	struct loop_timer	 refill;	/* backoff after failures */
	unsigned		 backoff_ms;
	bool			 stopping;
	bool			 retired;	/* pool_retire: freed by its hook */
	struct pool_stats	 stats;
};

static void pool_fill(struct pool *);

static void
pool_unlink(struct pool *p, struct pool_conn *pc)
{
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
	loop_timer_cancel(p->loop, &pc->timer);
	if (graceful) {
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
	if (!loop_timer_armed(&p->refill))
		loop_timer_set(p->loop, &p->refill, p->backoff_ms);
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
	stats_hist_add(&p->stats.handshake, stats_now_us() - pc->dial_us);
	stats_contact_ok(&p->stats.contact, loop_now(p->loop));
	p->backoff_ms = 0;
	life = life / 2 + randombytes_uniform((uint32_t)life / 2 + 1);
	loop_timer_set(p->loop, &pc->timer, life > age ? life - age : 0);
	loop_fd_mod(p->loop, &pc->lfd, EPOLLIN);
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
	if (!pc->connected) {
		if ((err = sock_connect_error(outer_fd(pc->out))) != 0) {
			errno = err;
			log_debug("pool: connect to server: %s", strerror(err));
			stats_contact_fail(&pc->pool->stats.contact,
			    loop_now(pc->pool->loop), "server unreachable");
			pool_close(pc, false);
			return;
		}
		pc->connected = true;
	}
	if ((rc = outer_handshake(pc->out)) < 0) {
		stats_contact_fail(&pc->pool->stats.contact,
		    loop_now(pc->pool->loop),
		    "TLS handshake with server failed");
		pool_close(pc, false);
		return;
	}
	if (rc == 1)
		pool_set_ready(pc);
	else
		loop_fd_mod(pc->pool->loop, &pc->lfd, outer_events(pc->out));
}

static void
pool_on_timer(struct loop_timer *t)
{
	struct pool_conn *pc = container_of(t, struct pool_conn, timer);

	if (pc->ready) {
		pc->pool->stats.expired++;
		pool_close(pc, true);
	} else {
		log_debug("pool: handshake with the server timed out");
		stats_contact_fail(&pc->pool->stats.contact,
		    loop_now(pc->pool->loop), "connect timeout");
		pool_close(pc, false);
	}
}

static int
pool_open(struct pool *p)
{
	const struct conf *c = p->conf;
	struct pool_conn *pc;
	int fd;

	if ((pc = calloc(1, sizeof(*pc))) == NULL)
		return -1;
	pc->pool = p;
	pc->opened_ms = loop_now(p->loop);
	pc->dial_us = stats_now_us();
	if ((fd = sock_connect(&p->server, p->co->congestion,
	    c->client.mark)) < 0 ||
	    (pc->out = outer_new(p->ctx, fd, true, p->co->sni)) == NULL ||
	    loop_fd_add(p->loop, &pc->lfd, fd, EPOLLOUT, pool_on_io) < 0) {
		if (pc->out != NULL)
			outer_abort(pc->out);
		free(pc);
		return -1;
	}
	loop_timer_init(&pc->timer, pool_on_timer);
	loop_timer_set(p->loop, &pc->timer, p->co->connect_timeout_ms);
	LIST_INSERT_HEAD(&p->conns, pc, entry);
	p->stats.connecting++;
	return 0;
}

static void
pool_fill(struct pool *p)
{
	if (p->stopping || loop_timer_armed(&p->refill))
		return;		/* backing off */
	while (p->stats.ready + p->stats.connecting < p->co->pool)
		if (pool_open(p) < 0) {
			log_warn("pool: cannot open a connection");
			loop_timer_set(p->loop, &p->refill, POOL_BACKOFF_MAX);
			return;
		}
}

static void
pool_on_refill(struct loop_timer *t)
{
	pool_fill(container_of(t, struct pool, refill));
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
	LIST_FOREACH(pc, &p->conns, entry)
		if (pc->ready)
			break;
	if (pc == NULL)
		return NULL;
	loop_fd_del(p->loop, &pc->lfd);
	loop_timer_cancel(p->loop, &pc->timer);
	out = pc->out;
	pc->out = NULL;
	pool_unlink(p, pc);
	p->stats.taken++;
	pool_fill(p);
	return out;
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
    const struct addr *server)
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
	p->server = *server;
	LIST_INIT(&p->conns);
	LIST_INIT(&p->dead);
	loop_timer_init(&p->refill, pool_on_refill);
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
	loop_timer_cancel(p->loop, &p->refill);
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
	loop_timer_cancel(p->loop, &p->refill);
	p->retired = true;
}

