/*
 * client.rules and client.rule_sets: the rules that choose each flow's
 * outbound (src/rules/).  The two keys are parsed after the rest of the
 * client section (conf_rules_check, from its check), so that a rule may
 * name a set or an outbound declared below it.  The rule-set files are
 * read here: a generation holds its rules whole, and a file that does not
 * load fails the load (on SIGHUP: the old generation keeps serving), with
 * the error at the file's own line and column.
 */
#include "config.h"

#include "conf/conf_int.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "rules/rules.h"

#define CONF_RULE_VALUES	65536	/* values of one key of one rule */

/* What a rule item's keys fill. */
struct rule_item {
	struct rules	*rs;
	int		 i;
	yaml_node_t	*outbound;	/* its node, for the error */
};

/* What a rule_sets item's keys fill. */
struct set_item {
	char			 name[CONF_NAME_MAX];
	char			*path;
	int			 type;
	yaml_node_t		*path_node;
};

/* ---- rule_sets -------------------------------------------------------- */

static int
set_key_path(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	struct set_item	*s = base;

	s->path_node = n;
	return conf_key_filename(x, n, k, base);
}

static int
set_key_type(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	static const struct conf_word	w[] = {
		{ "auto", RULES_SET_AUTO }, { "domain", RULES_SET_DOMAIN },
		{ "suffix", RULES_SET_SUFFIX }, { "keyword", RULES_SET_KEYWORD },
		{ "cidr", RULES_SET_CIDR }, { NULL, 0 }
	};

	(void)k;
	return conf_choice(x, n, w, &((struct set_item *)base)->type);
}

static int
check_set(struct ctx *x, yaml_node_t *map, void *base)
{
	(void)base;
	if (conf_require(x, map, "name") == -1)
		return -1;
	return conf_require(x, map, "path");
}

static const struct conf_key keys_set[] = {
	{ "name", conf_key_word, offsetof(struct set_item, name), 0,
	    CONF_NAME_MAX, NULL },
	{ "path", set_key_path, offsetof(struct set_item, path), 0, 0, NULL },
	{ "type", set_key_type, 0, 0, 0, NULL },
	{ NULL, NULL, 0, 0, 0, NULL }
};
static const struct conf_map map_set = { keys_set, check_set };

/* The set's own error ("FILE:LINE:COL: message") comes first; where the
 * configuration names the file follows. */
static int
set_err(struct ctx *x, const struct set_item *s, const char *why)
{
	size_t	plen = strlen(s->path);

	if (strncmp(why, s->path, plen) != 0 || why[plen] != ':' ||
	    why[plen + 1] < '0' || why[plen + 1] > '9') {
		conf_path_push(x, "path");
		return conf_err(x, s->path_node, "%s", why);
	}
	if (!x->failed) {
		x->failed = true;
		snprintf(x->err, x->errlen, "%s (rule set %s, %s:%zu:%zu)", why,
		    s->name, x->name, s->path_node->start_mark.line + 1,
		    s->path_node->start_mark.column + 1);
	}
	return -1;
}

static int
set_one(struct ctx *x, yaml_node_t *n, size_t i, void *arg)
{
	struct set_item	 s;
	char		 err[512];
	int		 rc = -1;

	(void)i;
	(void)arg;
	memset(&s, 0, sizeof(s));
	if (conf_map_walk(x, n, &map_set, &s) == -1)
		goto out;
	if (rules_set_find(x->c->client.rules, s.name) >= 0) {
		conf_err(x, n, "rule set %s declared twice", s.name);
		goto out;
	}
	if (rules_set_add(x->c->client.rules, s.name, s.path,
	    (enum rules_set_type)s.type, err, sizeof(err)) == -1) {
		set_err(x, &s, err);
		goto out;
	}
	rc = 0;
out:
	free(s.path);
	return rc;
}

/* ---- rules ------------------------------------------------------------ */

static int
value_err(struct ctx *x, yaml_node_t *n, int rc, const char *s,
    const char *why)
{
	if (rc == -2)
		return conf_err(x, n, "out of memory");
	return conf_err(x, n, "'%s': %s", conf_vis(x, s), why);
}

static int
item_cidr(struct ctx *x, yaml_node_t *n, struct rule_item *r, bool src)
{
	const char	*s = conf_scalar(x, n);
	struct cidr	 c;
	int		 rc;

	if (s == NULL)
		return -1;
	if (cidr_parse(&c, s) == -1)
		return conf_err(x, n, "'%s' is not an address/prefix",
		    conf_vis(x, s));
	rc = src ? rules_rule_src(r->rs, r->i, &c) :
	    rules_rule_dst(r->rs, r->i, &c);
	return rc == 0 ? 0 : value_err(x, n, rc, s, "");
}

static int
item_dst(struct ctx *x, yaml_node_t *n, size_t i, void *arg)
{
	(void)i;
	return item_cidr(x, n, arg, false);
}

static int
item_src(struct ctx *x, yaml_node_t *n, size_t i, void *arg)
{
	(void)i;
	return item_cidr(x, n, arg, true);
}

static int
item_name(struct ctx *x, yaml_node_t *n, struct rule_item *r,
    enum rules_domain_kind kind)
{
	const char	*s = conf_scalar(x, n), *v, *why = "";
	int		 rc;

	if (s == NULL)
		return -1;
	v = s;
	/* The suffix may be written as rule-set files write it. */
	if (kind == RULES_DOMAIN_SUFFIX && strncmp(v, "+.", 2) == 0)
		v += 2;
	else if (kind == RULES_DOMAIN_SUFFIX && *v == '.')
		v++;
	if (strchr(v, '*') != NULL)
		return conf_err(x, n, "'%s': no wildcards: use domain_suffix",
		    conf_vis(x, s));
	if ((rc = rules_rule_domain(r->rs, r->i, kind, v, &why)) != 0)
		return value_err(x, n, rc, s, why);
	return 0;
}

static int
item_domain(struct ctx *x, yaml_node_t *n, size_t i, void *arg)
{
	(void)i;
	return item_name(x, n, arg, RULES_DOMAIN_EXACT);
}

static int
item_suffix(struct ctx *x, yaml_node_t *n, size_t i, void *arg)
{
	(void)i;
	return item_name(x, n, arg, RULES_DOMAIN_SUFFIX);
}

static int
item_keyword(struct ctx *x, yaml_node_t *n, size_t i, void *arg)
{
	(void)i;
	return item_name(x, n, arg, RULES_DOMAIN_KEYWORD);
}

/* "443" or "1000-2000". */
static int
item_port(struct ctx *x, yaml_node_t *n, size_t i, void *arg)
{
	struct rule_item	*r = arg;
	const char		*s = conf_scalar(x, n), *dash;
	unsigned long long	 lo, hi;
	char			 a[8];
	int			 rc;

	(void)i;
	if (s == NULL)
		return -1;
	dash = strchr(s, '-');
	if (dash == NULL) {
		if (conf_parse_u64(s, &lo) == -1)
			goto bad;
		hi = lo;
	} else {
		if ((size_t)(dash - s) >= sizeof(a) || dash == s)
			goto bad;
		memcpy(a, s, (size_t)(dash - s));
		a[dash - s] = '\0';
		if (conf_parse_u64(a, &lo) == -1 ||
		    conf_parse_u64(dash + 1, &hi) == -1)
			goto bad;
	}
	if (lo > 65535 || hi > 65535)
		return conf_err(x, n, "'%s': ports are 0..65535",
		    conf_vis(x, s));
	if (lo > hi)
		return conf_err(x, n, "'%s': the range is backwards",
		    conf_vis(x, s));
	rc = rules_rule_port(r->rs, r->i, (uint16_t)lo, (uint16_t)hi);
	return rc == 0 ? 0 : value_err(x, n, rc, s, "");
bad:
	return conf_err(x, n, "'%s' is not a port or a range (443, "
	    "1000-2000)", conf_vis(x, s));
}

static int
item_network(struct ctx *x, yaml_node_t *n, size_t i, void *arg)
{
	static const struct conf_word	w[] = {
		{ "tcp", RULES_NET_TCP }, { "udp", RULES_NET_UDP },
		{ "icmp", RULES_NET_ICMP }, { NULL, 0 }
	};
	struct rule_item	*r = arg;
	int			 v;

	(void)i;
	if (conf_choice(x, n, w, &v) == -1)
		return -1;
	return rules_rule_network(r->rs, r->i, (unsigned)v);
}

static int
item_geoip(struct ctx *x, yaml_node_t *n, size_t i, void *arg)
{
	struct rule_item	*r = arg;
	const char		*s = conf_scalar(x, n), *why = "";
	int			 rc;

	(void)i;
	if (s == NULL)
		return -1;
	if ((rc = rules_rule_geoip(r->rs, r->i, s, &why)) != 0)
		return value_err(x, n, rc, s, why);
	return 0;
}

static int
item_set(struct ctx *x, yaml_node_t *n, size_t i, void *arg)
{
	struct rule_item	*r = arg;
	const char		*s = conf_scalar(x, n);
	int			 set;

	(void)i;
	if (s == NULL)
		return -1;
	if ((set = rules_set_find(r->rs, s)) < 0)
		return conf_err(x, n, "no rule set named %s in rule_sets",
		    conf_vis(x, s));
	return rules_rule_set(r->rs, r->i, set) == 0 ? 0 :
	    conf_err(x, n, "out of memory");
}

/* One key of a rule: a value or a list of them, each added by item. */
#define RULE_KEY_FN(fn, item)						\
static int								\
fn(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)	\
{									\
	(void)k;							\
	return conf_list_walk(x, n, 1, CONF_RULE_VALUES, item, base);	\
}
RULE_KEY_FN(rk_dst, item_dst)
RULE_KEY_FN(rk_domain, item_domain)
RULE_KEY_FN(rk_suffix, item_suffix)
RULE_KEY_FN(rk_keyword, item_keyword)
RULE_KEY_FN(rk_port, item_port)
RULE_KEY_FN(rk_network, item_network)
RULE_KEY_FN(rk_src, item_src)
RULE_KEY_FN(rk_set, item_set)
RULE_KEY_FN(rk_geoip, item_geoip)

static int
rule_key_outbound(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	struct rule_item	*r = base;
	const char		*s = conf_scalar(x, n);

	(void)k;
	if (s == NULL)
		return -1;
	if (rules_rule_outbound(r->rs, r->i, s) == -1)
		return conf_err(x, n, "'%s': name too long", conf_vis(x, s));
	r->outbound = n;
	return 0;
}

/* The outbound a rule names, by name (client.outbounds). */
static int
outbound_index(const struct conf *c, const char *name)
{
	return conf_outbound_index(c, name);
}

static int
check_rule(struct ctx *x, yaml_node_t *map, void *base)
{
	struct rule_item	*r = base;
	int			 ob;

	if (conf_require(x, map, "outbound") == -1)
		return -1;
	if (rules_rule_empty(r->rs, r->i))
		return conf_err(x, map, "a rule needs something to match "
		    "(dst, domain, domain_suffix, domain_keyword, port, "
		    "network, src, rule_set or geoip); the flows no rule "
		    "takes go to final");
	if ((ob = outbound_index(x->c, rules_outbound_name(r->rs, r->i))) < 0)
		return conf_err(x, r->outbound, "outbound: no outbound named "
		    "%s", conf_vis(x, rules_outbound_name(r->rs, r->i)));
	rules_bind(r->rs, r->i, ob);
	return 0;
}

static const struct conf_key keys_rule[] = {
	{ "dst", rk_dst, 0, 0, 0, NULL },
	{ "domain", rk_domain, 0, 0, 0, NULL },
	{ "domain_suffix", rk_suffix, 0, 0, 0, NULL },
	{ "domain_keyword", rk_keyword, 0, 0, 0, NULL },
	{ "port", rk_port, 0, 0, 0, NULL },
	{ "network", rk_network, 0, 0, 0, NULL },
	{ "src", rk_src, 0, 0, 0, NULL },
	{ "rule_set", rk_set, 0, 0, 0, NULL },
	{ "geoip", rk_geoip, 0, 0, 0, NULL },
	{ "outbound", rule_key_outbound, 0, 0, 0, NULL },
	{ NULL, NULL, 0, 0, 0, NULL }
};
static const struct conf_map map_rule = { keys_rule, check_rule };

static int
rule_one(struct ctx *x, yaml_node_t *n, size_t i, void *arg)
{
	struct rule_item	r = { x->c->client.rules, -1, NULL };

	(void)i;
	(void)arg;
	if ((r.i = rules_add(r.rs)) < 0)
		return conf_err(x, n, "out of memory");
	return conf_map_walk(x, n, &map_rule, &r);
}

/* ---- the keys and their check ------------------------------------------ */

/* Both are parsed in conf_rules_check, once the whole section is known. */
int
conf_rules_key_rules(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	(void)k;
	(void)base;
	x->rules_node = n;
	return 0;
}

int
conf_rules_key_sets(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	(void)k;
	(void)base;
	x->rule_sets_node = n;
	return 0;
}

int
conf_rules_key_geoip(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	(void)k;
	(void)base;
	x->geoip_node = n;
	return 0;
}

static int
geoip_database(struct ctx *x, struct conf *c)
{
	char		 abs[PATH_MAX], err[512];
	const char	*s;
	size_t		 old = conf_path_push(x, "geoip_database");

	if ((s = conf_scalar(x, x->geoip_node)) == NULL ||
	    (s = conf_file_name(x, x->geoip_node, s, abs, sizeof(abs))) ==
	    NULL)
		return -1;
	if (rules_geoip_add(c->client.rules, s, err, sizeof(err)) == -1)
		return conf_err(x, x->geoip_node, "%s", err);
	conf_path_pop(x, old);
	return 0;
}

int
conf_rules_check(struct ctx *x, yaml_node_t *map, struct conf *c)
{
	size_t	old;

	(void)map;
	if (x->rules_node == NULL && x->rule_sets_node == NULL &&
	    x->geoip_node == NULL)
		return 0;
	if ((c->client.rules = rules_new()) == NULL)
		return conf_err(x, map, "out of memory");
	if (x->geoip_node != NULL && geoip_database(x, c) == -1)
		return -1;
	if (x->rule_sets_node != NULL) {
		old = conf_path_push(x, "rule_sets");
		if (conf_list_walk(x, x->rule_sets_node, 0, 1024, set_one,
		    NULL) == -1)
			return -1;
		conf_path_pop(x, old);
	}
	if (x->rules_node != NULL) {
		old = conf_path_push(x, "rules");
		if (conf_list_walk(x, x->rules_node, 0, RULES_MAX, rule_one,
		    NULL) == -1)
			return -1;
		conf_path_pop(x, old);
	}
	return 0;
}

/* ---- the dump ------------------------------------------------------------ */

void
conf_rules_dump(const struct conf *c, FILE *fp)
{
	const struct rules	*rs = c->client.rules;
	const struct rules_set	*s;
	size_t			 i;

	if (rs == NULL)
		return;
	if (rules_geoip_file(rs) != NULL) {
		fprintf(fp, "  geoip_database: ");
		conf_dump_str(fp, rules_geoip_file(rs));
		fputc('\n', fp);
	}
	if (rules_set_count(rs) > 0)
		fprintf(fp, "  rule_sets:\n");
	for (i = 0; i < rules_set_count(rs); i++) {
		s = rules_set_at(rs, i);
		fprintf(fp, "    - name: ");
		conf_dump_str(fp, s->name);
		fprintf(fp, "\n      path: ");
		conf_dump_str(fp, s->path);
		fprintf(fp, "\n      type: %s\n", rules_set_type_name(s->type));
	}
	if (rules_count(rs) > 0)
		fprintf(fp, "  rules:\n");
	for (i = 0; i < rules_count(rs); i++) {
		fprintf(fp, "    - ");
		rules_dump_rule(rs, (int)i, fp, "      ");
		fprintf(fp, "      outbound: ");
		conf_dump_str(fp, rules_outbound_name(rs, (int)i));
		fputc('\n', fp);
	}
}
