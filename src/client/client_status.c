/*
 * The client's part of a status snapshot (daemon/status.h): the flows'
 * counters, the warm pool, the TUN, UDP associations, and with a flow
 * list one entry per live TCP flow with its outer socket's TCP_INFO.
 */
#include "config.h"

#include "client/client_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/dgram/assoc.h"
#include "client/dgram/flow_udp.h"
#include "client/dns/fakeip.h"
#include "client/group.h"
#include "client/outbound.h"
#include "client/route.h"
#include "client/dialer.h"
#include "client/pool.h"
#include "client/tcp/flow_tcp.h"
#include "conf/conf.h"
#include "daemon/status.h"
#include "rules/rules.h"
#include "stack/tsnetif.h"

static void
client_on_flow(void *arg, const struct flow_info *fi)
{
	struct status_fill	*sf = arg;
	struct status_flow	*f;

	sf->st->bytes_up += fi->up;
	sf->st->bytes_down += fi->down;
	if ((f = status_flow_add(sf)) == NULL)
		return;
	f->id = fi->id;
	addr_fmt(fi->dst, f->dst, sizeof(f->dst));
	snprintf(f->domain, sizeof(f->domain), "%s", fi->domain);
	f->state = fi->state;
	if (fi->outbound != NULL) {
		snprintf(f->outbound, sizeof(f->outbound), "%s", fi->outbound);
		if (f->rule[0] == '\0')
			client_route_why(fi->obr, fi->rule, f->rule,
			    sizeof(f->rule));
	}
	f->age_ms = sf->now_ms - fi->start_ms;
	f->up = fi->up;
	f->down = fi->down;
	status_flow_tcp_info(f, fi->fd);
}

/* A member's health, or a group's members and the one now active. */
static void
client_status_health(struct outbound *ob, struct status_outbound *so)
{
	const struct health *h = &ob->stats->health;
	struct outbound *act;
	uint64_t now = group_now();
	size_t i, len;

	so->group = conf_group_name(ob->co->group);
	if (!outbound_is_group(ob)) {
		so->state = health_name(h);
		so->downs = h->downs;
		so->fb_us = h->first_byte.recent;
		so->fb_base_us = h->first_byte.base;
		so->rtx_pm = h->rtx.recent;
		so->rtx_base_pm = h->rtx.base;
		so->degraded = health_degraded(h);
		if (h->state != HEALTH_UP) {
			so->down_ms = now - h->since_ms;
			snprintf(so->why, sizeof(so->why), "%s", h->why);
		}
		return;
	}
	for (i = 0, len = 0; i < ob->nmembers && len < sizeof(so->members);
	    i++)
		len += (size_t)snprintf(so->members + len,
		    sizeof(so->members) - len, "%s%s", i > 0 ? ", " : "",
		    outbound_name(ob->members[i]));
	/* balance: every member up takes its share of destinations. */
	if (ob->co->group == CONF_GROUP_BALANCE) {
		so->balance = true;
		for (i = 0, len = 0; i < ob->nmembers; i++) {
			act = group_pick(ob->members[i], NULL, now, NULL);
			if (outbound_is_group(act) ||
			    act->stats->health.state != HEALTH_UP ||
			    len >= sizeof(so->active_member))
				continue;
			len += (size_t)snprintf(so->active_member + len,
			    sizeof(so->active_member) - len, "%s%s",
			    len > 0 ? ", " : "", outbound_name(act));
		}
		so->state = len > 0 ? "up" : "down";
		if (len == 0)
			snprintf(so->why, sizeof(so->why), "no member up: "
			    "flows are refused");
		return;
	}
	/* Up while a new flow would take a member that is up; one due a
	 * trial does not count. */
	act = group_pick(ob, NULL, now, NULL);
	if (act != ob && (act->stats->health.state == HEALTH_UP ||
	    health_degraded(&act->stats->health))) {
		so->state = health_name(&act->stats->health);
		snprintf(so->active_member, sizeof(so->active_member), "%s",
		    outbound_name(act));
	} else {
		so->state = "down";
		snprintf(so->why, sizeof(so->why), "no member up: flows are "
		    "refused%s%s", act != ob ? "; the next tries " : "",
		    act != ob ? outbound_name(act) : "");
	}
}

/* The name of outbound i of c. */
static const char *
client_outbound_name(const struct conf *c, int i)
{
	return i >= 0 && (size_t)i < c->client.noutbounds ?
	    c->client.outbounds[i].name : "?";
}

/* Each rule of the live generation with its hits, then final. */
static void
client_status_rules(struct client_status *cs, struct status *st)
{
	const struct rules	*rs = cs->conf->client.rules;
	struct status_rule	*r, *nv;
	size_t			 n = rules_count(rs), i;

	if (n == 0)
		return;
	if (n + 1 > cs->rules_cap) {
		if ((nv = realloc(cs->rules, (n + 1) * sizeof(*nv))) == NULL)
			return;
		cs->rules = nv;
		cs->rules_cap = n + 1;
	}
	for (i = 0; i <= n; i++) {
		r = &cs->rules[i];
		r->index = i < n ? (int)i : -1;
		r->hits = rules_hits(rs, r->index);
		rules_describe(rs, r->index, r->match, sizeof(r->match));
		snprintf(r->outbound, sizeof(r->outbound), "%s",
		    client_outbound_name(cs->conf, i < n ?
		    rules_outbound_index(rs, r->index) :
		    (int)cs->conf->client.final));
	}
	st->rules = cs->rules;
	st->nrules = n + 1;
}

/* Every outer connection set up: by flows dialling directly and by the
 * warm pools (of every outbound) ahead of them. */
static void
client_status_pool(struct client_status *cs, struct status *st)
{
	const struct outbounds	*obs = cs->env->obs;
	const struct pool_stats	*ps;
	size_t			 i, j;

	cs->handshake = cs->env->stats.handshake;
	st->handshake = &cs->handshake;
	memset(&st->pool, 0, sizeof(st->pool));
	for (j = 0; obs != NULL && j < obs->n; j++) {
		if (obs->v[j]->pool == NULL)
			continue;
		ps = pool_stats(obs->v[j]->pool);
		for (i = 0; i <= STATS_HIST_NBOUNDS; i++)
			cs->handshake.bucket[i] += ps->handshake.bucket[i];
		cs->handshake.count += ps->handshake.count;
		cs->handshake.sum_us += ps->handshake.sum_us;
		st->has_pool = true;
		st->pool_size += obs->v[j]->co->pool;
		st->pool.opened += ps->opened;
		st->pool.taken += ps->taken;
		st->pool.reused += ps->reused;
		st->pool.returned += ps->returned;
		st->pool.expired += ps->expired;
		st->pool.failed += ps->failed;
		st->pool.ready += ps->ready;
		st->pool.connecting += ps->connecting;
		st->pool.target += ps->target;
		stats_contact_merge(&st->pool.contact, &ps->contact);
	}
	st->pooled = cs->env->stats.pooled;
	st->dialer = *dialer_stats();
	st->has_dialer = st->dialer.threads > 0;
}

/* The last contact with a server, by flows or the pools, as ages and
 * wall-clock times. */
static void
client_status_contact(struct client_status *cs, struct status_fill *sf)
{
	struct stats_contact	 c = cs->env->stats.contact;
	struct status		*st = sf->st;
	struct timespec		 ts;
	uint64_t		 wall;

	stats_contact_merge(&c, &st->pool.contact);
	st->contact_kept = true;
	clock_gettime(CLOCK_REALTIME, &ts);
	wall = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	if (c.has_ok) {
		st->has_contact = true;
		st->contact_age_ms = sf->now_ms > c.ok_ms ?
		    sf->now_ms - c.ok_ms : 0;
		st->contact_unix_ms = wall - st->contact_age_ms;
	}
	if (c.has_fail) {
		st->has_contact_fail = true;
		st->contact_fail_age_ms = sf->now_ms > c.fail_ms ?
		    sf->now_ms - c.fail_ms : 0;
		st->contact_fail_unix_ms = wall - st->contact_fail_age_ms;
		st->contact_fail_reason = c.fail_reason;
	}
}

/* Each outbound of the live generation with its counters. */
static void
client_status_outbounds(struct client_status *cs, struct status *st)
{
	const struct outbounds	*obs = cs->env->obs;
	struct outbound		*ob;
	struct status_outbound	*so, *nv;
	size_t			 i, j;

	if (obs == NULL || obs->n == 0)
		return;
	if (obs->n > cs->obs_cap) {
		if ((nv = realloc(cs->obs, obs->n * sizeof(*nv))) == NULL)
			return;
		cs->obs = nv;
		cs->obs_cap = obs->n;
	}
	for (i = 0; i < obs->n; i++) {
		ob = obs->v[i];
		so = &cs->obs[i];
		memset(so, 0, sizeof(*so));
		snprintf(so->name, sizeof(so->name), "%s", ob->co->name);
		so->protocol = conf_proto_name(ob->co->protocol);
		if (ob->has_server)
			addr_fmt(&ob->server, so->server, sizeof(so->server));
		so->final = i == obs->conf->client.final;
		so->opened = ob->stats->opened;
		so->failed = ob->stats->failed;
		so->active = ob->stats->active;
		so->bytes_up = ob->stats->bytes_up;
		so->bytes_down = ob->stats->bytes_down;
		so->handshake = ob->stats->handshake;
		if (ob->ssl_ctx != NULL) {	/* tunsplit, trojan */
			so->has_gate = true;
			so->dialling = ob->gate.active;
			so->dial_waiting = ob->gate.waiting;
		}
		if (ob->pool != NULL) {
			so->has_pool = true;
			so->pool_size = ob->co->pool;
			so->pool = *pool_stats(ob->pool);
			/* Its flows' handshakes and its pool's, as in the
			 * client's own histogram. */
			for (j = 0; j <= STATS_HIST_NBOUNDS; j++)
				so->handshake.bucket[j] +=
				    so->pool.handshake.bucket[j];
			so->handshake.count += so->pool.handshake.count;
			so->handshake.sum_us += so->pool.handshake.sum_us;
		}
		client_status_health(ob, so);
	}
	st->outbounds = cs->obs;
	st->noutbounds = obs->n;
}

void
client_status_fill(struct client_status *cs, struct status_fill *sf)
{
	struct flow_env	*env = cs->env;
	struct status	*st = sf->st;
	struct outbound	*fin;

	st->role = "client";
	st->active = env->nflows;
	st->total = env->stats.accepted;
	st->refused = env->stats.refused;
	st->failed = env->stats.failed;
	st->internal = env->stats.internal;
	st->max = cs->conf->client.max_flows;
	st->bytes_up = env->stats.bytes_up;
	st->bytes_down = env->stats.bytes_down;
	st->failures = &env->stats.failures;
	status_fill_limits(st, &env->lst, &env->mem);
	client_status_pool(cs, st);
	client_status_outbounds(cs, st);
	/* The final outbound's server, the one most flows go to (a
	 * group's: the member new flows take now). */
	fin = group_pick(env->obs->v[env->obs->conf->client.final], NULL,
	    group_now(), NULL);
	if (outbound_is_group(fin))
		snprintf(st->server, sizeof(st->server), "none (%s down)",
		    fin->co->name);
	else if (fin->has_server) {
		addr_fmt(&fin->server, st->server, sizeof(st->server));
		client_status_contact(cs, sf);
	} else	/* protocol direct or block */
		snprintf(st->server, sizeof(st->server), "none (%s)",
		    conf_proto_name(fin->co->protocol));
	st->has_tun = true;
	st->tun = *tsnetif_stats();
	if (cs->udp != NULL) {
		st->has_udp = true;
		st->udp = *assoc_stats(flow_udp_assoc(cs->udp));
	}
	client_status_rules(cs, st);
	if (cs->udp != NULL && (cs->conf->client.has_dns ||
	    cs->conf->client.ndns_upstreams > 0)) {
		st->has_dns = true;
		st->dns_cache = *flow_udp_dns_cache_stats(cs->udp);
		st->dns_up = cs->conf->client.dns_upstreams;
		st->ndns_up = cs->conf->client.ndns_upstreams;
		if (st->ndns_up > FLOW_UDP_UPSTREAMS)
			st->ndns_up = FLOW_UDP_UPSTREAMS;
		st->dns_up_queries = flow_udp_stats(cs->udp)->dns_upstream;
		st->dns_up_failed =
		    flow_udp_stats(cs->udp)->dns_upstream_failed;
	}
	if (env->fakeip != NULL) {
		st->has_fakeip = true;
		st->fakeip = *fakeip_stats(env->fakeip);
	}
	if (sf->flows != NULL || env->nflows > 0)
		flow_tcp_foreach(env, client_on_flow, sf);
}

void
client_status_free(struct client_status *cs)
{
	free(cs->rules);
	cs->rules = NULL;
	cs->rules_cap = 0;
	free(cs->obs);
	cs->obs = NULL;
	cs->obs_cap = 0;
}
