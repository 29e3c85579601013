/*
 * Client TCP flows, the outbounds: one table entry per client.protocol,
 * saying how a flow reaches its target.  flow_tcp_open.c drives a new flow
 * through them (dial, connect, handshake, header) without knowing which it
 * is; flow_tcp.c relays once the header is queued.
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
 */
#include "config.h"

#include "client/tcp/flow_tcp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"
#include "client/tcp/flow_socks5.h"
#include "client/tcp/flow_tcp_int.h"
#include "client/dgram/flow_udp.h"
#include "wire/frame.h"
#include "core/log.h"
#include "tls/outer.h"
#include "client/outbound.h"
#include "client/pool.h"
#include "wire/proto.h"
#include "core/sock.h"
#include "wire/socks5.h"
#include "stack/tsnetif.h"
#include "client/dns/fakeip.h"

#define FLOW_FAKE_LOG_MS	10000	/* fake-IP misses logged this often */

/* What the outbound asks for: client.dns pins DNS over TCP to the
 * resolver too. */
void
flow_target(const struct flow *f, struct addr *dst)
{
	addr_unpack(&f->dst, dst);
	(void)flow_udp_dns_pin(f->conf, dst);
}

void
flow_target_dest(const struct flow *f, struct proto_dest *pd)
{
	struct addr dst;

	if (f->domain_send) {
		memset(pd, 0, sizeof(*pd));
		pd->atyp = PROTO_ATYP_DOMAIN;
		snprintf(pd->domain, sizeof(pd->domain), "%s", flow_domain(f));
		pd->port = addr_port(addr_unpack(&f->dst, &dst));
		return;
	}
	flow_target(f, &dst);
	frame_dest_from_addr(pd, &dst);
}

/*
 * The fake address stands for a name: the server (or proxy) resolves it.
 * One with no name is refused, never dialled: nothing listens there.
 * direct has no one to resolve a name for it (names a direct rule takes
 * get real answers instead; see tunsplit.yaml(5)).
 */
int
flow_fake_name(struct flow *f)
{
	static uint64_t last_log;
	struct flow_env *env = f->env;
	struct addr dst;
	const char *name;
	const void *ip;
	char a[ADDR_STRLEN];
	uint64_t now;
	size_t len;

	addr_unpack(&f->dst, &dst);
	ip = addr_ip(&dst, &len);
	if (!fakeip_contains(env->fakeip, addr_family(&dst), ip))
		return 0;
	name = fakeip_name(env->fakeip, addr_family(&dst), ip);
	if (name != NULL && f->ob != flow_outbound(CONF_PROTO_DIRECT)) {
		if (flow_set_domain(f, name) == -1)
			return -1;
		f->domain_from = "fake-ip";
		f->domain_send = true;
		return 0;
	}
	now = loop_now(env->loop);
	if (last_log == 0 || now - last_log >= FLOW_FAKE_LOG_MS) {
		last_log = now;
		log_info("flow to %s: %s: refused (further ones only counted)",
		    addr_fmt(&dst, a, sizeof(a)), name == NULL ?
		    "a fake address with no name (evicted, or not issued)" :
		    "protocol direct cannot send a flow to a name");
	}
	return -1;
}

/* ---- dialling ---------------------------------------------------------- */

/*
 * A plain TCP connection to `to` (socks5: the proxy, direct: the target),
 * or a TLS stream over one (tls).  0, or -1 with errno and nothing left
 * open.
 */
static int
out_connect(struct flow *f, const struct addr *to, bool tls)
{
	const struct conf *c = f->conf;

	if ((f->fd = sock_connect(to, f->obr->co->congestion,
	    c->client.mark)) < 0)
		return -1;
	f->out = outer_new(tls ? f->obr->ssl_ctx : NULL, f->fd, true,
	    tls ? f->obr->co->sni : NULL);
	if (f->out == NULL) {
		f->fd = -1;	/* outer_new closed it */
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

/* tunsplit, trojan: a warm connection from the pool, else (or for a
 * flow that failed on a reused one) a new one. */
static int
out_dial_server(struct flow *f)
{
	struct dialgate *g = &f->obr->gate;
	struct loop *l = f->env->loop;
	int e;

	/* Flows already waiting for a dial go first (dialgate.h). */
	if (dialgate_queued(g)) {
		f->gate_wait = true;
		return 0;
	}
	if (!f->fresh && (f->out = pool_take(f->obr->pool)) != NULL) {
		f->pooled = true;
		f->reused = outer_flows(f->out) > 0;
		f->fd = outer_fd(f->out);
		return 0;
	}
	if (!dialgate_take(g, l)) {
		f->gate_wait = true;	/* flow_watch queues it */
		return 0;
	}
	f->gated = true;
	if (out_connect(f, &f->obr->server, true) < 0) {
		e = errno;
		flow_ungate(f);
		errno = e;
		return -1;
	}
	return 0;
}

static int
out_dial_proxy(struct flow *f)
{
	return out_connect(f, &f->obr->server, false);
}

static int
out_dial_target(struct flow *f)
{
	struct addr to;

	flow_target(f, &to);
	return out_connect(f, &to, false);
}

/* ---- connect failures ---------------------------------------------------- */

static void
out_server_unreachable(struct flow *f, int err)
{
	errno = err;
	log_warn("flow %llu: connect to server", (unsigned long long)f->id);
	flow_fail(f, "server unreachable");
}

static void
out_proxy_unreachable(struct flow *f, int err)
{
	errno = err;
	log_warn("flow %llu: connect to the socks5 proxy",
	    (unsigned long long)f->id);
	flow_fail(f, "socks5 proxy unreachable");
}

static void
out_target_unreachable(struct flow *f, int err)
{
	char dst[ADDR_STRLEN];

	log_info("flow %llu %s: connect: %s", (unsigned long long)f->id,
	    flow_dst(f, dst, sizeof(dst)), strerror(err));
	/* Faithful: a refusal reaches the app as the target's RST; anything
	 * else leaves it to time out, as it would. */
	if (err == ECONNREFUSED && f->held)
		tsnetif_reset_syn(f->syn, f->syn_len);
	flow_fail(f, err == ECONNREFUSED ? "target refused" :
	    "target unreachable");
}

/* ---- handshakes ---------------------------------------------------------- */

static int
out_tls(struct flow *f, const char **why)
{
	int rc;

	if ((rc = outer_handshake(f->out)) < 0)
		*why = "TLS handshake with server failed";
	return rc;
}

/* One more step of the negotiation with the proxy. */
static int
out_socks(struct flow *f, const char **why)
{
	char detail[192], dst[ADDR_STRLEN];
	struct proto_dest pd;
	uint8_t rep;
	int rc;

	if (f->socks == NULL) {
		flow_target_dest(f, &pd);
		if ((f->socks = flow_socks5_new(f->obr->co, &pd)) == NULL) {
			f->internal = true;
			*why = "out of memory";
			return -1;
		}
	}
	rc = flow_socks5_step(f->socks, f->out, why, detail, sizeof(detail),
	    &rep);
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
		return -1;
	}
	if (rc == 1) {
		flow_socks5_free(f->socks);	/* wipes the credentials */
		f->socks = NULL;
	}
	return rc;
}

/* ---- request headers ----------------------------------------------------- */

static ssize_t
out_hdr_tunsplit(struct flow *f, uint8_t *buf, size_t len)
{
	struct proto_dest pd;

	/* Version 2 binds to f->out, done: a pooled one, or ours after
	 * out_tls. */
	flow_target_dest(f, &pd);
	return outbound_tcp_request(f->obr, f->out, &pd, buf, len);
}

/* No status comes back: the stream counts as connected now, and a target
 * the server cannot reach shows as its close. */
static ssize_t
out_hdr_trojan(struct flow *f, uint8_t *buf, size_t len)
{
	struct proto_dest pd;

	flow_target_dest(f, &pd);
	f->status_ok = true;
	return outbound_tcp_request(f->obr, f->out, &pd, buf, len);
}

/* ---- the table ----------------------------------------------------------- */

static const struct flow_outbound flow_outbounds[] = {
	[CONF_PROTO_TUNSPLIT] = {
		.name = "tunsplit", .peer = "server", .handshake_state = "tls",
		.tls = true,
		.dial = out_dial_server, .handshake = out_tls,
		.header = out_hdr_tunsplit,
		.connect_failed = out_server_unreachable,
	},
	[CONF_PROTO_TROJAN] = {
		.name = "trojan", .peer = "server", .handshake_state = "tls",
		.tls = true,
		.dial = out_dial_server, .handshake = out_tls,
		.header = out_hdr_trojan,
		.connect_failed = out_server_unreachable,
	},
	[CONF_PROTO_SOCKS5] = {
		.name = "socks5", .peer = "socks5 proxy",
		.handshake_state = "socks5",
		.handshake_timeout = "socks5 negotiation timeout",
		.dial = out_dial_proxy, .handshake = out_socks,
		.connect_failed = out_proxy_unreachable,
	},
	[CONF_PROTO_DIRECT] = {
		.name = "direct", .peer = "target",
		.dial = out_dial_target,
		.connect_failed = out_target_unreachable,
	},
	[CONF_PROTO_BLOCK] = {
		.name = "block", .refuse = true,
	},
};

const struct flow_outbound *
flow_outbound(int protocol)
{
	if (protocol < 0 || (size_t)protocol >=
	    sizeof(flow_outbounds) / sizeof(flow_outbounds[0]))
		return &flow_outbounds[CONF_PROTO_BLOCK];
	return &flow_outbounds[protocol];
}
