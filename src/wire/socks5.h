/*
 * SOCKS5, the client side (RFC 1928; RFC 1929 username/password): a pure
 * codec, no I/O.  Addresses are struct proto_dest (the address types are
 * SOCKS5's own: 1 IPv4, 3 domain, 4 IPv6).
 *
 *   greeting   client  VER(5) NMETHODS METHODS...
 *   choice     proxy   VER(5) METHOD             (0xff: none acceptable)
 *   auth       client  VER(1) ULEN UNAME PLEN PASSWD    (RFC 1929)
 *   auth reply proxy   VER(1) STATUS             (0 success)
 *   request    client  VER(5) CMD RSV(0) ATYP DST.ADDR DST.PORT
 *   reply      proxy   VER(5) REP RSV ATYP BND.ADDR BND.PORT
 *   UDP        both    RSV(2) FRAG ATYP ADDR PORT DATA   (one datagram)
 *
 * The parsers take what has arrived so far and return the length of the
 * message when it is complete, 0 when more bytes are needed, -1 when it
 * is malformed.  Each field is judged as soon as it has arrived, so a
 * prefix is rejected as soon as it proves the message malformed, never
 * before; a complete message is never judged by bytes after it.  Reserved
 * bytes from the proxy are not checked (RFC 1928 does not say to).
 */
#ifndef TUNSPLIT_SOCKS5_H
#define TUNSPLIT_SOCKS5_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "wire/proto.h"

#define SOCKS5_VERSION		5
#define SOCKS5_AUTH_VERSION	1	/* RFC 1929 subnegotiation */

#define SOCKS5_METHOD_NONE	0x00
#define SOCKS5_METHOD_USERPASS	0x02
#define SOCKS5_METHOD_REFUSED	0xff

#define SOCKS5_CMD_CONNECT	1
#define SOCKS5_CMD_UDP		3	/* UDP ASSOCIATE */

enum socks5_rep {
	SOCKS5_REP_OK		= 0,
	SOCKS5_REP_GENERAL	= 1,
	SOCKS5_REP_DENIED	= 2,	/* not allowed by ruleset */
	SOCKS5_REP_NET_UNREACH	= 3,
	SOCKS5_REP_HOST_UNREACH	= 4,
	SOCKS5_REP_REFUSED	= 5,
	SOCKS5_REP_TTL		= 6,
	SOCKS5_REP_CMD		= 7,	/* command not supported */
	SOCKS5_REP_ATYP		= 8,	/* address type not supported */
};

#define SOCKS5_CRED_MAX		255	/* RFC 1929 user name, password */
#define SOCKS5_GREETING_MAX	4
#define SOCKS5_AUTH_MAX		(3 + 2 * SOCKS5_CRED_MAX)
/* VER CMD RSV ATYP, 1 + 255 domain, port */
#define SOCKS5_REQ_MAX		(4 + 1 + 255 + 2)
#define SOCKS5_REPLY_MAX	SOCKS5_REQ_MAX
#define SOCKS5_REPLY_MIN	(4 + 4 + 2)
/* RSV RSV FRAG ATYP, 1 + 255 domain, port */
#define SOCKS5_UDP_HDR_MAX	(4 + 1 + 255 + 2)
#define SOCKS5_UDP_HDR_MIN	(4 + 4 + 2)

struct socks5_reply {
	uint8_t			 rep;	/* enum socks5_rep, or another code */
	struct proto_dest	 bnd;	/* BND.ADDR, BND.PORT */
};

/* The greeting: no authentication, and username/password when userpass.
 * Returns its length, or -1 if out is too small. */
ssize_t socks5_greeting(uint8_t *out, size_t outlen, bool userpass);
/* The proxy's method choice: 2 (*method set, which may be
 * SOCKS5_METHOD_REFUSED or one never offered: the caller judges), 0, -1
 * (version not 5). */
ssize_t socks5_method_parse(const uint8_t *in, size_t len, uint8_t *method);

/* RFC 1929 request; user and pass are 1..255 bytes.  Returns its length,
 * or -1 if out is too small or a field is empty or too long. */
ssize_t socks5_auth_encode(uint8_t *out, size_t outlen, const char *user,
    const char *pass);
/* RFC 1929 reply: 2 (*status set; 0 is success), 0, -1 (version not 1). */
ssize_t socks5_auth_parse(const uint8_t *in, size_t len, uint8_t *status);

/* A CONNECT or UDP ASSOCIATE request for dst.  Returns its length, or -1 if
 * out is too small or the command or address is invalid (address type,
 * empty or over-long domain). */
ssize_t socks5_request(uint8_t *out, size_t outlen, uint8_t cmd,
    const struct proto_dest *dst);
/* The reply to a request: its length (r set), 0, -1 (version not 5,
 * unknown address type, empty domain or a NUL in it). */
ssize_t socks5_reply_parse(const uint8_t *in, size_t len,
    struct socks5_reply *r);
/* How many bytes to read next so as not to read past the reply (the
 * proxy may send the target's first bytes right behind it): 0 once
 * in[0..len) holds the whole reply, else at least 1. */
size_t  socks5_reply_want(const uint8_t *in, size_t len);
/* What a reply code means, as RFC 1928 words it ("connection refused"). */
const char *socks5_rep_str(uint8_t rep);

/* UDP: the header in front of each datagram to or from the relay; the
 * address is the destination going out, the source coming back.  Header
 * length for a, 0 when a is invalid. */
size_t  socks5_udp_hdr_len(const struct proto_dest *a);
/* Writes the header (FRAG 0).  Returns its length or -1. */
ssize_t socks5_udp_encode_hdr(uint8_t *out, size_t outlen,
    const struct proto_dest *a);
/* Parses one whole datagram from the relay: the header's length (a,
 * *payload and *plen set; *payload points into in), or -1 when it is
 * truncated, malformed, or a fragment (FRAG != 0: unsupported, and RFC
 * 1928 lets an implementation drop those). */
ssize_t socks5_udp_parse(const uint8_t *in, size_t len, struct proto_dest *a,
    const uint8_t **payload, size_t *plen);

#endif
