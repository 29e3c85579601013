/*
 * The server role: listeners, accepting, signals and reload.
 * Sessions (TLS, authentication, dial, relay) live in server/sess/, the
 * egress policy in egress.c, the user table and limits in users.c.
 *
 * Process model: server.workers loops (server_int.h), each owning its
 * SO_REUSEPORT listeners and the sessions they accept; the kernel spreads
 * new connections over the listeners.  What the workers share (limits,
 * users, the TLS context, the generation) is in struct server.
 */
#include "config.h"

#include "server/server.h"
#include "server/server_int.h"

#include <sys/sysinfo.h>

#include <sys/epoll.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/addr.h"
#include "wire/auth.h"
#include "server/users.h"
#include "conf/conf.h"
#include "daemon/control.h"
#include "server/cover.h"
#include "daemon/daemon.h"
#include "server/egress.h"
#include "core/limit.h"
#include "core/log.h"
#include "core/loop.h"
#include "tls/outer.h"
#include "server/relay.h"
#include "server/resolve.h"
#include "server/sess/sess.h"
#include "core/sock.h"

#define SERVER_BACKLOG		1024
#define SERVER_ACCEPT_BURST	128	/* accepts per wake-up, for fairness */
#define SERVER_ACCEPT_PAUSE_MS	100	/* after EMFILE/ENFILE */
#define SERVER_LOG_INTERVAL_MS	1000	/* rate limit for peer-caused floods */
#define SERVER_IFADDR_POLL_MS	5000	/* without netlink: poll the list */
#define SERVER_WAIT_PER_SOURCE	4	/* x max_preauth_per_source */
#define SERVER_WAIT_TOTAL	2	/* x max_preauth */

/*
 * A connection accepted while its source had max_preauth_per_source
 * unauthenticated ones: it waits, with no TLS object and unread, until
 * one of them authenticates or ends (or handshake_timeout passes since
 * its accept).  An honest client opening hundreds of flows at once is
 * served in turn instead of reset.  A stranger's cost a socket each, and
 * are bounded apart: SERVER_WAIT_PER_SOURCE times max_preauth_per_source
 * per source, SERVER_WAIT_TOTAL times max_preauth in all (past them,
 * reset at the accept as before), so that strangers cannot fill
 * max_conns with them.  Each worker queues its own; the counts are the
 * shared ones.
 */
struct waiting {
	TAILQ_ENTRY(waiting)	 entry;
	int			 fd;
	struct addr		 peer;
	struct limit_ent	*src;
	uint64_t		 since_ms;
};

/* A source as counted: "192.0.2.1", "2001:db8::/64" (mapped: IPv4). */
static const char *
server_source_fmt(const uint8_t *key, size_t klen, char *out, size_t outlen)
{
	uint8_t	 ip6[16] = { 0 };
	char	 s[INET6_ADDRSTRLEN] = "?";

	if (klen == 5) {
		(void)inet_ntop(AF_INET, key + 1, s, sizeof(s));
		snprintf(out, outlen, "%s", s);
	} else {
		memcpy(ip6, key + 1, 8);
		(void)inet_ntop(AF_INET6, ip6, s, sizeof(s));
		snprintf(out, outlen, "%s/64", s);
	}
	return out;
}

/* Gives back n of the worker's max_conns counts. */
static void
server_conns_give(struct worker *w, size_t n)
{
	w->held -= n;
	w->srv->lim.conns -= (unsigned)n;
}

/* The max_conns counts of what ended: at the end of each iteration, and
 * before each accept (so that one worker alone counts as it did without
 * workers). */
static void
server_conns_settle(void *arg)
{
	struct worker	*w = arg;
	size_t		 in_use = w->env.nlive + w->nwaiting;

	if (w->held > in_use)
		server_conns_give(w, w->held - in_use);
}

/*
 * At accept, before any TLS: the global and the per-source connection
 * counts.  Refused connections are reset (no TIME_WAIT left on our side)
 * and cost one accept and one hash lookup.  NULL *src: no entry (out of
 * memory: accepted uncounted rather than refused).  *wait: the source has
 * max_preauth_per_source unauthenticated connections; this one waits its
 * turn (struct waiting).  The counts are taken atomically, so that they
 * hold exactly across workers.  max_conns counts accepted connections
 * (sessions and waiting ones): a worker takes one per accept and gives
 * back, at the end of each iteration, those its closed sessions left
 * (server_conns_settle).
 */
static bool
server_admit(struct worker *w, const struct addr *peer,
    struct limit_ent **src, bool *wait)
{
	const struct conf	*c = w->conf;
	struct limit_server	*ls = &w->srv->lim;
	uint64_t		 now = loop_now(w->loop);
	uint8_t			 key[LIMIT_SOURCE_KEY_LEN];
	char			 a[ADDR_STRLEN];
	struct limit_ent	*e;
	unsigned		 pps = c->server.max_preauth_per_source;
	size_t			 klen;

	*src = NULL;
	*wait = false;
	server_conns_settle(w);
	if (!limit_count_take(&ls->conns, c->server.max_conns)) {
		w->env.stats.refused++;
		limit_refuse(&ls->st, LIMIT_CONNS, now, "connections",
		    "max_conns %u reached", c->server.max_conns);
		return false;
	}
	w->held++;
	klen = limit_source_key(peer, key);
	if ((e = limit_tab_get(&ls->sources, key, klen)) == NULL)
		return true;
	if (!limit_count_take(&e->conns, c->server.max_conns_per_source)) {
		server_conns_give(w, 1);
		w->env.stats.refused++;
		limit_tab_release(&ls->sources, e);
		limit_refuse(&ls->st, LIMIT_SOURCE, now, "connections",
		    "source %s: max_conns_per_source %u reached",
		    server_source_fmt(key, klen, a, sizeof(a)),
		    c->server.max_conns_per_source);
		return false;
	}
	/* Unauthenticated ones apart: a TLS object each, whatever the
	 * stranger sends (see "Strangers" in doc/DESIGN.md).  Past the
	 * source's share, a turn is waited for (struct waiting). */
	*src = e;
	if (limit_count_take(&e->preauth, pps))
		return true;		/* handed to the session */
	if (limit_count_take(&e->waiting, SERVER_WAIT_PER_SOURCE * pps)) {
		if (limit_count_take(&ls->waiting,
		    SERVER_WAIT_TOTAL * c->server.max_preauth)) {
			*wait = true;
			return true;
		}
		e->waiting--;
	}
	w->env.stats.refused++;
	limit_refuse(&ls->st, LIMIT_PREAUTH_SOURCE, now,
	    "connections", "source %s: max_preauth_per_source "
	    "%u reached and as many waiting as allowed",
	    server_source_fmt(key, klen, a, sizeof(a)), pps);
	e->conns--;
	limit_tab_release(&ls->sources, e);
	server_conns_give(w, 1);
	*src = NULL;
	return false;
}

/* ---- waiting for a pre-authentication slot ------------------------ */

static void
server_waiting_arm(struct worker *w)
{
	struct waiting	*q = TAILQ_FIRST(&w->waiting);
	uint64_t	 now = loop_now(w->loop), at;

	if (q == NULL) {
		loop_timer_cancel(w->loop, &w->waiting_timer);
		return;
	}
	at = q->since_ms + w->conf->server.handshake_timeout_ms;
	loop_timer_set(w->loop, &w->waiting_timer, at > now ? at - now : 0);
}

/* Unlists q and frees it; started: its fd and counts went to a session,
 * else the connection is reset and its count given back. */
static void
server_waiting_del(struct worker *w, struct waiting *q, bool started)
{
	TAILQ_REMOVE(&w->waiting, q, entry);
	w->nwaiting--;
	if (q->src != NULL) {
		q->src->waiting--;
		w->srv->lim.waiting--;
	}
	if (!started) {
		sock_close_rst(q->fd);
		if (q->src != NULL) {
			q->src->conns--;
			limit_tab_release(&w->srv->lim.sources, q->src);
		}
	}
	free(q);
}

static bool
server_wait(struct worker *w, int fd, const struct addr *peer,
    struct limit_ent *src)
{
	struct waiting	*q;

	if ((q = calloc(1, sizeof(*q))) == NULL)
		return false;
	q->fd = fd;
	q->peer = *peer;
	q->src = src;
	q->since_ms = loop_now(w->loop);
	TAILQ_INSERT_TAIL(&w->waiting, q, entry);
	if (w->nwaiting++ == 0)
		server_waiting_arm(w);
	w->env.stats.waited++;
	return true;
}

/* Starts the waiting connections whose source has room again, oldest
 * first. */
static void
server_waiting_walk(struct worker *w)
{
	unsigned	 max = w->conf->server.max_preauth_per_source;
	struct waiting	*q, *next;

	for (q = TAILQ_FIRST(&w->waiting); q != NULL; q = next) {
		next = TAILQ_NEXT(q, entry);
		if (q->src != NULL && !limit_count_take(&q->src->preauth, max))
			continue;		/* else handed to the session */
		sess_new(&w->env, q->fd, &q->peer, q->src);
		server_waiting_del(w, q, true);
	}
	server_waiting_arm(w);
}

/* Each loop iteration in which a session left pre-authentication.  Only
 * then can a source have room on this worker, so the queue is not walked
 * in the other iterations; room made on another worker is found by the
 * poll (server_worker.c). */
static void
server_waiting_run(void *arg)
{
	struct worker	*w = arg;

	if (w->nwaiting == 0 || w->env.preauth_ended == w->waiting_seen)
		return;
	w->waiting_seen = w->env.preauth_ended;
	server_waiting_walk(w);
}

static void
server_on_waiting_timer(struct loop_timer *t)
{
	struct worker	*w = container_of(t, struct worker, waiting_timer);
	uint64_t	 now = loop_now(w->loop);
	struct waiting	*q;

	while ((q = TAILQ_FIRST(&w->waiting)) != NULL &&
	    q->since_ms + w->conf->server.handshake_timeout_ms <= now) {
		w->env.stats.refused++;
		limit_refuse(&w->srv->lim.st, LIMIT_PREAUTH_SOURCE, now,
		    "connections", "waited handshake_timeout for a turn "
		    "(max_preauth_per_source %u)",
		    w->conf->server.max_preauth_per_source);
		server_waiting_del(w, q, false);
	}
	server_waiting_arm(w);
}

static void
server_waiting_close_all(struct worker *w)
{
	while (!TAILQ_EMPTY(&w->waiting))
		server_waiting_del(w, TAILQ_FIRST(&w->waiting), false);
	loop_timer_cancel(w->loop, &w->waiting_timer);
}

/* The poll timer of a worker: what another worker freed. */
static void
server_on_poll_timer(struct loop_timer *t)
{
	struct worker	*w = container_of(t, struct worker, poll_timer);

	if (w->nwaiting > 0)
		server_waiting_walk(w);
	/* The memory waiters are woken by the iteration hooks, which run
	 * after this timer. */
}

/* ---- accepting --------------------------------------------------- */

static bool
server_log_due(struct worker *w, uint64_t *last_ms)
{
	uint64_t	 now = loop_now(w->loop);

	if (*last_ms != 0 && now - *last_ms < SERVER_LOG_INTERVAL_MS)
		return false;
	*last_ms = now;
	return true;
}


static void
server_accept_enable(struct worker *w, bool on)
{
	size_t	 i;

	for (i = 0; i < w->nlisteners; i++)
		if (loop_fd_mod(w->loop, &w->listeners[i].lfd,
		    on ? EPOLLIN : 0) == -1)
			log_warn("epoll listener");
}

/*
 * Out of descriptors: the pending connection stays in the backlog and the
 * listener stays readable, so accepting again at once would spin.  Stop
 * watching the listeners for a moment instead.
 */
static void
server_accept_pause(struct worker *w)
{
	if (server_log_due(w, &w->emfile_log_ms))
		log_warn("accept (pausing accepts for %d ms)",
		    SERVER_ACCEPT_PAUSE_MS);
	server_accept_enable(w, false);
	loop_timer_set(w->loop, &w->accept_timer, SERVER_ACCEPT_PAUSE_MS);
}

static void
server_on_accept_timer(struct loop_timer *t)
{
	struct worker	*w = container_of(t, struct worker, accept_timer);

	server_accept_enable(w, true);
}

/* Errors that concern one pending connection, not the listener. */
static bool
server_accept_transient(int err)
{
	switch (err) {
	case EINTR:
	case ECONNABORTED:
	case EPROTO:
	case EPERM:
	case ENETDOWN:
	case ENOPROTOOPT:
	case EHOSTDOWN:
	case ENONET:
	case EHOSTUNREACH:
	case EOPNOTSUPP:
	case ENETUNREACH:
		return true;
	default:
		return false;
	}
}

static void
server_on_accept(struct loop_fd *lfd, uint32_t revents)
{
	struct listener	*ln = container_of(lfd, struct listener, lfd);
	struct worker	*w = ln->w;
	struct limit_ent *src;
	struct addr	 peer;
	bool		 wait;
	int		 fd, n;

	(void)revents;
	for (n = 0; n < SERVER_ACCEPT_BURST; n++) {
		peer.len = sizeof(peer.u.ss);
		fd = accept4(lfd->fd, &peer.u.sa, &peer.len,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			if (server_accept_transient(errno))
				continue;
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				server_accept_pause(w);
				return;
			}
			log_warn("accept");
			return;
		}
		if (!server_admit(w, &peer, &src, &wait)) {
			sock_close_rst(fd);
			continue;
		}
		if (!wait) {
			sess_new(&w->env, fd, &peer, src);
			continue;
		}
		if (!server_wait(w, fd, &peer, src)) {
			log_warn("accept: waiting connection");
			sock_close_rst(fd);
			src->conns--;
			src->waiting--;
			w->srv->lim.waiting--;
			limit_tab_release(&w->srv->lim.sources, src);
		}
	}
}

/* ---- the host's own addresses ----------------------------------- */

/*
 * The egress policy denies the host's own addresses (egress.c).  The
 * kernel announces every address added or removed on a netlink socket
 * (RTMGRP_IPV4_IFADDR, RTMGRP_IPV6_IFADDR): the list is read again at
 * once, so there is no window in which a new address is reachable.  The
 * messages themselves are only drained -- reading the whole list again is
 * simpler than applying them one by one, and an overflow (ENOBUFS, lost
 * messages) is handled the same way.  Without netlink the list is polled.
 */
static void
server_ifaddr_refresh(struct server *srv)
{
	size_t	 before = egress_local_count();

	if (egress_local_refresh() == -1) {
		log_warn("egress: reading the interface addresses (keeping "
		    "the previous %zu)", before);
		return;
	}
	if (egress_local_count() != before)
		log_info("egress: %zu addresses of this host denied",
		    egress_local_count());
	(void)srv;
}

static void
server_on_ifaddr(struct loop_fd *lfd, uint32_t revents)
{
	struct server	*srv = container_of(lfd, struct server, ifaddr_lfd);
	char		 buf[8192];

	(void)revents;
	while (recv(lfd->fd, buf, sizeof(buf), MSG_DONTWAIT) > 0 ||
	    errno == ENOBUFS || errno == EINTR)
		;
	server_ifaddr_refresh(srv);
}

static void
server_on_ifaddr_timer(struct loop_timer *t)
{
	struct server	*srv = container_of(t, struct server, ifaddr_timer);

	server_ifaddr_refresh(srv);
	loop_timer_set(srv->w[0].loop, t, SERVER_IFADDR_POLL_MS);
}

static int
server_ifaddr_open(struct server *srv)
{
	struct sockaddr_nl	 sa = {
		.nl_family = AF_NETLINK,
		.nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR,
	};
	int			 fd;

	/* Subscribed before the first read: no change falls in between. */
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    NETLINK_ROUTE);
	if (fd == -1 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 ||
	    loop_fd_add(srv->w[0].loop, &srv->ifaddr_lfd, fd, EPOLLIN,
	    server_on_ifaddr) == -1) {
		log_warn("egress: no netlink address events (polling the "
		    "interface list every %d ms)", SERVER_IFADDR_POLL_MS);
		if (fd != -1)
			close(fd);
		loop_timer_set(srv->w[0].loop, &srv->ifaddr_timer,
		    SERVER_IFADDR_POLL_MS);
	}
	if (egress_local_refresh() == -1) {
		log_warn("egress: cannot read the interface addresses");
		return -1;
	}
	log_info("egress: %zu addresses of this host denied",
	    egress_local_count());
	return 0;
}

static void
server_ifaddr_close(struct server *srv)
{
	if (srv->ifaddr_lfd.active) {
		loop_fd_del(srv->w[0].loop, &srv->ifaddr_lfd);
		close(srv->ifaddr_lfd.fd);
	}
	loop_timer_cancel(srv->w[0].loop, &srv->ifaddr_timer);
	egress_local_clear();
}

/* ---- start, stop ------------------------------------------------- */

static void
server_close_listeners(struct worker *w)
{
	size_t	 i;

	loop_timer_cancel(w->loop, &w->accept_timer);
	for (i = 0; i < w->nlisteners; i++) {
		loop_fd_del(w->loop, &w->listeners[i].lfd);
		close(w->listeners[i].lfd.fd);
	}
	w->nlisteners = 0;
}

/* A worker takes the new generation and context, on its own thread. */
struct server_gen {
	const struct conf	*conf;
	struct ssl_ctx_st	*ctx;
};

static void
server_worker_adopt(struct worker *w, void *arg)
{
	const struct server_gen	*g = arg;

	w->conf = g->conf;
	w->env.conf = g->conf;
	if (g->ctx != w->env.ctx) {
		/* The old context lives on in the sessions that use it. */
		outer_ctx_free(w->env.ctx);
		w->env.ctx = outer_ctx_ref(g->ctx);
	}
	if (cover_configure(w->cover, g->conf) == -1 && w->idx == 0)
		log_warnx("reload: keeping the previous cover site %s",
		    cover_name(w->cover));
}

/*
 * After a good reload of the live configuration: key rotation (the user
 * table is replaced, the replay cache kept), the cover site, and the
 * certificate files read again (renewals).  Live sessions keep going with
 * what they authenticated and handshook with.  What fails to apply keeps
 * its previous state, logged.  Every worker switches before this returns.
 */
static void
server_reload(struct server *srv)
{
	const struct conf	*c = srv->conf;
	struct ssl_ctx_st	*ctx;
	struct server_gen	 g = { .conf = c };
	unsigned		 i;

	srv->lim.mem.max = c->server.max_buffer_memory;
	srv->lim.cover_mem.max = c->server.cover_buffer_memory;
	if (users_reload(srv->auth, c) == 0)
		log_info("reload: %zu users", c->server.nusers);
	else
		log_warnx("reload: keeping the previous users");
	if ((ctx = outer_ctx_server(c->server.cert_file,
	    c->server.cert_key_file)) == NULL)
		log_warnx("reload: keeping the previous certificate");
	else {
		(void)outer_ctx_padding(ctx, c->server.padding, OUTER_PAD_MAX);
		/* Clients' tickets stay good: no round of full handshakes. */
		(void)outer_ctx_share_tickets(ctx, srv->ctx);
		outer_ctx_free(srv->ctx);
		srv->ctx = ctx;
	}
	g.ctx = srv->ctx;
	for (i = 0; i < srv->nworkers; i++)
		server_worker_call(&srv->w[i], server_worker_adopt, &g);
}

/*
 * A new generation of the configuration (SIGHUP): new sessions use it,
 * live ones keep the one they started with until they end.
 */
static void
server_adopt(void *arg, const struct conf *n)
{
	struct server *srv = arg;

	srv->conf = n;
	server_reload(srv);
}

static void
server_worker_stop_accepting(struct worker *w, void *arg)
{
	(void)arg;
	server_close_listeners(w);
	server_waiting_close_all(w);
	sess_stop_offers(&w->env);
}

/* Draining: listeners closed, live sessions run on. */
static void
server_stop_accepting(void *arg)
{
	struct server	*srv = arg;
	unsigned	 i;

	srv->draining = true;
	for (i = 0; i < srv->nworkers; i++)
		server_worker_call(&srv->w[i], server_worker_stop_accepting,
		    NULL);
}

static size_t
server_live(void *arg)
{
	return server_live_all(arg);
}

static int
server_listen(struct worker *w)
{
	const struct conf	*c = w->conf;
	struct listener		*ln;
	char			 a[ADDR_STRLEN];
	size_t			 i;
	int			 fd;

	for (i = 0; i < c->server.nlisten; i++) {
		addr_fmt(&c->server.listen[i], a, sizeof(a));
		fd = sock_listen(&c->server.listen[i], true, SERVER_BACKLOG);
		if (fd == -1) {
			log_warn("listen on %s", a);
			return -1;
		}
		ln = &w->listeners[w->nlisteners];
		ln->w = w;
		if (loop_fd_add(w->loop, &ln->lfd, fd, EPOLLIN,
		    server_on_accept) == -1) {
			log_warn("epoll listener %s", a);
			close(fd);
			return -1;
		}
		w->nlisteners++;
		if (w->idx == 0)
			log_info("listening on %s (%u workers)", a,
			    w->srv->nworkers);
	}
	return 0;
}

/* Domain-name targets; the threads start with the first name. */
static int
server_resolver(struct worker *w)
{
	const struct conf	*c = w->conf;
	struct resolve_conf	 rc = {
		.workers = c->server.resolve_workers,
		.queue = c->server.resolve_queue,
		.timeout_ms = c->server.resolve_timeout_ms,
		.cache_size = c->server.resolve_cache,
		.cache_ttl_ms = c->server.resolve_ttl_ms,
		.negative_ttl_ms = c->server.resolve_negative_ttl_ms,
	};

	if ((w->env.resolver = resolver_new(w->loop, &rc)) == NULL) {
		log_warn("server: cannot set up the resolver");
		return -1;
	}
	return 0;
}

static void
server_status(void *arg, struct status_fill *sf)
{
	server_status_fill(arg, sf);
}

unsigned
server_workers_count(const struct conf *c)
{
	int	 n = c->server.workers;

	if (n == 0)
		n = get_nprocs();
	if (n < 1)
		n = 1;
	return n > SERVER_WORKERS_MAX ? SERVER_WORKERS_MAX : (unsigned)n;
}

/* One worker's loop, sessions, resolver, cover site and listeners. */
static int
server_worker_open(struct server *srv, struct worker *w, unsigned idx)
{
	const struct conf	*c = srv->conf;

	w->srv = srv;
	w->idx = idx;
	w->conf = c;
	if ((w->loop = loop_new()) == NULL) {
		log_warnx("cannot create the event loop");
		return -1;
	}
	loop_timer_init(&w->accept_timer, server_on_accept_timer);
	loop_timer_init(&w->waiting_timer, server_on_waiting_timer);
	loop_timer_init(&w->poll_timer, server_on_poll_timer);
	TAILQ_INIT(&w->waiting);
	loop_trim_memory(w->loop, 10000);
	sess_env_init(&w->env, c, w->loop, outer_ctx_ref(srv->ctx),
	    srv->auth);
	w->env.lim = &srv->lim;
	w->env.id_first = idx + 1;
	w->env.id_step = srv->nworkers;
	if (server_resolver(w) == -1)
		return -1;
	if (loop_on_iteration(w->loop, limit_mem_wake, &srv->lim.mem) == -1 ||
	    loop_on_iteration(w->loop, limit_mem_wake,
	    &srv->lim.cover_mem) == -1) {
		log_warnx("cannot register the memory waiter");
		return -1;
	}
	if (loop_on_iteration(w->loop, server_waiting_run, w) == -1 ||
	    loop_on_iteration(w->loop, sess_reap, &w->env) == -1 ||
	    loop_on_iteration(w->loop, server_conns_settle, w) == -1) {
		log_warnx("cannot register the session reaper");
		return -1;
	}
	if ((w->cover = cover_new(w->loop)) == NULL ||
	    cover_configure(w->cover, c) == -1) {
		log_warnx("server: cannot set up the cover site");
		return -1;
	}
	cover_set_budget(w->cover, &srv->lim.cover_mem);
	w->env.cover = w->cover;
	if (server_worker_init(w) == -1)
		return -1;
	return server_listen(w);
}

static void
server_worker_close(struct worker *w)
{
	if (w->loop == NULL)
		return;
	server_close_listeners(w);
	server_waiting_close_all(w);
	sess_close_all(&w->env, "shutdown");
	sess_reap(&w->env);
	resolver_free(w->env.resolver);
	cover_free(w->cover);
	server_worker_fini(w);
	outer_ctx_free(w->env.ctx);
}

static int
server_open(struct server *srv)
{
	const struct conf	*c = srv->conf;
	struct control_role	 role = {
		.live = server_live, .fill = server_status, .arg = srv,
	};
	unsigned		 i;

	srv->nworkers = server_workers_count(c);
	if ((srv->w = calloc(srv->nworkers, sizeof(*srv->w))) == NULL) {
		log_warn("server: workers");
		return -1;
	}
	loop_timer_init(&srv->ifaddr_timer, server_on_ifaddr_timer);
	if (c->server.cert_file == NULL || c->server.cert_key_file == NULL) {
		log_warnx("server: cert and cert_key are required");
		return -1;
	}
	if ((srv->ctx = outer_ctx_server(c->server.cert_file,
	    c->server.cert_key_file)) == NULL) {
		log_warnx("server: cannot load certificate %s with key %s",
		    c->server.cert_file, c->server.cert_key_file);
		return -1;
	}
	if (outer_ctx_padding(srv->ctx, c->server.padding,
	    OUTER_PAD_MAX) == -1)
		return -1;
	if ((srv->auth = users_new(c)) == NULL) {
		log_warnx("server: cannot set up the user table");
		return -1;
	}
	/* Entries exist only for live connections: at most max_conns. */
	if (limit_tab_init(&srv->lim.sources, c->server.max_conns / 4) == -1 ||
	    limit_tab_init(&srv->lim.users, 256) == -1) {
		log_warnx("server: out of memory");
		return -1;
	}
	limit_mem_init(&srv->lim.mem, c->server.max_buffer_memory,
	    RELAY_BUF_SIZE);
	limit_mem_init(&srv->lim.cover_mem, c->server.cover_buffer_memory,
	    RELAY_BUF_SIZE);
	for (i = 0; i < srv->nworkers; i++)
		if (server_worker_open(srv, &srv->w[i], i) == -1)
			return -1;
	if (server_ifaddr_open(srv) == -1)
		return -1;
	/* Signals are blocked before the threads start, so that they
	 * inherit the mask: the main thread alone reads them. */
	if (daemon_signals_open(&srv->sig, srv->w[0].loop, &srv->drain,
	    server_adopt, srv) == -1)
		return -1;
	for (i = 1; i < srv->nworkers; i++)
		if (server_worker_start(&srv->w[i]) == -1)
			return -1;
	/* Everything privileged is open now. */
	if (daemon_drain_init(&srv->drain, srv->w[0].loop,
	    server_stop_accepting, server_live, srv) == -1 ||
	    (srv->ctl = control_new(srv->w[0].loop, c, &role)) == NULL ||
	    daemon_up(NULL, NULL) == -1)
		return -1;
	return 0;
}

static void
server_cleanup(struct server *srv)
{
	unsigned	 i;

	for (i = 1; srv->w != NULL && i < srv->nworkers; i++)
		server_worker_join(&srv->w[i]);
	for (i = 0; srv->w != NULL && i < srv->nworkers; i++)
		server_worker_close(&srv->w[i]);
	if (srv->w != NULL && srv->w[0].loop != NULL)
		server_ifaddr_close(srv);
	daemon_signals_close(&srv->sig);
	users_free(srv->auth);
	outer_ctx_free(srv->ctx);
	control_free(srv->ctl);
	limit_tab_free(&srv->lim.sources);
	limit_tab_free(&srv->lim.users);
	for (i = 0; srv->w != NULL && i < srv->nworkers; i++)
		loop_free(srv->w[i].loop);
	free(srv->w);
}

int
server_run(const struct conf *c)
{
	struct server	 srv = { .conf = c };
	int		 rc = 1;

	/* Writes to a peer that went away must fail with EPIPE. */
	(void)signal(SIGPIPE, SIG_IGN);
	if (server_open(&srv) == 0) {
		log_info("server: %u workers, %zu users, max_conns %u (%u per "
		    "source), max_udp %u, max_buffer_memory %zu; strangers: "
		    "max_preauth %u (%u per source), max_cover_per_source "
		    "%u, cover_buffer_memory %zu", srv.nworkers,
		    c->server.nusers,
		    c->server.max_conns, c->server.max_conns_per_source,
		    c->server.max_udp, c->server.max_buffer_memory,
		    c->server.max_preauth, c->server.max_preauth_per_source,
		    c->server.max_cover_per_source,
		    c->server.cover_buffer_memory);
		if (loop_run(srv.w[0].loop) == 0)
			rc = 0;
		else
			log_warn("event loop");
	}
	server_cleanup(&srv);
	return rc;
}
