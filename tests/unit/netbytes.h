/*
 * Big-endian fields and the RFC 1071 sum for tests that build or check
 * packets byte by byte, independently of the code under test (which uses
 * lwIP's and its own).  Header only: each test includes what it uses.
 */
#ifndef TUNSPLIT_TEST_NETBYTES_H
#define TUNSPLIT_TEST_NETBYTES_H

#include <stddef.h>
#include <stdint.h>

static inline void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void
put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static inline uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

/* RFC 1071 sum over len bytes added to sum, byte by byte, not folded. */
static inline uint32_t
sum_add(uint32_t sum, const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	return sum;
}

/* Folded to 16 bits, not complemented: 0xffff for a valid checksum. */
static inline uint16_t
sum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

#endif
