/*
 * The server name of a TLS ClientHello and the Host of an HTTP/1.x
 * request, from a flow's first bytes (sniff.h).  Every field is judged
 * the moment it has arrived: a read past the enclosing length is
 * SNIFF_NOT, a read past the bytes at hand SNIFF_MORE.
 */
#include "config.h"

#include "wire/sniff.h"

#include <string.h>

#define SNIFF_TLS_HANDSHAKE	22
#define SNIFF_TLS_RECORD_MAX	16384	/* plaintext fragment, RFC 8446 5.1 */
#define SNIFF_HS_CLIENT_HELLO	1
#define SNIFF_EXT_SERVER_NAME	0
#define SNIFF_SNI_HOST_NAME	0

int
sniff_name_ok(const uint8_t *s, size_t n, char *out, size_t outlen)
{
	size_t	i, label = 0;
	int	alldigit = 1;
	uint8_t	c;

	if (outlen <= SNIFF_NAME_MAX)
		return 0;
	if (n > 0 && s[n - 1] == '.')
		n--;
	if (n == 0 || n > SNIFF_NAME_MAX)
		return 0;
	for (i = 0; i < n; i++) {
		c = s[i];
		if (c == '.') {
			/* Labels neither empty nor hyphen-edged. */
			if (label == 0 || s[i - 1] == '-')
				return 0;
			label = 0;
			alldigit = 1;
			out[i] = '.';
			continue;
		}
		if (c >= 'A' && c <= 'Z')
			c = (uint8_t)(c - 'A' + 'a');
		if (c >= '0' && c <= '9')
			;
		else if ((c >= 'a' && c <= 'z') || (c == '-' && label > 0))
			alldigit = 0;
		else
			return 0;
		if (++label > 63)
			return 0;
		out[i] = (char)c;
	}
	if (s[n - 1] == '-' || alldigit)
		return 0;
	out[n] = '\0';
	return 1;
}

/* ---- TLS ----------------------------------------------------------------- */

/* A cursor over what has arrived (n) inside what the message says it
 * holds (lim). */
struct sniff_cur {
	const uint8_t	*p;
	size_t		 pos, n, lim;
};

/* Can k bytes at pos be read?  SNIFF_FOUND yes, else the verdict. */
static enum sniff_res
cur_need(const struct sniff_cur *c, size_t k)
{
	if (k > c->lim - c->pos)
		return SNIFF_NOT;
	if (c->pos > c->n || k > c->n - c->pos)
		return SNIFF_MORE;
	return SNIFF_FOUND;
}

/* Skips k bytes that need not have arrived. */
static enum sniff_res
cur_skip(struct sniff_cur *c, size_t k)
{
	if (k > c->lim - c->pos)
		return SNIFF_NOT;
	c->pos += k;
	return SNIFF_FOUND;
}

static size_t
cur_u8(struct sniff_cur *c)
{
	return c->p[c->pos++];
}

static size_t
cur_u16(struct sniff_cur *c)
{
	size_t v = (size_t)c->p[c->pos] << 8 | c->p[c->pos + 1];

	c->pos += 2;
	return v;
}

/* The server_name extension's body, all of it at hand. */
static enum sniff_res
sniff_sni_ext(const uint8_t *p, size_t elen, char *out, size_t outlen)
{
	size_t	list, pos, nlen;

	if (elen < 2)
		return SNIFF_NOT;
	list = (size_t)p[0] << 8 | p[1];
	if (list != elen - 2)
		return SNIFF_NOT;
	for (pos = 2; pos < elen;) {
		if (elen - pos < 3)
			return SNIFF_NOT;
		nlen = (size_t)p[pos + 1] << 8 | p[pos + 2];
		if (nlen > elen - pos - 3)
			return SNIFF_NOT;
		if (p[pos] == SNIFF_SNI_HOST_NAME)
			return sniff_name_ok(p + pos + 3, nlen, out, outlen) ?
			    SNIFF_FOUND : SNIFF_NONE;
		pos += 3 + nlen;
	}
	return SNIFF_NONE;
}

#define NEED(c, k) do {							\
	enum sniff_res r_ = cur_need((c), (k));				\
	if (r_ != SNIFF_FOUND)						\
		return r_;						\
} while (0)
#define SKIP(c, k) do {							\
	if (cur_skip((c), (k)) != SNIFF_FOUND)				\
		return SNIFF_NOT;					\
} while (0)

enum sniff_res
sniff_hello_sni(const uint8_t *p, size_t len, char *out, size_t outlen)
{
	struct sniff_cur c = { p, 0, len, SIZE_MAX };
	size_t		 hslen, k, type, elen;

	if (outlen <= SNIFF_NAME_MAX)
		return SNIFF_NOT;
	NEED(&c, 1);
	if (cur_u8(&c) != SNIFF_HS_CLIENT_HELLO)
		return SNIFF_NOT;
	NEED(&c, 3);
	hslen = cur_u8(&c) << 16;
	hslen |= cur_u16(&c);
	/* version, random, and four length bytes at least */
	if (hslen < 2 + 32 + 1 + 2 + 2 + 1 + 1)
		return SNIFF_NOT;
	c.lim = 4 + hslen;
	NEED(&c, 2);
	if (cur_u8(&c) != 3)
		return SNIFF_NOT;
	c.pos++;
	SKIP(&c, 32);				/* random */
	NEED(&c, 1);
	if ((k = cur_u8(&c)) > 32)		/* legacy_session_id */
		return SNIFF_NOT;
	SKIP(&c, k);
	NEED(&c, 2);
	if ((k = cur_u16(&c)) < 2 || k % 2 != 0)	/* cipher_suites */
		return SNIFF_NOT;
	SKIP(&c, k);
	NEED(&c, 1);
	if ((k = cur_u8(&c)) < 1)		/* compression_methods */
		return SNIFF_NOT;
	SKIP(&c, k);
	if (c.pos == c.lim)
		return SNIFF_NONE;		/* no extensions at all */
	NEED(&c, 2);
	if (cur_u16(&c) != c.lim - c.pos)
		return SNIFF_NOT;
	while (c.pos < c.lim) {
		NEED(&c, 4);
		type = cur_u16(&c);
		elen = cur_u16(&c);
		if (type == SNIFF_EXT_SERVER_NAME) {
			NEED(&c, elen);
			return sniff_sni_ext(p + c.pos, elen, out, outlen);
		}
		SKIP(&c, elen);
	}
	return SNIFF_NONE;
}

enum sniff_res
sniff_tls_sni(const uint8_t *p, size_t len, char *out, size_t outlen)
{
	uint8_t		hs[SNIFF_HELLO_MAX];
	size_t		off = 0, hl = 0, rlen, take;
	enum sniff_res	r;

	if (outlen <= SNIFF_NAME_MAX)
		return SNIFF_NOT;
	/* Gather the handshake bytes of the leading handshake records. */
	while (off < len && hl < sizeof(hs)) {
		if (p[off] != SNIFF_TLS_HANDSHAKE) {
			if (off == 0)
				return SNIFF_NOT;
			break;		/* the hello's records ended */
		}
		if (len - off >= 2 && p[off + 1] != 3)
			return SNIFF_NOT;
		if (len - off >= 3 && p[off + 2] > 4)
			return SNIFF_NOT;
		if (len - off < 5)
			break;
		rlen = (size_t)p[off + 3] << 8 | p[off + 4];
		if (rlen == 0 || rlen > SNIFF_TLS_RECORD_MAX)
			return SNIFF_NOT;
		take = len - off - 5 < rlen ? len - off - 5 : rlen;
		if (take > sizeof(hs) - hl)
			take = sizeof(hs) - hl;
		memcpy(hs + hl, p + off + 5, take);
		hl += take;
		if (take < rlen)
			break;
		off += 5 + rlen;
	}
	if (hl == 0)
		return SNIFF_MORE;
	r = sniff_hello_sni(hs, hl, out, outlen);
	if (r == SNIFF_MORE && hl >= sizeof(hs))
		return SNIFF_NONE;
	return r;
}

/* ---- HTTP/1.x ------------------------------------------------------------ */

static int
sniff_tchar(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || (c != 0 && strchr("!#$%&'*+-.^_`|~",
	    c) != NULL);
}

/* The Host field's value (OWS trimmed). */
static enum sniff_res
sniff_host_value(const uint8_t *v, size_t n, char *out, size_t outlen)
{
	size_t	i, colon = n;

	if (n == 0 || v[0] == '[')
		return SNIFF_NONE;		/* empty, or an IPv6 literal */
	for (i = 0; i < n; i++) {
		if (v[i] != ':')
			continue;
		if (colon != n)
			return SNIFF_NONE;
		colon = i;
	}
	for (i = colon + 1; i < n; i++)
		if (v[i] < '0' || v[i] > '9')
			return SNIFF_NONE;
	return sniff_name_ok(v, colon, out, outlen) ? SNIFF_FOUND :
	    SNIFF_NONE;
}

/* The request line, as far as it has come: its length with the line
 * end, 0 need more, -1 not HTTP/1.x. */
static long
sniff_request_line(const uint8_t *p, size_t len)
{
	static const char	 ver[] = "HTTP/1.";
	size_t			 i = 0, v;

	for (; i < len && p[i] != ' '; i++)
		if (i >= 20 || !(i == 0 ? p[i] >= 'A' && p[i] <= 'Z' :
		    sniff_tchar(p[i])))
			return -1;
	if (i == len)
		return 0;
	if (i == 0)
		return -1;
	for (i++; i < len && p[i] != ' '; i++)
		if (p[i] <= ' ' || p[i] == 0x7f)
			return -1;
	if (i == len)
		return 0;
	for (i++, v = 0; v < sizeof(ver) - 1; v++, i++) {
		if (i == len)
			return 0;
		if (p[i] != (uint8_t)ver[v])
			return -1;
	}
	if (i == len)
		return 0;
	if (p[i] < '0' || p[i] > '9')
		return -1;
	if (++i == len)
		return 0;
	if (p[i] == '\r' && ++i == len)
		return 0;
	if (p[i] != '\n')
		return -1;
	return (long)i + 1;
}

enum sniff_res
sniff_http_host(const uint8_t *p, size_t len, char *out, size_t outlen)
{
	size_t		 pos, eol, end, nl, i, vs, ve;
	long		 rl;
	const uint8_t	*lf;

	if (outlen <= SNIFF_NAME_MAX)
		return SNIFF_NOT;
	if (len > SNIFF_HTTP_MAX)
		len = SNIFF_HTTP_MAX;
	if ((rl = sniff_request_line(p, len)) < 0)
		return SNIFF_NOT;
	if (rl == 0)
		return len >= SNIFF_HTTP_MAX ? SNIFF_NONE : SNIFF_MORE;
	for (pos = (size_t)rl; pos < len; pos = eol + 1) {
		if ((lf = memchr(p + pos, '\n', len - pos)) == NULL)
			break;
		eol = (size_t)(lf - p);
		end = eol > pos && p[eol - 1] == '\r' ? eol - 1 : eol;
		if (end == pos)
			return SNIFF_NONE;	/* the head ended, no Host */
		for (nl = pos; nl < end && p[nl] != ':'; nl++)
			if (!sniff_tchar(p[nl]))
				return SNIFF_NOT;
		if (nl == end || nl == pos)
			return SNIFF_NOT;
		if (nl - pos != 4)
			continue;
		for (i = 0; i < 4; i++)
			if ((p[pos + i] | 0x20) != (uint8_t)"host"[i])
				break;
		if (i < 4)
			continue;
		for (vs = nl + 1; vs < end && (p[vs] == ' ' || p[vs] == '\t');
		    vs++)
			;
		for (ve = end; ve > vs && (p[ve - 1] == ' ' ||
		    p[ve - 1] == '\t'); ve--)
			;
		return sniff_host_value(p + vs, ve - vs, out, outlen);
	}
	return len >= SNIFF_HTTP_MAX ? SNIFF_NONE : SNIFF_MORE;
}

enum sniff_res
sniff_stream(const uint8_t *p, size_t len, char *out, size_t outlen,
    const char **kind)
{
	enum sniff_res	t, h;

	*kind = NULL;
	if ((t = sniff_tls_sni(p, len, out, outlen)) == SNIFF_FOUND) {
		*kind = "tls";
		return t;
	}
	if ((h = sniff_http_host(p, len, out, outlen)) == SNIFF_FOUND) {
		*kind = "http";
		return h;
	}
	return t > h ? t : h;
}
