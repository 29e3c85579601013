/*
 * The address field that every wire format here shares -- the native
 * request header (proto.h), datagram frames (frame.h), trojan requests and
 * UDP packets (proto_trojan.h), SOCKS5 requests, replies and UDP headers
 * (socks5.h) -- with SOCKS5's address types:
 *
 *   1    address type: 1 IPv4, 3 domain, 4 IPv6 (enum proto_atyp)
 *   n    address: 4 bytes | 1-byte length L (1..255) + L bytes | 16 bytes
 *   2    port, big endian
 *
 * Pure encode/decode, no I/O.  The parsers take what has arrived so far;
 * each caller maps WIRE_MORE and WIRE_BAD to its own results and decides
 * when a NUL in a name is judged (wire_addr_size never looks at the name,
 * wire_addr_scan as soon as its bytes arrive, wire_addr_get at the end).
 */
#ifndef TUNSPLIT_WIRE_H
#define TUNSPLIT_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "wire/proto.h"

#define WIRE_MORE	0	/* more bytes are needed */
#define WIRE_BAD	(-1)	/* malformed */

#define WIRE_ADDR_MIN	(1 + 4 + 2)		/* IPv4 */
#define WIRE_ADDR_MAX	(1 + 1 + 255 + 2)	/* a 255-byte name */

/* The field's length for a, 0 when a is invalid (address type, empty
 * or over-long name). */
size_t  wire_addr_len(const struct proto_dest *a);
/* Writes the field for a valid a (out has wire_addr_len(a) bytes);
 * returns its length. */
size_t  wire_addr_put(uint8_t *out, const struct proto_dest *a);

/* The length of the field starting at in[0..len), as soon as its type
 * and, for a name, its length byte have arrived; WIRE_MORE before that;
 * WIRE_BAD for an unknown type or an empty name.  The name's bytes are
 * not looked at. */
ssize_t wire_addr_size(const uint8_t *in, size_t len);
/* As wire_addr_size, and also WIRE_BAD for a NUL among the name's bytes
 * that have arrived; then WIRE_MORE until the whole field has. */
ssize_t wire_addr_scan(const uint8_t *in, size_t len);
/* Reads a whole field into a (zeroed first): in holds at least the
 * wire_addr_size(in, ...) > 0 bytes.  Returns the field's length, or
 * WIRE_BAD for a NUL in the name. */
ssize_t wire_addr_get(const uint8_t *in, struct proto_dest *a);

/* Puts plen payload bytes behind a header of h bytes already written to
 * out (h < 0: the header failed).  Returns the whole length or -1. */
ssize_t wire_payload(uint8_t *out, size_t outlen, ssize_t h,
    const void *payload, size_t plen);

#endif
