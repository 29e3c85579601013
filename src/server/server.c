/*
 * The server role: listeners, accepting, signals and reload.
 * Sessions (TLS, authentication, dial, relay) live in server/sess/, the
 * egress policy in egress.c, the user table and limits in users.c.
 *
 * Process model: one thread, one epoll loop, owning every listener and
 * session.  Listeners are opened with SO_REUSEPORT so that more processes
 * (or, later, one loop per worker thread) can share the ports; nothing here
 * assumes it is the only listener.
 */
#include "config.h"

#include "server/server.h"
#include "server/server_int.h"

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

struct server;

/*
 * A connection accepted while its source had max_preauth_per_source
 * unauthenticated ones: it waits, with no TLS object and unread, until
 * one of them authenticates or ends (or handshake_timeout passes since
 * its accept).  An honest client opening hundreds of flows at once is
 * served in turn instead of reset.  A stranger's cost a socket each, and
 * are bounded apart: SERVER_WAIT_PER_SOURCE times max_preauth_per_source
 * per source, SERVER_WAIT_TOTAL times max_preauth in all (past them,
 * reset at the accept as before), so that strangers cannot fill
 * max_conns with them.
 */
struct waiting {
	TAILQ_ENTRY(waiting)	 entry;
	int			 fd;
	struct addr		 peer;
	struct limit_ent	*src;
	uint64_t		 since_ms;
};
TAILQ_HEAD(waiting_queue, waiting);

struct listener {
	struct server		*srv;
	struct loop_fd		 lfd;
};

struct server {
	const struct conf	*conf;
	struct loop		*loop;
	struct sess_env		 env;
	struct listener		 listeners[CONF_MAX_LISTEN];
	size_t			 nlisteners;
	struct loop_timer	 accept_timer;
	uint64_t		 emfile_log_ms;
	struct limit_server	 lim;		/* per source, per user, memory */
	struct control		*ctl;		/* status socket, metrics */
	struct cover		*cover;		/* cover site for probes */
	struct daemon_drain	 drain;		/* SIGTERM */
	struct daemon_signals	 sig;		/* SIGHUP, SIGINT, SIGTERM */
	struct loop_fd		 ifaddr_lfd;	/* address changes (netlink) */
	struct loop_timer	 ifaddr_timer;	/* or a poll without it */
	struct waiting_queue	 waiting;	/* oldest first */
	size_t			 nwaiting;
	uint64_t		 waiting_seen;	/* env.preauth_ended then */
	struct loop_timer	 waiting_timer;	/* the oldest one's deadline */
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

/*
 * At accept, before any TLS: the global and the per-source connection
 * counts.  Refused connections are reset (no TIME_WAIT left on our side)
 * and cost one accept and one hash lookup.  NULL *src: no entry (out of
 * memory: accepted uncounted rather than refused).  *wait: the source has
 * max_preauth_per_source unauthenticated connections; this one waits its
 * turn (struct waiting).
 */
static bool
server_admit(struct server *srv, const struct addr *peer,
    struct limit_ent **src, bool *wait)
{
	const struct conf	*c = srv->conf;
	struct limit_server	*ls = &srv->lim;
	uint64_t		 now = loop_now(srv->loop);
	uint8_t			 key[LIMIT_SOURCE_KEY_LEN];
	char			 a[ADDR_STRLEN];
	struct limit_ent	*e;
	size_t			 klen;

	*src = NULL;
	*wait = false;
	if (srv->env.nlive + srv->nwaiting >= c->server.max_conns) {
		srv->env.stats.refused++;
		limit_refuse(&ls->st, LIMIT_CONNS, now, "connections",
		    "max_conns %u reached", c->server.max_conns);
		return false;
	}
	klen = limit_source_key(peer, key);
	if ((e = limit_tab_get(&ls->sources, key, klen)) == NULL)
		return true;
	if (c->server.max_conns_per_source != 0 &&
	    e->conns >= c->server.max_conns_per_source) {
		srv->env.stats.refused++;
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
	if (c->server.max_preauth_per_source != 0 &&
	    e->preauth >= c->server.max_preauth_per_source) {
		if (e->waiting >= SERVER_WAIT_PER_SOURCE *
		    c->server.max_preauth_per_source ||
		    (c->server.max_preauth != 0 && srv->nwaiting >=
		    SERVER_WAIT_TOTAL * (size_t)c->server.max_preauth)) {
			srv->env.stats.refused++;
			limit_refuse(&ls->st, LIMIT_PREAUTH_SOURCE, now,
			    "connections", "source %s: max_preauth_per_source "
			    "%u reached and as many waiting as allowed",
			    server_source_fmt(key, klen, a, sizeof(a)),
			    c->server.max_preauth_per_source);
			limit_tab_release(&ls->sources, e);
			return false;
		}
		e->conns++;
		e->waiting++;
		*src = e;
		*wait = true;
		return true;
	}
	e->conns++;
	e->preauth++;		/* handed to the session */
	*src = e;
	return true;
}

/* ---- waiting for a pre-authentication slot ------------------------ */

static void
server_waiting_arm(struct server *srv)
{
	struct waiting	*w = TAILQ_FIRST(&srv->waiting);
	uint64_t	 now = loop_now(srv->loop), at;

	if (w == NULL) {
		loop_timer_cancel(srv->loop, &srv->waiting_timer);
		return;
	}
	at = w->since_ms + srv->conf->server.handshake_timeout_ms;
	loop_timer_set(srv->loop, &srv->waiting_timer, at > now ? at - now : 0);
}

/* Unlists w and frees it; started: its fd and counts went to a session,
 * else the connection is reset and its count given back. */
static void
server_waiting_del(struct server *srv, struct waiting *w, bool started)
{
	TAILQ_REMOVE(&srv->waiting, w, entry);
	srv->nwaiting--;
	if (w->src != NULL)
		w->src->waiting--;
	if (!started) {
		sock_close_rst(w->fd);
		if (w->src != NULL) {
			w->src->conns--;
			limit_tab_release(&srv->lim.sources, w->src);
		}
	}
	free(w);
}

static bool
server_wait(struct server *srv, int fd, const struct addr *peer,
    struct limit_ent *src)
{
	struct waiting	*w;

	if ((w = calloc(1, sizeof(*w))) == NULL)
		return false;
	w->fd = fd;
	w->peer = *peer;
	w->src = src;
	w->since_ms = loop_now(srv->loop);
	TAILQ_INSERT_TAIL(&srv->waiting, w, entry);
	if (srv->nwaiting++ == 0)
		server_waiting_arm(srv);
	srv->env.stats.waited++;
	return true;
}

/* Each loop iteration in which a session left pre-authentication: start
 * the waiting connections whose source has room again, oldest first.
 * Only then can a source have room, so the queue is not walked in the
 * other iterations. */
static void
server_waiting_run(void *arg)
{
	struct server	*srv = arg;
	unsigned	 max = srv->conf->server.max_preauth_per_source;
	struct waiting	*w, *next;

	if (srv->nwaiting == 0 || srv->env.preauth_ended == srv->waiting_seen)
		return;
	srv->waiting_seen = srv->env.preauth_ended;
	for (w = TAILQ_FIRST(&srv->waiting); w != NULL; w = next) {
		next = TAILQ_NEXT(w, entry);
		if (w->src != NULL && max != 0 && w->src->preauth >= max)
			continue;
		if (w->src != NULL)
			w->src->preauth++;	/* handed to the session */
		sess_new(&srv->env, w->fd, &w->peer, w->src);
		server_waiting_del(srv, w, true);
	}
	server_waiting_arm(srv);
}

static void
server_on_waiting_timer(struct loop_timer *t)
{
	struct server	*srv = container_of(t, struct server, waiting_timer);
	uint64_t	 now = loop_now(srv->loop);
	struct waiting	*w;

	while ((w = TAILQ_FIRST(&srv->waiting)) != NULL &&
	    w->since_ms + srv->conf->server.handshake_timeout_ms <= now) {
		srv->env.stats.refused++;
		limit_refuse(&srv->lim.st, LIMIT_PREAUTH_SOURCE, now,
		    "connections", "waited handshake_timeout for a turn "
		    "(max_preauth_per_source %u)",
		    srv->conf->server.max_preauth_per_source);
		server_waiting_del(srv, w, false);
	}
	server_waiting_arm(srv);
}

static void
server_waiting_close_all(struct server *srv)
{
	while (!TAILQ_EMPTY(&srv->waiting))
		server_waiting_del(srv, TAILQ_FIRST(&srv->waiting), false);
	loop_timer_cancel(srv->loop, &srv->waiting_timer);
}

/* ---- accepting --------------------------------------------------- */

static bool
server_log_due(struct server *srv, uint64_t *last_ms)
{
	uint64_t	 now = loop_now(srv->loop);

	if (*last_ms != 0 && now - *last_ms < SERVER_LOG_INTERVAL_MS)
		return false;
	*last_ms = now;
	return true;
}


static void
server_accept_enable(struct server *srv, bool on)
{
	size_t	 i;

	for (i = 0; i < srv->nlisteners; i++)
		if (loop_fd_mod(srv->loop, &srv->listeners[i].lfd,
		    on ? EPOLLIN : 0) == -1)
			log_warn("epoll listener");
}

/*
 * Out of descriptors: the pending connection stays in the backlog and the
 * listener stays readable, so accepting again at once would spin.  Stop
 * watching the listeners for a moment instead.
 */
static void
server_accept_pause(struct server *srv)
{
	if (server_log_due(srv, &srv->emfile_log_ms))
		log_warn("accept (pausing accepts for %d ms)",
		    SERVER_ACCEPT_PAUSE_MS);
	server_accept_enable(srv, false);
	loop_timer_set(srv->loop, &srv->accept_timer, SERVER_ACCEPT_PAUSE_MS);
}

static void
server_on_accept_timer(struct loop_timer *t)
{
	struct server	*srv = container_of(t, struct server, accept_timer);

	server_accept_enable(srv, true);
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
	struct server	*srv = ln->srv;
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
				server_accept_pause(srv);
				return;
			}
			log_warn("accept");
			return;
		}
		if (!server_admit(srv, &peer, &src, &wait)) {
			sock_close_rst(fd);
			continue;
		}
		if (!wait) {
			sess_new(&srv->env, fd, &peer, src);
			continue;
		}
		if (!server_wait(srv, fd, &peer, src)) {
			log_warn("accept: waiting connection");
			sock_close_rst(fd);
			src->conns--;
			src->waiting--;
			limit_tab_release(&srv->lim.sources, src);
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
	loop_timer_set(srv->loop, t, SERVER_IFADDR_POLL_MS);
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
	    loop_fd_add(srv->loop, &srv->ifaddr_lfd, fd, EPOLLIN,
	    server_on_ifaddr) == -1) {
		log_warn("egress: no netlink address events (polling the "
		    "interface list every %d ms)", SERVER_IFADDR_POLL_MS);
		if (fd != -1)
			close(fd);
		loop_timer_set(srv->loop, &srv->ifaddr_timer,
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
		loop_fd_del(srv->loop, &srv->ifaddr_lfd);
		close(srv->ifaddr_lfd.fd);
	}
	loop_timer_cancel(srv->loop, &srv->ifaddr_timer);
	egress_local_clear();
}

/* ---- start, stop ------------------------------------------------- */

static void
server_close_listeners(struct server *srv)
{
	size_t	 i;

	loop_timer_cancel(srv->loop, &srv->accept_timer);
	for (i = 0; i < srv->nlisteners; i++) {
		loop_fd_del(srv->loop, &srv->listeners[i].lfd);
		close(srv->listeners[i].lfd.fd);
	}
	srv->nlisteners = 0;
}

/*
 * After a good reload of the live configuration: key rotation (the user
 * table is replaced, the replay cache kept), the cover site, and the
 * certificate files read again (renewals).  Live sessions keep going with
 * what they authenticated and handshook with.  What fails to apply keeps
 * its previous state, logged.
 */
static void
server_reload(struct server *srv)
{
	const struct conf	*c = srv->conf;
	struct ssl_ctx_st	*ctx;

	srv->lim.mem.max = c->server.max_buffer_memory;
	srv->lim.cover_mem.max = c->server.cover_buffer_memory;
	if (users_reload(srv->env.auth, c) == 0)
		log_info("reload: %zu users", c->server.nusers);
	else
		log_warnx("reload: keeping the previous users");
	if (cover_configure(srv->cover, c) == -1)
		log_warnx("reload: keeping the previous cover site %s",
		    cover_name(srv->cover));
	/* The old context lives on in the sessions that use it. */
	if ((ctx = outer_ctx_server(c->server.cert_file,
	    c->server.cert_key_file)) == NULL) {
		log_warnx("reload: keeping the previous certificate");
		return;
	}
	(void)outer_ctx_padding(ctx, c->server.padding, OUTER_PAD_MAX);
	/* Clients' tickets stay good: no round of full handshakes. */
	(void)outer_ctx_share_tickets(ctx, srv->env.ctx);
	outer_ctx_free(srv->env.ctx);
	srv->env.ctx = ctx;
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
	srv->env.conf = n;
	server_reload(srv);
}

/* Draining: listeners closed, live sessions run on. */
static void
server_stop_accepting(void *arg)
{
	server_close_listeners(arg);
	server_waiting_close_all(arg);
}

static size_t
server_live(void *arg)
{
	struct server	*srv = arg;

	return srv->env.nlive;
}

static int
server_listen(struct server *srv)
{
	const struct conf	*c = srv->conf;
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
		ln = &srv->listeners[srv->nlisteners];
		ln->srv = srv;
		if (loop_fd_add(srv->loop, &ln->lfd, fd, EPOLLIN,
		    server_on_accept) == -1) {
			log_warn("epoll listener %s", a);
			close(fd);
			return -1;
		}
		srv->nlisteners++;
		log_info("listening on %s", a);
	}
	return 0;
}

/* Domain-name targets; the threads start with the first name. */
static int
server_resolver(struct server *srv)
{
	const struct conf	*c = srv->conf;
	struct resolve_conf	 rc = {
		.workers = c->server.resolve_workers,
		.queue = c->server.resolve_queue,
		.timeout_ms = c->server.resolve_timeout_ms,
		.cache_size = c->server.resolve_cache,
		.cache_ttl_ms = c->server.resolve_ttl_ms,
		.negative_ttl_ms = c->server.resolve_negative_ttl_ms,
	};

	if ((srv->env.resolver = resolver_new(srv->loop, &rc)) == NULL) {
		log_warn("server: cannot set up the resolver");
		return -1;
	}
	return 0;
}

static void
server_status(void *arg, struct status_fill *sf)
{
	struct server	*srv = arg;

	server_status_fill(&srv->env, srv->conf, sf);
}

static int
server_open(struct server *srv)
{
	const struct conf	*c = srv->conf;
	struct ssl_ctx_st	*ctx;
	struct users		*auth;
	struct control_role	 role = {
		.live = server_live, .fill = server_status, .arg = srv,
	};

	if ((srv->loop = loop_new()) == NULL) {
		log_warnx("cannot create the event loop");
		return -1;
	}
	loop_timer_init(&srv->accept_timer, server_on_accept_timer);
	loop_timer_init(&srv->ifaddr_timer, server_on_ifaddr_timer);
	loop_timer_init(&srv->waiting_timer, server_on_waiting_timer);
	TAILQ_INIT(&srv->waiting);
	loop_trim_memory(srv->loop, 10000);
	if (c->server.cert_file == NULL || c->server.cert_key_file == NULL) {
		log_warnx("server: cert and cert_key are required");
		return -1;
	}
	if ((ctx = outer_ctx_server(c->server.cert_file,
	    c->server.cert_key_file)) == NULL) {
		log_warnx("server: cannot load certificate %s with key %s",
		    c->server.cert_file, c->server.cert_key_file);
		return -1;
	}
	if (outer_ctx_padding(ctx, c->server.padding, OUTER_PAD_MAX) == -1) {
		outer_ctx_free(ctx);
		return -1;
	}
	if ((auth = users_new(c)) == NULL) {
		outer_ctx_free(ctx);
		log_warnx("server: cannot set up the user table");
		return -1;
	}
	sess_env_init(&srv->env, c, srv->loop, ctx, auth);
	if (server_resolver(srv) == -1 || server_ifaddr_open(srv) == -1)
		return -1;
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
	srv->env.lim = &srv->lim;
	if (loop_on_iteration(srv->loop, limit_mem_wake, &srv->lim.mem) == -1 ||
	    loop_on_iteration(srv->loop, limit_mem_wake,
	    &srv->lim.cover_mem) == -1) {
		log_warnx("cannot register the memory waiter");
		return -1;
	}
	if (loop_on_iteration(srv->loop, server_waiting_run, srv) == -1 ||
	    loop_on_iteration(srv->loop, sess_reap, &srv->env) == -1) {
		log_warnx("cannot register the session reaper");
		return -1;
	}
	if ((srv->cover = cover_new(srv->loop)) == NULL ||
	    cover_configure(srv->cover, c) == -1) {
		log_warnx("server: cannot set up the cover site");
		return -1;
	}
	cover_set_budget(srv->cover, &srv->lim.cover_mem);
	srv->env.cover = srv->cover;
	if (daemon_signals_open(&srv->sig, srv->loop, &srv->drain,
	    server_adopt, srv) == -1 || server_listen(srv) == -1)
		return -1;
	/* Everything privileged is open now. */
	if (daemon_drain_init(&srv->drain, srv->loop, server_stop_accepting,
	    server_live, srv) == -1 ||
	    (srv->ctl = control_new(srv->loop, c, &role)) == NULL ||
	    daemon_up(NULL, NULL) == -1)
		return -1;
	return 0;
}

static void
server_cleanup(struct server *srv)
{
	if (srv->loop != NULL) {
		server_close_listeners(srv);
		server_waiting_close_all(srv);
		sess_close_all(&srv->env, "shutdown");
		sess_reap(&srv->env);
		resolver_free(srv->env.resolver);
		cover_free(srv->cover);
		server_ifaddr_close(srv);
	}
	daemon_signals_close(&srv->sig);
	users_free(srv->env.auth);
	outer_ctx_free(srv->env.ctx);
	control_free(srv->ctl);
	limit_tab_free(&srv->lim.sources);
	limit_tab_free(&srv->lim.users);
	loop_free(srv->loop);
}

int
server_run(const struct conf *c)
{
	struct server	 srv = { .conf = c };
	int		 rc = 1;

	/* Writes to a peer that went away must fail with EPIPE. */
	(void)signal(SIGPIPE, SIG_IGN);
	if (server_open(&srv) == 0) {
		log_info("server: %zu users, max_conns %u (%u per source), "
		    "max_udp %u, max_buffer_memory %zu; strangers: "
		    "max_preauth %u (%u per source), max_cover_per_source "
		    "%u, cover_buffer_memory %zu", c->server.nusers,
		    c->server.max_conns, c->server.max_conns_per_source,
		    c->server.max_udp, c->server.max_buffer_memory,
		    c->server.max_preauth, c->server.max_preauth_per_source,
		    c->server.max_cover_per_source,
		    c->server.cover_buffer_memory);
		if (loop_run(srv.loop) == 0)
			rc = 0;
		else
			log_warn("event loop");
	}
	server_cleanup(&srv);
	return rc;
}
