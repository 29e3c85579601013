/*
 * The trojan wire format (pure encode/decode, no I/O), spoken to and by
 * third-party trojan peers.  Request, client -> server, inside TLS:
 *
 *   56   hex(SHA224(password)), lower case
 *   2    CRLF
 *   1    command: 1 CONNECT, 3 UDP ASSOCIATE
 *   1    address type: 1 IPv4, 3 domain, 4 IPv6 (as in SOCKS5)
 *   n    address: 4 bytes | 1-byte length + name | 16 bytes
 *   2    port, big endian
 *   2    CRLF
 *
 * then the relayed stream.  There is no response: the server just relays,
 * and a target it could not reach shows as the server closing.
 */
#ifndef TUNSPLIT_PROTO_TROJAN_H
#define TUNSPLIT_PROTO_TROJAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "wire/proto.h"

#define PROTO_TROJAN_HEX_LEN	56	/* hex of a SHA-224 digest */
#define PROTO_TROJAN_CMD_CONNECT 1
#define PROTO_TROJAN_CMD_UDP	3
/* hash, CRLF, cmd, atyp, 1 + 255 domain, port, CRLF */
#define PROTO_TROJAN_REQ_MAX	(PROTO_TROJAN_HEX_LEN + 2 + 2 + 256 + 2 + 2)

struct proto_trojan_req {
	char		 hex[PROTO_TROJAN_HEX_LEN + 1];	/* NUL-terminated */
	uint8_t		 cmd;
	struct proto_dest dest;
};

/* hex(SHA224(pw[0..len))) into hex (NUL-terminated).  0 or -1. */
int proto_trojan_hash(const char *pw, size_t len,
    char hex[PROTO_TROJAN_HEX_LEN + 1]);

/* Encodes a request for dest with the given password hash.  Returns the
 * length, or -1 if out is too small or a field is invalid. */
ssize_t proto_trojan_encode(uint8_t *out, size_t outlen,
    const char hex[PROTO_TROJAN_HEX_LEN], uint8_t cmd,
    const struct proto_dest *dest);

/* Whether a stream prefix could be a trojan request (the native header
 * starts with its version byte, never a hex digit): 1 yes, 0 need more
 * bytes, -1 no. */
int proto_trojan_detect(const uint8_t *in, size_t len);

/* Parses a request prefix.  Returns the request length when complete, 0
 * when more bytes are needed, -1 when malformed (not hex, no CRLF, unknown
 * command or address type, empty domain). */
ssize_t proto_trojan_parse(const uint8_t *in, size_t len,
    struct proto_trojan_req *r);

/* Constant-time search of hex among the n configured hashes; every entry
 * is compared.  Returns the index, or -1. */
int proto_trojan_match(const char hex[PROTO_TROJAN_HEX_LEN],
    const char (*hashes)[PROTO_TROJAN_HEX_LEN + 1], size_t n);

/*
 * After a UDP ASSOCIATE request (whose address trojan peers ignore) the
 * stream carries packets, in both directions:
 *
 *   1    address type: 1 IPv4, 3 domain, 4 IPv6
 *   n    address: 4 bytes | 1-byte length (1..255) + name | 16 bytes
 *   2    port, big endian
 *   2    payload length N, big endian, 0..PROTO_TROJAN_UDP_PAYLOAD_MAX
 *   2    CRLF
 *   N    payload
 *
 * Client to server the address is the destination, server to client the
 * source of the datagram.
 */
/* The largest UDP payload over IPv6 without jumbograms, as FRAME_PAYLOAD_MAX;
 * longer lengths are malformed. */
#define PROTO_TROJAN_UDP_PAYLOAD_MAX 65527
#define PROTO_TROJAN_UDP_HDR_MIN	(1 + 4 + 2 + 2 + 2)
#define PROTO_TROJAN_UDP_HDR_MAX	(1 + 1 + 255 + 2 + 2 + 2)
#define PROTO_TROJAN_UDP_MAX \
	(PROTO_TROJAN_UDP_HDR_MAX + PROTO_TROJAN_UDP_PAYLOAD_MAX)

/* Header length for this address, 0 when the address is invalid. */
size_t  proto_trojan_udp_hdr_len(const struct proto_dest *a);
/* Writes the packet header for a payload of plen bytes.  Returns its
 * length, or -1 when out is too small or the address or length is
 * invalid. */
ssize_t proto_trojan_udp_encode_hdr(uint8_t *out, size_t outlen,
    const struct proto_dest *a, size_t plen);
/* Header and payload.  Returns the packet length or -1. */
ssize_t proto_trojan_udp_encode(uint8_t *out, size_t outlen,
    const struct proto_dest *a, const void *payload, size_t plen);
/* Parses the packet at in (len bytes available).  Returns the whole
 * packet's length when complete (a, *payload and *plen set; *payload
 * points into in), 0 when more bytes are needed, -1 when malformed (address
 * type, empty domain or a NUL in it, length over the bound, no CRLF).  Each
 * field is judged as soon as it has arrived: a prefix is rejected as soon
 * as it proves the packet malformed and never before. */
ssize_t proto_trojan_udp_parse(const uint8_t *in, size_t len,
    struct proto_dest *a, const uint8_t **payload, size_t *plen);

#endif
