/*
 * The tunsplit request header, versions 2 and 1 (layout in proto.h, rationale in
 * doc/PROTOCOL.md).  Pure functions over byte buffers: no I/O, no state.
 *
 * The parser is written for hostile input.  It looks at a prefix and
 * answers as soon as the prefix proves the header malformed, so a server
 * can hang up (or fall back to the cover site) without waiting for bytes
 * that would not help; a prefix of a well-formed header is never rejected.
 */
#include "config.h"

#include "wire/proto.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <sodium.h>

#include "wire/wire.h"

/* Byte offsets of the fixed part. */
#define OFF_VERSION	0
#define OFF_KIND	1
#define OFF_LEN		2
#define OFF_TS		4
#define OFF_NONCE	12
#define OFF_USER_ID	28
#define OFF_ATYP	36

/* port + padding length */
#define PROTO_TAIL_FIELDS	4
/* Smallest possible header: a one-byte domain name, no padding. */
#define PROTO_REQ_MIN \
	(PROTO_REQ_FIXED + 2 + PROTO_TAIL_FIELDS + PROTO_MAC_LEN)

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void
put64(uint8_t *p, uint64_t v)
{
	int	i;

	for (i = 7; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v >>= 8;
	}
}

static uint64_t
get64(const uint8_t *p)
{
	uint64_t	v = 0;
	int		i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static bool
proto_kind_valid(uint8_t kind)
{
	return kind == PROTO_KIND_TCP || kind == PROTO_KIND_UDP ||
	    kind == PROTO_KIND_ICMP;
}

static bool
proto_version_valid(uint8_t v)
{
	return v == PROTO_VERSION || v == PROTO_VERSION_1 ||
	    v == PROTO_VERSION_3;
}

void
proto_bind_context(uint32_t flow, uint8_t ctx[PROTO_BIND_CTX_LEN])
{
	ctx[0] = (uint8_t)(flow >> 24);
	ctx[1] = (uint8_t)(flow >> 16);
	ctx[2] = (uint8_t)(flow >> 8);
	ctx[3] = (uint8_t)flow;
}

/* Version 2 appends the connection's exporter value to the MAC input
 * (bind); version 1 passes NULL. */
static void
proto_mac(uint8_t mac[PROTO_MAC_LEN], const uint8_t *in, size_t len,
    const uint8_t key[PROTO_KEY_LEN], const uint8_t *bind)
{
	crypto_generichash_state st;

	crypto_generichash_init(&st, key, PROTO_KEY_LEN, PROTO_MAC_LEN);
	crypto_generichash_update(&st, in, len);
	if (bind != NULL)
		crypto_generichash_update(&st, bind, PROTO_BIND_LEN);
	crypto_generichash_final(&st, mac, PROTO_MAC_LEN);
	sodium_memzero(&st, sizeof(st));
}

ssize_t
proto_req_encode(uint8_t *out, size_t outlen, const struct proto_req *r,
    const uint8_t key[PROTO_KEY_LEN], const uint8_t *bind, size_t pad_len)
{
	size_t	 alen, total;
	uint8_t	*p;

	if (out == NULL || r == NULL || key == NULL)
		goto inval;
	if (!proto_kind_valid(r->kind))
		goto inval;
	if ((alen = wire_addr_len(&r->dest)) == 0)	/* ATYP ADDR PORT */
		goto inval;
	if (pad_len > PROTO_REQ_MAX)
		goto inval;
	if (r->version == PROTO_VERSION_3 && bind == NULL)
		goto inval;
	total = OFF_ATYP + alen + 2 + pad_len + PROTO_MAC_LEN;
	if (total > PROTO_REQ_MAX || total > outlen)
		goto inval;

	out[OFF_VERSION] = r->version == PROTO_VERSION_3 ? PROTO_VERSION_3 :
	    bind != NULL ? PROTO_VERSION : PROTO_VERSION_1;
	out[OFF_KIND] = r->kind;
	put16(out + OFF_LEN, (uint16_t)total);
	put64(out + OFF_TS, r->ts);
	memcpy(out + OFF_NONCE, r->nonce, PROTO_NONCE_LEN);
	memcpy(out + OFF_USER_ID, r->user_id, PROTO_USER_ID_LEN);
	p = out + OFF_ATYP;
	p += wire_addr_put(p, &r->dest);	/* ATYP ADDR PORT */
	put16(p, (uint16_t)pad_len);
	p += 2;
	if (pad_len > 0)
		randombytes_buf(p, pad_len);
	if (r->can_reuse && out[OFF_VERSION] == PROTO_VERSION &&
	    pad_len >= PROTO_REUSE_TAG_LEN)
		memcpy(p, PROTO_REUSE_TAG, PROTO_REUSE_TAG_LEN);
	p += pad_len;
	proto_mac(p, out, total - PROTO_MAC_LEN, key, bind);
	return (ssize_t)total;

inval:
	errno = EINVAL;
	return -1;
}

size_t
proto_req_pad_random(const struct proto_req *r)
{
	size_t	alen, bare;

	if (r == NULL || (alen = wire_addr_len(&r->dest)) == 0)
		return 0;
	bare = OFF_ATYP + alen + 2 + PROTO_MAC_LEN;
	if (bare < PROTO_PAD_TO)
		return PROTO_PAD_TO - bare +
		    randombytes_uniform(PROTO_PAD_SPAN);
	return randombytes_uniform(PROTO_PAD_SPAN);
}

ssize_t
proto_req_parse(const uint8_t *in, size_t len, struct proto_req *r)
{
	struct proto_req req;
	size_t		 hlen, off, pad;
	ssize_t		 f;

	if (in == NULL || r == NULL)
		return -1;
	/* Each field is judged as soon as it has arrived. */
	if (len < 1)
		return 0;
	if (!proto_version_valid(in[OFF_VERSION]))
		return -1;
	if (len < 2)
		return 0;
	if (!proto_kind_valid(in[OFF_KIND]))
		return -1;
	if (len < OFF_LEN + 2)
		return 0;
	hlen = get16(in + OFF_LEN);
	if (hlen < PROTO_REQ_MIN || hlen > PROTO_REQ_MAX)
		return -1;
	if (len < PROTO_REQ_FIXED)
		return 0;

	memset(&req, 0, sizeof(req));
	/* ATYP ADDR PORT: a NUL in a name is judged once the padding
	 * length has arrived too. */
	if ((f = wire_addr_size(in + OFF_ATYP, len - OFF_ATYP)) <= 0)
		return f == WIRE_MORE ? 0 : -1;
	off = OFF_ATYP + (size_t)f;
	/* Everything after the address but the padding has a fixed size. */
	if (off + 2 + PROTO_MAC_LEN > hlen)
		return -1;
	if (len < off + 2)
		return 0;
	pad = get16(in + off);
	if (off + 2 + pad + PROTO_MAC_LEN != hlen)
		return -1;
	if (wire_addr_get(in + OFF_ATYP, &req.dest) < 0)
		return -1;
	if (len < hlen)
		return 0;

	req.version = in[OFF_VERSION];
	req.kind = in[OFF_KIND];
	req.len = (uint16_t)hlen;
	req.ts = get64(in + OFF_TS);
	req.can_reuse = req.version == PROTO_VERSION &&
	    pad >= PROTO_REUSE_TAG_LEN && memcmp(in + off + 2,
	    PROTO_REUSE_TAG, PROTO_REUSE_TAG_LEN) == 0;
	memcpy(req.nonce, in + OFF_NONCE, PROTO_NONCE_LEN);
	memcpy(req.user_id, in + OFF_USER_ID, PROTO_USER_ID_LEN);
	*r = req;
	return (ssize_t)hlen;
}

/*
 * The MAC covers exactly the header length declared inside the header, so
 * callers may pass either r->len or a longer buffer (the header followed by
 * stream bytes); a declared length beyond len or below the minimum fails.
 */
int
proto_req_verify_mac(const uint8_t *in, size_t len,
    const uint8_t key[PROTO_KEY_LEN], const uint8_t *bind)
{
	uint8_t	 mac[PROTO_MAC_LEN];
	size_t	 hlen;
	int	 rc;

	if (in == NULL || key == NULL || len < PROTO_REQ_MIN)
		return -1;
	hlen = get16(in + OFF_LEN);
	if (hlen < PROTO_REQ_MIN || hlen > PROTO_REQ_MAX || hlen > len)
		return -1;
	if (in[OFF_VERSION] == PROTO_VERSION_1)
		bind = NULL;
	else if ((in[OFF_VERSION] != PROTO_VERSION &&
	    in[OFF_VERSION] != PROTO_VERSION_3) || bind == NULL)
		return -1;
	proto_mac(mac, in, hlen - PROTO_MAC_LEN, key, bind);
	rc = crypto_verify_32(mac, in + hlen - PROTO_MAC_LEN);
	sodium_memzero(mac, sizeof(mac));
	return rc == 0 ? 0 : -1;
}

const char *
proto_status_str(uint8_t status)
{
	switch (status) {
	case PROTO_OK:
		return "ok";
	case PROTO_ERR_GENERAL:
		return "general failure";
	case PROTO_ERR_DENIED:
		return "denied by egress policy";
	case PROTO_ERR_NET_UNREACH:
		return "network unreachable";
	case PROTO_ERR_HOST_UNREACH:
		return "host unreachable";
	case PROTO_ERR_REFUSED:
		return "connection refused";
	case PROTO_ERR_TIMEOUT:
		return "connect timed out";
	case PROTO_ERR_UNSUPPORTED:
		return "unsupported kind or address type";
	case PROTO_ERR_RESOLVE:
		return "name resolution failed";
	case PROTO_ERR_LIMIT:
		return "server connection limit";
	default:
		return "unknown status";
	}
}

const char *
proto_status_reason(uint8_t status)
{
	switch (status) {
	case PROTO_OK:
		return "ok";
	case PROTO_ERR_GENERAL:
		return "server failure";
	case PROTO_ERR_DENIED:
		return "egress denied";
	case PROTO_ERR_NET_UNREACH:
		return "network unreachable";
	case PROTO_ERR_HOST_UNREACH:
		return "host unreachable";
	case PROTO_ERR_REFUSED:
		return "target refused";
	case PROTO_ERR_TIMEOUT:
		return "target timeout";
	case PROTO_ERR_UNSUPPORTED:
		return "unsupported request";
	case PROTO_ERR_RESOLVE:
		return "name not resolved";
	case PROTO_ERR_LIMIT:
		return "server limit";
	default:
		return "unknown status";
	}
}

uint8_t
proto_status_from_errno(int err)
{
	switch (err) {
	case 0:
		return PROTO_OK;
	case ECONNREFUSED:
		return PROTO_ERR_REFUSED;
	case ENETUNREACH:
		return PROTO_ERR_NET_UNREACH;
	case EHOSTUNREACH:
		return PROTO_ERR_HOST_UNREACH;
	case ETIMEDOUT:
		return PROTO_ERR_TIMEOUT;
	default:
		return PROTO_ERR_GENERAL;
	}
}
