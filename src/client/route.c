/*
 * The decision point (route.h): the rules of the outbounds' generation,
 * first match wins, else client.final.
 */
#include "config.h"

#include "client/route.h"

#include <stdio.h>

#include "client/dns/dnsfwd.h"
#include "client/group.h"
#include "client/outbound.h"
#include "conf/conf.h"
#include "rules/rules.h"

struct outbound *
client_route(const struct outbounds *obs, const struct rule_query *q,
    struct rule_hit *why)
{
	struct outbound *ob = client_route_peek(obs, q, why);

	client_route_count(obs, why);
	return ob;
}

void
client_route_count(const struct outbounds *obs, const struct rule_hit *why)
{
	rules_hit_add(obs->conf->client.rules, why);
}

struct outbound *
client_route_peek(const struct outbounds *obs, const struct rule_query *q,
    struct rule_hit *why)
{
	const struct conf *c = obs->conf;
	struct rule_query named;
	const char *name;
	int i;

	/* No domain recovered: the name real DNS answered the address
	 * under, if any (dnsfwd.h). */
	if (q->domain == NULL && q->family != 0 &&
	    rules_use_domains(c->client.rules) &&
	    (name = dnsfwd_names_find(dnsfwd_names_used(), q->family,
	    q->dst)) != NULL) {
		named = *q;
		named.domain = name;
		q = &named;
	}
	i = rules_match(c->client.rules, q, (int)c->client.final, why);
	if (i < 0 || (size_t)i >= obs->n) {	/* cannot be: bound at load */
		i = (int)c->client.final;
		why->outbound = i;
		why->rule = -1;
	}
	/* A group: the member a new flow takes now (group.h). */
	return group_pick(obs->v[i], q, group_now(), NULL);
}

const char *
client_route_why(const struct outbound *ob, int rule, char *buf,
    unsigned long len)
{
	char	desc[96];

	if (rule < 0 || ob == NULL)
		snprintf(buf, len, "final");
	else
		snprintf(buf, len, "rule %d (%s)", rule, rules_describe(
		    ob->conf->client.rules, rule, desc, sizeof(desc)));
	return buf;
}
