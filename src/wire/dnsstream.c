/*
 * DNS over TCP, TLS and HTTPS: the framing (see dnsstream.h).
 */
#include "config.h"

#include "wire/dnsstream.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "wire/dns.h"
#include "wire/httphdr.h"

ssize_t
dnsstream_tcp_parse(const uint8_t *in, size_t inlen, const uint8_t **msg,
    size_t *len)
{
	size_t	n;

	if (inlen < 2)
		return 0;
	n = (size_t)in[0] << 8 | in[1];
	if (n < DNS_HDR_LEN || n > DNSSTREAM_MSG_MAX)
		return -1;
	if (inlen - 2 < n)
		return 0;
	*msg = in + 2;
	*len = n;
	return (ssize_t)(n + 2);
}

void
dnsstream_tcp_prefix(uint8_t out[2], size_t len)
{
	out[0] = (uint8_t)(len >> 8);
	out[1] = (uint8_t)len;
}

/* Printable ASCII without space: nothing that could end a line or a
 * field of the request. */
static bool
dnsstream_token(const char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s <= ' ' || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

ssize_t
dnsstream_http_request(char *out, size_t outlen, const char *host,
    const char *path, size_t len)
{
	int	n;

	if (!dnsstream_token(host) || !dnsstream_token(path) ||
	    path[0] != '/' || host[0] == '\0')
		return -1;
	n = snprintf(out, outlen, "POST %s HTTP/1.1\r\nHost: %s\r\n"
	    "Content-Type: application/dns-message\r\n"
	    "Accept: application/dns-message\r\n"
	    "Content-Length: %zu\r\n\r\n", path, host, len);
	if (n < 0 || (size_t)n >= outlen)
		return -1;
	return n;
}

/* The end of the head ("\r\n\r\n"): the offset past it, 0 for none. */
static size_t
dnsstream_head_end(const uint8_t *in, size_t inlen)
{
	size_t	i;

	for (i = 0; i + 3 < inlen; i++)
		if (in[i] == '\r' && in[i + 1] == '\n' && in[i + 2] == '\r' &&
		    in[i + 3] == '\n')
			return i + 4;
	return 0;
}

static bool
dnsstream_is(const char *v, size_t n, const char *word)
{
	return n == strlen(word) && strncasecmp(v, word, n) == 0;
}

/* A Content-Length value: digits only, at most DNSSTREAM_MSG_MAX. */
static int
dnsstream_length(const char *v, size_t n, size_t *out)
{
	size_t	i, len = 0;

	if (n == 0)
		return -1;
	for (i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		len = len * 10 + (size_t)(v[i] - '0');
		if (len > DNSSTREAM_MSG_MAX)
			return -1;
	}
	*out = len;
	return 0;
}

/* Past the name at off (labels, a pointer ends it): the offset after
 * it, or 0 when it runs out of msg. */
static size_t
dnsstream_skip_name(const uint8_t *msg, size_t len, size_t off)
{
	while (off < len) {
		if ((msg[off] & 0xc0) == 0xc0)
			return off + 2 <= len ? off + 2 : 0;
		if ((msg[off] & 0xc0) != 0)
			return 0;
		if (msg[off] == 0)
			return off + 1;
		off += 1 + (size_t)msg[off];
	}
	return 0;
}

ssize_t
dnsstream_strip(uint8_t *msg, size_t len)
{
	size_t	off, i, an;

	if (len < DNS_HDR_LEN || msg[4] != 0 || msg[5] != 1)
		return -1;
	an = (size_t)msg[6] << 8 | msg[7];
	if ((off = dnsstream_skip_name(msg, len, DNS_HDR_LEN)) == 0 ||
	    (off += 4) > len)
		return -1;
	for (i = 0; i < an; i++) {
		if ((off = dnsstream_skip_name(msg, len, off)) == 0 ||
		    len - off < 10 ||
		    len - off - 10 < ((size_t)msg[off + 8] << 8 | msg[off + 9]))
			return -1;
		off += 10 + ((size_t)msg[off + 8] << 8 | msg[off + 9]);
	}
	memset(msg + 8, 0, 4);		/* NSCOUNT, ARCOUNT */
	return (ssize_t)off;
}

ssize_t
dnsstream_http_parse(const uint8_t *in, size_t inlen, int *status,
    const uint8_t **msg, size_t *len, int *close)
{
	const char	*p = (const char *)in, *eol, *v;
	size_t		 head, n, vlen, clen = 0;
	bool		 has_len = false, v10;
	int		 st;

	if ((head = dnsstream_head_end(in, inlen)) == 0)
		return inlen > DNSSTREAM_HEAD_MAX ? -1 : 0;
	if (head > DNSSTREAM_HEAD_MAX || head < 14 ||
	    memcmp(p, "HTTP/1.", 7) != 0 || (p[7] != '0' && p[7] != '1') ||
	    p[8] != ' ' || p[9] < '1' || p[9] > '5' || p[10] < '0' ||
	    p[10] > '9' || p[11] < '0' || p[11] > '9' ||
	    (p[12] != ' ' && p[12] != '\r'))
		return -1;
	v10 = p[7] == '0';
	st = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	*close = v10;
	eol = memchr(p, '\n', head);
	if (eol == NULL || eol[-1] != '\r')
		return -1;
	while (eol != NULL && (size_t)(eol + 1 - (const char *)in) < head - 2) {
		p = eol + 1;
		eol = memchr(p, '\n', head - (size_t)(p - (const char *)in));
		if (eol == NULL || eol == p || eol[-1] != '\r')
			return -1;
		n = (size_t)(eol - 1 - p);
		if (httphdr_field(p, n, "Content-Length", &v, &vlen)) {
			if (has_len || dnsstream_length(v, vlen, &clen) == -1)
				return -1;
			has_len = true;
		} else if (httphdr_field(p, n, "Transfer-Encoding", &v,
		    &vlen)) {
			if (!dnsstream_is(v, vlen, "identity"))
				return -1;
		} else if (httphdr_field(p, n, "Connection", &v, &vlen)) {
			if (dnsstream_is(v, vlen, "close"))
				*close = 1;
			else if (dnsstream_is(v, vlen, "keep-alive"))
				*close = 0;
		}
	}
	if (!has_len)
		return -1;
	if (inlen - head < clen)
		return 0;
	*status = st;
	*msg = in + head;
	*len = clen;
	return (ssize_t)(head + clen);
}
