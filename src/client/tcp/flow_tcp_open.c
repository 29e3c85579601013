/*
 * Client TCP flows, the opening side: the app's SYN (held in connect_mode
 * faithful) and accept, and the outbound each flow dials at once
 * (flow_tcp_out.c: dial, connect, handshake, request header).  Once the
 * header is queued the flow relays (flow_tcp.c).
 */
#include "config.h"

#include "client/tcp/flow_tcp.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/epoll.h>

#include <sodium.h>

#include "lwip/tcp.h"

#include "conf/conf.h"
#include "client/tcp/flow_socks5.h"
#include "client/tcp/flow_tcp_int.h"
#include "client/dns/fakeip.h"
#include "client/tcp/flow_dns.h"
#include "client/dgram/flow_udp.h"
#include "wire/frame.h"
#include "core/log.h"
#include "core/loop.h"
#include "tls/outer.h"
#include "client/dialer.h"
#include "client/group.h"
#include "client/outbound.h"
#include "client/pool.h"
#include "client/route.h"
#include "rules/rules.h"
#include "wire/proto_trojan.h"
#include "wire/socks5.h"
#include "core/sock.h"
#include "stack/tsnetif.h"

#define FLOW_LIMIT_LOG_MS	10000	/* refusal messages at most this often */

/* ---- connect, handshake, header ---------------------------------------- */

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

/* Queues the outbound's request header (if any) and starts relaying.
 * 0, or -1: out of memory. */
static int
flow_start_relay(struct flow *f)
{
	uint8_t buf[PROTO_REQ_MAX];
	ssize_t n = 0;

	if (f->ob->header != NULL &&
	    (n = f->ob->header(f, buf, sizeof(buf))) < 0)
		return -1;
	f->phase = FLOW_RELAY;
	f->req_us = stats_now_us();
	flow_mark_dirty(f);
	if (n == 0) {		/* no header: the stream is the target's */
		flow_connected(f);
		return 0;
	}
	if ((f->hdr = malloc((size_t)n)) == NULL) {
		sodium_memzero(buf, sizeof(buf));
		return -1;
	}
	memcpy(f->hdr, buf, (size_t)n);
	sodium_memzero(buf, sizeof(buf));
	f->hdr_len = (size_t)n;
	f->hdr_off = 0;
	return 0;
}

/* The outbound's handshake is done (or it has none). */
static void
flow_handshake_done(struct flow *f)
{
	flow_ungate(f);		/* the next dial may start */
	/* What the handshake freed (its message buffers, the chain it
	 * verified, the key exchange) goes back to the kernel once a burst
	 * of dials is over, as after a burst of closes. */
	loop_trim_hint(f->env->loop);
	stats_hist_add(&f->env->stats.handshake, stats_now_us() - f->dial_us);
	stats_hist_add(&f->obr->stats->handshake, stats_now_us() - f->dial_us);
	if (f->ob->handshake != NULL)	/* a server or proxy answered */
		stats_contact_ok(&f->env->stats.contact,
		    loop_now(f->env->loop));
	/* Health: tunsplit's answer is its connect status (flow_tcp.c);
	 * trojan has none, socks5's came with the handshake. */
	if (f->ob->handshake != NULL &&
	    f->obr->co->protocol != CONF_PROTO_TUNSPLIT) {
		f->answered = true;
		outbound_ok(f->obr);
	}
	if (flow_start_relay(f) < 0)
		flow_fail_internal(f, "out of memory");
}

static void
flow_on_io(struct loop_fd *lfd, uint32_t revents)
{
	struct flow *f = container_of(lfd, struct flow, lfd);
	const char *why;
	int err, rc;

	if (f->closing)
		return;
	switch (f->phase) {
	case FLOW_CONNECT:
		if ((err = sock_connect_error(f->fd)) != 0) {
			f->ob->connect_failed(f, err);
			return;
		}
		if (f->ob->handshake == NULL) {
			flow_handshake_done(f);
			break;
		}
		f->phase = FLOW_HANDSHAKE;
		/* FALLTHROUGH */
	case FLOW_HANDSHAKE:
		if ((rc = f->ob->handshake(f, &why)) < 0) {
			flow_fail(f, why);
			return;
		}
		if (rc == 1)
			flow_handshake_done(f);
		break;
	case FLOW_RELAY:
		/* Hung up: the rest is already in the socket buffer; stop
		 * polling (level-triggered HUP would spin) and let the
		 * pumps, driven by lwIP, read it out. */
		if (revents & (EPOLLHUP | EPOLLERR))
			f->hup = true;
		f->out_rd_idle = false;
		flow_mark_dirty(f);
		break;
	case FLOW_SNIFF:		/* nothing is watched yet */
		break;
	}
	flow_update_events(f);
}

/* A dialer thread's answer (dialer.h): connected and TLS done, or not. */
static void
flow_on_dialed(void *arg, struct outer *out, int err)
{
	struct flow *f = arg;

	f->dial = NULL;
	if (out == NULL) {
		if (err > 0)
			f->ob->connect_failed(f, err);
		else
			flow_fail(f, "TLS handshake with server failed");
		return;
	}
	f->out = out;
	f->fd = outer_fd(out);
	if (loop_fd_add(f->env->loop, &f->lfd, f->fd, EPOLLIN,
	    flow_on_io) < 0) {
		flow_fail_internal(f, "epoll failed");
		return;
	}
	flow_handshake_done(f);
	flow_update_events(f);
}

void
flow_ungate(struct flow *f)
{
	if (f->gate_wait)
		dialgate_leave(&f->obr->gate, &f->gw);
	if (f->gated)
		dialgate_give(&f->obr->gate);
	f->gate_wait = f->gated = false;
}

static int flow_watch(struct flow *);
static bool flow_errno_final(int);
static void flow_limit_log(struct flow_env *, const char *, ...)
    __attribute__((format(printf, 2, 3)));

/* The outbound's dial gate let f go (dialgate.h): it dials now, a pool
 * connection first, as a new flow would. */
static void
flow_on_gate(struct dialgate_waiter *w)
{
	struct flow *f = container_of(w, struct flow, gw);
	struct flow_env *env = f->env;
	int e;

	f->gate_wait = false;
	if (f->closing)
		return;
	if (f->ob->dial(f) < 0) {
		e = errno;
		env->stats.refused++;
		if (flow_errno_final(e)) {
			log_info("flow %llu: %s: %s", (unsigned long long)f->id,
			    f->ob->peer, strerror(e));
			flow_fail(f, "server unreachable");
		} else {
			flow_limit_log(env, "socket to %s: %s", f->ob->peer,
			    strerror(e));
			flow_fail_internal(f, "no socket");
		}
		return;
	}
	if (flow_watch(f) < 0) {
		flow_fail_internal(f, "epoll failed");
		return;
	}
	if (f->gate_wait)	/* nothing for it after all: queued again */
		return;
	if (f->pooled) {
		env->stats.pooled++;
		if (flow_start_relay(f) < 0)
			flow_fail_internal(f, "out of memory");
	}
}

/*
 * The way out just dialled, watched: a new TLS stream goes to a dialer
 * thread when one takes it (connect and handshake there), else the loop
 * watches its socket; a flow past its outbound's dial cap waits in its
 * gate (dialgate.h).  0, or -1 with errno and f->out still the caller's
 * to abort.
 */
static int
flow_watch(struct flow *f)
{
	if (f->gate_wait) {
		dialgate_wait(&f->obr->gate, f->env->loop, &f->gw,
		    flow_on_gate);
		return 0;
	}
	if (f->ob->tls && !f->pooled &&
	    (f->dial = dialer_submit(f->out, flow_on_dialed, f)) != NULL) {
		f->out = NULL;
		f->fd = -1;
		return 0;
	}
	return loop_fd_add(f->env->loop, &f->lfd, f->fd,
	    f->pooled ? EPOLLIN : EPOLLOUT, flow_on_io);
}

static void
flow_on_timer(struct loop_timer *t)
{
	struct flow *f = container_of(t, struct flow, timer);
	const struct conf *c = f->conf;
	uint64_t now = loop_now(f->env->loop), idle_at;

	if (!f->status_ok) {
		flow_fail(f, f->phase == FLOW_HANDSHAKE &&
		    f->ob->handshake_timeout != NULL ?
		    f->ob->handshake_timeout : "connect timeout");
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
	if (!flow_room(env)) {
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

/*
 * The flow's outbound, from the one decision point (route.h): what is
 * known now -- the destination, the app's address, the domain if one was
 * recovered.  The flow keeps it (and why) for its whole life.  false: the
 * outbound refuses it (block), counted.
 */
static bool
flow_route(struct flow *f)
{
	struct addr dst, app;
	struct rule_query q;
	struct rule_hit why;
	struct outbound *ob;

	rules_query_flow(&q, f->by_name ? NULL : addr_unpack(&f->dst, &dst),
	    f->app.len != 0 ? addr_unpack(&f->app, &app) : NULL, RULES_NET_TCP,
	    flow_domain(f));
	if (f->by_name)
		q.port = addr_port(addr_unpack(&f->dst, &dst));
	ob = client_route(f->env->obs, &q, &why);
	f->has_group = why.outbound >= 0 &&
	    (size_t)why.outbound < f->env->obs->n &&
	    outbound_is_group(f->env->obs->v[why.outbound]);
	f->group = f->has_group ? (size_t)why.outbound : 0;
	f->obr = outbound_ref(ob);
	f->rule = why.rule;
	f->ob = flow_outbound(ob->co->protocol);
	outbound_open(ob);
	if (!f->ob->refuse)
		return true;
	f->env->stats.blocked++;
	return false;
}

/*
 * A SYN that no flow holds yet (faithful or not): refused with an RST
 * when its outbound is block, or when it goes to a fake address that
 * stands for no name (the app would otherwise see its connect succeed,
 * then a reset).  Only what the SYN shows is known: with sniffing or
 * fake-IP a domain may still decide, later (flow_tcp_dial).
 */
static bool
flow_syn_blocked(struct flow_env *env, const struct addr *dst,
    const struct addr *app)
{
	struct rule_query q;
	struct rule_hit why;
	struct outbound *ob;
	const void *ip;
	size_t len;

	if (env->fakeip != NULL) {
		ip = addr_ip(dst, &len);
		if (fakeip_contains(env->fakeip, addr_family(dst), ip) &&
		    fakeip_name(env->fakeip, addr_family(dst), ip) == NULL) {
			env->stats.refused++;
			return true;
		}
	}
	if (env->fakeip != NULL || flow_sniff_wanted(env->conf))
		return false;
	rules_query_flow(&q, dst, app, RULES_NET_TCP, NULL);
	/* Counted only when it ends here: else flow_route decides again. */
	ob = client_route_peek(env->obs, &q, &why);
	if (!outbound_blocks(ob))
		return false;
	client_route_count(env->obs, &why);
	outbound_open(ob);
	outbound_close(ob, true, 0, 0);
	env->stats.blocked++;
	return true;
}

/*
 * A new flow for dst from app with its way out dialled and watched, not
 * yet listed; NULL with errno when that failed (nothing left open), and
 * ECONNREFUSED when its outbound is block (counted).
 */
static struct flow *
flow_new(struct flow_env *env, const struct addr *dst, const struct addr *app)
{
	struct flow *f;
	char a[ADDR_STRLEN];
	int e;

	if ((f = flow_alloc(env, dst)) == NULL)
		return NULL;
	addr_pack(&f->app, app);
	if (!flow_route(f)) {
		flow_discard(f);
		errno = ECONNREFUSED;
		return NULL;
	}
	if (f->ob->dial(f) < 0) {
		e = errno;
		if (flow_errno_final(e)) {
			log_info("flow to %s: %s: %s: refused",
			    addr_fmt(dst, a, sizeof(a)), f->ob->peer,
			    strerror(e));
			if (f->obr->has_server)
				outbound_fail(f->obr, "server unreachable");
		}
		else
			flow_limit_log(env, "socket to %s: %s", f->ob->peer,
			    strerror(e));
		flow_discard(f);
		errno = e;
		return NULL;
	}
	if (flow_watch(f) < 0) {
		e = errno;
		outer_abort(f->out);
		flow_discard(f);
		errno = e;
		return NULL;
	}
	return f;
}

/* Counts and lists a new flow, arms its timers; a pooled one starts
 * relaying at once.  -1 when that failed (the flow is closed). */
static int
flow_register(struct flow_env *env, struct flow *f)
{
	if (f->phase != FLOW_SNIFF)
		f->phase = FLOW_CONNECT;
	f->start_ms = f->last_ms = loop_now(env->loop);
	loop_timer_init(&f->timer, flow_on_timer);
	loop_timer_set(env->loop, &f->timer, f->obr != NULL ?
	    f->obr->co->connect_timeout_ms : f->conf->client.connect_timeout_ms);
	env->nflows++;
	if (env->all_flows != NULL)
		atomic_fetch_add(env->all_flows, 1);
	env->stats.accepted++;
	LIST_INSERT_HEAD(&env->all, f, entry);
	if (f->phase == FLOW_SNIFF)
		flow_sniff_start(f);
	if (f->pooled) {
		env->stats.pooled++;
		if (flow_start_relay(f) < 0) {
			flow_fail_internal(f, "out of memory");
			return -1;
		}
	}
	return 0;
}

int
flow_tcp_syn(void *arg, const uint8_t *pkt, size_t len,
    const struct ip_addr *local, const struct ip_addr *remote,
    uint16_t lport, uint16_t rport)
{
	struct flow_env *env = arg;
	struct addr dst, app;
	struct flow *f;

	flow_addr(&dst, local, lport);
	flow_addr(&app, remote, rport);
	if (flow_dns_wanted(env, &dst))
		return TSNETIF_SYN_PASS;	/* answered here */
	if (!env->conf->client.faithful)
		return flow_syn_blocked(env, &dst, &app) ? TSNETIF_SYN_REFUSE :
		    TSNETIF_SYN_PASS;
	if ((f = flow_held_find(env, &dst, &app)) != NULL)
		/* Our own re-injection, or the app retransmitting. */
		return f->status_ok ? TSNETIF_SYN_PASS : TSNETIF_SYN_HOLD;
	if (!flow_admit(env))
		return TSNETIF_SYN_REFUSE;
	errno = 0;
	if ((f = flow_new(env, &dst, &app)) == NULL) {
		if (errno != ECONNREFUSED)
			env->stats.refused++;
		/* Unreachable now: RST; a shortage: dropped, the app retries. */
		return flow_errno_final(errno) ? TSNETIF_SYN_REFUSE :
		    TSNETIF_SYN_HOLD;
	}
	if ((f->syn = malloc(len)) == NULL || flow_held_add(f) < 0) {
		free(f->syn);
		loop_fd_del(env->loop, &f->lfd);
		dialer_cancel(f->dial);
		outer_abort(f->out);
		flow_discard(f);	/* not registered: no event pending */
		env->stats.refused++;
		return TSNETIF_SYN_HOLD;
	}
	memcpy(f->syn, pkt, len);
	f->syn_len = len;
	(void)flow_register(env, f);
	return TSNETIF_SYN_HOLD;
}

err_t
flow_tcp_accept(void *arg, struct tcp_pcb *pcb, err_t err)
{
	struct flow_env *env = arg;
	struct addr dst, app;
	struct flow *f;
	bool sniff;

	if (err != ERR_OK || pcb == NULL)
		return ERR_VAL;
	flow_addr(&dst, &pcb->local_ip, pcb->local_port);
	flow_addr(&app, &pcb->remote_ip, pcb->remote_port);
	if (flow_dns_wanted(env, &dst))
		return flow_dns_accept(env, pcb);
	if ((f = flow_held_find(env, &dst, &app)) != NULL) {
		/* Faithful: the target is connected, the app now too. */
		flow_held_del(f);
		free(f->syn);
		f->syn = NULL;
		flow_attach_pcb(f, pcb);
		flow_mark_dirty(f);
		return ERR_OK;
	}
	/* Sniffing: no dial before the first bytes (flow_tcp_sniff.c). */
	sniff = flow_sniff_wanted(env->conf) || flow_sniff_dns(env, &dst);
	errno = 0;
	if (!flow_room(env) ||
	    (f = sniff ? flow_alloc(env, &dst) : flow_new(env, &dst, &app)) ==
	    NULL) {
		if (errno != ECONNREFUSED)
			env->stats.refused++;
		tcp_abort(pcb);
		return ERR_ABRT;
	}
	if (sniff) {
		f->phase = FLOW_SNIFF;
		addr_pack(&f->app, &app);
	}
	flow_attach_pcb(f, pcb);
	if (flow_register(env, f) < 0)
		return ERR_ABRT;	/* flow_fail aborted the pcb */
	return ERR_OK;
}

/* The failed way out, all of it: the flow is as before its dial. */
static void
flow_undial(struct flow *f)
{
	loop_fd_del(f->env->loop, &f->lfd);
	dialer_cancel(f->dial);
	f->dial = NULL;
	flow_ungate(f);
	if (f->out != NULL)
		outer_abort(f->out);	/* closes the socket */
	f->out = NULL;
	f->fd = -1;
	f->pooled = f->reused = f->out_died = false;
	flow_socks5_free(f->socks);
	f->socks = NULL;
	if (f->hdr != NULL)
		sodium_memzero(f->hdr, f->hdr_len);
	free(f->hdr);
	f->hdr = NULL;
	f->hdr_len = f->hdr_off = f->retry_len = 0;
	f->hup = f->write_blocked = f->out_shut = f->out_eof = false;
	f->out_rd_idle = false;
}

/* f's outbound dialled again, as a new flow would dial it.  0, or -1. */
static int
flow_redial(struct flow *f)
{
	struct flow_env *env = f->env;

	f->dial_us = stats_now_us();
	if (f->ob->dial(f) < 0 || flow_watch(f) < 0)
		return -1;
	f->phase = FLOW_CONNECT;
	loop_timer_set(env->loop, &f->timer, f->obr->co->connect_timeout_ms);
	if (f->pooled) {
		env->stats.pooled++;
		if (flow_start_relay(f) < 0)
			return -1;
	}
	return 0;
}

/*
 * A pooled connection ended before the server's status -- the server
 * closed it while it waited, or between flows, just as our request left
 * (its idle end, a drain, a restart), so it never took the request.
 * Nothing reached the app and all it sent is kept (flow_tcp.h): the flow
 * goes once more, on a new connection of the same outbound.  0, or -1.
 */
static int
flow_retry_fresh(struct flow *f, const char *reason)
{
	if (!f->pooled || !f->out_died || f->fresh || f->held ||
	    f->internal || f->status_ok || f->answered || f->down > 0 ||
	    f->replay_lost || f->phase != FLOW_RELAY)
		return -1;
	log_info("flow %llu: %s on a %s connection: tried once more on "
	    "a new one", (unsigned long long)f->id, reason,
	    f->reused ? "reused" : "pooled");
	if (flow_replay_requeue(f) < 0)
		return -1;
	flow_undial(f);
	f->fresh = true;
	return flow_redial(f);
}

int
flow_retry(struct flow *f, const char *reason)
{
	struct flow_env *env = f->env;
	struct outbound *nob;
	struct addr dst, app;
	struct rule_query q;
	const char *was;

	if (flow_retry_fresh(f, reason) == 0)
		return 0;
	/* Nothing delivered either way, the server never answered, and the
	 * group still the running generation's (its members live). */
	if (f->retried || !f->has_group || f->held || f->conf->client.faithful ||
	    f->internal || f->status_ok || f->answered || f->up > 0 ||
	    f->down > 0 || f->obr == NULL || !f->obr->has_server ||
	    f->phase == FLOW_SNIFF || env->obs->conf != f->conf ||
	    f->group >= env->obs->n)
		return -1;
	rules_query_flow(&q, addr_unpack(&f->dst, &dst), f->app.len != 0 ?
	    addr_unpack(&f->app, &app) : NULL,
	    RULES_NET_TCP, f->domain);
	nob = group_pick(env->obs->v[f->group], &q, group_now(), f->obr);
	if (outbound_is_group(nob))
		return -1;	/* no other member up */
	f->retried = true;
	outbound_fail(f->obr, reason);
	was = outbound_name(f->obr);
	log_info("flow %llu: outbound %s: %s before any byte moved: tried "
	    "once more on %s", (unsigned long long)f->id, was, reason,
	    outbound_name(nob));
	flow_undial(f);
	outbound_close(f->obr, true, 0, 0);
	outbound_unref(f->obr);
	f->obr = outbound_ref(nob);
	f->ob = flow_outbound(nob->co->protocol);
	outbound_open(nob);
	/* The next one, as a new flow would dial it. */
	return flow_redial(f);
}

/* The sniffing flow's domain is known, or will not be: the way out. */
int
flow_tcp_dial(struct flow *f)
{
	struct flow_env *env = f->env;
	char a[ADDR_STRLEN];
	int e;

	/* The domain is known now, if it will be. */
	if (!flow_route(f)) {
		flow_fail(f, "blocked");
		return -1;
	}
	f->dial_us = stats_now_us();
	if (f->ob->dial(f) < 0) {
		e = errno;
		env->stats.refused++;
		/* Unreachable now: the app's reset; a shortage is ours, and
		 * logged once per interval. */
		if (flow_errno_final(e)) {
			log_info("flow %llu to %s: %s: %s",
			    (unsigned long long)f->id,
			    flow_dst(f, a, sizeof(a)), f->ob->peer,
			    strerror(e));
			flow_fail(f, "refused");
		} else {
			flow_limit_log(env, "socket to %s: %s", f->ob->peer,
			    strerror(e));
			flow_fail_internal(f, "no socket");
		}
		return -1;
	}
	if (flow_watch(f) < 0) {
		flow_fail_internal(f, "epoll failed");
		return -1;
	}
	f->phase = FLOW_CONNECT;
	loop_timer_set(env->loop, &f->timer, f->obr->co->connect_timeout_ms);
	if (f->pooled) {
		env->stats.pooled++;
		if (flow_start_relay(f) < 0) {
			flow_fail_internal(f, "out of memory");
			return -1;
		}
	}
	return 0;
}
