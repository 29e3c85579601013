/*
 * Client TCP flows, the wait for the domain (connect_mode fast): a flow
 * whose outbound could depend on its domain is accepted without dialling
 * (FLOW_SNIFF); the app's first bytes queue as usual, and once they name
 * the domain (TLS SNI, HTTP Host: wire/sniff.h), show there is none, or
 * client.sniff_timeout has passed -- a server-speaks-first protocol such
 * as SSH or SMTP sends nothing until it hears the server -- the flow
 * dials its outbound (flow_tcp_dial) and goes on like any other, its
 * queued bytes right behind the request header.
 *
 * connect_mode faithful holds the app's SYN until the target answers, so
 * no byte exists before the dial: nothing is sniffed there.
 */
#include "config.h"

#include "client/tcp/flow_tcp.h"

#include <stdio.h>
#include <string.h>

#include "lwip/pbuf.h"

#include "client/dns/dnsfwd.h"
#include "client/dns/fakeip.h"
#include "client/tcp/flow_tcp_int.h"
#include "conf/conf.h"
#include "core/log.h"
#include "core/loop.h"
#include "rules/rules.h"
#include "wire/dns.h"
#include "wire/sniff.h"

#define DNS_PORT	53

bool
flow_sniff_wanted(const struct conf *c)
{
	if (c->client.faithful)
		return false;
	switch (c->client.sniff) {
	case CONF_SNIFF_ALWAYS:
		return true;
	case CONF_SNIFF_NEVER:
		return false;
	default:		/* auto: when a rule can match a domain */
		return rules_use_domains(c->client.rules);
	}
}

bool
flow_sniff_dns(const struct flow_env *env, const struct addr *dst)
{
	return env->fakeip != NULL && !env->conf->client.faithful &&
	    addr_port(dst) == DNS_PORT;
}

/*
 * DNS over TCP with fake-IP: the first query's name, when the table
 * gives it fake addresses -- then the flow goes where the name's flows
 * go, never by the resolver's address to a resolver on a direct network
 * (flow_udp_fake_qname does the same for UDP).  SNIFF_NONE: another
 * name, routed by the address.
 */
static enum sniff_res
flow_sniff_dns_name(const struct conf *c, const uint8_t *p, size_t n,
    char *out, size_t outlen)
{
	struct dns_query q;
	size_t		 len;

	if (n < 2 || n - 2 < (len = (size_t)p[0] << 8 | p[1]))
		return SNIFF_MORE;
	if (dns_query_parse(p + 2, len, &q) == -1 || !q.plain ||
	    q.name[0] == '\0')
		return SNIFF_NOT;
	if (fakeip_excluded(c, q.name) || fakeip_direct(c, q.name) ||
	    dnsfwd_pick(c, q.name) >= 0)
		return SNIFF_NONE;
	snprintf(out, outlen, "%s", q.name);
	return SNIFF_FOUND;
}

void
flow_sniff_start(struct flow *f)
{
	/* fake-IP named the flow already (flow_fake_name): no byte need be
	 * waited for, the flow dials in this iteration's pass. */
	if (f->domain_send) {
		flow_mark_dirty(f);
		return;
	}
	loop_timer_set(f->env->loop, &f->early,
	    f->conf->client.sniff_timeout_ms);
}

/* The queued first bytes, up to max, into out. */
static size_t
flow_sniff_gather(const struct flow *f, uint8_t *out, size_t max)
{
	const struct pbuf	*q;
	size_t			 n = 0, k;

	for (q = f->inq; q != NULL && n < max; q = q->next) {
		k = q->len < max - n ? q->len : max - n;
		memcpy(out + n, q->payload, k);
		n += k;
	}
	return n;
}

void
flow_sniff_work(struct flow *f)
{
	struct flow_env	*env = f->env;
	uint64_t	 age = loop_now(env->loop) - f->start_ms;
	const char	*kind = NULL;
	char		 name[SNIFF_NAME_MAX + 1], dst[ADDR_STRLEN];
	struct addr	 to;
	enum sniff_res	 r;
	size_t		 n;

	if (f->domain_send) {		/* fake-IP: that name goes out */
		if (flow_tcp_dial(f) == 0)
			flow_update_events(f);
		return;
	}
	n = flow_sniff_gather(f, env->stage, sizeof(env->stage));
	if (flow_sniff_dns(env, addr_unpack(&f->dst, &to))) {
		r = flow_sniff_dns_name(f->conf, env->stage, n, name,
		    sizeof(name));
		kind = "dns";
		f->by_name = r == SNIFF_FOUND;
	} else
		r = sniff_stream(env->stage, n, name, sizeof(name), &kind);
	if (r == SNIFF_MORE && n < sizeof(env->stage) && !f->app_fin &&
	    f->pcb != NULL && age < f->conf->client.sniff_timeout_ms)
		return;			/* the timer marks the flow again */
	loop_timer_cancel(env->loop, &f->early);
	if (r == SNIFF_FOUND) {
		(void)flow_set_domain(f, name);
		f->domain_from = kind;
		log_at(log_flow_level(), "flow %llu %s: domain %s (%s, %llu "
		    "ms)", (unsigned long long)f->id, flow_dst(f, dst,
		    sizeof(dst)), name, kind, (unsigned long long)age);
	} else
		log_at(log_flow_level(), "flow %llu %s: no domain (%s, %llu "
		    "ms)", (unsigned long long)f->id, flow_dst(f, dst,
		    sizeof(dst)), r == SNIFF_NONE ? "no name in them" :
		    r == SNIFF_NOT ? "not TLS or HTTP" : n == 0 ? "no bytes" :
		    "cut short", (unsigned long long)age);
	if (flow_tcp_dial(f) == 0)
		flow_update_events(f);
}
