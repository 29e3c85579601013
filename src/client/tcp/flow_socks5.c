/*
 * SOCKS5 negotiation for one client TCP flow.  See flow_socks5.h.
 */
#include "config.h"

#include "client/tcp/flow_socks5.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "conf/conf.h"
#include "tls/outer.h"
#include "wire/socks5.h"

enum fs5_state {
	FS5_GREETING,		/* sending it */
	FS5_METHOD,		/* reading the choice */
	FS5_AUTH,		/* sending username/password */
	FS5_AUTH_REPLY,
	FS5_REQUEST,		/* sending CONNECT */
	FS5_REPLY,
	FS5_DONE,
};

struct flow_socks5 {
	const struct conf_outbound *co;
	enum fs5_state		 state;
	struct proto_dest	 dst;
	uint8_t			 buf[SOCKS5_AUTH_MAX];	/* one message */
	size_t			 len, off;	/* to send: buf[off..len) */
};

struct flow_socks5 *
flow_socks5_new(const struct conf_outbound *co, const struct proto_dest *dst)
{
	struct flow_socks5	*s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->co = co;
	s->dst = *dst;
	s->state = FS5_GREETING;
	return s;
}

void
flow_socks5_free(struct flow_socks5 *s)
{
	if (s == NULL)
		return;
	sodium_memzero(s, sizeof(*s));	/* may hold the password */
	free(s);
}

const char *
flow_socks5_state(const struct flow_socks5 *s)
{
	switch (s->state) {
	case FS5_GREETING:
	case FS5_METHOD:
		return "greeting";
	case FS5_AUTH:
	case FS5_AUTH_REPLY:
		return "auth";
	default:
		return "connect";
	}
}

static bool
fs5_userpass(const struct flow_socks5 *s)
{
	return s->co->username[0] != '\0';
}

/* Encodes the message of a sending state into buf.  0 or -1. */
static int
fs5_encode(struct flow_socks5 *s)
{
	const struct conf_outbound *co = s->co;
	ssize_t			 n = -1;

	switch (s->state) {
	case FS5_GREETING:
		n = socks5_greeting(s->buf, sizeof(s->buf), fs5_userpass(s));
		break;
	case FS5_AUTH:
		n = socks5_auth_encode(s->buf, sizeof(s->buf),
		    co->username, co->password);
		break;
	case FS5_REQUEST:
		n = socks5_request(s->buf, sizeof(s->buf), SOCKS5_CMD_CONNECT,
		    &s->dst);
		break;
	default:
		break;
	}
	if (n < 0)
		return -1;
	s->len = (size_t)n;
	s->off = 0;
	return 0;
}

/* Sends what is left of the message: 1 all sent, 0 blocked, -1 failed. */
static int
fs5_send(struct flow_socks5 *s, struct outer *o)
{
	ssize_t	w;

	if (s->len == 0 && fs5_encode(s) == -1)
		return -1;
	while (s->off < s->len) {
		if ((w = outer_write(o, s->buf + s->off, s->len - s->off)) < 0)
			return errno == EAGAIN ? 0 : -1;
		s->off += (size_t)w;
	}
	sodium_memzero(s->buf, s->len);
	s->len = s->off = 0;
	s->state++;
	return 1;
}

/* Reads up to want more bytes of a reply into buf[len..): 1 read some, 0
 * blocked, -1 closed or failed (*why set). */
static int
fs5_read(struct flow_socks5 *s, struct outer *o, size_t want,
    const char **why)
{
	ssize_t	r;

	if (want > sizeof(s->buf) - s->len)
		want = sizeof(s->buf) - s->len;
	if ((r = outer_read(o, s->buf + s->len, want)) > 0) {
		s->len += (size_t)r;
		return 1;
	}
	if (r < 0 && errno == EAGAIN)
		return 0;
	*why = s->state == FS5_AUTH_REPLY ? "socks5 authentication failed" :
	    r == 0 ? "socks5 proxy closed the connection" :
	    "socks5 proxy reset the connection";
	return -1;
}

/* The user name for a log line: printable ASCII only, bounded. */
static const char *
fs5_vis(const char *in, char *out, size_t len)
{
	size_t	i;

	for (i = 0; in[i] != '\0' && i + 1 < len; i++)
		out[i] = in[i] >= 0x20 && in[i] < 0x7f ? in[i] : '?';
	out[i] = '\0';
	return out;
}

#define FS5_FAIL(w, ...) do {						\
	*why = (w);							\
	snprintf(detail, detail_len, __VA_ARGS__);			\
	return -1;							\
} while (0)

static int
fs5_on_method(struct flow_socks5 *s, uint8_t m, const char **why,
    char *detail, size_t detail_len)
{
	if (m == SOCKS5_METHOD_NONE) {
		s->state = FS5_REQUEST;
		return 0;
	}
	if (m == SOCKS5_METHOD_USERPASS && fs5_userpass(s)) {
		s->state = FS5_AUTH;
		return 0;
	}
	if (m == SOCKS5_METHOD_REFUSED)
		FS5_FAIL("socks5 proxy refused our methods",
		    "socks5 proxy accepts none of the methods offered (%s)%s",
		    fs5_userpass(s) ? "none, username/password" : "none",
		    fs5_userpass(s) ? "" : "; does it need a username and "
		    "password?");
	FS5_FAIL("socks5 proxy protocol error",
	    "socks5 proxy chose method 0x%02x, which was not offered", m);
}

int
flow_socks5_step(struct flow_socks5 *s, struct outer *o, const char **why,
    char *detail, size_t detail_len, uint8_t *rep)
{
	struct socks5_reply	 r;
	char			 user[64];
	uint8_t			 v = 0;
	ssize_t			 n;
	int			 rc = 0;

	*rep = 0;
	*why = "socks5 proxy protocol error";
	if (detail_len > 0)
		detail[0] = '\0';
	for (;;) {
		switch (s->state) {
		case FS5_GREETING:
		case FS5_AUTH:
		case FS5_REQUEST:
			if ((rc = fs5_send(s, o)) == 1)
				continue;
			if (rc == 0)
				return 0;
			FS5_FAIL("socks5 proxy connection lost",
			    "socks5 proxy: sending the %s: %s",
			    flow_socks5_state(s), strerror(errno));
		case FS5_METHOD:
		case FS5_AUTH_REPLY:
			/* Two bytes each; nothing follows before we speak. */
			if ((rc = fs5_read(s, o, 2 - s->len, why)) <= 0)
				goto read_failed;
			n = s->state == FS5_METHOD ?
			    socks5_method_parse(s->buf, s->len, &v) :
			    socks5_auth_parse(s->buf, s->len, &v);
			if (n == 0)
				continue;
			if (n < 0)
				FS5_FAIL("socks5 proxy protocol error",
				    "socks5 proxy: malformed %s reply (is it "
				    "a SOCKS5 proxy?)", flow_socks5_state(s));
			s->len = 0;
			if (s->state == FS5_METHOD) {
				if (fs5_on_method(s, v, why, detail,
				    detail_len) == -1)
					return -1;
				continue;
			}
			if (v != 0)
				FS5_FAIL("socks5 authentication failed",
				    "socks5 proxy rejected username '%s' and "
				    "its password (status 0x%02x)",
				    fs5_vis(s->co->username, user,
				    sizeof(user)), v);
			s->state = FS5_REQUEST;
			continue;
		case FS5_REPLY:
			if ((rc = fs5_read(s, o, socks5_reply_want(s->buf,
			    s->len), why)) <= 0)
				goto read_failed;
			if ((n = socks5_reply_parse(s->buf, s->len, &r)) == 0)
				continue;
			if (n < 0)
				FS5_FAIL("socks5 proxy protocol error",
				    "socks5 proxy: malformed CONNECT reply");
			s->state = FS5_DONE;
			if (r.rep == SOCKS5_REP_OK)
				return 1;
			*rep = r.rep;
			FS5_FAIL("socks5 CONNECT failed", "socks5 proxy: "
			    "CONNECT failed: %s (reply %u)",
			    socks5_rep_str(r.rep), r.rep);
		case FS5_DONE:
			return 1;
		}
	}
read_failed:
	if (rc == 0)
		return 0;
	snprintf(detail, detail_len, "%s during the %s", *why,
	    flow_socks5_state(s));
	return -1;
}
