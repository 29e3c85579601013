/*
 * Path-compressed binary trie (a PATRICIA tree without the skipped-bits
 * shortcut: each node keeps its whole prefix, so a lookup checks it with
 * one masked compare).  Nodes live in one array and point at each other by
 * index, so the array may grow while a path is being rewritten.
 */
#include "config.h"

#include "rules/rules_trie.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define TRIE_NONE	UINT32_MAX

struct tnode {
	uint8_t		key[16];	/* the prefix; bits past plen are 0 */
	uint8_t		plen;
	bool		term;		/* a prefix of the set ends here */
	uint32_t	child[2];	/* by the bit at plen */
};

struct tree {
	uint32_t	root;
	uint8_t		bits;		/* 32 or 128 */
};

struct rules_trie {
	struct tnode	*v;
	size_t		 n, cap;
	size_t		 count;
	struct tree	 t4, t6;
};

static unsigned
bit_at(const uint8_t *k, unsigned i)
{
	return (k[i >> 3] >> (7 - (i & 7))) & 1;
}

/* Length of the common prefix of a and b, at most max bits. */
static unsigned
common_bits(const uint8_t *a, const uint8_t *b, unsigned max)
{
	unsigned	i = 0;
	uint8_t		x;

	while (i + 8 <= max && a[i >> 3] == b[i >> 3])
		i += 8;
	if (i >= max)
		return max;
	x = a[i >> 3] ^ b[i >> 3];
	while (i < max && !(x & (0x80 >> (i & 7))))
		i++;
	return i;
}

/* Whether the first plen bits of a and b agree. */
static bool
prefix_eq(const uint8_t *a, const uint8_t *b, unsigned plen)
{
	unsigned	full = plen >> 3, rest = plen & 7;
	uint8_t		mask;

	if (memcmp(a, b, full) != 0)
		return false;
	if (rest == 0)
		return true;
	mask = (uint8_t)(0xff << (8 - rest));
	return ((a[full] ^ b[full]) & mask) == 0;
}

struct rules_trie *
rules_trie_new(void)
{
	struct rules_trie	*t = calloc(1, sizeof(*t));

	if (t == NULL)
		return NULL;
	t->t4.root = t->t6.root = TRIE_NONE;
	t->t4.bits = 32;
	t->t6.bits = 128;
	return t;
}

void
rules_trie_free(struct rules_trie *t)
{
	if (t == NULL)
		return;
	free(t->v);
	free(t);
}

static uint32_t
node_new(struct rules_trie *t, const uint8_t *key, unsigned plen, bool term)
{
	struct tnode	*nv, *n;
	size_t		 cap;
	unsigned	 i;

	if (t->n == t->cap) {
		cap = t->cap == 0 ? 16 : t->cap * 2;
		if (cap >= TRIE_NONE || (nv = realloc(t->v,
		    cap * sizeof(*nv))) == NULL)
			return TRIE_NONE;
		t->v = nv;
		t->cap = cap;
	}
	n = &t->v[t->n];
	memset(n, 0, sizeof(*n));
	/* Bits past plen are kept zero, so equal prefixes compare equal. */
	for (i = 0; i < plen; i++)
		if (bit_at(key, i))
			n->key[i >> 3] |= (uint8_t)(0x80 >> (i & 7));
	n->plen = (uint8_t)plen;
	n->term = term;
	n->child[0] = n->child[1] = TRIE_NONE;
	return (uint32_t)t->n++;
}

static int
tree_add(struct rules_trie *t, struct tree *tr, const uint8_t *key,
    unsigned plen)
{
	uint32_t	*slot = &tr->root, idx, leaf, mid;
	size_t		 slot_node = TRIE_NONE;	/* owner of slot, or the root */
	unsigned	 slot_bit = 0, common;
	struct tnode	*n;

	for (;;) {
		if (*slot == TRIE_NONE) {
			if ((leaf = node_new(t, key, plen, true)) == TRIE_NONE)
				return -1;
			/* node_new may have moved the array under slot. */
			if (slot_node == TRIE_NONE)
				tr->root = leaf;
			else
				t->v[slot_node].child[slot_bit] = leaf;
			return 0;
		}
		idx = *slot;
		n = &t->v[idx];
		common = common_bits(n->key, key, n->plen < plen ? n->plen :
		    plen);
		if (common == n->plen) {
			if (n->term)
				return 0;	/* covered already */
			if (n->plen == plen) {
				n->term = true;
				/* Longer prefixes below it add nothing now. */
				n->child[0] = n->child[1] = TRIE_NONE;
				return 0;
			}
			slot_node = idx;
			slot_bit = bit_at(key, n->plen);
			slot = &n->child[slot_bit];
			continue;
		}
		/* The paths part at bit common (< n->plen): a new node goes
		 * in between. */
		if (common == plen) {
			if ((mid = node_new(t, key, plen, true)) == TRIE_NONE)
				return -1;
			/* It covers the subtree it replaces. */
		} else {
			if ((mid = node_new(t, key, common, false)) ==
			    TRIE_NONE ||
			    (leaf = node_new(t, key, plen, true)) == TRIE_NONE)
				return -1;
			t->v[mid].child[bit_at(key, common)] = leaf;
			t->v[mid].child[bit_at(t->v[idx].key, common)] = idx;
		}
		if (slot_node == TRIE_NONE)
			tr->root = mid;
		else
			t->v[slot_node].child[slot_bit] = mid;
		return 0;
	}
}

int
rules_trie_add(struct rules_trie *t, const struct cidr *c)
{
	struct tree	*tr = c->family == AF_INET ? &t->t4 : &t->t6;

	if ((c->family != AF_INET && c->family != AF_INET6) ||
	    c->prefix > tr->bits)
		return -1;
	if (tree_add(t, tr, c->bytes, c->prefix) == -1)
		return -1;
	t->count++;
	return 0;
}

bool
rules_trie_match(const struct rules_trie *t, int family, const void *ip)
{
	const struct tree	*tr;
	const struct tnode	*n;
	uint32_t		 idx;

	if (t == NULL)
		return false;
	if (family == AF_INET)
		tr = &t->t4;
	else if (family == AF_INET6)
		tr = &t->t6;
	else
		return false;
	for (idx = tr->root; idx != TRIE_NONE; ) {
		n = &t->v[idx];
		if (!prefix_eq(n->key, ip, n->plen))
			return false;
		if (n->term)
			return true;
		if (n->plen >= tr->bits)
			return false;
		idx = n->child[bit_at(ip, n->plen)];
	}
	return false;
}

size_t
rules_trie_count(const struct rules_trie *t)
{
	return t == NULL ? 0 : t->count;
}

size_t
rules_trie_bytes(const struct rules_trie *t)
{
	return t == NULL ? 0 : sizeof(*t) + t->cap * sizeof(*t->v);
}
