/*
 * The tunsplit wire format (pure encode/decode, no I/O).  See
 * doc/PROTOCOL.md.  Request header, client -> server, version 2 (1):
 *
 *   off  size
 *   0    1    version (2; 1 for old peers)
 *   1    1    kind: 1 TCP, 2 UDP association, 3 ICMP echo
 *   2    2    total header length H, big endian (incl. MAC), <= PROTO_REQ_MAX
 *   4    8    timestamp, unix seconds, big endian
 *   12   16   nonce (random)
 *   28   8    user id (auth_user_id(key))
 *   36   1    address type: 1 IPv4, 3 domain, 4 IPv6
 *   37   n    address: 4 bytes | 1-byte length + name | 16 bytes
 *   ..   2    port, big endian
 *   ..   2    padding length P, big endian
 *   ..   P    padding (random bytes)
 *   H-32 32   MAC: BLAKE2b-256 keyed with the user key over bytes [0, H-32)
 *             followed (version 2) by the 32-byte TLS exporter value of
 *             the connection carrying the header (PROTO_BIND_LABEL, no
 *             context), so a version 2 header is valid on one connection
 *
 * Response, server -> client: one status byte (enum proto_status), then the
 * relayed stream.
 */
#ifndef TUNSPLIT_PROTO_H
#define TUNSPLIT_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROTO_VERSION		2	/* bound to its TLS connection */
#define PROTO_VERSION_1		1	/* unbound: valid on any connection */
/* Version 3: version 2's layout, bound to one flow of a connection (the
 * exporter with the flow's index as context, proto_bind_context), and
 * the stream after it framed so the connection can carry a next flow
 * (doc/PROTOCOL.md "Reusable connections"). */
#define PROTO_VERSION_3		3
#define PROTO_BIND_CTX_LEN	4
/* A version 2 client that can speak version 3 starts its padding with
 * these bytes; a server that can too answers with PROTO_STATUS_REUSE
 * set in its status, and the client's next connections use version 3. */
#define PROTO_REUSE_TAG		"tunsplit-reuse/3"
#define PROTO_REUSE_TAG_LEN	16
#define PROTO_STATUS_REUSE	0x80
#define PROTO_BIND_LEN		32
/* RFC 8446 section 7.5 exporter label of the binding (no context). */
#define PROTO_BIND_LABEL	"EXPORTER-tunsplit-header"
#define PROTO_REQ_MAX		1024
#define PROTO_REQ_FIXED		37	/* bytes before the address */
#define PROTO_MAC_LEN		32
#define PROTO_NONCE_LEN		16
#define PROTO_USER_ID_LEN	8
#define PROTO_KEY_LEN		32

enum proto_kind { PROTO_KIND_TCP = 1, PROTO_KIND_UDP = 2, PROTO_KIND_ICMP = 3 };
enum proto_atyp { PROTO_ATYP_IPV4 = 1, PROTO_ATYP_DOMAIN = 3, PROTO_ATYP_IPV6 = 4 };

enum proto_status {
	PROTO_OK		= 0,
	PROTO_ERR_GENERAL	= 1,
	PROTO_ERR_DENIED	= 2,	/* egress policy */
	PROTO_ERR_NET_UNREACH	= 3,
	PROTO_ERR_HOST_UNREACH	= 4,
	PROTO_ERR_REFUSED	= 5,
	PROTO_ERR_TIMEOUT	= 6,
	PROTO_ERR_UNSUPPORTED	= 7,	/* kind or address type */
	PROTO_ERR_RESOLVE	= 8,
	PROTO_ERR_LIMIT		= 9,	/* server connection limit */
};

struct proto_dest {
	uint8_t		 atyp;
	uint8_t		 ip[16];	/* 4 or 16 bytes used */
	char		 domain[256];	/* NUL-terminated when atyp == DOMAIN */
	uint16_t	 port;
};

struct proto_req {
	uint8_t		 version;
	uint8_t		 kind;
	uint16_t	 len;		/* total header length on the wire */
	uint64_t	 ts;
	uint8_t		 nonce[PROTO_NONCE_LEN];
	uint8_t		 user_id[PROTO_USER_ID_LEN];
	struct proto_dest dest;
	bool		 can_reuse;	/* version 2 with PROTO_REUSE_TAG */
};

/* The exporter context of a version 3 header: the flow's index on its
 * connection (0 for the first), 4 bytes big endian. */
void proto_bind_context(uint32_t flow, uint8_t ctx[PROTO_BIND_CTX_LEN]);

/* Encodes r (len computed; ts/nonce as given) with pad_len random padding
 * bytes and the MAC under key: a version 2 header bound to the TLS
 * exporter value bind[PROTO_BIND_LEN] of its connection, or with bind
 * NULL a version 1 header (for old servers); r->version 3 (bind needed)
 * makes a version 3 one.  r->can_reuse tags a version 2 header's
 * padding (when it has room).  Returns the length, or -1
 * if out is too small or a field is invalid. */
ssize_t proto_req_encode(uint8_t *out, size_t outlen, const struct proto_req *r,
    const uint8_t key[PROTO_KEY_LEN], const uint8_t *bind, size_t pad_len);

/*
 * A random padding length for r, as a client chooses it: the whole header
 * then measures PROTO_PAD_TO to PROTO_PAD_TO + PROTO_PAD_SPAN - 1 bytes
 * whatever the destination (its address type and name length do not
 * show), or, for a header already longer than PROTO_PAD_TO (names of more
 * than 182 bytes), its own length plus 0 to PROTO_PAD_SPAN - 1.  0 if r
 * is invalid.
 */
#define PROTO_PAD_TO		256
#define PROTO_PAD_SPAN		256
size_t proto_req_pad_random(const struct proto_req *r);

/* Parses a header prefix (version 1 or 2) without checking the MAC.
 * Returns the total header length when complete, 0 when more bytes are
 * needed, -1 when malformed (bad version, kind, atyp, lengths).  Whether
 * a version 1 header is acceptable is the server's policy, not the
 * parser's. */
ssize_t proto_req_parse(const uint8_t *in, size_t len, struct proto_req *r);

/* Constant-time MAC check of a complete header of length r->len: a
 * version 2 header against the exporter value bind of the connection it
 * came on (bind NULL: fails), a version 1 header without it (bind is
 * ignored).  0 or -1. */
int proto_req_verify_mac(const uint8_t *in, size_t len,
    const uint8_t key[PROTO_KEY_LEN], const uint8_t *bind);

const char *proto_status_str(uint8_t status);
/* A refusal's short name as a counter's reason ("egress denied", "target
 * refused"): one per status, stable, for status and metrics labels. */
const char *proto_status_reason(uint8_t status);
/* errno from connect() -> status */
uint8_t proto_status_from_errno(int err);

#endif
