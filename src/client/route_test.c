/*
 * route-test: one request line in, the decision and its reasons out.  The
 * decision is the flows' own (the rules, then final), made without
 * counting a hit.
 */
#include "config.h"

#include "client/route_test.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"
#include "rules/rules.h"

/* The name of outbound i of c. */
static const char *
outbound_name(const struct conf *c, int i)
{
	return i >= 0 && (size_t)i < c->client.noutbounds ?
	    c->client.outbounds[i].name : "?";
}

static int
final_index(const struct conf *c)
{
	return (int)c->client.final;
}

static int
req_err(FILE *fp, const char *msg)
{
	fprintf(fp, "error: route-test: %s\n", msg);
	return -1;
}

/* A fake-IP address: decided by its name (from the daemon's table) with
 * its address, as flow_fake_name makes its flows; *note says what. */
static void
fake_addr(const struct conf *c, struct rule_query *q,
    const struct route_test_fake *fake, const char **note, bool *refused)
{
	const char	*name = NULL;
	bool		 in;

	if (!c->client.dns_fakeip)
		return;
	if (fake != NULL)
		in = fake->lookup(fake->arg, q->family, q->dst, &name);
	else
		in = cidr_match(&c->client.fake_ip_range4, q->family, q->dst) ||
		    (c->client.has_fake_ip_range6 &&
		    cidr_match(&c->client.fake_ip_range6, q->family, q->dst));
	if (!in)
		return;
	if (name != NULL) {
		q->domain = name;
		*note = "a fake-IP address: decided by the name it stands for";
	} else if (fake != NULL) {
		*note = "a fake-IP address with no name (evicted, or never "
		    "issued): a flow to it is refused";
		*refused = true;
	} else
		*note = "a fake-IP address: only the running daemon knows "
		    "its name (route-test without -c)";
}

int
route_test_answer(const struct conf *c, const char *req, FILE *fp,
    const struct route_test_fake *fake)
{
	const char		*fnote = NULL;
	bool			 refused = false;
	char			 net[8], src[64], dest[RULES_NAME_MAX + 2];
	char			 desc[256];
	const struct rules	*rs = c->client.rules;
	struct rule_query	 q;
	struct rule_hit		 h;
	unsigned		 port;
	int			 n = 0;

	memset(&q, 0, sizeof(q));
	if (sscanf(req, "%7s %u %63s %254s %n", net, &port, src, dest, &n) !=
	    4 || req[n] != '\0')
		return req_err(fp, "expected: NETWORK PORT SRC DEST");
	if ((q.network = rules_net_parse(net)) == 0)
		return req_err(fp, "the network is tcp, udp or icmp");
	if (port > 65535)
		return req_err(fp, "the port is 0..65535");
	q.port = (uint16_t)port;
	if (strcmp(src, "-") != 0) {
		if (inet_pton(AF_INET, src, q.src) == 1)
			q.src_family = AF_INET;
		else if (inet_pton(AF_INET6, src, q.src) == 1)
			q.src_family = AF_INET6;
		else
			return req_err(fp, "the source is an address");
	}
	if (rules_query_addr(&q, dest) == -1) {
		char	norm[RULES_NAME_MAX + 1];

		if (!rules_domain_norm(dest, norm))
			return req_err(fp, "the destination is an address or "
			    "a domain name");
		q.domain = dest;
	} else
		fake_addr(c, &q, fake, &fnote, &refused);
	if (refused) {
		fprintf(fp, "outbound: none (refused)\nrule: none\n"
		    "flow: %s to %s port %u\nnote: %s\n", net, dest, port, fnote);
		return 0;
	}
	rules_match(rs, &q, final_index(c), &h);
	fprintf(fp, "outbound: %s (%s)\n", outbound_name(c, h.outbound),
	    conf_proto_name(c->client.outbounds[h.outbound].protocol));
	if (h.rule < 0)
		fprintf(fp, "rule: final\n");
	else
		fprintf(fp, "rule: %d (%s)\n", h.rule,
		    rules_describe(rs, h.rule, desc, sizeof(desc)));
	fprintf(fp, "flow: %s to %s port %u", net, dest, port);
	if (fnote != NULL && q.domain != NULL)
		fprintf(fp, " (%s)", q.domain);
	if (q.src_family != 0)
		fprintf(fp, " from %s", src);
	fputc('\n', fp);
	if (rs == NULL || rules_count(rs) == 0)
		fprintf(fp, "why: no rules: every flow takes final\n");
	else if (h.rule < 0)
		fprintf(fp, "why: none of the %zu rules matches\n",
		    rules_count(rs));
	else
		fprintf(fp, "why: the first rule that matches (of %zu)\n",
		    rules_count(rs));
	if (fnote != NULL)
		fprintf(fp, "note: %s\n", fnote);
	if (q.domain != NULL && !rules_use_domains(rs))
		fprintf(fp, "note: no rule matches domain names: a flow is "
		    "decided by its address, and a name is not resolved "
		    "here; this is the decision for a flow whose address no "
		    "rule knows\n");
	else if (q.domain != NULL && fnote == NULL)
		fprintf(fp, "note: the domain decides only when it is known: "
		    "sniffed from the flow's first bytes or from fake-IP DNS; "
		    "address rules were not tried (no address)\n");
	return 0;
}
