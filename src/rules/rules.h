/*
 * The rules that choose each flow's outbound: an ordered list, the first
 * rule that matches wins, and when none does the flow takes `final` (the
 * caller's).  A rule matches when each of its keys matches, a key when
 * any of its values does:
 *
 *   dst       the destination address lies in one of the prefixes
 *   domain, domain_suffix, domain_keyword
 *             the flow's domain (when one is known) is one of the names,
 *             under one of the suffixes, or holds one of the keywords;
 *             the three are one key: any of them
 *   port      the destination port is one of the numbers or ranges
 *   network   tcp, udp or icmp
 *   src       the source address (a router's LAN client) lies in one of
 *             the prefixes
 *   rule_set  the destination address or the domain is in one of the
 *             named sets (rules_set.h)
 *   geoip     the destination address is in one of the countries
 *             (rules_geoip.h: a .mmdb database, when built with one)
 *
 * Built once (rules_new, rules_set_add, rules_add and the rules_rule_*
 * calls), then read-only but for the hit counters; it belongs to one
 * configuration generation and one thread.  A decision costs one trie
 * walk or one hashed probe per label per key: independent of the sizes
 * of the lists and sets, proportional to the number of rules tried.
 */
#ifndef TUNSPLIT_RULES_H
#define TUNSPLIT_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/addr.h"
#include "rules/rules_set.h"

#define RULES_NET_TCP	0x1
#define RULES_NET_UDP	0x2
#define RULES_NET_ICMP	0x4

#define RULES_OUTBOUND_NAME_MAX	64
#define RULES_MAX		4096	/* rules in a list */

struct rules;

/* What is known of a flow when its outbound is chosen. */
struct rule_query {
	int		 family;	/* of dst; 0: no address known */
	uint8_t		 dst[16];
	int		 src_family;	/* 0: no source given */
	uint8_t		 src[16];
	uint16_t	 port;		/* destination port; 0 for ICMP */
	unsigned	 network;	/* one RULES_NET_* */
	const char	*domain;	/* NULL: none known */
};

struct rule_hit {
	int	outbound;	/* the rule's, or the final one passed in */
	int	rule;		/* index, -1: final */
};

struct rules *rules_new(void);
void rules_free(struct rules *);			/* NULL ok */

/* Loads a rule-set file under name; its index, or -1 with err set
 * ("FILE:LINE:COL: message" for what is in the file). */
int  rules_set_add(struct rules *, const char *name, const char *path,
    enum rules_set_type, char *err, size_t errlen);
int  rules_set_find(const struct rules *, const char *name);
size_t rules_set_count(const struct rules *);
const struct rules_set *rules_set_at(const struct rules *, size_t i);

/* Opens the GeoIP database geoip keys look up (rules_geoip.h); 0, or -1
 * with err set. */
int  rules_geoip_add(struct rules *, const char *path, char *err,
    size_t errlen);
const char *rules_geoip_file(const struct rules *);	/* NULL: none */

/* A new, empty rule at the end; its index, or -1 (memory, too many). */
int  rules_add(struct rules *);
/*
 * The keys of rule i, each call adding a value.  0; -1 with *why (a
 * static string) when the value is not valid; -2 when out of memory.
 */
int  rules_rule_dst(struct rules *, int i, const struct cidr *);
int  rules_rule_src(struct rules *, int i, const struct cidr *);
int  rules_rule_domain(struct rules *, int i, enum rules_domain_kind,
    const char *name, const char **why);
int  rules_rule_port(struct rules *, int i, uint16_t lo, uint16_t hi);
int  rules_rule_network(struct rules *, int i, unsigned net);
int  rules_rule_set(struct rules *, int i, int set);
/* A country code ("CN"); needs the database (rules_geoip_add) first. */
int  rules_rule_geoip(struct rules *, int i, const char *cc,
    const char **why);
/* The outbound by name; bound to its index later (rules_bind). */
int  rules_rule_outbound(struct rules *, int i, const char *name);
const char *rules_outbound_name(const struct rules *, int i);
int  rules_outbound_index(const struct rules *, int i);	/* bound */
/* Sets rule i's outbound index. */
void rules_bind(struct rules *, int i, int outbound);
/* Whether rule i has any key at all (a rule without one is refused). */
bool rules_rule_empty(const struct rules *, int i);

size_t rules_count(const struct rules *);		/* NULL: 0 */
/* Whether any rule or set can match a domain at all. */
bool rules_use_domains(const struct rules *);

/*
 * The decision for q: the first rule that matches, else final.  Returns
 * the outbound (hit->outbound) and counts the hit.  r may be NULL (no
 * rules: final).
 */
int  rules_decide(const struct rules *, const struct rule_query *q,
    int final, struct rule_hit *hit);
/* Counts a decision rules_match made (hit->rule, -1: final). */
void rules_hit_add(const struct rules *, const struct rule_hit *hit);
/* The same decision, not counted (route-test, and lookups that count
 * once per flow themselves with rules_hit_add). */
int  rules_match(const struct rules *, const struct rule_query *q,
    int final, struct rule_hit *hit);
/* Hits of rule i since the rules were built; i = -1: the decisions no
 * rule took (final).  Counted only while there are rules. */
uint64_t rules_hits(const struct rules *, int i);

/* Rule i in one line: "dst 10.0.0.0/8, port 80" (shortened to fit). */
const char *rules_describe(const struct rules *, int i, char *out,
    size_t outlen);
/* Rule i as YAML mapping lines at indent (each key a flow list), so that
 * the loader reads it back as the same rule; without the outbound. */
void rules_dump_rule(const struct rules *, int i, FILE *fp,
    const char *indent);

/* q for a flow: dst (its port too) and src may be NULL, domain NULL or
 * "" (none known); network one RULES_NET_*. */
void rules_query_flow(struct rule_query *q, const struct addr *dst,
    const struct addr *src, unsigned network, const char *domain);
/* rq from an address as text ("192.0.2.1", "2001:db8::1"); -1 if none. */
int  rules_query_addr(struct rule_query *q, const char *ip);
/* "tcp", "udp", "icmp"; 0 if not one. */
unsigned rules_net_parse(const char *s);
const char *rules_net_name(unsigned net);

#endif
