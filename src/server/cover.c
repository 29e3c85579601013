/*
 * The cover site and the TLS bridges to it.
 *
 * A bridge walks HANDSHAKE (TCP connect and TLS handshake with the site,
 * bounded by connect_timeout) then RELAY (relay.c between the socketpair
 * end and the TLS stream, bounded by idle_timeout) and ends in
 * bridge_close(), its single teardown path.  The session's end of the
 * socketpair is not watched until the relay starts: what the session
 * writes meanwhile waits in the socketpair, whose buffer is the bound.
 *
 * Bridges outlive reconfiguration: cover_configure() only changes where
 * the next dial goes.  The TLS context they were made with is reference
 * counted by OpenSSL, so dropping ours at a reload is safe.  Closed
 * bridges are freed at the end of the loop iteration (cover_reap), when no
 * event for them can still be pending.
 */
#include "config.h"

#include "server/cover.h"

#include <sys/epoll.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/addr.h"
#include "conf/conf.h"
#include "core/limit.h"
#include "core/log.h"
#include "core/loop.h"
#include "tls/outer.h"
#include "server/relay.h"
#include "core/sock.h"

#define COVER_NAME_MAX		(253 + 16)	/* "[host]:port" */
#define COVER_BUF_SIZE		(64 * 1024)
#define COVER_LOG_INTERVAL_MS	1000	/* rate limit for failures */

enum bridge_state { BRIDGE_HANDSHAKE, BRIDGE_RELAY, BRIDGE_CLOSED };

struct bridge {
	LIST_ENTRY(bridge)	 entry;		/* cover's live or dead list */
	struct cover		*cv;
	enum bridge_state	 state;
	struct outer		*outer;		/* TLS to the site */
	struct loop_fd		 outer_lfd;
	bool			 outer_parked;
	int			 fd;		/* our end of the socketpair */
	struct loop_fd		 fd_lfd;
	bool			 fd_parked;
	bool			 fd_watched;
	struct loop_timer	 timer;
	struct relay		 relay;
	struct limit_waiter	 wait;		/* relay paused for memory */
	uint64_t		 last_bytes;
	uint64_t		 last_io_ms;
};

LIST_HEAD(bridge_list, bridge);

struct cover {
	struct loop		*loop;
	bool			 enabled;
	bool			 tls;
	struct addr		 addr;
	bool			 has_plain;	/* fallback_plain */
	struct addr		 plain;
	char			*host;		/* SNI for the TLS bridge */
	char			 name[COVER_NAME_MAX];
	struct ssl_ctx_st	*ctx;		/* TLS bridge client context */
	uint32_t		 mark;
	char			 cc[CONF_CC_MAX];
	unsigned		 connect_timeout_ms;
	unsigned		 idle_timeout_ms;
	struct cover_stats	 stats;
	struct limit_mem	*mem;		/* bridges' buffers; NULL: none */
	struct bridge_list	 live;
	struct bridge_list	 dead;
	uint64_t		 fail_log_ms;
};

static void bridge_on_outer(struct loop_fd *, uint32_t);
static void bridge_on_fd(struct loop_fd *, uint32_t);

/* ---- bridges ------------------------------------------------------ */

static void
bridge_close(struct bridge *b, const char *why, bool failed)
{
	struct cover	*cv = b->cv;
	uint64_t	 now;

	if (b->state == BRIDGE_CLOSED)
		return;
	if (failed) {
		cv->stats.failed++;
		now = loop_now(cv->loop);
		if (cv->fail_log_ms == 0 ||
		    now - cv->fail_log_ms >= COVER_LOG_INTERVAL_MS) {
			cv->fail_log_ms = now;
			log_warnx("cover site %s: %s", cv->name, why);
		}
	}
	log_debug("cover bridge to %s closed: %s, %llu bytes to the site, "
	    "%llu back", cv->name, why,
	    (unsigned long long)b->relay.bytes_to_outer,
	    (unsigned long long)b->relay.bytes_to_fd);
	b->state = BRIDGE_CLOSED;
	if (cv->mem != NULL)
		limit_mem_unwait(cv->mem, &b->wait);
	loop_timer_cancel(cv->loop, &b->timer);
	loop_fd_del(cv->loop, &b->outer_lfd);
	loop_fd_del(cv->loop, &b->fd_lfd);
	if (failed)
		outer_abort(b->outer);
	else
		outer_free(b->outer);
	b->outer = NULL;
	close(b->fd);
	b->fd = -1;
	relay_free(&b->relay);
	cv->stats.bridges--;
	LIST_REMOVE(b, entry);
	LIST_INSERT_HEAD(&cv->dead, b, entry);
}

static void
cover_reap(void *arg)
{
	struct cover	*cv = arg;
	struct bridge	*b;

	while ((b = LIST_FIRST(&cv->dead)) != NULL) {
		LIST_REMOVE(b, entry);
		free(b);
	}
}

static void
bridge_relay(struct bridge *b, uint32_t oev, uint32_t fev)
{
	struct relay	*r = &b->relay;
	uint64_t	 bytes;

	if (oev & EPOLLERR) {
		bridge_close(b, "connection reset", true);
		return;
	}
	switch (relay_run(r, oev, fev)) {
	case RELAY_RUNNING:
		break;
	case RELAY_DONE:
		bridge_close(b, "done", false);
		return;
	case RELAY_OUTER_FAILED:
		bridge_close(b, "TLS stream failed", true);
		return;
	case RELAY_FD_FAILED:
		bridge_close(b, "session gone", false);
		return;
	}
	bytes = r->bytes_to_fd + r->bytes_to_outer;
	if (bytes != b->last_bytes) {
		b->last_bytes = bytes;
		b->last_io_ms = loop_now(b->cv->loop);
	}
	if (b->cv->mem != NULL && relay_starved(r))
		limit_mem_wait(b->cv->mem, &b->wait);
	if (loop_fd_watch(b->cv->loop, &b->outer_lfd, outer_fd(b->outer),
	    &b->outer_parked, relay_outer_events(r), oev,
	    bridge_on_outer) == -1 ||
	    loop_fd_watch(b->cv->loop, &b->fd_lfd, b->fd, &b->fd_parked,
	    relay_fd_events(r), fev, bridge_on_fd) == -1)
		bridge_close(b, "epoll", true);
}

static void
bridge_handshake(struct bridge *b)
{
	uint32_t	 ev;

	switch (outer_handshake(b->outer)) {
	case 1:
		break;
	case 0:
		ev = outer_events(b->outer);
		if (loop_fd_mod(b->cv->loop, &b->outer_lfd,
		    ev != 0 ? ev : EPOLLIN) == -1)
			bridge_close(b, "epoll", true);
		return;
	default:
		bridge_close(b, "TLS handshake failed", true);
		return;
	}
	relay_start(&b->relay, b->outer, b->fd);
	if (b->cv->mem != NULL)
		relay_set_budget(&b->relay, b->cv->mem);
	b->state = BRIDGE_RELAY;
	b->last_io_ms = loop_now(b->cv->loop);
	loop_timer_set(b->cv->loop, &b->timer, b->cv->idle_timeout_ms);
	/* The session's end may have written (and even closed) already. */
	b->fd_parked = true;
	bridge_relay(b, 0, 0);
}

static void
bridge_on_outer(struct loop_fd *lfd, uint32_t revents)
{
	struct bridge	*b = container_of(lfd, struct bridge, outer_lfd);

	if (b->state == BRIDGE_HANDSHAKE)
		bridge_handshake(b);
	else if (b->state == BRIDGE_RELAY)
		bridge_relay(b, revents, 0);
}

static void
bridge_on_fd(struct loop_fd *lfd, uint32_t revents)
{
	struct bridge	*b = container_of(lfd, struct bridge, fd_lfd);

	if (b->state == BRIDGE_RELAY)
		bridge_relay(b, 0, revents);
}

/* Memory is free again: run the paused relay. */
static void
bridge_on_memory(struct limit_waiter *w)
{
	struct bridge	*b = container_of(w, struct bridge, wait);

	if (b->state == BRIDGE_RELAY)
		bridge_relay(b, 0, 0);
}

static void
bridge_on_timer(struct loop_timer *t)
{
	struct bridge	*b = container_of(t, struct bridge, timer);
	unsigned	 idle = b->cv->idle_timeout_ms;
	uint64_t	 quiet;

	if (b->state == BRIDGE_HANDSHAKE) {
		bridge_close(b, "connect or TLS handshake timed out", true);
		return;
	}
	quiet = loop_now(b->cv->loop) - b->last_io_ms;
	if (quiet >= idle)
		bridge_close(b, "idle timeout", false);
	else
		loop_timer_set(b->cv->loop, &b->timer, idle - quiet);
}

/* Returns the session's end of a socketpair bridged to the site. */
static int
bridge_new(struct cover *cv)
{
	struct bridge	*b;
	int		 sp[2], tcp, err;

	if ((b = calloc(1, sizeof(*b))) == NULL)
		return -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
	    sp) == -1)
		goto fail;
	if ((tcp = sock_connect(&cv->addr, cv->cc, cv->mark)) == -1)
		goto fail_sp;
	/* outer_new owns tcp from here on, even when it fails. */
	if ((b->outer = outer_new(cv->ctx, tcp, true, cv->host)) == NULL)
		goto fail_sp;
	b->cv = cv;
	b->fd = sp[1];
	b->state = BRIDGE_HANDSHAKE;
	relay_init(&b->relay, COVER_BUF_SIZE);
	b->wait.fn = bridge_on_memory;
	loop_timer_init(&b->timer, bridge_on_timer);
	if (loop_fd_add(cv->loop, &b->outer_lfd, tcp, EPOLLOUT,
	    bridge_on_outer) == -1) {
		err = errno;
		outer_free(b->outer);
		errno = err;
		goto fail_sp;
	}
	loop_timer_set(cv->loop, &b->timer, cv->connect_timeout_ms);
	LIST_INSERT_HEAD(&cv->live, b, entry);
	cv->stats.bridges++;
	return sp[0];

fail_sp:
	err = errno;
	close(sp[0]);
	close(sp[1]);
	errno = err;
fail:
	err = errno;
	free(b);
	errno = err;
	return -1;
}

/* ---- the cover site ----------------------------------------------- */

struct cover *
cover_new(struct loop *l)
{
	struct cover	*cv;

	if ((cv = calloc(1, sizeof(*cv))) == NULL) {
		log_warn("cover");
		return NULL;
	}
	cv->loop = l;
	snprintf(cv->name, sizeof(cv->name), "-");
	LIST_INIT(&cv->live);
	LIST_INIT(&cv->dead);
	if (loop_on_iteration(l, cover_reap, cv) == -1) {
		log_warnx("cover: cannot register the reaper");
		free(cv);
		return NULL;
	}
	return cv;
}

void
cover_free(struct cover *cv)
{
	if (cv == NULL)
		return;
	while (!LIST_EMPTY(&cv->live))
		bridge_close(LIST_FIRST(&cv->live), "shutdown", false);
	cover_reap(cv);
	outer_ctx_free(cv->ctx);
	free(cv->host);
	free(cv);
}

/* The site must not be one of our own listeners: every probe would come
 * back as a new unauthenticated connection, forever. */
static bool
cover_is_self(const struct conf *c, const struct addr *a)
{
	static const uint8_t	 zero[16];
	const uint8_t		*ip, *lip;
	size_t			 i, len, llen;
	bool			 local;

	ip = addr_ip(a, &len);
	local = memcmp(ip, zero, len) == 0 ||
	    (len == 4 ? ip[0] == 127 : memcmp(ip, zero, 15) == 0 &&
	    ip[15] == 1);
	for (i = 0; i < c->server.nlisten; i++) {
		if (addr_port(&c->server.listen[i]) != addr_port(a) ||
		    addr_family(&c->server.listen[i]) != addr_family(a))
			continue;
		lip = addr_ip(&c->server.listen[i], &llen);
		if (memcmp(lip, ip, len) == 0 ||
		    (memcmp(lip, zero, llen) == 0 && local))
			return true;
	}
	return false;
}

static int
cover_resolve(const struct conf *c, const char *key, const char *host,
    uint16_t portnum, struct addr *out)
{
	struct addrinfo	 hints, *res;
	char		 port[8], buf[ADDR_STRLEN];
	int		 rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	snprintf(port, sizeof(port), "%u", portnum);
	if ((rc = getaddrinfo(host, port, &hints, &res)) != 0) {
		log_warnx("%s %s: %s", key, host, gai_strerror(rc));
		return -1;
	}
	memcpy(&out->u.ss, res->ai_addr, res->ai_addrlen);
	out->len = res->ai_addrlen;
	freeaddrinfo(res);
	if (cover_is_self(c, out)) {
		log_warnx("%s %s is this server's own listener", key,
		    addr_fmt(out, buf, sizeof(buf)));
		return -1;
	}
	return 0;
}

int
cover_configure(struct cover *cv, const struct conf *c)
{
	struct ssl_ctx_st	*ctx = NULL;
	struct addr		 a, plain;
	char			*host = NULL, buf[ADDR_STRLEN];

	if (c->server.fallback_host == NULL) {
		if (cv->enabled)
			log_info("cover site %s dropped: unauthenticated "
			    "connections are closed again", cv->name);
		cv->enabled = false;
		snprintf(cv->name, sizeof(cv->name), "-");
		return 0;
	}
	if (cover_resolve(c, "fallback", c->server.fallback_host,
	    c->server.fallback_port, &a) == -1)
		return -1;
	if (c->server.fallback_plain_host != NULL &&
	    cover_resolve(c, "fallback_plain", c->server.fallback_plain_host,
	    c->server.fallback_plain_port, &plain) == -1)
		return -1;
	if (c->server.fallback_tls) {
		/* Nothing secret crosses it, and the operator chose the
		 * site: verifying would only add ways to fail.  The site may
		 * be an older server: TLS 1.2 is fine here. */
		if ((ctx = outer_ctx_client(NULL, true)) == NULL ||
		    outer_ctx_alpn(ctx, "http/1.1") == -1 ||
		    outer_ctx_allow_tls12(ctx) == -1) {
			outer_ctx_free(ctx);
			log_warnx("fallback %s: cannot make a TLS context",
			    c->server.fallback_host);
			return -1;
		}
	}
	if ((host = strdup(c->server.fallback_host)) == NULL) {
		log_warn("cover");
		outer_ctx_free(ctx);
		return -1;
	}
	outer_ctx_free(cv->ctx);
	free(cv->host);
	cv->ctx = ctx;
	cv->host = host;
	cv->addr = a;
	/* A TLS cover site's own port answers plain HTTP as its HTTPS port
	 * does: the default place for bytes that are not TLS. */
	cv->has_plain = c->server.fallback_plain_host != NULL ||
	    c->server.fallback_tls;
	cv->plain = c->server.fallback_plain_host != NULL ? plain : a;
	cv->tls = c->server.fallback_tls;
	cv->mark = c->server.mark;
	snprintf(cv->cc, sizeof(cv->cc), "%s", c->server.congestion);
	cv->connect_timeout_ms = c->server.connect_timeout_ms;
	cv->idle_timeout_ms = c->server.idle_timeout_ms;
	snprintf(cv->name, sizeof(cv->name), "%s%s%s:%u",
	    strchr(host, ':') != NULL ? "[" : "", host,
	    strchr(host, ':') != NULL ? "]" : "", c->server.fallback_port);
	cv->enabled = true;
	log_info("cover site %s (%s%s) answers unauthenticated connections",
	    cv->name, addr_fmt(&a, buf, sizeof(buf)),
	    cv->tls ? ", over TLS" : "");
	return 0;
}

bool
cover_enabled(const struct cover *cv)
{
	return cv != NULL && cv->enabled;
}

const char *
cover_name(const struct cover *cv)
{
	return cv != NULL ? cv->name : "-";
}

int
cover_dial(struct cover *cv)
{
	int	 fd;

	if (!cover_enabled(cv)) {
		errno = ENOENT;
		return -1;
	}
	fd = cv->tls ? bridge_new(cv) : sock_connect(&cv->addr, cv->cc,
	    cv->mark);
	if (fd != -1)
		cv->stats.dialed++;
	return fd;
}

bool
cover_has_plain(const struct cover *cv)
{
	return cover_enabled(cv) && cv->has_plain;
}

int
cover_dial_plain(struct cover *cv)
{
	int	 fd;

	if (!cover_has_plain(cv)) {
		errno = ENOENT;
		return -1;
	}
	if ((fd = sock_connect(&cv->plain, cv->cc, cv->mark)) != -1)
		cv->stats.dialed++;
	return fd;
}

void
cover_set_budget(struct cover *cv, struct limit_mem *m)
{
	cv->mem = m;
}

const struct cover_stats *
cover_stats_get(const struct cover *cv)
{
	return &cv->stats;
}
