/*
 * SOCKS5 client-side codec.  See socks5.h for the messages.
 */
#include "config.h"

#include "wire/socks5.h"

#include <string.h>

#include "wire/wire.h"

/*
 * Reads ATYP ADDR PORT from in[0..len): its length, 0 when more bytes are
 * needed, -1 when malformed (address type; empty domain or a NUL in it,
 * judged as soon as the name has arrived).
 */
static ssize_t
socks5_addr_get(const uint8_t *in, size_t len, struct proto_dest *a)
{
	ssize_t	n;

	memset(a, 0, sizeof(*a));
	if ((n = wire_addr_scan(in, len)) <= 0)
		return n == WIRE_MORE ? 0 : -1;
	return wire_addr_get(in, a);
}

ssize_t
socks5_greeting(uint8_t *out, size_t outlen, bool userpass)
{
	size_t	n = 0;

	if (outlen < (userpass ? 4u : 3u))
		return -1;
	out[n++] = SOCKS5_VERSION;
	out[n++] = userpass ? 2 : 1;
	out[n++] = SOCKS5_METHOD_NONE;
	if (userpass)
		out[n++] = SOCKS5_METHOD_USERPASS;
	return (ssize_t)n;
}

ssize_t
socks5_method_parse(const uint8_t *in, size_t len, uint8_t *method)
{
	if (len >= 1 && in[0] != SOCKS5_VERSION)
		return -1;
	if (len < 2)
		return 0;
	*method = in[1];
	return 2;
}

ssize_t
socks5_auth_encode(uint8_t *out, size_t outlen, const char *user,
    const char *pass)
{
	size_t	ulen = strnlen(user, SOCKS5_CRED_MAX + 1);
	size_t	plen = strnlen(pass, SOCKS5_CRED_MAX + 1);
	size_t	n = 0;

	if (ulen == 0 || ulen > SOCKS5_CRED_MAX || plen == 0 ||
	    plen > SOCKS5_CRED_MAX || outlen < 3 + ulen + plen)
		return -1;
	out[n++] = SOCKS5_AUTH_VERSION;
	out[n++] = (uint8_t)ulen;
	memcpy(out + n, user, ulen);
	n += ulen;
	out[n++] = (uint8_t)plen;
	memcpy(out + n, pass, plen);
	return (ssize_t)(n + plen);
}

ssize_t
socks5_auth_parse(const uint8_t *in, size_t len, uint8_t *status)
{
	if (len >= 1 && in[0] != SOCKS5_AUTH_VERSION)
		return -1;
	if (len < 2)
		return 0;
	*status = in[1];
	return 2;
}

ssize_t
socks5_request(uint8_t *out, size_t outlen, uint8_t cmd,
    const struct proto_dest *dst)
{
	size_t	alen = wire_addr_len(dst);

	if ((cmd != SOCKS5_CMD_CONNECT && cmd != SOCKS5_CMD_UDP) ||
	    alen == 0 || outlen < 3 + alen)
		return -1;
	out[0] = SOCKS5_VERSION;
	out[1] = cmd;
	out[2] = 0;
	(void)wire_addr_put(out + 3, dst);
	return (ssize_t)(3 + alen);
}

ssize_t
socks5_reply_parse(const uint8_t *in, size_t len, struct socks5_reply *r)
{
	ssize_t	n;

	memset(r, 0, sizeof(*r));
	if (len >= 1 && in[0] != SOCKS5_VERSION)
		return -1;
	if (len < 3)
		return 0;
	r->rep = in[1];
	if ((n = socks5_addr_get(in + 3, len - 3, &r->bnd)) <= 0)
		return n;
	return 3 + n;
}

size_t
socks5_reply_want(const uint8_t *in, size_t len)
{
	ssize_t	n;
	size_t	total;

	/* VER REP RSV ATYP and the first address byte (a name's length). */
	if (len < 5)
		return 5 - len;
	if ((n = wire_addr_size(in + 3, len - 3)) <= 0)
		return 1;	/* malformed: socks5_reply_parse says so */
	total = 3 + (size_t)n;
	return len < total ? total - len : 0;
}

const char *
socks5_rep_str(uint8_t rep)
{
	static const char *const s[] = {
		[SOCKS5_REP_OK] = "succeeded",
		[SOCKS5_REP_GENERAL] = "general SOCKS server failure",
		[SOCKS5_REP_DENIED] = "connection not allowed by ruleset",
		[SOCKS5_REP_NET_UNREACH] = "network unreachable",
		[SOCKS5_REP_HOST_UNREACH] = "host unreachable",
		[SOCKS5_REP_REFUSED] = "connection refused",
		[SOCKS5_REP_TTL] = "TTL expired",
		[SOCKS5_REP_CMD] = "command not supported",
		[SOCKS5_REP_ATYP] = "address type not supported",
	};

	if (rep < sizeof(s) / sizeof(s[0]))
		return s[rep];
	return "unassigned reply code";
}

size_t
socks5_udp_hdr_len(const struct proto_dest *a)
{
	size_t	alen = wire_addr_len(a);

	return alen == 0 ? 0 : 3 + alen;
}

ssize_t
socks5_udp_encode_hdr(uint8_t *out, size_t outlen, const struct proto_dest *a)
{
	size_t	n = socks5_udp_hdr_len(a);

	if (n == 0 || outlen < n)
		return -1;
	out[0] = out[1] = 0;	/* RSV */
	out[2] = 0;		/* FRAG: a whole datagram */
	(void)wire_addr_put(out + 3, a);
	return (ssize_t)n;
}

ssize_t
socks5_udp_parse(const uint8_t *in, size_t len, struct proto_dest *a,
    const uint8_t **payload, size_t *plen)
{
	ssize_t	n;

	if (len < 3 || in[2] != 0)
		return -1;
	/* A datagram is whole: "more bytes" would never come. */
	if ((n = socks5_addr_get(in + 3, len - 3, a)) <= 0)
		return -1;
	n += 3;
	*payload = in + n;
	*plen = len - (size_t)n;
	return n;
}
