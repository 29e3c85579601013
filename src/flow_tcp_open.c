/*
 * Client TCP flows, the opening side: the app's SYN (held in connect_mode
 * faithful) and accept, and the outbound each flow dials at once
 * (client.protocol):
 *
 *   tunsplit  TLS to the server (or a warm pool connection); the request
 *             header and whatever the app already sent leave together; the
 *             first byte back is the server's connect status: non-zero
 *             resets the app's connection (flow_tcp.c reads it).
 *   trojan    the same with trojan's request, which has no status.
 *   socks5    its own plain TCP connection to the proxy, the SOCKS5
 *             negotiation (flow_socks5.c); the CONNECT reply is the status.
 *   direct    a plain TCP connection to the destination itself, marked
 *             (client.mark) so that it leaves outside the TUN.
 *   block     no flow at all: the SYN is answered with an RST.
 *
 * Once the target is connected the flow relays (flow_tcp.c).
 */
#include "flow_tcp.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/epoll.h>

#include <sodium.h>

#include "lwip/tcp.h"

#include "conf.h"
#include "flow_socks5.h"
#include "flow_tcp_int.h"
#include "flow_udp.h"
#include "frame.h"
#include "log.h"
#include "loop.h"
#include "outer.h"
#include "pool.h"
#include "proto_trojan.h"
#include "socks5.h"
#include "sock.h"
#include "tsnetif.h"

#define FLOW_LIMIT_LOG_MS	10000	/* refusal messages at most this often */

/* ---- dialling and handshakes ----------------------------------------- */

/* What the outbound asks for: client.dns pins DNS over TCP to the
 * resolver too. */
static void
flow_target(const struct flow *f, struct addr *dst)
{
	*dst = f->dst;
	(void)flow_udp_dns_pin(f->env->conf, dst);
}

/*
 * The target is connected (socks5: the CONNECT reply; direct: the connect
 * itself).  Faithful: the held SYN goes to lwIP now, which answers it.
 */
static void
flow_connected(struct flow *f)
{
	f->status_ok = true;
	if (f->held)
		tsnetif_input(f->syn, f->syn_len);
}

static int
flow_start_relay(struct flow *f)
{
	struct flow_env *env = f->env;
	enum conf_proto proto = env->conf->client.protocol;
	struct proto_req req;
	struct addr dst;
	uint8_t buf[PROTO_REQ_MAX];
	ssize_t n;

	if (proto == CONF_PROTO_SOCKS5 || proto == CONF_PROTO_DIRECT) {
		/* No header: the stream is the target's already. */
		flow_socks5_free(f->socks);
		f->socks = NULL;
		f->phase = FLOW_RELAY;
		flow_connected(f);
		flow_mark_dirty(f);
		return 0;
	}
	memset(&req, 0, sizeof(req));
	req.kind = PROTO_KIND_TCP;
	req.ts = (uint64_t)time(NULL);
	randombytes_buf(req.nonce, sizeof(req.nonce));
	memcpy(req.user_id, env->user_id, sizeof(req.user_id));
	flow_target(f, &dst);
	frame_dest_from_addr(&req.dest, &dst);
	if (proto == CONF_PROTO_TROJAN) {
		/* No status comes back: the stream counts as connected now,
		 * and a target the server cannot reach shows as its close. */
		n = proto_trojan_encode(buf, sizeof(buf),
		    env->conf->client.trojan_hex, PROTO_TROJAN_CMD_CONNECT,
		    &req.dest);
		f->status_ok = true;
	} else
		n = proto_req_encode(buf, sizeof(buf), &req,
		    env->conf->client.key, 0);
	if (n < 0 || (f->hdr = malloc((size_t)n)) == NULL)
		return -1;
	memcpy(f->hdr, buf, (size_t)n);
	sodium_memzero(buf, sizeof(buf));
	f->hdr_len = (size_t)n;
	f->hdr_off = 0;
	f->phase = FLOW_RELAY;
	flow_mark_dirty(f);
	return 0;
}

/* The outbound's TCP connect failed with err. */
static void
flow_connect_failed(struct flow *f, int err)
{
	char dst[ADDR_STRLEN];

	errno = err;
	switch (f->env->conf->client.protocol) {
	case CONF_PROTO_SOCKS5:
		log_warn("flow %llu: connect to the socks5 proxy",
		    (unsigned long long)f->id);
		flow_fail(f, "socks5 proxy unreachable");
		break;
	case CONF_PROTO_DIRECT:
		log_info("flow %llu %s: connect: %s", (unsigned long long)f->id,
		    flow_dst(f, dst, sizeof(dst)), strerror(err));
		/* Faithful: a refusal reaches the app as the target's RST;
		 * anything else leaves it to time out, as it would. */
		if (err == ECONNREFUSED && f->held)
			tsnetif_reset_syn(f->syn, f->syn_len);
		flow_fail(f, err == ECONNREFUSED ? "target refused" :
		    "target unreachable");
		break;
	default:
		log_warn("flow %llu: connect to server",
		    (unsigned long long)f->id);
		flow_fail(f, "server unreachable");
		break;
	}
}

/* FLOW_SOCKS: one more step of the negotiation with the proxy. */
static void
flow_on_socks(struct flow *f)
{
	char detail[192], dst[ADDR_STRLEN];
	struct proto_dest pd;
	struct addr target;
	const char *why;
	uint8_t rep;
	int rc;

	if (f->socks == NULL) {
		flow_target(f, &target);
		frame_dest_from_addr(&pd, &target);
		if ((f->socks = flow_socks5_new(f->env->conf, &pd)) == NULL) {
			flow_fail_internal(f, "out of memory");
			return;
		}
	}
	rc = flow_socks5_step(f->socks, f->out, &why, detail, sizeof(detail),
	    &rep);
	if (rc == 0)
		return;
	if (rc < 0) {
		/* The target's answer is news; the proxy's is trouble. */
		if (rep != 0)
			log_info("flow %llu %s: %s", (unsigned long long)f->id,
			    flow_dst(f, dst, sizeof(dst)), detail);
		else
			log_warnx("flow %llu %s: %s", (unsigned long long)f->id,
			    flow_dst(f, dst, sizeof(dst)), detail);
		if (rep == SOCKS5_REP_REFUSED && f->held)
			tsnetif_reset_syn(f->syn, f->syn_len);
		flow_fail(f, why);
		return;
	}
	stats_hist_add(&f->env->stats.handshake, stats_now_us() - f->dial_us);
	if (flow_start_relay(f) < 0)
		flow_fail_internal(f, "out of memory");
}

static void
flow_on_io(struct loop_fd *lfd, uint32_t revents)
{
	struct flow *f = container_of(lfd, struct flow, lfd);
	int err, rc;

	if (f->closing)
		return;
	switch (f->phase) {
	case FLOW_CONNECT:
		if ((err = sock_connect_error(f->fd)) != 0) {
			flow_connect_failed(f, err);
			return;
		}
		if (f->env->conf->client.protocol == CONF_PROTO_SOCKS5) {
			f->phase = FLOW_SOCKS;
			flow_on_socks(f);
			break;
		}
		if (f->env->conf->client.protocol == CONF_PROTO_DIRECT) {
			stats_hist_add(&f->env->stats.handshake,
			    stats_now_us() - f->dial_us);
			if (flow_start_relay(f) < 0) {
				flow_fail_internal(f, "out of memory");
				return;
			}
			break;
		}
		f->phase = FLOW_TLS;
		/* FALLTHROUGH */
	case FLOW_TLS:
		if ((rc = outer_handshake(f->out)) < 0) {
			flow_fail(f, "TLS handshake with server failed");
			return;
		}
		if (rc == 1)
			stats_hist_add(&f->env->stats.handshake,
			    stats_now_us() - f->dial_us);
		if (rc == 1 && flow_start_relay(f) < 0) {
			flow_fail_internal(f, "out of memory");
			return;
		}
		break;
	case FLOW_SOCKS:
		flow_on_socks(f);
		break;
	case FLOW_RELAY:
		/* Hung up: the rest is already in the socket buffer; stop
		 * polling (level-triggered HUP would spin) and let the
		 * pumps, driven by lwIP, read it out. */
		if (revents & (EPOLLHUP | EPOLLERR))
			f->hup = true;
		flow_mark_dirty(f);
		break;
	}
	flow_update_events(f);
}

static void
flow_on_timer(struct loop_timer *t)
{
	struct flow *f = container_of(t, struct flow, timer);
	const struct conf *c = f->env->conf;
	uint64_t now = loop_now(f->env->loop), idle_at;

	if (!f->status_ok) {
		flow_fail(f, f->phase == FLOW_SOCKS ?
		    "socks5 negotiation timeout" : "connect timeout");
		return;
	}
	idle_at = f->last_ms + c->client.idle_timeout_ms;
	if (now >= idle_at) {
		flow_close(f, true, "idle timeout");
		return;
	}
	loop_timer_set(f->env->loop, &f->timer, idle_at - now);
}

/* ---- accept ------------------------------------------------------------- */

static void
flow_addr(struct addr *a, const ip_addr_t *ip, uint16_t port)
{
	if (IP_IS_V6_VAL(*ip))
		addr_from_raw(a, AF_INET6, ip_2_ip6(ip)->addr, port);
	else
		addr_from_raw(a, AF_INET, &ip_2_ip4(ip)->addr, port);
}

/*
 * A limit or a resource shortage refuses every new flow while it lasts,
 * which with busy apps is hundreds a second: one line per interval, with
 * how many were refused since the last one (the counters have them all).
 */
static void __attribute__((format(printf, 2, 3)))
flow_limit_log(struct flow_env *env, const char *fmt, ...)
{
	uint64_t now = loop_now(env->loop);
	char what[128];
	va_list ap;

	env->limit_hits++;
	if (env->limit_log_ms != 0 &&
	    now - env->limit_log_ms < FLOW_LIMIT_LOG_MS)
		return;
	va_start(ap, fmt);
	(void)vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	log_warnx("%s: refusing new flows (%llu since the last message)",
	    what, (unsigned long long)env->limit_hits);
	env->limit_log_ms = now;
	env->limit_hits = 0;
}

/* Whether a new flow may start; a refusal is counted and logged. */
static bool
flow_admit(struct flow_env *env)
{
	if (env->draining)
		return false;
	if (env->conf->client.protocol == CONF_PROTO_BLOCK) {
		env->stats.blocked++;	/* RST on the SYN */
		return false;
	}
	if (env->nflows >= env->conf->client.max_flows) {
		flow_limit_log(env, "max_flows %u reached",
		    env->conf->client.max_flows);
		return false;
	}
	/* Room for what a new flow first takes, and a unit for those paused. */
	if (!limit_mem_admit(&env->mem, FLOW_STAGE)) {
		limit_refuse(&env->lst, LIMIT_MEMORY, loop_now(env->loop),
		    "flows", "max_buffer_memory: %zu of %zu bytes in use",
		    env->mem.used, env->mem.max);
		return false;
	}
	return true;
}

bool
flow_tcp_syn_allowed(void *arg)
{
	struct flow_env *env = arg;

	/* Faithful: flow_tcp_syn judges.  A held flow's SYN -- the app's
	 * retransmission, or ours fed back once the target is connected --
	 * is not a new flow, and the flow itself may be the one that
	 * reached max_flows. */
	if (env->conf->client.faithful)
		return true;
	return flow_admit(env);
}

/* socks5, direct: a plain TCP connection to the proxy or the target.
 * 0, or -1 with f freed. */
/*
 * Errors of an immediate connect that the app's next SYN would meet again
 * (no route, a reject rule, a refusal): the app is better told at once
 * than left retrying; a shortage (fds, memory) may pass, so its SYN is
 * dropped instead.
 */
static bool
flow_errno_final(int e)
{
	return e == ENETUNREACH || e == EHOSTUNREACH || e == EADDRNOTAVAIL ||
	    e == EAFNOSUPPORT || e == ECONNREFUSED || e == EACCES ||
	    e == EPERM;
}

static int
flow_new_plain(struct flow *f)
{
	struct flow_env *env = f->env;
	const struct conf *c = env->conf;
	struct addr to = env->server;

	if (c->client.protocol == CONF_PROTO_DIRECT)
		flow_target(f, &to);
	if ((f->fd = sock_connect(&to, c->client.congestion,
	    c->client.mark)) < 0) {
		int e = errno;
		const char *what = c->client.protocol == CONF_PROTO_DIRECT ?
		    "target" : "socks5 proxy";
		char a[ADDR_STRLEN];

		if (flow_errno_final(e))
			log_info("flow to %s: %s: %s: refused",
			    addr_fmt(&to, a, sizeof(a)), what, strerror(e));
		else
			flow_limit_log(env, "socket to %s: %s", what,
			    strerror(e));
		free(f);
		errno = e;
		return -1;
	}
	if ((f->out = outer_new(NULL, f->fd, true, NULL)) == NULL) {
		free(f);	/* outer_new closed the fd */
		return -1;
	}
	if (loop_fd_add(env->loop, &f->lfd, f->fd, EPOLLOUT, flow_on_io) < 0) {
		outer_abort(f->out);
		free(f);
		return -1;
	}
	return 0;
}

static struct flow *
flow_new(struct flow_env *env, const struct addr *dst)
{
	const struct conf *c = env->conf;
	struct flow *f;

	if ((f = flow_alloc(env, dst)) == NULL)
		return NULL;
	if (c->client.protocol == CONF_PROTO_SOCKS5 ||
	    c->client.protocol == CONF_PROTO_DIRECT)
		return flow_new_plain(f) == 0 ? f : NULL;
	if ((f->out = pool_take(env->pool)) != NULL) {
		f->pooled = true;
		f->fd = outer_fd(f->out);
		if (loop_fd_add(env->loop, &f->lfd, f->fd, EPOLLIN,
		    flow_on_io) < 0) {
			outer_abort(f->out);
			goto fail;
		}
		return f;
	}
	f->fd = sock_connect(&env->server, c->client.congestion, c->client.mark);
	if (f->fd < 0) {
		flow_limit_log(env, "socket to server: %s", strerror(errno));
		goto fail;
	}
	f->out = outer_new(env->ssl_ctx, f->fd, true, c->client.sni);
	if (f->out == NULL) {
		f->fd = -1;	/* outer_new closed it */
		goto fail;
	}
	if (loop_fd_add(env->loop, &f->lfd, f->fd, EPOLLOUT, flow_on_io) < 0) {
		outer_abort(f->out);
		goto fail;
	}
	return f;
fail:
	if (f->out == NULL && f->fd >= 0)
		sock_close_rst(f->fd);
	free(f);
	return NULL;
}

/* Counts and lists a new flow, arms its timers; a pooled one starts
 * relaying at once.  -1 when that failed (the flow is closed). */
static int
flow_register(struct flow_env *env, struct flow *f)
{
	f->phase = FLOW_CONNECT;
	f->start_ms = f->last_ms = loop_now(env->loop);
	loop_timer_init(&f->timer, flow_on_timer);
	loop_timer_set(env->loop, &f->timer, env->conf->client.connect_timeout_ms);
	env->nflows++;
	env->stats.accepted++;
	flow_list_push(&env->all, f);
	if (f->pooled) {
		env->stats.pooled++;
		if (flow_start_relay(f) < 0) {
			flow_fail_internal(f, "out of memory");
			return -1;
		}
	}
	return 0;
}

static struct flow *
flow_held_find(struct flow_env *env, const struct addr *dst,
    const struct addr *app)
{
	struct flow *f;

	for (f = env->all; f != NULL; f = f->next)
		if (f->held && addr_eq(&f->dst, dst) && addr_eq(&f->app, app))
			return f;
	return NULL;
}

int
flow_tcp_syn(void *arg, const uint8_t *pkt, size_t len,
    const struct ip_addr *local, const struct ip_addr *remote,
    uint16_t lport, uint16_t rport)
{
	struct flow_env *env = arg;
	struct addr dst, app;
	struct flow *f;

	if (!env->conf->client.faithful)
		return TSNETIF_SYN_PASS;
	flow_addr(&dst, local, lport);
	flow_addr(&app, remote, rport);
	if ((f = flow_held_find(env, &dst, &app)) != NULL)
		/* Our own re-injection, or the app retransmitting. */
		return f->status_ok ? TSNETIF_SYN_PASS : TSNETIF_SYN_HOLD;
	if (!flow_admit(env))
		return TSNETIF_SYN_REFUSE;
	errno = 0;
	if ((f = flow_new(env, &dst)) == NULL) {
		env->stats.refused++;
		/* Unreachable now: RST; a shortage: dropped, the app retries. */
		return flow_errno_final(errno) ? TSNETIF_SYN_REFUSE :
		    TSNETIF_SYN_HOLD;
	}
	if ((f->syn = malloc(len)) == NULL) {
		outer_abort(f->out);
		loop_fd_del(env->loop, &f->lfd);
		free(f);	/* not registered: no event can be pending */
		env->stats.refused++;
		return TSNETIF_SYN_HOLD;
	}
	memcpy(f->syn, pkt, len);
	f->syn_len = len;
	f->held = true;
	f->app = app;
	(void)flow_register(env, f);
	return TSNETIF_SYN_HOLD;
}

err_t
flow_tcp_accept(void *arg, struct tcp_pcb *pcb, err_t err)
{
	struct flow_env *env = arg;
	struct addr dst, app;
	struct flow *f;

	if (err != ERR_OK || pcb == NULL)
		return ERR_VAL;
	flow_addr(&dst, &pcb->local_ip, pcb->local_port);
	flow_addr(&app, &pcb->remote_ip, pcb->remote_port);
	if ((f = flow_held_find(env, &dst, &app)) != NULL) {
		/* Faithful: the target is connected, the app now too. */
		f->held = false;
		free(f->syn);
		f->syn = NULL;
		flow_attach_pcb(f, pcb);
		flow_mark_dirty(f);
		return ERR_OK;
	}
	if (env->nflows >= env->conf->client.max_flows ||
	    env->conf->client.protocol == CONF_PROTO_BLOCK ||
	    (f = flow_new(env, &dst)) == NULL) {
		env->stats.refused++;
		tcp_abort(pcb);
		return ERR_ABRT;
	}
	flow_attach_pcb(f, pcb);
	if (flow_register(env, f) < 0)
		return ERR_ABRT;	/* flow_fail aborted the pcb */
	return ERR_OK;
}
