/*
 * Datagram frames: how UDP (kind 2) and ICMP echo (kind 3) streams carry
 * datagrams after the status byte, in both directions (doc/PROTOCOL.md).
 * Pure encode/decode, no I/O.
 *
 *   off   size
 *   0     2    payload length N, big endian, 0..FRAME_PAYLOAD_MAX
 *   2     1    address type: 1 IPv4, 3 domain, 4 IPv6
 *   3     A    address: 4 bytes | 1-byte length L (1..255) + L bytes | 16
 *   3+A   2    port (UDP) or echo sequence number (ICMP), big endian
 *   5+A   N    payload
 *
 * Client to server the address is the destination, server to client the
 * source of the datagram.
 */
#ifndef TUNSPLIT_FRAME_H
#define TUNSPLIT_FRAME_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "wire/proto.h"

struct addr;

/* The largest UDP payload over IPv6 without jumbograms (65535 - 8); IPv4
 * allows 65507.  Longer lengths are malformed. */
#define FRAME_PAYLOAD_MAX	65527
#define FRAME_HDR_MIN		9	/* IPv4 */
#define FRAME_HDR_MAX		(2 + 1 + 1 + 255 + 2)
#define FRAME_MAX		(FRAME_HDR_MAX + FRAME_PAYLOAD_MAX)

/* Header length for this address, 0 when the address is invalid. */
size_t  frame_hdr_len(const struct proto_dest *a);
/* Writes the frame header for a payload of plen bytes.  Returns its length,
 * or -1 when out is too small or the address or length is invalid. */
ssize_t frame_encode_hdr(uint8_t *out, size_t outlen,
    const struct proto_dest *a, size_t plen);
/* Header and payload.  Returns the frame length or -1. */
ssize_t frame_encode(uint8_t *out, size_t outlen, const struct proto_dest *a,
    const void *payload, size_t plen);

/* Parses the frame at in (len bytes available).  Returns the whole frame's
 * length when it is complete (a, *payload and *plen set; *payload points
 * into in), 0 when more bytes are needed, -1 when malformed.  A prefix is
 * judged field by field: it is rejected as soon as it proves the frame
 * malformed and never before. */
ssize_t frame_parse(const uint8_t *in, size_t len, struct proto_dest *a,
    const uint8_t **payload, size_t *plen);

/* Between frame addresses and socket addresses.  frame_dest_to_addr fails
 * (-1) for a domain name. */
void frame_dest_from_ip(struct proto_dest *a, int family, const void *ip,
    uint16_t port);
void frame_dest_from_addr(struct proto_dest *a, const struct addr *sa);
int  frame_dest_to_addr(const struct proto_dest *a, struct addr *sa);

#endif
