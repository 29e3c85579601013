/*
 * Client UDP and the non-TCP packet entry (see flow_udp.h).
 *
 * Only unicast traffic is tunnelled: multicast, broadcast, loopback,
 * link-local and unspecified destinations (mDNS, SSDP, neighbour
 * discovery, MLD) belong to the local link and are left alone.
 */
#include "config.h"

#include "client/dgram/flow_udp.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "core/addr.h"
#include "client/dgram/assoc.h"
#include "conf/conf.h"
#include "client/dgram/flow_icmp.h"
#include "wire/frame.h"
#include "core/log.h"
#include "core/loop.h"
#include "wire/pkt.h"
#include "stack/tsnetif.h"
#include "client/dgram/quic_route.h"
#include "client/dgram/reass.h"
#include "rules/rules.h"
#include "client/dns/dnsfwd.h"
#include "client/dns/dnsup.h"
#include "client/dns/fakeip.h"
#include "wire/dns.h"
#include "wire/dnsstream.h"

#define DNS_PORT	53
#define QUIC_PORT	443
#define DNS_MAP		8	/* queries remembered per association */
#define FAKE_MAP	8	/* fake destinations remembered per association */
#define DNS_HDR		12
#define UNREACH_PER_S	100	/* ICMP errors to apps per second (block) */

struct flow_udp {
	struct loop		*loop;
	const struct conf	*conf;
	struct assoc_env	*assoc;
	struct reass		*reass;
	struct loop_timer	 reass_timer;
	uint64_t		 unreach_s;	/* the second counted in */
	unsigned		 unreach_n;	/* errors sent in it */
	struct flow_udp_stats	 st;
	struct fakeip		*fakeip;	/* dns.mode fake-ip, or NULL */
	/* Worker 0 of several: every Packet Too Big, for the others. */
	void			(*on_ptb6)(void *arg, const uint8_t *quote,
				    size_t qlen, unsigned mtu);
	void			*ptb6_arg;
	struct quic_route	*quic;		/* client.sniff, made on use */
	struct loop_timer	 quic_timer;	/* held datagrams' deadline */
	struct dnsfwd_cache	*cache;		/* dns.cache_size, or NULL */
	struct dnsfwd_names	*names;		/* learnt, made on first use */
	struct dnsup		*dnsup;		/* tcp/tls/https upstreams,
						 * made on first use */
	struct outbounds	*obs;		/* the generation's */
};

/* Where a query over a stream upstream came from: its answer goes back
 * there (dnsup keeps these bytes with the query). */
struct flow_udp_asker {
	int		 family;
	uint8_t		 app[16], dst[16];
	uint16_t	 aport, dport;
	int		 up;		/* its index in dns.upstreams */
	flow_udp_answer	*tcp;		/* over TCP: the answer to it */
	void		*tcp_arg;
};

/*
 * Where the app sent its recent DNS queries, by transaction id, so that
 * the pinned resolver's answers can be made to come from there.  A ring:
 * the oldest query is forgotten first.
 */
struct dns_map {
	unsigned	 next;
	struct {
		bool		 used;
		uint16_t	 txid;
		struct proto_dest dst;
	}		 e[DNS_MAP];
	/* Fake addresses the app sent to (fake-ip): a reply from the port
	 * of one comes back from it, not from the address the server
	 * resolved the name to. */
	unsigned	 fnext;
	struct {
		uint16_t	 port;
		uint8_t		 ip[16];
	}		 fake[FAKE_MAP];
};

/* ---- destinations ------------------------------------------------------ */

static bool
flow_udp_unicast(const struct pkt_ip *ip)
{
	static const uint8_t	 zero[16];
	const uint8_t		*d = ip->dst;

	if (ip->family == AF_INET)
		return d[0] != 0 && d[0] != 127 && d[0] < 224 &&
		    !(d[0] == 169 && d[1] == 254);
	if (d[0] == 0xff || (d[0] == 0xfe && (d[1] & 0xc0) == 0x80))
		return false;
	/* :: and ::1 */
	return !(memcmp(d, zero, 15) == 0 && (d[15] == 0 || d[15] == 1));
}

bool
flow_udp_dns_pin(const struct conf *c, struct addr *dst)
{
	if (!c->client.has_dns || addr_port(dst) != DNS_PORT)
		return false;
	*dst = c->client.dns;
	return true;
}

static bool
dest_eq(const struct proto_dest *a, const struct proto_dest *b)
{
	return a->atyp == b->atyp && a->port == b->port &&
	    memcmp(a->ip, b->ip, a->atyp == PROTO_ATYP_IPV4 ? 4 : 16) == 0;
}

static void
dns_map_free(void *ext)
{
	free(ext);
}

static struct dns_map *
dns_map_get(struct assoc *a)
{
	struct dns_map	*m = assoc_ext(a);

	if (m == NULL && (m = calloc(1, sizeof(*m))) != NULL)
		assoc_set_ext(a, m);
	return m;
}

static void
dns_remember(struct assoc *a, const struct proto_dest *orig,
    const uint8_t *data, size_t len)
{
	struct dns_map	*m;
	unsigned	 i;

	if (len < DNS_HDR || (m = dns_map_get(a)) == NULL)
		return;
	i = m->next++ % DNS_MAP;
	m->e[i].used = true;
	m->e[i].txid = (uint16_t)(data[0] << 8 | data[1]);
	m->e[i].dst = *orig;
}

/* The address the app asked for the query this answer belongs to: by
 * transaction id, else the latest query's. */
static const struct proto_dest *
dns_original(const struct assoc *a, const uint8_t *data, size_t len)
{
	const struct dns_map	*m = assoc_ext(a);
	uint16_t		 txid;
	unsigned		 i;

	if (m == NULL || m->next == 0)
		return NULL;
	if (len >= 2) {
		txid = (uint16_t)(data[0] << 8 | data[1]);
		for (i = 0; i < DNS_MAP; i++)
			if (m->e[i].used && m->e[i].txid == txid)
				return &m->e[i].dst;
	}
	return &m->e[(m->next - 1) % DNS_MAP].dst;
}

/* Whether the answer's id is that of a query the app sent on a. */
static bool
dns_asked(const struct assoc *a, const uint8_t *data, size_t len)
{
	const struct dns_map	*m = assoc_ext(a);
	uint16_t		 txid;
	unsigned		 i;

	if (m == NULL || len < 2)
		return false;
	txid = (uint16_t)(data[0] << 8 | data[1]);
	for (i = 0; i < DNS_MAP; i++)
		if (m->e[i].used && m->e[i].txid == txid)
			return true;
	return false;
}

/* Whether src is client.dns's server or one of its upstreams. */
static bool
dns_resolver(const struct conf *c, const struct proto_dest *src)
{
	struct proto_dest	r;
	size_t			i;

	if (c->client.has_dns) {
		frame_dest_from_addr(&r, &c->client.dns);
		if (dest_eq(src, &r))
			return true;
	}
	for (i = 0; i < c->client.ndns_upstreams; i++) {
		frame_dest_from_addr(&r, &c->client.dns_upstreams[i].addr);
		if (dest_eq(src, &r))
			return true;
	}
	return false;
}

/* ---- fake-IP ------------------------------------------------------------ */

static void
fake_remember(struct assoc *a, int family, const uint8_t *ip, uint16_t port)
{
	struct dns_map	*m;
	uint8_t		 full[16];
	unsigned	 i, k;

	if ((m = dns_map_get(a)) == NULL)
		return;
	memset(full, 0, sizeof(full));
	memcpy(full, ip, family == AF_INET ? 4 : 16);
	for (k = 0; k < FAKE_MAP && k < m->fnext; k++)
		if (m->fake[k].port == port &&
		    memcmp(m->fake[k].ip, full, 16) == 0)
			return;
	i = m->fnext++ % FAKE_MAP;
	m->fake[i].port = port;
	memcpy(m->fake[i].ip, full, 16);
}

/* The fake address a reply from src's port answers, the latest first;
 * NULL when src is itself one the app sent to, or none matches. */
static const uint8_t *
fake_original(const struct assoc *a, const struct proto_dest *src)
{
	const struct dns_map *m = assoc_ext(a);
	unsigned	 k, i;

	if (m == NULL || m->fnext == 0 || src->atyp == PROTO_ATYP_DOMAIN)
		return NULL;
	for (k = 0; k < FAKE_MAP && k < m->fnext; k++) {
		i = (m->fnext - 1 - k) % FAKE_MAP;
		if (m->fake[i].port == src->port)
			return m->fake[i].ip;
	}
	return NULL;
}

static void flow_udp_dns_learn(struct flow_udp *, const uint8_t *, size_t);
static void flow_udp_dns_reply(struct flow_udp *, const struct pkt_ip *,
    const struct pkt_udp *, const uint8_t *, size_t);

/* A DNS query the table answers: the answer goes back from where the
 * app sent it.  true when answered. */
static bool
flow_udp_fake_answer(struct flow_udp *u, const struct pkt_ip *ip,
    const struct pkt_udp *ud)
{
	uint8_t		 ans[DNS_ANSWER_MAX];
	size_t		 n;

	if ((n = fakeip_answer(u->fakeip, u->conf, ud->data, ud->len, ans,
	    sizeof(ans))) == 0)
		return false;
	flow_udp_dns_reply(u, ip, ud, ans, n);
	return true;
}

/* A DNS answer made here (cache, fake-IP) to the app's query. */
static void
flow_udp_dns_reply(struct flow_udp *u, const struct pkt_ip *ip,
    const struct pkt_udp *ud, const uint8_t *ans, size_t n)
{
	uint8_t		*pkt = assoc_pkt_buf(u->assoc);

	n = pkt_build_udp(pkt, ip->family, ip->dst, ud->dport, ip->src,
	    ud->sport, ans, n, assoc_next_ipid(u->assoc));
	if (n > 0)
		(void)assoc_tun_write(u->assoc, pkt, n);
}

/* A stream upstream's answer, or its failure (SERVFAIL), to the app;
 * an answer longer than the app takes over UDP is cut to its question
 * with TC set (the app asks again over TCP). */
static void
flow_udp_on_dnsup(void *arg, const void *ctx, const uint8_t *query,
    size_t qlen, const uint8_t *reply, size_t len)
{
	struct flow_udp			*u = arg;
	const struct flow_udp_asker	*k = ctx;
	struct dns_query		 q;
	struct dns_reply		 rp;
	uint8_t				 ans[DNS_ANSWER_MAX], *pkt;
	uint8_t				 big[DNSSTREAM_MSG_MAX];
	size_t				 n, room;
	ssize_t				 r;

	if (dns_query_parse(query, qlen, &q) == -1) {
		if (k->tcp != NULL)
			k->tcp(k->tcp_arg, query, qlen, NULL, 0);
		return;
	}
	room = q.has_opt && q.opt_size > 512 ? q.opt_size : 512;
	/* An answer to another question would poison the cache. */
	if (reply != NULL && (dns_reply_parse(reply, len, &rp) == -1 ||
	    rp.q.qtype != q.qtype || rp.q.qclass != q.qclass ||
	    strcmp(rp.q.name, q.name) != 0)) {
		log_info("dns upstream %s: an answer to another question",
		    k->up >= 0 ? u->conf->client.dns_upstreams[k->up].name :
		    "server");
		reply = NULL;
	}
	if (reply == NULL && k->up >= 0 && k->up < FLOW_UDP_UPSTREAMS)
		u->st.dns_upstream_failed[k->up]++;
	if (reply != NULL && (k->tcp != NULL || len <= room))
		flow_udp_dns_learn(u, reply, len);
	if (k->tcp != NULL) {		/* no size limit but the stream's */
		k->tcp(k->tcp_arg, query, qlen, reply, len);
		return;
	}
	/* Too long: without its authority and additional records first. */
	if (reply != NULL && len > room && len <= sizeof(big)) {
		memcpy(big, reply, len);
		if ((r = dnsstream_strip(big, len)) > 0 && (size_t)r <= room) {
			reply = big;
			len = (size_t)r;
			flow_udp_dns_learn(u, reply, len);
		}
	}
	if (reply == NULL || len > room) {
		if ((r = dns_answer(ans, sizeof(ans), &q, reply != NULL ?
		    DNS_NOERROR : DNS_SERVFAIL, NULL, 0, 0)) < 0)
			return;
		if (reply != NULL)
			ans[2] |= DNS_FLAG_TC >> 8;
		reply = ans;
		len = (size_t)r;
	}
	pkt = assoc_pkt_buf(u->assoc);
	n = pkt_build_udp(pkt, k->family, k->dst, k->dport, k->app, k->aport,
	    reply, len, assoc_next_ipid(u->assoc));
	if (n > 0)
		(void)assoc_tun_write(u->assoc, pkt, n);
}

/* Asks upstream up (DNSUP_SERVER: client.dns's server) for k; refused
 * there, the failure now. */
static void
flow_udp_dns_ask_up(struct flow_udp *u, const struct flow_udp_asker *k,
    const uint8_t *msg, size_t len)
{
	if (u->dnsup == NULL && (u->dnsup = dnsup_new(u->loop, u->conf,
	    u->obs, flow_udp_on_dnsup, u)) == NULL) {
		flow_udp_on_dnsup(u, k, msg, len, NULL, 0);
		return;
	}
	if (dnsup_query(u->dnsup, k->up, msg, len, k, sizeof(*k)) == -1)
		flow_udp_on_dnsup(u, k, msg, len, NULL, 0);
}

/* A query for a tcp, tls or https upstream: the client asks it (dnsup.h);
 * refused there, SERVFAIL now. */
static void
flow_udp_dns_stream(struct flow_udp *u, const struct pkt_ip *ip,
    const struct pkt_udp *ud, int up)
{
	struct flow_udp_asker	k;

	memset(&k, 0, sizeof(k));
	k.family = ip->family;
	memcpy(k.app, ip->src, ip->family == AF_INET ? 4 : 16);
	memcpy(k.dst, ip->dst, ip->family == AF_INET ? 4 : 16);
	k.aport = ud->sport;
	k.dport = ud->dport;
	k.up = up;
	flow_udp_dns_ask_up(u, &k, ud->data, ud->len);
}

/*
 * A real query: -2 when the cache answers it (*n bytes into ans), else
 * the index of the upstream its name's domains choose (counted), -1 for
 * none (client.dns's server).
 */
static int
flow_udp_dns_pick(struct flow_udp *u, const uint8_t *msg, size_t len,
    uint8_t *ans, size_t anslen, size_t *n)
{
	struct dns_query	 q;
	int			 up = -1;

	if (dns_query_parse(msg, len, &q) == 0) {
		if ((*n = dnsfwd_cache_get(u->cache, &q, loop_now(u->loop), ans,
		    anslen)) > 0)
			return -2;
		up = dnsfwd_pick(u->conf, q.name);
	}
	if (up >= 0 && up < FLOW_UDP_UPSTREAMS)
		u->st.dns_upstream[up]++;
	return up;
}

/*
 * Real DNS: a query answered from the cache (true), else where it goes:
 * the upstream its name's domains choose, else client.dns's server;
 * *pin false when neither (it goes where the app sent it).
 */
static bool
flow_udp_dns_route(struct flow_udp *u, const struct pkt_ip *ip,
    const struct pkt_udp *ud, struct proto_dest *dst, bool *pin)
{
	const struct conf	*c = u->conf;
	uint8_t			 ans[DNSFWD_MSG_MAX];
	size_t			 n;
	int			 up;

	*pin = false;
	if (!c->client.has_dns && c->client.ndns_upstreams == 0)
		return false;
	if ((up = flow_udp_dns_pick(u, ud->data, ud->len, ans, sizeof(ans),
	    &n)) == -2) {
		flow_udp_dns_reply(u, ip, ud, ans, n);
		return true;
	}
	if (dnsup_wants(c, up)) {
		flow_udp_dns_stream(u, ip, ud, up);
		return true;
	}
	if (up >= 0) {
		frame_dest_from_addr(dst, &c->client.dns_upstreams[up].addr);
	} else if (c->client.has_dns) {
		frame_dest_from_addr(dst, &c->client.dns);
	} else {
		return false;
	}
	*pin = true;
	return false;
}

/*
 * Whether the outbound a flow to name (net, port) would take is direct,
 * which cannot send to a name: the rules by the name alone, else final
 * (as fakeip_answer judged it when it gave the address).
 */
static bool
flow_udp_name_direct(const struct conf *c, const char *name, unsigned net,
    uint16_t port)
{
	struct rule_query	q;
	struct rule_hit		h;
	int			i;

	rules_query_flow(&q, NULL, NULL, net, name);
	q.port = port;
	i = rules_match(c->client.rules, &q, (int)c->client.final, &h);
	return i >= 0 && (size_t)i < c->client.noutbounds &&
	    c->client.outbounds[i].protocol == CONF_PROTO_DIRECT;
}

/*
 * A datagram to a fake address goes to its name (the server resolves
 * it).  false: refuse it -- no name (evicted, or never issued), or an
 * outbound that cannot send to a name (direct).
 */
static bool
flow_udp_fake_dest(struct flow_udp *u, const struct pkt_ip *ip,
    const struct pkt_udp *ud, struct proto_dest *dst)
{
	const char	*name;

	if ((name = fakeip_name(u->fakeip, ip->family, ip->dst)) == NULL ||
	    flow_udp_name_direct(u->conf, name, RULES_NET_UDP, ud->dport))
		return false;
	memset(dst, 0, sizeof(*dst));
	dst->atyp = PROTO_ATYP_DOMAIN;
	snprintf(dst->domain, sizeof(dst->domain), "%s", name);
	dst->port = ud->dport;
	return true;
}

/*
 * A query the table does not answer (another type than A and AAAA, say
 * TXT or HTTPS) for a name it gives fake addresses to: the rules would
 * route it by the resolver's address, and a resolver on a direct network
 * would learn a tunnelled name.  It goes where the name's flows go
 * instead.  A name under a dns.upstreams entry's domains goes to that
 * upstream as configured.  The name into buf, or NULL: route by the
 * address.
 */
static const char *
flow_udp_fake_qname(struct flow_udp *u, const struct pkt_udp *ud, char *buf,
    size_t len)
{
	struct dns_query q;

	if (dns_query_parse(ud->data, ud->len, &q) == -1 || !q.plain ||
	    q.name[0] == '\0' || fakeip_excluded(u->conf, q.name) ||
	    fakeip_direct(u->conf, q.name) ||
	    dnsfwd_pick(u->conf, q.name) >= 0)
		return NULL;
	snprintf(buf, len, "%s", q.name);
	return buf;
}

/* A query the app sent over TCP (flow_udp.h). */
void
flow_udp_dns_ask(struct flow_udp *u, const uint8_t *msg, size_t len,
    flow_udp_answer *done, void *arg)
{
	struct flow_udp_asker	k;
	uint8_t			ans[DNSFWD_MSG_MAX];
	char			qname[DNS_TEXT_MAX];
	struct pkt_udp		ud;
	struct dns_query	q;
	size_t			n;
	ssize_t			r;

	if (u->fakeip != NULL && (n = fakeip_answer(u->fakeip, u->conf, msg,
	    len, ans, sizeof(ans))) > 0) {
		done(arg, msg, len, ans, n);
		return;
	}
	memset(&k, 0, sizeof(k));
	k.tcp = done;
	k.tcp_arg = arg;
	if ((k.up = flow_udp_dns_pick(u, msg, len, ans, sizeof(ans), &n)) ==
	    -2) {
		done(arg, msg, len, ans, n);
		return;
	}
	/* A fake name's other queries: the datagram way goes by the name,
	 * which a stream cannot; none is the answer that leaks nothing. */
	memset(&ud, 0, sizeof(ud));
	ud.data = msg;
	ud.len = len;
	if (u->fakeip != NULL && flow_udp_fake_qname(u, &ud, qname,
	    sizeof(qname)) != NULL && dns_query_parse(msg, len, &q) == 0 &&
	    (r = dns_answer(ans, sizeof(ans), &q, DNS_NOERROR, NULL, 0,
	    0)) > 0) {
		done(arg, msg, len, ans, (size_t)r);
		return;
	}
	u->st.dns_pinned++;
	flow_udp_dns_ask_up(u, &k, msg, len);
}

static void flow_udp_refuse_echo(struct flow_udp *, const struct pkt_ip *);

/* ICMP: an echo to a fake address pings its name; one without a name
 * (or under direct, which pings by address) is dropped, counted as a
 * miss.  One whose outbound is block is answered "prohibited". */
static int
flow_udp_icmp(struct flow_udp *u, const struct pkt_ip *ip)
{
	const char	*name = NULL;
	bool		 blocked = false;
	const uint8_t	*q;
	size_t		 qlen;
	unsigned	 mtu;
	int		 rc;

	/* A router between us and the app: our packet was too big for
	 * its link (IPv6 routers do not fragment). */
	if ((rc = pkt_ptb6_parse(ip, &mtu, &q, &qlen)) != PKT_OTHER) {
		if (rc == PKT_OK) {
			tsnetif_ptb6(q, qlen, mtu);
			if (u->on_ptb6 != NULL)
				u->on_ptb6(u->ptb6_arg, q, qlen, mtu);
		}
		return rc;
	}
	if (u->fakeip != NULL &&
	    fakeip_contains(u->fakeip, ip->family, ip->dst) &&
	    ((name = fakeip_name(u->fakeip, ip->family, ip->dst)) == NULL ||
	    flow_udp_name_direct(u->conf, name, RULES_NET_ICMP, 0)))
		return PKT_OK;
	rc = flow_icmp_input(u->assoc, ip, name, &blocked);
	if (blocked)
		flow_udp_refuse_echo(u, ip);
	return rc;
}

void
flow_udp_set_fakeip(struct flow_udp *u, struct fakeip *t)
{
	u->fakeip = t;
}

void
flow_udp_on_ptb6(struct flow_udp *u, void (*fn)(void *arg,
    const uint8_t *quote, size_t qlen, unsigned mtu), void *arg)
{
	u->on_ptb6 = fn;
	u->ptb6_arg = arg;
}

/* ---- UDP both ways ------------------------------------------------------- */

/* An upstream's answer: cached, its addresses learnt for the rules. */
static void
flow_udp_dns_learn(struct flow_udp *u, const uint8_t *data, size_t len)
{
	dnsfwd_cache_put(u->cache, data, len, loop_now(u->loop));
	flow_udp_names_learn(u, data, len);
}

void
flow_udp_names_learn(struct flow_udp *u, const uint8_t *msg, size_t len)
{
	if (u->names == NULL && (u->names = dnsfwd_names_new(
	    DNSFWD_NAMES_MAX)) != NULL)
		dnsfwd_names_use(u->names);
	dnsfwd_names_learn(u->names, msg, len);
}

static int
flow_udp_deliver(void *arg, struct assoc *a, const struct proto_dest *src,
    const uint8_t *data, size_t len)
{
	struct flow_udp		*u = arg;
	struct assoc_env	*e = u->assoc;
	const struct assoc_key	*k = assoc_key(a);
	const struct proto_dest	*orig;
	struct proto_dest	 fake;
	uint8_t			*pkt = assoc_pkt_buf(e);
	const uint8_t		*fip;
	size_t			 n;

	if (dns_resolver(u->conf, src) &&
	    (orig = dns_original(a, data, len)) != NULL) {
		if (dns_asked(a, data, len))
			flow_udp_dns_learn(u, data, len);
		src = orig;
	}
	if (u->fakeip != NULL && (fip = fake_original(a, src)) != NULL) {
		frame_dest_from_ip(&fake, k->family, fip, src->port);
		src = &fake;
	}
	if ((k->family == AF_INET && src->atyp != PROTO_ATYP_IPV4) ||
	    (k->family == AF_INET6 && src->atyp != PROTO_ATYP_IPV6))
		return -1;
	n = pkt_build_udp(pkt, k->family, src->ip, src->port, k->addr, k->port,
	    data, len, assoc_next_ipid(e));
	if (n == 0)
		return -1;
	return assoc_tun_write(e, pkt, n);
}

/*
 * protocol block: the datagram is refused (assoc_get counts it) and the
 * app told so at once with an ICMP "administratively prohibited" from the
 * destination -- a connected socket then fails with EHOSTUNREACH or
 * EACCES instead of waiting for a timeout.  At most UNREACH_PER_S a
 * second, like a router's rate limit.
 */
static bool
flow_udp_unreach_ok(struct flow_udp *u)
{
	uint64_t	now_s = loop_now(u->loop) / 1000;

	if (now_s != u->unreach_s) {
		u->unreach_s = now_s;
		u->unreach_n = 0;
	}
	if (u->unreach_n >= UNREACH_PER_S)
		return false;
	u->unreach_n++;
	return true;
}

static void
flow_udp_refuse(struct flow_udp *u, const struct pkt_ip *ip,
    const struct pkt_udp *ud)
{
	struct assoc_env	*e = u->assoc;
	uint8_t			*orig = assoc_pkt_buf(e), msg[1280];
	size_t			 olen, n;

	if (!flow_udp_unreach_ok(u))
		return;
	/* The quote: the app's datagram as it was (rebuilt if it came in
	 * fragments). */
	olen = pkt_build_udp(orig, ip->family, ip->src, ud->sport, ip->dst,
	    ud->dport, ud->data, ud->len, 0);
	n = pkt_build_unreach(msg, ip->family, ip->dst, ip->src,
	    ip->family == AF_INET ? PKT_UNREACH_ADMIN4 : PKT_UNREACH_ADMIN6,
	    orig, olen, assoc_next_ipid(e));
	if (olen > 0 && n > 0)
		(void)assoc_tun_write(e, msg, n);
}

/*
 * An echo request whose outbound is block: "administratively prohibited"
 * as for UDP, quoting the request (rebuilt: its checksum is not
 * recomputed, which no host checks in a quote).
 */
static void
flow_udp_refuse_echo(struct flow_udp *u, const struct pkt_ip *ip)
{
	struct assoc_env	*e = u->assoc;
	uint8_t			*orig = assoc_pkt_buf(e), msg[1280];
	size_t			 olen, n, hl = ip->family == AF_INET ? 20 : 40;

	if (!flow_udp_unreach_ok(u) || ip->l4_len < 8)
		return;
	olen = pkt_build_echo_reply(orig, ip->family, ip->src, ip->dst,
	    0, 0, ip->l4 + 8, ip->l4_len - 8, 0);
	if (olen < hl + 8)
		return;
	memcpy(orig + hl, ip->l4, 8);	/* the request's own header */
	n = pkt_build_unreach(msg, ip->family, ip->dst, ip->src,
	    ip->family == AF_INET ? PKT_UNREACH_ADMIN4 : PKT_UNREACH_ADMIN6,
	    orig, olen, assoc_next_ipid(e));
	if (n > 0)
		(void)assoc_tun_write(e, msg, n);
}

/* A datagram of a QUIC conversation, held or not: routed and queued
 * (no ICMP for a refusal here: the app's packet is gone). */
static void
flow_udp_conv_send(void *arg, const struct quic_conv *c, const uint8_t *data,
    size_t len, const char *domain)
{
	struct flow_udp		*u = arg;
	struct assoc_key	 key;
	struct proto_dest	 dst;
	struct assoc		*a;

	memset(&key, 0, sizeof(key));
	key.kind = PROTO_KIND_UDP;
	key.family = (uint8_t)c->family;
	key.port = c->sport;
	memcpy(key.addr, c->src, c->family == AF_INET ? 4 : 16);
	frame_dest_from_ip(&dst, c->family, c->dst, c->dport);
	if ((a = assoc_get_named(u->assoc, &key, &dst, domain)) != NULL)
		(void)assoc_send(a, &dst, data, len, false);
}

/* Conversations held for sniff_timeout go by address. */
static void
flow_udp_on_quic_timer(struct loop_timer *t)
{
	struct flow_udp	*u = container_of(t, struct flow_udp, quic_timer);
	uint64_t	 now = loop_now(u->loop), next;

	next = quic_route_expire(u->quic, now, flow_udp_conv_send, u);
	if (next != 0)
		loop_timer_set(u->loop, &u->quic_timer, next > now ?
		    next - now : 1);
}

/*
 * client.sniff: a datagram to UDP/443 may start a QUIC conversation whose
 * Initial names the domain; the rules route it, and every later datagram
 * of the conversation, by that name (quic_route.h), held back while its
 * ClientHello is not whole (at most sniff_timeout).  1: held, nothing to
 * send now; 0: send, routed by *domain (NULL: none).
 */
static int
flow_udp_quic(struct flow_udp *u, const struct pkt_ip *ip,
    const struct pkt_udp *ud, const char **domain, const char **found)
{
	const struct conf	*c = u->conf;
	struct quic_conv	 qc = { ip->family, ip->src, ip->dst, ud->sport,
	    ud->dport };

	*found = *domain = NULL;
	if (ud->dport != QUIC_PORT || c->client.sniff == CONF_SNIFF_NEVER ||
	    (c->client.sniff == CONF_SNIFF_AUTO &&
	    !rules_use_domains(c->client.rules)))
		return 0;
	if (u->quic == NULL && (u->quic = quic_route_new()) == NULL)
		return 0;
	if (quic_route_datagram(u->quic, &qc, ud->data, ud->len,
	    loop_now(u->loop), c->client.udp_timeout_ms,
	    c->client.sniff_timeout_ms, domain, found, flow_udp_conv_send,
	    u) == 0)
		return 0;
	if (!loop_timer_armed(&u->quic_timer))
		loop_timer_set(u->loop, &u->quic_timer,
		    c->client.sniff_timeout_ms);
	return 1;
}

/* The name a conversation's Initial gave, on the association's log. */
static void
flow_udp_quic_log(struct assoc *a, const struct pkt_ip *ip,
    const struct pkt_udp *ud, const char *name)
{
	struct assoc_sniff	*s = assoc_sniff(a);
	char			 app[ADDR_STRLEN], to[ADDR_STRLEN];
	struct addr		 sa, da;

	if (s->domain[0] == '\0')
		snprintf(s->domain, sizeof(s->domain), "%s", name);
	addr_from_raw(&sa, ip->family, ip->src, ud->sport);
	addr_from_raw(&da, ip->family, ip->dst, ud->dport);
	log_at(log_flow_level(), "udp %llu %s: domain %s (quic) to %s",
	    (unsigned long long)assoc_id(a), addr_fmt(&sa, app, sizeof(app)),
	    name, addr_fmt(&da, to, sizeof(to)));
}

static int
flow_udp_datagram(struct flow_udp *u, const struct pkt_ip *ip)
{
	struct pkt_udp		 ud;
	struct assoc_key	 key;
	struct proto_dest	 dst, orig;
	struct assoc		*a;
	const char		*domain = NULL, *found = NULL;
	char			 qname[DNS_TEXT_MAX];
	bool			 dns, pin, fake = false, by_name = false;
	int			 rc;

	if ((rc = pkt_udp_parse(ip, &ud)) != PKT_OK)
		return rc;
	memset(&key, 0, sizeof(key));
	key.kind = PROTO_KIND_UDP;
	key.family = (uint8_t)ip->family;
	key.port = ud.sport;
	memcpy(key.addr, ip->src, ip->family == AF_INET ? 4 : 16);
	frame_dest_from_ip(&dst, ip->family, ip->dst, ud.dport);
	dns = ud.dport == DNS_PORT;
	if (u->fakeip != NULL) {
		if (dns && flow_udp_fake_answer(u, ip, &ud))
			return PKT_OK;
		if (fakeip_contains(u->fakeip, ip->family, ip->dst)) {
			if (!flow_udp_fake_dest(u, ip, &ud, &dst)) {
				flow_udp_refuse(u, ip, &ud);
				return PKT_OK;
			}
			fake = true;
			dns = false;
		}
	}
	orig = dst;
	pin = false;
	if (dns && flow_udp_dns_route(u, ip, &ud, &dst, &pin))
		return PKT_OK;		/* answered from the cache */
	if (dns && u->fakeip != NULL)
		by_name = (domain = flow_udp_fake_qname(u, &ud, qname,
		    sizeof(qname))) != NULL;
	else if (!fake && !pin &&
	    flow_udp_quic(u, ip, &ud, &domain, &found) == 1)
		return PKT_OK;		/* held: its hello is not whole */
	if ((a = assoc_get_routed(u->assoc, &key, &dst, domain,
	    by_name)) == NULL) {
		/* Its outbound is block: say so, as a firewall would. */
		if (assoc_refusal(u->assoc) == ASSOC_REFUSED_BLOCK)
			flow_udp_refuse(u, ip, &ud);
		return PKT_OK;
	}
	if (pin) {
		dns_remember(a, &orig, ud.data, ud.len);
		u->st.dns_pinned++;
	}
	if (found != NULL)
		flow_udp_quic_log(a, ip, &ud, found);
	if (fake)
		fake_remember(a, ip->family, ip->dst, ud.dport);
	(void)assoc_send(a, &dst, ud.data, ud.len, dns);
	return PKT_OK;
}

/* ---- the packet entry ------------------------------------------------------ */

static void
flow_udp_on_reass_timer(struct loop_timer *t)
{
	struct flow_udp	*u = container_of(t, struct flow_udp, reass_timer);

	if (reass_expire(u->reass, loop_now(u->loop)) > 0)
		loop_timer_set(u->loop, t, 1000);
}

/* Fragments: 1 with ip now the whole datagram, 0 held or dropped. */
static int
flow_udp_reassemble(struct flow_udp *u, struct pkt_ip *ip)
{
	int	rc;

	rc = reass_add(u->reass, ip, loop_now(u->loop));
	if (!loop_timer_armed(&u->reass_timer))
		loop_timer_set(u->loop, &u->reass_timer, 1000);
	if (rc != 1)
		return 0;
	/* IPv6: the fragmentable part may start with more extension
	 * headers. */
	if (ip->family == AF_INET6 &&
	    pkt_parse_ext6(ip, ip->proto, ip->l4, ip->l4_len) != PKT_OK) {
		u->st.rx_malformed++;
		return 0;
	}
	return 1;
}

bool
flow_udp_input(struct flow_udp *u, const uint8_t *pkt, size_t len)
{
	struct pkt_ip	ip;
	int		rc;

	switch (pkt_parse(pkt, len, &ip)) {
	case PKT_OK:
		break;
	case PKT_BADSUM:
		u->st.rx_badsum++;
		return true;
	default:
		u->st.rx_malformed++;
		return true;
	}
	if (!flow_udp_unicast(&ip))
		return false;
	if (ip.frag && flow_udp_reassemble(u, &ip) == 0)
		return true;
	if (ip.proto == PKT_PROTO_UDP)
		rc = flow_udp_datagram(u, &ip);
	else if (ip.proto == (ip.family == AF_INET ? PKT_PROTO_ICMP :
	    PKT_PROTO_ICMP6))
		rc = flow_udp_icmp(u, &ip);
	else
		rc = PKT_OTHER;
	switch (rc) {
	case PKT_OK:
		return true;
	case PKT_BADSUM:
		u->st.rx_badsum++;
		return true;
	case PKT_MALFORMED:
		u->st.rx_malformed++;
		return true;
	default:
		return false;	/* tsnetif counts it as unsupported */
	}
}

/* ---- lifetime ---------------------------------------------------------- */

struct flow_udp *
flow_udp_new(const struct assoc_cfg *cfg)
{
	struct flow_udp		*u;
	struct assoc_ops	 ops;

	if ((u = calloc(1, sizeof(*u))) == NULL)
		return NULL;
	u->loop = cfg->loop;
	u->conf = cfg->conf;
	u->obs = cfg->obs;
	loop_timer_init(&u->reass_timer, flow_udp_on_reass_timer);
	loop_timer_init(&u->quic_timer, flow_udp_on_quic_timer);
	if ((u->reass = reass_new()) == NULL ||
	    (u->assoc = assoc_env_new(cfg)) == NULL) {
		reass_free(u->reass);
		free(u);
		return NULL;
	}
	memset(&ops, 0, sizeof(ops));
	ops.deliver = flow_udp_deliver;
	ops.ext_free = dns_map_free;
	ops.arg = u;
	assoc_env_set_ops(u->assoc, PROTO_KIND_UDP, &ops);
	flow_icmp_init(u->assoc);
	u->cache = dnsfwd_cache_new(u->conf->client.dns_cache_size);
	return u;
}

static void
flow_udp_log_stats(const struct flow_udp *u)
{
	const struct assoc_stats	*a = assoc_stats(u->assoc);
	const struct reass_stats	*r = reass_stats(u->reass);

	log_info("udp: %llu associations (%llu expired, %llu evicted, %llu "
	    "failed), up %llu down %llu datagrams, dropped %llu queue full "
	    "%llu holding %llu undeliverable %llu refused by the socket %llu "
	    "blocked %llu ICMP without a carrier",
	    (unsigned long long)a->created, (unsigned long long)a->expired,
	    (unsigned long long)a->evicted, (unsigned long long)a->failed,
	    (unsigned long long)a->dgrams_up, (unsigned long long)a->dgrams_down,
	    (unsigned long long)a->drop_queue, (unsigned long long)a->drop_hold,
	    (unsigned long long)a->drop_down, (unsigned long long)a->drop_send,
	    (unsigned long long)a->drop_block,
	    (unsigned long long)a->drop_proto);
	log_info("udp: packets in: %llu malformed, %llu bad checksum; "
	    "fragments: %llu held, %llu datagrams reassembled, %llu timed out, "
	    "%llu evicted, %llu invalid; %llu DNS queries pinned",
	    (unsigned long long)u->st.rx_malformed,
	    (unsigned long long)u->st.rx_badsum,
	    (unsigned long long)r->fragments, (unsigned long long)r->completed,
	    (unsigned long long)r->timeouts, (unsigned long long)r->evicted,
	    (unsigned long long)r->invalid,
	    (unsigned long long)u->st.dns_pinned);
}

void
flow_udp_free(struct flow_udp *u)
{
	if (u == NULL)
		return;
	flow_udp_log_stats(u);
	/* First: its queries' failures are answered through the rest. */
	dnsup_free(u->dnsup);
	loop_timer_cancel(u->loop, &u->reass_timer);
	loop_timer_cancel(u->loop, &u->quic_timer);
	assoc_env_free(u->assoc);
	reass_free(u->reass);
	quic_route_free(u->quic);
	dnsfwd_cache_free(u->cache);
	dnsfwd_names_free(u->names);
	free(u);
}

const struct flow_udp_stats *
flow_udp_stats(const struct flow_udp *u)
{
	return &u->st;
}

const struct dnsfwd_stats *
flow_udp_dns_cache_stats(const struct flow_udp *u)
{
	return dnsfwd_cache_stats(u->cache);
}

const struct reass_stats *
flow_udp_reass_stats(const struct flow_udp *u)
{
	return reass_stats(u->reass);
}

void
flow_udp_reconfigure(struct flow_udp *u, const struct conf *c,
    struct outbounds *obs)
{
	if (u == NULL)
		return;
	/* Other upstreams or another size: the answers start anew. */
	dnsfwd_cache_free(u->cache);
	u->cache = dnsfwd_cache_new(c->client.dns_cache_size);
	memset(u->st.dns_upstream, 0, sizeof(u->st.dns_upstream));
	memset(u->st.dns_upstream_failed, 0,
	    sizeof(u->st.dns_upstream_failed));
	dnsup_retire(u->dnsup);
	u->dnsup = NULL;
	u->conf = c;
	u->obs = obs;
	assoc_env_reconfigure(u->assoc, c, obs);
}

struct assoc_env *
flow_udp_assoc(struct flow_udp *u)
{
	return u->assoc;
}
