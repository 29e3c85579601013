/*
 * The rule list and the decision.  Each rule keeps its values twice: as
 * given (for the dump and the descriptions) and as what matches them fast
 * (a trie per address key, a domain set for the three domain keys).
 */
#include "config.h"

#include "rules/rules.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "rules/rules_geoip.h"

struct port_range {
	uint16_t	lo, hi;
};

struct name_list {
	char		**v;
	size_t		  n;
};

struct rule {
	/* as given */
	struct cidr		*dst, *src;
	size_t			 ndst, nsrc;
	struct name_list	 names[3];	/* exact, suffix, keyword */
	struct port_range	*ports;
	size_t			 nports;
	unsigned		 net;		/* RULES_NET_* mask, 0: any */
	int			*sets;
	size_t			 nsets;
	int			*cc;		/* geoip: rules_geoip_code()s */
	size_t			 ncc;
	char			 outbound_name[RULES_OUTBOUND_NAME_MAX];
	int			 outbound;
	/* matching */
	struct rules_trie	*dst_trie, *src_trie;
	struct rules_domain	*domains;
};

struct rules {
	struct rule		*v;
	size_t			 n;
	uint64_t		*hits;		/* per rule, then final; written
						 * by decide */
	struct rules_set	**sets;
	size_t			 nsets;
	bool			 domains;	/* some key can match a name */
	struct rules_geoip	*geoip;		/* NULL: no geoip keys */
};

static const char *const name_keys[3] = {
	"domain", "domain_suffix", "domain_keyword"
};

static int
kind_index(enum rules_domain_kind k)
{
	return k == RULES_DOMAIN_EXACT ? 0 : k == RULES_DOMAIN_SUFFIX ? 1 : 2;
}

struct rules *
rules_new(void)
{
	return calloc(1, sizeof(struct rules));
}

static void
rule_clear(struct rule *r)
{
	size_t	i, k;

	free(r->dst);
	free(r->src);
	for (k = 0; k < 3; k++) {
		for (i = 0; i < r->names[k].n; i++)
			free(r->names[k].v[i]);
		free(r->names[k].v);
	}
	free(r->ports);
	free(r->sets);
	free(r->cc);
	rules_trie_free(r->dst_trie);
	rules_trie_free(r->src_trie);
	rules_domain_free(r->domains);
}

void
rules_free(struct rules *rs)
{
	size_t	i;

	if (rs == NULL)
		return;
	for (i = 0; i < rs->n; i++)
		rule_clear(&rs->v[i]);
	for (i = 0; i < rs->nsets; i++)
		rules_set_free(rs->sets[i]);
	free(rs->sets);
	rules_geoip_free(rs->geoip);
	free(rs->v);
	free(rs->hits);
	free(rs);
}

int
rules_set_add(struct rules *rs, const char *name, const char *path,
    enum rules_set_type type, char *err, size_t errlen)
{
	struct rules_set	**nv, *s;

	if (rules_set_find(rs, name) >= 0) {
		snprintf(err, errlen, "rule set %s declared twice", name);
		return -1;
	}
	if ((s = rules_set_load(name, path, type, err, errlen)) == NULL)
		return -1;
	if ((nv = realloc(rs->sets, (rs->nsets + 1) * sizeof(*nv))) == NULL) {
		rules_set_free(s);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	rs->sets = nv;
	rs->sets[rs->nsets] = s;
	return (int)rs->nsets++;
}

int
rules_set_find(const struct rules *rs, const char *name)
{
	size_t	i;

	for (i = 0; rs != NULL && i < rs->nsets; i++)
		if (strcmp(rs->sets[i]->name, name) == 0)
			return (int)i;
	return -1;
}

size_t
rules_set_count(const struct rules *rs)
{
	return rs == NULL ? 0 : rs->nsets;
}

const struct rules_set *
rules_set_at(const struct rules *rs, size_t i)
{
	return i < rs->nsets ? rs->sets[i] : NULL;
}

int
rules_add(struct rules *rs)
{
	struct rule	*nv;
	uint64_t	*nh;

	if (rs->n >= RULES_MAX)
		return -1;
	if ((nv = realloc(rs->v, (rs->n + 1) * sizeof(*nv))) == NULL)
		return -1;
	rs->v = nv;
	/* One more than the rules: the last counts the final decisions. */
	if ((nh = realloc(rs->hits, (rs->n + 2) * sizeof(*nh))) == NULL)
		return -1;
	nh[rs->n + 1] = rs->n == 0 ? 0 : nh[rs->n];
	rs->hits = nh;
	memset(&rs->v[rs->n], 0, sizeof(*rs->v));
	rs->v[rs->n].outbound = -1;
	rs->hits[rs->n] = 0;
	return (int)rs->n++;
}

static int
cidr_append(struct cidr **v, size_t *n, struct rules_trie **t,
    const struct cidr *c)
{
	struct cidr	*nv;

	if (*t == NULL && (*t = rules_trie_new()) == NULL)
		return -2;
	if ((nv = realloc(*v, (*n + 1) * sizeof(*nv))) == NULL)
		return -2;
	*v = nv;
	nv[(*n)++] = *c;
	return rules_trie_add(*t, c) == -1 ? -2 : 0;
}

int
rules_rule_dst(struct rules *rs, int i, const struct cidr *c)
{
	struct rule	*r = &rs->v[i];

	return cidr_append(&r->dst, &r->ndst, &r->dst_trie, c);
}

int
rules_rule_src(struct rules *rs, int i, const struct cidr *c)
{
	struct rule	*r = &rs->v[i];

	return cidr_append(&r->src, &r->nsrc, &r->src_trie, c);
}

int
rules_rule_domain(struct rules *rs, int i, enum rules_domain_kind kind,
    const char *name, const char **why)
{
	struct rule		*r = &rs->v[i];
	struct name_list	*l = &r->names[kind_index(kind)];
	char			**nv, *s;
	int			  rc;

	if (r->domains == NULL && (r->domains = rules_domain_new()) == NULL)
		return -2;
	if ((rc = rules_domain_add(r->domains, kind, name, why)) != 0)
		return rc;
	if ((s = strdup(name)) == NULL)
		return -2;
	if ((nv = realloc(l->v, (l->n + 1) * sizeof(*nv))) == NULL) {
		free(s);
		return -2;
	}
	l->v = nv;
	l->v[l->n++] = s;
	rs->domains = true;
	return 0;
}

int
rules_rule_port(struct rules *rs, int i, uint16_t lo, uint16_t hi)
{
	struct rule		*r = &rs->v[i];
	struct port_range	*nv;

	if (lo > hi)
		return -1;
	if ((nv = realloc(r->ports, (r->nports + 1) * sizeof(*nv))) == NULL)
		return -2;
	r->ports = nv;
	nv[r->nports].lo = lo;
	nv[r->nports++].hi = hi;
	return 0;
}

int
rules_rule_network(struct rules *rs, int i, unsigned net)
{
	rs->v[i].net |= net;
	return 0;
}

int
rules_rule_set(struct rules *rs, int i, int set)
{
	struct rule	*r = &rs->v[i];
	int		*nv;

	if (set < 0 || (size_t)set >= rs->nsets)
		return -1;
	if ((nv = realloc(r->sets, (r->nsets + 1) * sizeof(*nv))) == NULL)
		return -2;
	r->sets = nv;
	nv[r->nsets++] = set;
	if (rules_domain_count(rs->sets[set]->domains) > 0)
		rs->domains = true;
	return 0;
}

int
rules_geoip_add(struct rules *rs, const char *path, char *err, size_t errlen)
{
	struct rules_geoip	*g;

	if ((g = rules_geoip_open(path, err, errlen)) == NULL)
		return -1;
	rules_geoip_free(rs->geoip);
	rs->geoip = g;
	return 0;
}

const char *
rules_geoip_file(const struct rules *rs)
{
	return rs != NULL && rs->geoip != NULL ? rules_geoip_path(rs->geoip) :
	    NULL;
}

int
rules_rule_geoip(struct rules *rs, int i, const char *cc, const char **why)
{
	struct rule	*r = &rs->v[i];
	int		*nv, code;

	if (rs->geoip == NULL) {
		*why = "geoip needs a database (client.geoip_database)";
		return -1;
	}
	if ((code = rules_geoip_code(cc)) == -1) {
		*why = "not a country code (two letters, ISO 3166: CN, DE)";
		return -1;
	}
	if ((nv = realloc(r->cc, (r->ncc + 1) * sizeof(*nv))) == NULL)
		return -2;
	r->cc = nv;
	nv[r->ncc++] = code;
	return 0;
}

int
rules_rule_outbound(struct rules *rs, int i, const char *name)
{
	if (strlen(name) >= sizeof(rs->v[i].outbound_name))
		return -1;
	memcpy(rs->v[i].outbound_name, name, strlen(name) + 1);
	return 0;
}

const char *
rules_outbound_name(const struct rules *rs, int i)
{
	return rs->v[i].outbound_name;
}

int
rules_outbound_index(const struct rules *rs, int i)
{
	return rs->v[i].outbound;
}

void
rules_bind(struct rules *rs, int i, int outbound)
{
	rs->v[i].outbound = outbound;
}

bool
rules_rule_empty(const struct rules *rs, int i)
{
	const struct rule	*r = &rs->v[i];

	return r->ndst == 0 && r->nsrc == 0 && r->domains == NULL &&
	    r->nports == 0 && r->net == 0 && r->nsets == 0 && r->ncc == 0;
}

size_t
rules_count(const struct rules *rs)
{
	return rs == NULL ? 0 : rs->n;
}

bool
rules_use_domains(const struct rules *rs)
{
	return rs != NULL && rs->domains;
}

/* ---- the decision ------------------------------------------------------ */

/* What one decision works out once, when a rule first needs it. */
struct decide {
	const char	*norm;		/* the domain, normalised; NULL: none */
	int		 country;	/* rules_geoip_code, 0: none, -1: not
					 * looked up yet */
};

static bool
geoip_match(const struct rules *rs, const struct rule *r,
    const struct rule_query *q, struct decide *dc)
{
	char	cc[3];
	size_t	i;

	if (dc->country == -1)
		dc->country = rules_geoip_country(rs->geoip, q->family, q->dst,
		    cc) ? rules_geoip_code(cc) : 0;
	for (i = 0; dc->country > 0 && i < r->ncc; i++)
		if (r->cc[i] == dc->country)
			return true;
	return false;
}

static bool
rule_match(const struct rules *rs, const struct rule *r,
    const struct rule_query *q, struct decide *dc)
{
	const struct rules_set	*s;
	const char		*norm = dc->norm;
	size_t			 i;
	bool			 ok;

	if (r->net != 0 && !(r->net & q->network))
		return false;
	if (r->nports > 0) {
		for (i = 0, ok = false; i < r->nports && !ok; i++)
			ok = q->port >= r->ports[i].lo &&
			    q->port <= r->ports[i].hi;
		if (!ok)
			return false;
	}
	if (r->dst_trie != NULL &&
	    !rules_trie_match(r->dst_trie, q->family, q->dst))
		return false;
	if (r->src_trie != NULL &&
	    !rules_trie_match(r->src_trie, q->src_family, q->src))
		return false;
	if (r->ncc > 0 && !geoip_match(rs, r, q, dc))
		return false;
	if (r->domains != NULL &&
	    (norm == NULL || !rules_domain_match(r->domains, norm)))
		return false;
	if (r->nsets > 0) {
		for (i = 0, ok = false; i < r->nsets && !ok; i++) {
			s = rs->sets[r->sets[i]];
			ok = rules_trie_match(s->cidrs, q->family, q->dst) ||
			    (norm != NULL &&
			    rules_domain_match(s->domains, norm));
		}
		if (!ok)
			return false;
	}
	return true;
}

int
rules_decide(const struct rules *rs, const struct rule_query *q, int final,
    struct rule_hit *hit)
{
	rules_match(rs, q, final, hit);
	rules_hit_add(rs, hit);
	return hit->outbound;
}

void
rules_hit_add(const struct rules *rs, const struct rule_hit *hit)
{
	if (rs != NULL && rs->n > 0 && hit->rule < (int)rs->n)
		rs->hits[hit->rule >= 0 ? (size_t)hit->rule : rs->n]++;
}

int
rules_match(const struct rules *rs, const struct rule_query *q, int final,
    struct rule_hit *hit)
{
	char		 norm[RULES_NAME_MAX + 1];
	struct decide	 dc = { NULL, -1 };
	size_t		 i;

	hit->outbound = final;
	hit->rule = -1;
	if (rs == NULL)
		return final;
	if (rs->domains && q->domain != NULL &&
	    rules_domain_norm(q->domain, norm))
		dc.norm = norm;
	for (i = 0; i < rs->n; i++)
		if (rule_match(rs, &rs->v[i], q, &dc)) {
			hit->outbound = rs->v[i].outbound;
			hit->rule = (int)i;
			break;
		}
	return hit->outbound;
}

uint64_t
rules_hits(const struct rules *rs, int i)
{
	if (rs == NULL || rs->n == 0)
		return 0;
	return rs->hits[i >= 0 ? (size_t)i : rs->n];
}

/* ---- descriptions and the dump ------------------------------------------ */

static const char *const net_names[] = { "tcp", "udp", "icmp" };

unsigned
rules_net_parse(const char *s)
{
	unsigned	i;

	for (i = 0; i < 3; i++)
		if (strcmp(s, net_names[i]) == 0)
			return 1u << i;
	return 0;
}

const char *
rules_net_name(unsigned net)
{
	return net == RULES_NET_TCP ? "tcp" : net == RULES_NET_UDP ? "udp" :
	    net == RULES_NET_ICMP ? "icmp" : "?";
}

static int
query_ip(const struct addr *a, uint8_t out[16])
{
	const void	*ip;
	size_t		 len;

	if (a == NULL || (ip = addr_ip(a, &len)) == NULL)
		return 0;
	memcpy(out, ip, len);
	return addr_family(a);
}

void
rules_query_flow(struct rule_query *q, const struct addr *dst,
    const struct addr *src, unsigned network, const char *domain)
{
	memset(q, 0, sizeof(*q));
	q->family = query_ip(dst, q->dst);
	q->src_family = query_ip(src, q->src);
	q->port = dst != NULL && q->family != 0 ? addr_port(dst) : 0;
	q->network = network;
	q->domain = domain != NULL && *domain != '\0' ? domain : NULL;
}

int
rules_query_addr(struct rule_query *q, const char *ip)
{
	memset(q->dst, 0, sizeof(q->dst));
	if (inet_pton(AF_INET, ip, q->dst) == 1)
		q->family = AF_INET;
	else if (inet_pton(AF_INET6, ip, q->dst) == 1)
		q->family = AF_INET6;
	else
		return -1;
	return 0;
}

/* The values of one key as text, in a callback: the same walk serves the
 * one-line description and the dump. */
typedef void (*key_fn)(void *arg, const char *key, const char *value,
    size_t idx);

static void
rule_walk(const struct rules *rs, const struct rule *r, key_fn fn, void *arg)
{
	char	buf[INET6_ADDRSTRLEN + 8];
	size_t	i, k;

	for (i = 0; i < r->ndst; i++)
		fn(arg, "dst", cidr_fmt(&r->dst[i], buf, sizeof(buf)), i);
	for (k = 0; k < 3; k++)
		for (i = 0; i < r->names[k].n; i++)
			fn(arg, name_keys[k], r->names[k].v[i], i);
	for (i = 0; i < r->nports; i++) {
		if (r->ports[i].lo == r->ports[i].hi)
			snprintf(buf, sizeof(buf), "%u", r->ports[i].lo);
		else
			snprintf(buf, sizeof(buf), "%u-%u", r->ports[i].lo,
			    r->ports[i].hi);
		fn(arg, "port", buf, i);
	}
	for (i = 0, k = 0; i < 3; i++)
		if (r->net & (1u << i))
			fn(arg, "network", net_names[i], k++);
	for (i = 0; i < r->nsrc; i++)
		fn(arg, "src", cidr_fmt(&r->src[i], buf, sizeof(buf)), i);
	for (i = 0; i < r->nsets; i++)
		fn(arg, "rule_set", rs->sets[r->sets[i]]->name, i);
	for (i = 0; i < r->ncc; i++) {
		snprintf(buf, sizeof(buf), "%c%c", r->cc[i] >> 8,
		    r->cc[i] & 0xff);
		fn(arg, "geoip", buf, i);
	}
}

struct desc {
	char	*out;
	size_t	 len, size;
	size_t	 more;		/* values after the first of the last key */
	bool	 full;
};

static void
desc_add(struct desc *d, const char *s)
{
	size_t	n = strlen(s);

	if (d->full)
		return;
	if (d->len + n + 6 >= d->size) {
		if (d->len + 5 < d->size)
			memcpy(d->out + d->len, ", ...", 6), d->len += 5;
		d->full = true;
		return;
	}
	memcpy(d->out + d->len, s, n + 1);
	d->len += n;
}

/* Further values of a key show as " +N". */
static void
desc_flush(struct desc *d)
{
	char	buf[32];

	if (d->more == 0)
		return;
	snprintf(buf, sizeof(buf), " +%zu", d->more);
	desc_add(d, buf);
	d->more = 0;
}

static void
desc_key(void *arg, const char *key, const char *value, size_t idx)
{
	struct desc	*d = arg;

	if (idx > 0) {
		d->more++;
		return;
	}
	desc_flush(d);
	if (d->len > 0)
		desc_add(d, ", ");
	desc_add(d, key);
	desc_add(d, " ");
	desc_add(d, value);
}

const char *
rules_describe(const struct rules *rs, int i, char *out, size_t outlen)
{
	struct desc	d = { out, 0, outlen, 0, false };

	if (outlen == 0)
		return out;
	out[0] = '\0';
	if (rs == NULL || i < 0 || (size_t)i >= rs->n) {
		snprintf(out, outlen, "final");
		return out;
	}
	rule_walk(rs, &rs->v[i], desc_key, &d);
	desc_flush(&d);
	return out;
}

struct dump {
	FILE		*fp;
	const char	*indent;
	const char	*key;
	bool		 first;
};

static void
dump_value(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (; *s != '\0'; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', fp);
		fputc(*s, fp);
	}
	fputc('"', fp);
}

static void
dump_key(void *arg, const char *key, const char *value, size_t idx)
{
	struct dump	*d = arg;

	if (idx == 0) {
		if (d->key != NULL)
			fputs(" ]\n", d->fp);
		fprintf(d->fp, "%s%s: [ ", d->first ? "" : d->indent, key);
		d->first = false;
		d->key = key;
	} else
		fputs(", ", d->fp);
	dump_value(d->fp, value);
}

void
rules_dump_rule(const struct rules *rs, int i, FILE *fp, const char *indent)
{
	struct dump	d = { fp, indent, NULL, true };

	rule_walk(rs, &rs->v[i], dump_key, &d);
	if (d.key != NULL)
		fputs(" ]\n", fp);
}
