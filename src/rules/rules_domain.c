/*
 * The domain set: one open-addressing hash table of names (each marked
 * exact, suffix or both) over one arena of their bytes, and the keywords
 * in a short list.  The hash runs from the name's last byte to its first,
 * so the hashes of all of a name's suffixes come out of one pass: the
 * lookup probes at each label boundary as it goes.
 */
#include "config.h"

#include "rules/rules_domain.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DOM_EMPTY	UINT32_MAX

struct dslot {
	uint32_t	hash;
	uint32_t	off;		/* into arena, DOM_EMPTY: free slot */
	uint8_t		len;
	uint8_t		kinds;		/* RULES_DOMAIN_EXACT | _SUFFIX */
};

struct rules_domain {
	struct dslot	*tab;
	size_t		 cap;		/* power of two */
	size_t		 used;
	char		*arena;
	size_t		 alen, acap;
	char		**kw;
	size_t		 nkw;
	size_t		 count;
	/* Bit k: some name has k labels (1..127); a suffix of a query
	 * with a label count no name has is not probed. */
	uint64_t	 nlabels[2];
};

static unsigned
label_count(const char *s, size_t len)
{
	unsigned	n = 1;

	while (len-- > 0)
		n += s[len] == '.';
	return n;
}

static bool
has_labels(const struct rules_domain *d, unsigned k)
{
	return k < 128 && (d->nlabels[k >> 6] >> (k & 63)) & 1;
}

/* FNV-1a, fed right to left. */
#define DOM_H0		2166136261u
#define DOM_STEP(h, c)	(((h) ^ (uint8_t)(c)) * 16777619u)

static uint32_t
dom_mix(uint32_t h)
{
	/* FNV's low bits are weak for short keys: finish before masking. */
	h ^= h >> 16;
	h *= 0x7feb352dU;
	h ^= h >> 15;
	return h;
}

static bool
name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
	    c == '_' || c == '.';
}

bool
rules_domain_norm(const char *name, char *out)
{
	size_t	i, len = strlen(name);
	char	c;

	if (len > 0 && name[len - 1] == '.')
		len--;
	if (len == 0 || len > RULES_NAME_MAX)
		return false;
	for (i = 0; i < len; i++) {
		c = name[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (!name_char(c) || (c == '.' && (i == 0 || out[i - 1] == '.')))
			return false;
		out[i] = c;
	}
	if (out[len - 1] == '.')
		return false;
	out[len] = '\0';
	return true;
}

struct rules_domain *
rules_domain_new(void)
{
	return calloc(1, sizeof(struct rules_domain));
}

void
rules_domain_free(struct rules_domain *d)
{
	size_t	i;

	if (d == NULL)
		return;
	for (i = 0; i < d->nkw; i++)
		free(d->kw[i]);
	free(d->kw);
	free(d->tab);
	free(d->arena);
	free(d);
}

static struct dslot *
dom_find(const struct rules_domain *d, uint32_t hash, const char *s,
    size_t len)
{
	size_t		 i, mask = d->cap - 1;
	struct dslot	*e;

	if (d->cap == 0)
		return NULL;
	for (i = dom_mix(hash) & mask;; i = (i + 1) & mask) {
		e = &d->tab[i];
		if (e->off == DOM_EMPTY)
			return e;
		if (e->hash == hash && e->len == len &&
		    memcmp(d->arena + e->off, s, len) == 0)
			return e;
	}
}

static int
dom_grow(struct rules_domain *d)
{
	struct dslot	*old = d->tab, *e;
	size_t		 oldcap = d->cap, i;

	d->cap = oldcap == 0 ? 64 : oldcap * 2;
	if ((d->tab = malloc(d->cap * sizeof(*d->tab))) == NULL) {
		d->tab = old;
		d->cap = oldcap;
		return -1;
	}
	for (i = 0; i < d->cap; i++)
		d->tab[i].off = DOM_EMPTY;
	for (i = 0; i < oldcap; i++) {
		if (old[i].off == DOM_EMPTY)
			continue;
		e = dom_find(d, old[i].hash, d->arena + old[i].off, old[i].len);
		*e = old[i];
	}
	free(old);
	return 0;
}

static uint32_t
dom_hash(const char *s, size_t len)
{
	uint32_t	h = DOM_H0;

	while (len > 0)
		h = DOM_STEP(h, s[--len]);
	return h;
}

static int
add_keyword(struct rules_domain *d, const char *s)
{
	char	**nv, *k;
	size_t	  i;

	for (i = 0; i < d->nkw; i++)
		if (strcmp(d->kw[i], s) == 0)
			return 0;
	if ((k = strdup(s)) == NULL)
		return -2;
	if ((nv = realloc(d->kw, (d->nkw + 1) * sizeof(*nv))) == NULL) {
		free(k);
		return -2;
	}
	d->kw = nv;
	d->kw[d->nkw++] = k;
	d->count++;
	return 0;
}

int
rules_domain_add(struct rules_domain *d, enum rules_domain_kind kind,
    const char *name, const char **why)
{
	char		 norm[RULES_NAME_MAX + 1], *na;
	struct dslot	*e;
	uint32_t	 h;
	size_t		 len, cap;
	unsigned	 k;

	if (!rules_domain_norm(name, norm)) {
		*why = strlen(name) > RULES_NAME_MAX + 1 ? "name too long" :
		    "not a domain name (letters, digits, '-', '_', dots "
		    "between labels)";
		return -1;
	}
	if (kind == RULES_DOMAIN_KEYWORD)
		return add_keyword(d, norm);
	len = strlen(norm);
	if ((d->used + 1) * 2 > d->cap && dom_grow(d) == -1)
		return -2;
	h = dom_hash(norm, len);
	e = dom_find(d, h, norm, len);
	if (e->off != DOM_EMPTY) {
		e->kinds |= (uint8_t)kind;
		d->count++;
		return 0;
	}
	if (d->alen + len > d->acap) {
		cap = d->acap == 0 ? 4096 : d->acap * 2;
		while (cap < d->alen + len)
			cap *= 2;
		if (cap >= DOM_EMPTY || (na = realloc(d->arena, cap)) == NULL)
			return -2;
		d->arena = na;
		d->acap = cap;
	}
	memcpy(d->arena + d->alen, norm, len);
	k = label_count(norm, len);
	d->nlabels[k >> 6] |= (uint64_t)1 << (k & 63);
	e->hash = h;
	e->off = (uint32_t)d->alen;
	e->len = (uint8_t)len;
	e->kinds = (uint8_t)kind;
	d->alen += len;
	d->used++;
	d->count++;
	return 0;
}

bool
rules_domain_match(const struct rules_domain *d, const char *norm)
{
	const struct dslot	*e;
	size_t			 len, i;
	uint32_t		 h = DOM_H0;
	unsigned		 k = 0;

	if (d == NULL)
		return false;
	len = strlen(norm);
	if (d->used > 0) {
		/* i walks down from the end; norm + i is a suffix, and a
		 * label starts there when i is 0 or follows a dot: the
		 * suffix's k-th label from the right. */
		for (i = len; i > 0; i--) {
			h = DOM_STEP(h, norm[i - 1]);
			if (i - 1 != 0 && norm[i - 2] != '.')
				continue;
			if (!has_labels(d, ++k))
				continue;
			e = dom_find(d, h, norm + i - 1, len - (i - 1));
			if (e == NULL || e->off == DOM_EMPTY)
				continue;
			if (e->kinds & RULES_DOMAIN_SUFFIX)
				return true;
			if (i - 1 == 0 && (e->kinds & RULES_DOMAIN_EXACT))
				return true;
		}
	}
	for (i = 0; i < d->nkw; i++)
		if (strstr(norm, d->kw[i]) != NULL)
			return true;
	return false;
}

size_t
rules_domain_count(const struct rules_domain *d)
{
	return d == NULL ? 0 : d->count;
}

size_t
rules_domain_bytes(const struct rules_domain *d)
{
	size_t	n, i;

	if (d == NULL)
		return 0;
	n = sizeof(*d) + d->cap * sizeof(*d->tab) + d->acap +
	    d->nkw * sizeof(*d->kw);
	for (i = 0; i < d->nkw; i++)
		n += strlen(d->kw[i]) + 1;
	return n;
}
