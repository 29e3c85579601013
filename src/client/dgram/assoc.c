/*
 * Client datagram associations (see assoc.h): the table, the bounds, the
 * timers and delivery.  The transports (assoc_int.h) carry the datagrams.
 *
 * Life of an association: made by the first datagram of its app endpoint,
 * it opens its way out at once, queueing datagrams meanwhile.  It is
 * "ready" once the peer agreed (native: status byte 0; trojan: TLS up;
 * socks5: the UDP ASSOCIATE reply; direct: at once): until then the
 * connect timeout runs, afterwards the idle one.  It ends when idle for
 * udp_timeout (dns_timeout for DNS-only and ICMP), when evicted for room,
 * when the peer ends it, or on a failure, after a short hold-down.
 */
#include "config.h"

#include "client/dgram/assoc.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <sodium.h>

#include "core/addr.h"
#include "client/dgram/assoc_int.h"
#include "client/group.h"
#include "client/outbound.h"
#include "client/route.h"
#include "core/buf.h"
#include "conf/conf.h"
#include "core/dq.h"
#include "core/limit.h"
#include "core/log.h"
#include "core/loop.h"
#include "rules/rules.h"
#include "wire/pkt.h"
#include "stack/tsnetif.h"

static void assoc_on_timer(struct loop_timer *);
static uint64_t assoc_timeout(const struct assoc *);

const char *
assoc_kind_str(uint8_t kind)
{
	return kind == PROTO_KIND_ICMP ? "icmp" : "udp";
}

const char *
assoc_kstr(const struct assoc *a)
{
	return assoc_kind_str(a->key.kind);
}

static const char *
assoc_app(const struct assoc *a, char *buf, size_t len)
{
	struct addr	sa;

	addr_from_raw(&sa, a->key.family, a->key.addr, a->key.port);
	return addr_fmt(&sa, buf, len);
}

/* ---- table ------------------------------------------------------------- */

static size_t
assoc_bucket(const struct assoc_env *e, const struct assoc_key *k)
{
	uint64_t	h;

	/* Keyed: apps behind a router must not be able to aim for one
	 * chain. */
	crypto_shorthash((unsigned char *)&h, (const unsigned char *)k,
	    sizeof(*k), e->hkey);
	return (size_t)(h & (e->nbuckets - 1));
}

static struct assoc *
assoc_lookup(struct assoc_env *e, const struct assoc_key *k)
{
	struct assoc	*a;

	LIST_FOREACH(a, &e->buckets[assoc_bucket(e, k)], hash)
		if (memcmp(&a->key, k, sizeof(*k)) == 0)
			return a;
	return NULL;
}

void
assoc_touch(struct assoc *a)
{
	struct assoc_env	*e = a->env;

	a->last_ms = loop_now(e->loop);
	if (TAILQ_FIRST(&e->lru) != a) {
		TAILQ_REMOVE(&e->lru, a, lru);
		TAILQ_INSERT_HEAD(&e->lru, a, lru);
	}
}

/* The transport of a protocol; NULL: block. */
static const struct assoc_tp *
assoc_tp_of(enum conf_proto p)
{
	switch (p) {
	case CONF_PROTO_TUNSPLIT:
		return &assoc_tp_tunsplit;
	case CONF_PROTO_TROJAN:
		return &assoc_tp_trojan;
	case CONF_PROTO_SOCKS5:
		return &assoc_tp_socks5;
	case CONF_PROTO_DIRECT:
		return &assoc_tp_direct;
	case CONF_PROTO_BLOCK:
		break;
	}
	return NULL;
}

/* ---- teardown ---------------------------------------------------------- */

/* Ends the way out (once per open) and drops what was queued for it. */
static void
assoc_drop_way(struct assoc *a, bool abort)
{
	struct assoc_env	*e = a->env;

	if (a->phase != ASSOC_HOLD && a->tp != NULL)
		a->tp->drop(a, abort);
	a->hup = a->write_blocked = false;
	e->qtotal -= dq_bytes(&a->q);
	a->drops += dq_clear(&a->q);
	a->retry_len = 0;
	buf_free(&a->rx);
}

/* The single teardown; idempotent.  Freed at the end of the iteration. */
static void
assoc_close(struct assoc *a, bool abort, const char *reason)
{
	struct assoc_env	*e = a->env;
	char			 app[ADDR_STRLEN], why[128];

	if (a->closing)
		return;
	a->closing = true;
	assoc_drop_way(a, abort);
	loop_timer_cancel(e->loop, &a->timer);
	LIST_REMOVE(a, hash);
	TAILQ_REMOVE(&e->lru, a, lru);
	if (a->ext != NULL && e->ops[a->key.kind].ext_free != NULL)
		e->ops[a->key.kind].ext_free(a->ext);
	a->ext = NULL;
	free(a->first);
	a->first = NULL;
	e->n--;
	e->st.active = e->n;
	outbound_close(a->ob, a->failed, a->up_b, a->down_b);
	log_at(log_flow_level(), "%s %llu %s%s%s%s: %s, up %llu dgrams %llu "
	    "bytes, down %llu dgrams %llu bytes, %llu dropped, %llu ms, "
	    "outbound %s, %s, %u left",
	    assoc_kstr(a), (unsigned long long)a->id,
	    assoc_app(a, app, sizeof(app)), a->sniff.domain[0] != '\0' ?
	    " (" : "", a->sniff.domain, a->sniff.domain[0] != '\0' ? ")" : "",
	    reason,
	    (unsigned long long)a->up_d, (unsigned long long)a->up_b,
	    (unsigned long long)a->down_d, (unsigned long long)a->down_b,
	    (unsigned long long)a->drops,
	    (unsigned long long)(loop_now(e->loop) - a->start_ms),
	    outbound_name(a->ob), client_route_why(a->ob, a->rule, why,
	    sizeof(why)), e->n);
	SLIST_INSERT_HEAD(&e->reap, a, reap_entry);
}

/* A failure: the way out goes, the association holds its place (and
 * drops datagrams) for ASSOC_HOLD_MS, then closes. */
void
assoc_fail(struct assoc *a, const char *reason)
{
	char	app[ADDR_STRLEN];

	if (a->closing || a->phase == ASSOC_HOLD)
		return;
	a->env->st.failed++;
	a->failed = true;
	if (strcmp(reason, ASSOC_OOM) == 0)
		a->env->st.internal++;
	log_at(strcmp(reason, ASSOC_OOM) == 0 ? LOG_LVL_WARN :
	    log_flow_level(), "%s %llu %s: %s", assoc_kstr(a), (unsigned long long)a->id,
	    assoc_app(a, app, sizeof(app)), reason);
	a->reason = reason;
	/* Health: a server (or proxy) that never answered. */
	if (!a->ready && a->ob->has_server && strcmp(reason, ASSOC_OOM) != 0 &&
	    strcmp(reason, "TLS setup failed") != 0 &&
	    strcmp(reason, "epoll") != 0)
		outbound_fail(a->ob, reason);
	assoc_drop_way(a, true);
	a->phase = ASSOC_HOLD;
	loop_timer_set(a->env->loop, &a->timer, ASSOC_HOLD_MS);
}

/* The peer ended a working association: no hold-down needed.  Before it
 * was ready, an end is a failure. */
void
assoc_end(struct assoc *a, const char *reason)
{
	if (a->ready)
		assoc_close(a, false, reason);
	else
		assoc_fail(a, reason);
}

/* ---- for the transports -------------------------------------------------- */

void
assoc_ready(struct assoc *a)
{
	if (a->ready || a->closing || a->phase == ASSOC_HOLD)
		return;
	a->ready = true;
	a->phase = ASSOC_RELAY;
	if (a->ob->has_server)	/* health: the server answered */
		outbound_ok(a->ob);
	/* From the connect deadline to the idle one. */
	loop_timer_set(a->env->loop, &a->timer, assoc_timeout(a));
}

void
assoc_q_consume(struct assoc *a, size_t n)
{
	dq_consume(&a->q, n);
	a->env->qtotal -= n;
}

void
assoc_deliver(struct assoc *a, const struct proto_dest *src,
    const uint8_t *data, size_t len)
{
	struct assoc_env	*e = a->env;
	const struct assoc_ops	*ops = &e->ops[a->key.kind];

	a->down_d++;
	a->down_b += len;
	e->st.dgrams_down++;
	e->st.bytes_down += len;
	if (ops->deliver == NULL || ops->deliver(ops->arg, a, src, data,
	    len) < 0) {
		e->st.drop_down++;
		a->drops++;
	}
}

/* ---- the per-iteration pass -------------------------------------------- */

void
assoc_mark_dirty(struct assoc *a)
{
	if (a->dirty || a->closing)
		return;
	a->dirty = true;
	SLIST_INSERT_HEAD(&a->env->dirty, a, dirty_entry);
}

static void
assoc_on_iteration(void *arg)
{
	struct assoc_env	*e = arg;
	struct assoc_work_list	 batch;
	struct assoc		*a;

	/* Marked during a round: worked in the next one. */
	while (!SLIST_EMPTY(&e->dirty)) {
		batch = e->dirty;
		SLIST_INIT(&e->dirty);
		while ((a = SLIST_FIRST(&batch)) != NULL) {
			SLIST_REMOVE_HEAD(&batch, dirty_entry);
			a->dirty = false;
			if (!a->closing && a->phase != ASSOC_HOLD)
				a->tp->work(a);
		}
	}
	while ((a = SLIST_FIRST(&e->reap)) != NULL) {
		SLIST_REMOVE_HEAD(&e->reap, reap_entry);
		outbound_unref(a->ob);
		free(a);
	}
}

/* ---- timers ------------------------------------------------------------ */

static uint64_t
assoc_timeout(const struct assoc *a)
{
	const struct conf	*c = a->env->conf;

	if (a->key.kind == PROTO_KIND_ICMP || a->short_lived)
		return c->client.dns_timeout_ms;
	return c->client.udp_timeout_ms;
}

static void
assoc_on_timer(struct loop_timer *t)
{
	struct assoc		*a = container_of(t, struct assoc, timer);
	uint64_t		 now = loop_now(a->env->loop), at;

	if (a->phase == ASSOC_HOLD) {
		assoc_close(a, false, a->reason);
		return;
	}
	if (!a->ready) {
		at = a->start_ms + a->ob->co->connect_timeout_ms;
		if (now >= at) {
			assoc_fail(a, "connect timeout");
			return;
		}
	} else {
		at = a->last_ms + assoc_timeout(a);
		if (now >= at) {
			a->env->st.expired++;
			assoc_close(a, false, "idle timeout");
			return;
		}
	}
	loop_timer_set(a->env->loop, t, at - now);
}

/* ---- making associations ----------------------------------------------- */

/* max_udp, or this worker's share of it. */
static unsigned
assoc_max(const struct assoc_env *e)
{
	unsigned n = e->share > 1 ? e->share : 1;

	return (e->conf->client.max_udp + n - 1) / n;
}

static struct assoc *
assoc_new(struct assoc_env *e, const struct assoc_key *key,
    const struct proto_dest *dst, struct outbound *ob, int rule)
{
	struct assoc	*a, *old;
	size_t		 b;

	while (e->n >= assoc_max(e) &&
	    (old = TAILQ_LAST(&e->lru, assoc_lru)) != NULL) {
		e->st.evicted++;
		assoc_close(old, false, "evicted (max_udp)");
	}
	if ((a = calloc(1, sizeof(*a))) == NULL ||
	    (a->first = malloc(sizeof(*a->first))) == NULL) {
		free(a);
		return NULL;
	}
	a->key = *key;
	a->env = e;
	a->ob = outbound_ref(ob);
	a->tp = assoc_tp_of(ob->co->protocol);
	a->rule = rule;
	outbound_open(ob);
	a->id = ++e->next_id;
	a->fd = a->ufd = -1;
	a->short_lived = true;
	*a->first = *dst;
	a->start_ms = a->last_ms = loop_now(e->loop);
	buf_init(&a->rx, 0);	/* the transport sizes it */
	dq_init(&a->q);
	loop_timer_init(&a->timer, assoc_on_timer);
	b = assoc_bucket(e, key);
	LIST_INSERT_HEAD(&e->buckets[b], a, hash);
	TAILQ_INSERT_HEAD(&e->lru, a, lru);
	e->n++;
	e->st.active = e->n;
	e->st.created++;
	a->phase = ASSOC_OPEN;
	loop_timer_set(e->loop, &a->timer, a->ob->co->connect_timeout_ms);
	a->tp->open(a);
	return a;
}

/*
 * The outbound of a datagram from key's app to dst, from the decision
 * point (route.h); its index goes into k, so that one app endpoint has
 * one association per outbound its destinations take.
 */
static struct outbound *
assoc_route(struct assoc_env *e, struct assoc_key *k,
    const struct proto_dest *dst, const char *domain, bool name_only,
    int *rule)
{
	struct rule_query	 q;
	struct rule_hit		 why;
	struct addr		 d, src;
	struct outbound		*ob;
	unsigned		 net = k->kind == PROTO_KIND_ICMP ?
	    RULES_NET_ICMP : RULES_NET_UDP;

	addr_from_raw(&src, k->family, k->addr, 0);
	if (dst->atyp == PROTO_ATYP_DOMAIN || name_only) {
		rules_query_flow(&q, NULL, &src, net,
		    dst->atyp == PROTO_ATYP_DOMAIN ? dst->domain : domain);
		q.port = dst->port;
	} else {
		addr_from_raw(&d, dst->atyp == PROTO_ATYP_IPV4 ? AF_INET :
		    AF_INET6, dst->ip, dst->port);
		rules_query_flow(&q, &d, &src, net, domain);
	}
	if (k->kind == PROTO_KIND_ICMP)	/* the port is the echo sequence */
		q.port = 0;
	/* Each datagram is routed; what it starts is counted (assoc_get). */
	ob = client_route_peek(e->obs, &q, &why);
	k->outbound = (uint8_t)ob->index;
	*rule = why.rule;
	return ob;
}

struct assoc *
assoc_get(struct assoc_env *e, const struct assoc_key *key,
    const struct proto_dest *dst)
{
	return assoc_get_named(e, key, dst, NULL);
}

struct assoc *
assoc_get_named(struct assoc_env *e, const struct assoc_key *key,
    const struct proto_dest *dst, const char *domain)
{
	return assoc_get_routed(e, key, dst, domain, false);
}

struct assoc *
assoc_get_routed(struct assoc_env *e, const struct assoc_key *key,
    const struct proto_dest *dst, const char *domain, bool name_only)
{
	const struct assoc_tp	*tp;
	struct assoc_key	 k = *key;
	struct outbound		*ob;
	struct assoc		*a;
	int			 rule;

	e->refusal = ASSOC_REFUSED_NONE;
	ob = assoc_route(e, &k, dst, domain, name_only, &rule);
	if ((tp = assoc_tp_of(ob->co->protocol)) == NULL) {
		client_route_count(e->obs, &(struct rule_hit){ (int)ob->index,
		    rule });
		e->st.drop_block++;
		e->refusal = ASSOC_REFUSED_BLOCK;
		outbound_open(ob);
		outbound_close(ob, true, 0, 0);
		return NULL;
	}
	if (k.kind == PROTO_KIND_ICMP && !tp->icmp) {
		if (e->st.drop_proto++ == 0)
			log_warnx("icmp: echo requests are dropped: protocol "
			    "%s (outbound %s) carries no ICMP (only tunsplit "
			    "and direct do); each one is counted",
			    conf_proto_name(ob->co->protocol), ob->co->name);
		e->refusal = ASSOC_REFUSED_PROTO;
		return NULL;
	}
	if ((a = assoc_lookup(e, &k)) == NULL) {
		/* The memory budget full: new work is refused, here a new
		 * association (its datagram dropped); live ones go on. */
		if (e->mem != NULL && !limit_mem_admit(e->mem, ASSOC_STAGE)) {
			e->st.drop_memory++;
			if (e->lst != NULL)
				limit_refuse(e->lst, LIMIT_MEMORY,
				    loop_now(e->loop), "UDP associations",
				    "max_buffer_memory: %zu of %zu bytes in "
				    "use", e->mem->used, e->mem->max);
			return NULL;
		}
		if ((a = assoc_new(e, &k, dst, ob, rule)) == NULL) {
			e->st.drop_hold++;
			return NULL;
		}
		client_route_count(e->obs, &(struct rule_hit){
		    (int)ob->index, rule });
	}
	if (a->phase == ASSOC_HOLD) {
		e->st.drop_hold++;
		a->drops++;
		return NULL;
	}
	return a;
}

int
assoc_refusal(const struct assoc_env *e)
{
	return e->refusal;
}

int
assoc_send(struct assoc *a, const struct proto_dest *dst,
    const uint8_t *data, size_t len, bool short_lived)
{
	struct assoc_env	*e = a->env;
	uint8_t			 hdr[ASSOC_HDR_MAX];
	ssize_t			 hl;

	if ((hl = a->tp->encode_hdr(hdr, sizeof(hdr), dst, len)) < 0 ||
	    dq_bytes(&a->q) + (size_t)hl + len > ASSOC_QUEUE_MAX ||
	    e->qtotal + (size_t)hl + len > ASSOC_QUEUE_TOTAL ||
	    dq_push(&a->q, hdr, (size_t)hl, data, len, false) < 0)
		goto drop;
	e->qtotal += (size_t)hl + len;
	if (!short_lived)
		a->short_lived = false;
	a->up_d++;
	a->up_b += len;
	e->st.dgrams_up++;
	e->st.bytes_up += len;
	assoc_touch(a);
	assoc_mark_dirty(a);
	return 0;
drop:
	e->st.drop_queue++;
	a->drops++;
	return -1;
}

/* ---- what the protocol lets through ------------------------------------- */

/* The final outbound's transport. */
static const struct assoc_tp *
assoc_final_tp(const struct assoc_env *e)
{
	return assoc_tp_of(group_leaf(e->obs->v[e->obs->conf->client.final])->
	    co->protocol);
}

bool
assoc_env_icmp(const struct assoc_env *e)
{
	return assoc_final_tp(e) != NULL && assoc_final_tp(e)->icmp;
}

bool
assoc_env_blocked(const struct assoc_env *e)
{
	return assoc_final_tp(e) == NULL;
}

/* ---- accessors and the TUN ---------------------------------------------- */

const struct assoc_key *
assoc_key(const struct assoc *a)
{
	return &a->key;
}

uint64_t
assoc_id(const struct assoc *a)
{
	return a->id;
}

void *
assoc_ext(const struct assoc *a)
{
	return a->ext;
}

void
assoc_set_ext(struct assoc *a, void *ext)
{
	a->ext = ext;
}

struct assoc_sniff *
assoc_sniff(struct assoc *a)
{
	return &a->sniff;
}

uint8_t *
assoc_pkt_buf(struct assoc_env *e)
{
	return e->pkt;
}

uint16_t
assoc_next_ipid(struct assoc_env *e)
{
	return ++e->ipid;
}

static int
assoc_emit(void *arg, const uint8_t *pkt, size_t len)
{
	struct assoc_env	*e = arg;

	return e->tun_write(pkt, len);
}

/* The MTU for an IPv6 packet to its destination. */
static unsigned
assoc_pmtu(struct assoc_env *e, const uint8_t *pkt, size_t len)
{
	unsigned	mtu;

	if (len <= 1280 || (pkt[0] >> 4) != 6 ||
	    (mtu = tsnetif_pmtu6(pkt + 24)) == 0 || mtu > e->conf->tun.mtu)
		return e->conf->tun.mtu;
	return mtu;
}

int
assoc_tun_write(struct assoc_env *e, const uint8_t *pkt, size_t len)
{
	if (pkt_fragment(pkt, len, assoc_pmtu(e, pkt, len), ++e->frag_id,
	    e->frag, assoc_emit, e) < 0) {
		e->st.tun_errors++;
		return -1;
	}
	return 0;
}

const struct assoc_stats *
assoc_stats(const struct assoc_env *e)
{
	return &e->st;
}

void
assoc_foreach(struct assoc_env *e,
    void (*cb)(void *arg, const struct assoc_info *), void *arg)
{
	struct assoc_info	 ai;
	struct assoc		*a;

	TAILQ_FOREACH(a, &e->lru, lru) {
		ai.id = a->id;
		ai.key = &a->key;
		ai.state = a->phase == ASSOC_HOLD ? "hold" :
		    a->phase == ASSOC_RELAY ? "relay" : a->tp->state(a);
		ai.start_ms = a->start_ms;
		ai.up = a->up_b;
		ai.down = a->down_b;
		ai.fd = a->fd;
		cb(arg, &ai);
	}
}

/* ---- env ------------------------------------------------------------- */


struct assoc_env *
assoc_env_new(const struct assoc_cfg *cfg)
{
	struct assoc_env	*e;
	size_t			 nb = 256;

	if (sodium_init() < 0 || (e = calloc(1, sizeof(*e))) == NULL)
		return NULL;
	e->loop = cfg->loop;
	e->conf = cfg->conf;
	e->obs = cfg->obs;
	e->tun_write = cfg->tun_write != NULL ? cfg->tun_write :
	    tsnetif_output_raw;
	e->mem = cfg->mem;
	e->lst = cfg->lst;
	e->share = cfg->share;
	while (nb < e->conf->client.max_udp && nb < (1u << 20))
		nb <<= 1;
	e->nbuckets = nb;
	crypto_shorthash_keygen(e->hkey);
	randombytes_buf(&e->ipid, sizeof(e->ipid));
	randombytes_buf(&e->frag_id, sizeof(e->frag_id));
	TAILQ_INIT(&e->lru);
	SLIST_INIT(&e->dirty);
	SLIST_INIT(&e->reap);
	if ((e->buckets = calloc(nb, sizeof(*e->buckets))) == NULL ||
	    (e->frag = malloc(e->conf->tun.mtu)) == NULL ||
	    (e->dgram = malloc(ASSOC_DGRAM_BUF)) == NULL ||
	    loop_on_iteration(e->loop, assoc_on_iteration, e) < 0) {
		free(e->buckets);
		free(e->frag);
		free(e->dgram);
		free(e);
		return NULL;
	}
	return e;
}

void
assoc_env_set_ops(struct assoc_env *e, uint8_t kind,
    const struct assoc_ops *ops)
{
	if (kind < ASSOC_KINDS)
		e->ops[kind] = *ops;
}

/*
 * The iteration hook stays registered on the loop (loop.h has no way to
 * remove one), so the env must outlive the loop's last iteration: free it
 * only after the loop has stopped running.
 */
void
assoc_env_reconfigure(struct assoc_env *e, const struct conf *c,
    struct outbounds *obs)
{
	if (e == NULL)
		return;
	e->conf = c;
	e->obs = obs;
}

void
assoc_env_free(struct assoc_env *e)
{
	struct assoc	*a;

	if (e == NULL)
		return;
	while ((a = TAILQ_FIRST(&e->lru)) != NULL)
		assoc_close(a, false, "shutdown");
	SLIST_INIT(&e->dirty);
	while ((a = SLIST_FIRST(&e->reap)) != NULL) {
		SLIST_REMOVE_HEAD(&e->reap, reap_entry);
		outbound_unref(a->ob);
		free(a);
	}
	free(e->buckets);
	free(e->frag);
	free(e->dgram);
	free(e);
}
