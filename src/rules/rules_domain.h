/*
 * A set of domain names: exact names, suffixes (a suffix "example.com"
 * matches example.com and every name under it) and keywords (substrings).
 * Names are compared case-insensitively with a trailing dot ignored.
 *
 * Exact names and suffixes are hashed: a lookup hashes the query name
 * once, right to left, and probes the table at each label boundary, so it
 * costs one probe per label (at most 127) whatever the set's size.
 * Keywords are a plain list, each one searched for in the name: their
 * cost is per keyword, so they are meant for a handful, not for lists.
 */
#ifndef TUNSPLIT_RULES_DOMAIN_H
#define TUNSPLIT_RULES_DOMAIN_H

#include <stdbool.h>
#include <stddef.h>

#define RULES_NAME_MAX	253		/* without the trailing dot */

enum rules_domain_kind {
	RULES_DOMAIN_EXACT = 1,
	RULES_DOMAIN_SUFFIX = 2,
	RULES_DOMAIN_KEYWORD = 4,
};

struct rules_domain;

struct rules_domain *rules_domain_new(void);
void rules_domain_free(struct rules_domain *);		/* NULL ok */
/*
 * Adds name (any case, trailing dot allowed).  0; -1 with *why set when
 * the name is not one (why: a static string); -2 when out of memory.
 * A keyword may be any run of name characters, dots included.
 */
int  rules_domain_add(struct rules_domain *, enum rules_domain_kind,
    const char *name, const char **why);
/*
 * Normalises a query name into out (RULES_NAME_MAX + 1 bytes): lower
 * case, trailing dot dropped.  false when it is not a name (empty, too
 * long, characters no host name has, an empty label).
 */
bool rules_domain_norm(const char *name, char *out);
/* norm: a name rules_domain_norm made. */
bool rules_domain_match(const struct rules_domain *, const char *norm);
size_t rules_domain_count(const struct rules_domain *);
size_t rules_domain_bytes(const struct rules_domain *);

#endif
