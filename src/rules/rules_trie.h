/*
 * A set of address prefixes (IPv4 and IPv6), asked "does this address lie
 * in any of them".  A path-compressed binary trie per family: a lookup
 * visits at most one node per prefix length on the way down (33 for IPv4,
 * 129 for IPv6), however many prefixes the set holds.  A prefix covered
 * by a shorter one already in the set adds nothing and is not stored.
 */
#ifndef TUNSPLIT_RULES_TRIE_H
#define TUNSPLIT_RULES_TRIE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/addr.h"

struct rules_trie;

struct rules_trie *rules_trie_new(void);
void rules_trie_free(struct rules_trie *);		/* NULL ok */
/* 0, or -1 when out of memory. */
int  rules_trie_add(struct rules_trie *, const struct cidr *);
/* ip: 4 bytes for AF_INET, 16 for AF_INET6. */
bool rules_trie_match(const struct rules_trie *, int family, const void *ip);
/* Prefixes added (covered ones included), and bytes held. */
size_t rules_trie_count(const struct rules_trie *);
size_t rules_trie_bytes(const struct rules_trie *);

#endif
