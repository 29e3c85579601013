/*
 * Rule-set files: one entry per line, an address prefix or a domain.
 *
 *   # a comment; blank lines are ignored
 *   10.0.0.0/8             a prefix (or a bare address)
 *   domain:example.com     that name only
 *   suffix:example.com     that name and every name under it
 *   +.example.com          the same
 *   keyword:tracker        every name that holds it
 *   cidr:2001:db8::/32     a prefix, said so
 *   example.com            a name: exact, or as the set's type says
 *
 * A set's type says what a line without a prefix is: auto (a prefix when
 * it parses as one, else an exact name), domain, suffix, keyword or cidr
 * (then only prefixes are allowed).  Errors name the file:
 * "FILE:LINE:COL: message".
 */
#ifndef TUNSPLIT_RULES_SET_H
#define TUNSPLIT_RULES_SET_H

#include <stdbool.h>
#include <stddef.h>

#include "rules/rules_domain.h"
#include "rules/rules_trie.h"

#define RULES_SET_FILE_MAX	(256u << 20)	/* bytes */

enum rules_set_type {
	RULES_SET_AUTO = 0,
	RULES_SET_DOMAIN,
	RULES_SET_SUFFIX,
	RULES_SET_KEYWORD,
	RULES_SET_CIDR,
};

struct rules_set {
	char			*name;
	char			*path;
	enum rules_set_type	 type;
	struct rules_trie	*cidrs;
	struct rules_domain	*domains;
	size_t			 lines;		/* entries read */
};

/* Reads path; NULL with err set ("FILE:LINE:COL: message"). */
struct rules_set *rules_set_load(const char *name, const char *path,
    enum rules_set_type type, char *err, size_t errlen);
/* The same from a buffer; fname names it in errors. */
struct rules_set *rules_set_load_buf(const char *name, const char *fname,
    const char *buf, size_t len, enum rules_set_type type, char *err,
    size_t errlen);
void rules_set_free(struct rules_set *);		/* NULL ok */
/* "auto", "domain", "suffix", "keyword", "cidr"; -1 if not one. */
int  rules_set_type_parse(const char *s);
const char *rules_set_type_name(enum rules_set_type);

#endif
