/*
 * The server role: listeners, accepting, signals and the egress policy.
 * Sessions (TLS, authentication, dial, relay) live in sess.c.
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
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "core/addr.h"
#include "wire/auth.h"
#include "server/users.h"
#include "conf/conf.h"
#include "daemon/control.h"
#include "server/cover.h"
#include "daemon/daemon.h"
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

struct server;

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
	int			 sigfd;
	struct loop_fd		 sig_lfd;
	sigset_t		 oldmask;
	bool			 sigmasked;
	struct control		*ctl;		/* status socket, metrics */
	struct cover		*cover;		/* cover site for probes */
	struct daemon_drain	 drain;		/* SIGTERM */
};

/* ---- egress policy ----------------------------------------------- */

static const struct cidr egress_default_deny[] = {
	{ AF_INET,  { 0 }, 8 },			/* "this" network */
	{ AF_INET,  { 10 }, 8 },
	{ AF_INET,  { 100, 64 }, 10 },		/* CGNAT */
	{ AF_INET,  { 127 }, 8 },
	{ AF_INET,  { 169, 254 }, 16 },		/* link-local, cloud metadata */
	{ AF_INET,  { 172, 16 }, 12 },
	{ AF_INET,  { 192, 168 }, 16 },
	{ AF_INET,  { 224 }, 4 },		/* multicast */
	{ AF_INET,  { 240 }, 4 },		/* reserved, broadcast */
	{ AF_INET6, { 0 }, 128 },		/* unspecified */
	{ AF_INET6, { [15] = 1 }, 128 },	/* loopback */
	{ AF_INET6, { 0, 0x64, 0xff, 0x9b, 0, 1 }, 48 }, /* local NAT64 */
	{ AF_INET6, { 0xfc }, 7 },		/* unique local */
	{ AF_INET6, { 0xfe, 0x80 }, 10 },	/* link-local */
	{ AF_INET6, { 0xfe, 0xc0 }, 10 },	/* site-local (deprecated) */
	{ AF_INET6, { 0xff }, 8 },		/* multicast */
};

#define NITEMS(a)	(sizeof(a) / sizeof((a)[0]))

/*
 * How an address is judged: as the IPv4 address it embeds where a gateway
 * may translate it to one -- IPv4-mapped ::ffff:0:0/96, the NAT64
 * well-known prefix 64:ff9b::/96 (RFC 6052: the last 32 bits) and 6to4
 * 2002::/16 (RFC 3056: bits 16 to 47) -- and as itself.  v[0] is the form
 * allow entries and the listeners' ports are judged by (the IPv4 one if
 * any); deny entries match either form.  The local-use NAT64 prefix
 * 64:ff9b:1::/48 (RFC 8215) may embed its IPv4 address anywhere, so it is
 * denied by default as a whole.
 */
struct egress_view {
	int		 family[2];
	const uint8_t	*ip[2];
	size_t		 n;
};

static void
egress_view(const struct addr *a, struct egress_view *v)
{
	static const uint8_t	 mapped[12] = { [10] = 0xff, [11] = 0xff };
	static const uint8_t	 nat64[12] = { 0, 0x64, 0xff, 0x9b };
	const uint8_t		*ip;
	size_t			 len;

	ip = addr_ip(a, &len);
	v->family[0] = addr_family(a);
	v->ip[0] = ip;
	v->n = 1;
	if (v->family[0] != AF_INET6)
		return;
	if (memcmp(ip, mapped, sizeof(mapped)) == 0 ||
	    memcmp(ip, nat64, sizeof(nat64)) == 0)
		v->ip[0] = ip + 12;
	else if (ip[0] == 0x20 && ip[1] == 0x02)
		v->ip[0] = ip + 2;
	else
		return;
	v->family[0] = AF_INET;
	v->family[1] = AF_INET6;
	v->ip[1] = ip;
	v->n = 2;
}

static bool
egress_in(const struct cidr *list, size_t n, int family, const uint8_t *ip)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		if (cidr_match(&list[i], family, ip))
			return true;
	return false;
}

/* A deny list: either form of the address. */
static bool
egress_in_any(const struct cidr *list, size_t n, const struct egress_view *v)
{
	size_t	 i;

	for (i = 0; i < v->n; i++)
		if (egress_in(list, n, v->family[i], v->ip[i]))
			return true;
	return false;
}

static bool
egress_is_wildcard(int family, const uint8_t *ip)
{
	static const uint8_t	 zero[16];

	return memcmp(ip, zero, family == AF_INET ? 4 : 16) == 0;
}

static bool
egress_is_loopback(int family, const uint8_t *ip)
{
	static const uint8_t	 one[16] = { [15] = 1 };

	if (family == AF_INET)
		return ip[0] == 127;
	return memcmp(ip, one, sizeof(one)) == 0;
}

/*
 * The server's own listen addresses.  exact: the address and port of a
 * listener, or a loopback/unspecified address on the port of a wildcard
 * listener -- dialing those loops back into this server.  Otherwise: a
 * listener's (non-wildcard) address on any port.  Every form of the
 * target is compared with every form of a listener's address.
 */
static bool
egress_is_self1(const struct conf *c, int family, const uint8_t *ip,
    uint16_t port, bool exact)
{
	const struct addr	*l;
	struct egress_view	 lv;
	size_t			 i, j;

	for (i = 0; i < c->server.nlisten; i++) {
		l = &c->server.listen[i];
		egress_view(l, &lv);
		for (j = 0; j < lv.n; j++) {
			if (lv.family[j] != family)
				continue;
			if (egress_is_wildcard(family, lv.ip[j])) {
				if (exact && addr_port(l) == port &&
				    (egress_is_wildcard(family, ip) ||
				    egress_is_loopback(family, ip)))
					return true;
				continue;
			}
			if (memcmp(lv.ip[j], ip, family == AF_INET ? 4 : 16) ==
			    0 && (!exact || addr_port(l) == port))
				return true;
		}
	}
	return false;
}

static bool
egress_is_self(const struct conf *c, const struct egress_view *v,
    uint16_t port, bool exact)
{
	size_t	 i;

	for (i = 0; i < v->n; i++)
		if (egress_is_self1(c, v->family[i], v->ip[i], port, exact))
			return true;
	return false;
}

/*
 * In order: a listener itself is never dialed; a deny entry beats an allow
 * entry (both are the operator's words, deny is the safe reading); an allow
 * entry beats the default denies and the listeners' addresses on other
 * ports.  A wildcard listener's port on the host's other addresses is not
 * caught (that would need the interface list); such a loop still needs a
 * fresh authenticated header per hop.
 */
bool
server_egress_allowed(const struct conf *c, const struct addr *a)
{
	return server_egress_allowed_user(c, NULL, a);
}

/*
 * A user's own lists come first, in the same order (deny, then allow):
 * they are the operator's more specific words, so a user's allow entry
 * opens what the server-wide deny list or the defaults close, for that
 * user only.  Only a listener itself stays closed to everyone.
 */
bool
server_egress_allowed_user(const struct conf *c, const struct conf_egress *u,
    const struct addr *a)
{
	struct egress_view	 v;
	uint16_t		 port = addr_port(a);

	egress_view(a, &v);
	if (egress_is_self(c, &v, port, true))
		return false;
	if (u != NULL && egress_in_any(u->deny, u->ndeny, &v))
		return false;
	if (u != NULL && egress_in(u->allow, u->nallow, v.family[0], v.ip[0]))
		return true;
	if (egress_in_any(c->server.egress_deny, c->server.negress_deny, &v))
		return false;
	if (egress_in(c->server.egress_allow, c->server.negress_allow,
	    v.family[0], v.ip[0]))
		return true;
	if (egress_in_any(egress_default_deny, NITEMS(egress_default_deny),
	    &v))
		return false;
	return !egress_is_self(c, &v, port, false);
}

/* ---- limits ------------------------------------------------------ */

void
server_user_limits(const struct conf *c, bool trojan, size_t idx,
    const char *name, unsigned *max_conns, unsigned *max_udp)
{
	struct conf_limits	 l = { 0, 0 };

	if (trojan && idx < c->server.ntrojan && c->server.trojan_limits != NULL)
		l = c->server.trojan_limits[idx];
	else if (!trojan && idx < c->server.nusers &&
	    strcmp(c->server.users[idx].name, name) == 0) {
		l.max_conns = c->server.users[idx].max_conns;
		l.max_udp = c->server.users[idx].max_udp;
	}
	*max_conns = l.max_conns != 0 ? l.max_conns :
	    c->server.max_conns_per_user;
	*max_udp = l.max_udp != 0 ? l.max_udp : c->server.max_udp_per_user;
}

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
 * memory: accepted uncounted rather than refused).
 */
static bool
server_admit(struct server *srv, const struct addr *peer,
    struct limit_ent **src)
{
	const struct conf	*c = srv->conf;
	struct limit_server	*ls = &srv->lim;
	uint64_t		 now = loop_now(srv->loop);
	uint8_t			 key[LIMIT_SOURCE_KEY_LEN];
	char			 a[ADDR_STRLEN];
	struct limit_ent	*e;
	size_t			 klen;

	*src = NULL;
	if (srv->env.nlive >= c->server.max_conns) {
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
	e->conns++;
	*src = e;
	return true;
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
		if (!server_admit(srv, &peer, &src)) {
			sock_close_rst(fd);
			continue;
		}
		sess_new(&srv->env, fd, &peer, src);
	}
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

static void
server_on_signal(struct loop_fd *lfd, uint32_t revents)
{
	struct server		*srv = container_of(lfd, struct server, sig_lfd);
	struct signalfd_siginfo	 si;

	(void)revents;
	if (read(srv->sigfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
		return;
	if (si.ssi_signo == SIGHUP) {
		(void)daemon_reload(server_adopt, srv);
		return;
	}
	daemon_drain_signal(&srv->drain, (int)si.ssi_signo);
}

/* Draining: listeners closed, live sessions run on. */
static void
server_stop_accepting(void *arg)
{
	server_close_listeners(arg);
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

/* SIGINT/SIGTERM arrive through a signalfd, as loop events. */
static int
server_signals(struct server *srv)
{
	sigset_t	 set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, &srv->oldmask) == -1) {
		log_warn("sigprocmask");
		return -1;
	}
	srv->sigmasked = true;
	srv->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (srv->sigfd == -1) {
		log_warn("signalfd");
		return -1;
	}
	if (loop_fd_add(srv->loop, &srv->sig_lfd, srv->sigfd, EPOLLIN,
	    server_on_signal) == -1) {
		log_warn("epoll signalfd");
		return -1;
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
	if (server_resolver(srv) == -1)
		return -1;
	/* Entries exist only for live connections: at most max_conns. */
	if (limit_tab_init(&srv->lim.sources, c->server.max_conns / 4) == -1 ||
	    limit_tab_init(&srv->lim.users, 256) == -1) {
		log_warnx("server: out of memory");
		return -1;
	}
	limit_mem_init(&srv->lim.mem, c->server.max_buffer_memory,
	    RELAY_BUF_SIZE);
	srv->env.lim = &srv->lim;
	if (loop_on_iteration(srv->loop, limit_mem_wake, &srv->lim.mem) == -1) {
		log_warnx("cannot register the memory waiter");
		return -1;
	}
	if (loop_on_iteration(srv->loop, sess_reap, &srv->env) == -1) {
		log_warnx("cannot register the session reaper");
		return -1;
	}
	if ((srv->cover = cover_new(srv->loop)) == NULL ||
	    cover_configure(srv->cover, c) == -1) {
		log_warnx("server: cannot set up the cover site");
		return -1;
	}
	srv->env.cover = srv->cover;
	if (server_signals(srv) == -1 || server_listen(srv) == -1)
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
		sess_close_all(&srv->env, "shutdown");
		sess_reap(&srv->env);
		resolver_free(srv->env.resolver);
		cover_free(srv->cover);
		if (srv->sigfd != -1) {
			loop_fd_del(srv->loop, &srv->sig_lfd);
			close(srv->sigfd);
		}
	}
	if (srv->sigmasked)
		(void)sigprocmask(SIG_SETMASK, &srv->oldmask, NULL);
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
	struct server	 srv = { .conf = c, .sigfd = -1 };
	int		 rc = 1;

	/* Writes to a peer that went away must fail with EPIPE. */
	(void)signal(SIGPIPE, SIG_IGN);
	if (server_open(&srv) == 0) {
		log_info("server: %zu users, max_conns %u (%u per source), "
		    "max_udp %u, max_buffer_memory %zu", c->server.nusers,
		    c->server.max_conns, c->server.max_conns_per_source,
		    c->server.max_udp, c->server.max_buffer_memory);
		if (loop_run(srv.loop) == 0)
			rc = 0;
		else
			log_warn("event loop");
	}
	server_cleanup(&srv);
	return rc;
}
