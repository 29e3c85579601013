/*
 * ts_probe: plays a client -- or a prober -- against a tunsplit server,
 * for the end-to-end tests (tests/netns/e2e_probe.sh).
 *
 *   ts_probe -c host:port [options]
 *     -s name     SNI and name to verify (default tunsplit.test)
 *     -C file     CA file; -K: do not verify at all
 *     -k key      base64 user key: send a request header first, version
 *                 2, bound to the first connection's TLS exporter value
 *     -1          ... version 1 instead (unbound, for accept_v1)
 *     -S file     write the header as sent (plaintext) to file: a capture
 *     -L file     send file's bytes as the header, verbatim: a replay
 *     -t ip:port  the header's destination (default 192.0.2.1:80)
 *     -p n        send only the first n bytes of the header ...
 *     -W ms       ... then wait ms before sending the rest and the data
 *     -w ms       wait ms after the handshake before sending anything
 *     -d text     data after the header (\r \n \\ and \xHH understood)
 *     -n count    connections, one after the other, each sending the same
 *                 bytes -- the same header, so the second one is a replay
 *                 (on another TLS connection)
 *     -o prefix   write what connection i received to prefix.i
 *     -T ms       give up reading after ms of silence (default 5000)
 *     -R          end each line with "resumed" or "full": whether the
 *                 TLS handshake resumed an earlier connection's session
 *                 (a close without close_notify then keeps the session
 *                 resumable, as it would not be by default)
 *
 * One line per connection on stdout:
 *   "<i> <bytes received> <how it ended> <first bytes, hex>"
 * how it ended: eof (close_notify), reset, truncated (FIN without
 * close_notify), timeout, or tls-failed.  Exit status 0 when every
 * connection got through the TLS handshake, 1 otherwise, 2 usage.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/time.h>

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/ssl.h>
#include <sodium.h>

#include "core/addr.h"
#include "wire/auth.h"
#include "core/log.h"
#include "tls/outer.h"
#include "wire/proto.h"

#define PROBE_MAX	(1024 * 1024)

struct probe {
	const char	*sni;
	const char	*ca;
	bool		 insecure;
	struct addr	 server;
	uint8_t		 hdr[PROTO_REQ_MAX];
	size_t		 hdrlen;	/* 0: none (yet) */
	bool		 has_key;	/* make one after the first handshake */
	bool		 v1;
	bool		 resumed;	/* -R */
	uint8_t		 key[PROTO_KEY_LEN];
	struct proto_req req;
	const char	*save;
	size_t		 prefix;	/* header bytes sent before the pause */
	unsigned	 pause_ms;
	unsigned	 wait_ms;
	uint8_t		 data[4096];
	size_t		 datalen;
	unsigned	 timeout_ms;
	const char	*out;
};

static void
usage(void)
{
	fprintf(stderr, "usage: ts_probe -c host:port [-s sni] [-C ca | -K] "
	    "[-k key [-1] [-t ip:port] [-p n -W ms] | -L file] [-S file] "
	    "[-w ms] [-d text] [-n count] [-o prefix] [-T ms] [-R]\n");
	exit(2);
}

static void
sleep_ms(unsigned ms)
{
	struct timespec	ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* C-style escapes into bytes. */
static size_t
unescape(const char *s, uint8_t *out, size_t outlen)
{
	size_t		 n = 0;
	unsigned	 v;

	while (*s != '\0' && n < outlen) {
		if (*s != '\\') {
			out[n++] = (uint8_t)*s++;
			continue;
		}
		switch (*++s) {
		case 'r':
			out[n++] = '\r';
			break;
		case 'n':
			out[n++] = '\n';
			break;
		case 'x':
			if (sscanf(s + 1, "%2x", &v) != 1)
				usage();
			out[n++] = (uint8_t)v;
			s += 2;
			break;
		case '\\':
			out[n++] = '\\';
			break;
		default:
			usage();
		}
		s++;
	}
	return n;
}

/* The request (-k, -t); the header itself is made on the first
 * connection, once its TLS exporter value is known. */
static void
make_request(struct probe *p, const char *b64, const char *target)
{
	struct proto_req	*r = &p->req;
	struct addr		 a;
	const void		*ip;
	size_t			 iplen;

	if (auth_key_parse(b64, p->key) == -1)
		fatalx("-k: not a key");
	if (addr_parse(&a, target) == -1)
		fatalx("-t: not a numeric ip:port");
	memset(r, 0, sizeof(*r));
	r->kind = PROTO_KIND_TCP;
	r->ts = (uint64_t)time(NULL);
	randombytes_buf(r->nonce, sizeof(r->nonce));
	auth_user_id(p->key, r->user_id);
	ip = addr_ip(&a, &iplen);
	r->dest.atyp = iplen == 4 ? PROTO_ATYP_IPV4 : PROTO_ATYP_IPV6;
	memcpy(r->dest.ip, ip, iplen);
	r->dest.port = addr_port(&a);
	p->has_key = true;
}

static void
make_header(struct probe *p, struct outer *o)
{
	uint8_t	 bind[PROTO_BIND_LEN];
	ssize_t	 n;
	FILE	*fp;

	if (!p->v1 && outer_export(o, PROTO_BIND_LABEL, bind,
	    sizeof(bind)) == -1)
		fatalx("no TLS exporter");
	if ((n = proto_req_encode(p->hdr, sizeof(p->hdr), &p->req, p->key,
	    p->v1 ? NULL : bind, 16)) < 0)
		fatalx("cannot encode the header");
	p->hdrlen = (size_t)n;
	sodium_memzero(p->key, sizeof(p->key));
	p->has_key = false;
	if (p->save != NULL && ((fp = fopen(p->save, "wb")) == NULL ||
	    fwrite(p->hdr, 1, p->hdrlen, fp) != p->hdrlen || fclose(fp) != 0))
		fatal("%s", p->save);
}

static void
load_header(struct probe *p, const char *path)
{
	FILE	*fp;

	if ((fp = fopen(path, "rb")) == NULL)
		fatal("%s", path);
	p->hdrlen = fread(p->hdr, 1, sizeof(p->hdr), fp);
	fclose(fp);
	if (p->hdrlen == 0)
		fatalx("%s: empty", path);
}

static int
send_all(struct outer *o, const uint8_t *b, size_t n)
{
	ssize_t	 w;

	while (n > 0) {
		if ((w = outer_write(o, b, n)) <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* One connection; returns 0 when the TLS handshake succeeded. */
static int
run_one(struct probe *p, struct ssl_ctx_st *ctx, int i)
{
	struct timeval	 tv = { p->timeout_ms / 1000,
			    (long)(p->timeout_ms % 1000) * 1000 };
	static uint8_t	 buf[PROBE_MAX];
	const char	*end = "eof";
	struct outer	*o;
	size_t		 got = 0, k;
	ssize_t		 n;
	char		 path[512];
	FILE		*fp;
	int		 fd;

	if ((fd = socket(addr_family(&p->server), SOCK_STREAM | SOCK_CLOEXEC,
	    0)) == -1 || connect(fd, &p->server.u.sa, p->server.len) == -1) {
		printf("%d 0 connect-failed %s\n", i, strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if ((o = outer_new(ctx, fd, true, p->sni)) == NULL ||
	    outer_handshake(o) != 1) {
		printf("%d 0 tls-failed\n", i);
		outer_free(o);
		return -1;
	}
	if (p->wait_ms > 0)
		sleep_ms(p->wait_ms);
	if (p->has_key)
		make_header(p, o);
	if (p->hdrlen > 0 && p->prefix > 0 && p->prefix < p->hdrlen) {
		if (send_all(o, p->hdr, p->prefix) == -1)
			goto read;
		sleep_ms(p->pause_ms);
		if (send_all(o, p->hdr + p->prefix, p->hdrlen - p->prefix) == -1)
			goto read;
	} else if (p->hdrlen > 0 && send_all(o, p->hdr, p->hdrlen) == -1)
		goto read;
	if (p->datalen > 0)
		(void)send_all(o, p->data, p->datalen);
read:
	for (;;) {
		if (got == sizeof(buf)) {
			end = "too-much";
			break;
		}
		n = outer_read(o, buf + got, sizeof(buf) - got);
		if (n > 0) {
			got += (size_t)n;
			continue;
		}
		if (n == 0)
			end = "eof";
		else if (errno == EAGAIN || errno == EWOULDBLOCK)
			end = "timeout";
		else if (errno == EPROTO)
			end = "truncated";
		else
			end = "reset";
		break;
	}
	/* Answer an end of stream with ours, as a client that is done. */
	if (strcmp(end, "eof") == 0)
		(void)outer_shutdown_write(o);
	printf("%d %zu %s ", i, got, end);
	for (k = 0; k < got && k < 16; k++)
		printf("%02x", buf[k]);
	if (p->resumed)
		printf(" %s", outer_session_reused(o) ? "resumed" : "full");
	printf("\n");
	fflush(stdout);
	if (p->out != NULL) {
		snprintf(path, sizeof(path), "%s.%d", p->out, i);
		if ((fp = fopen(path, "wb")) == NULL ||
		    fwrite(buf, 1, got, fp) != got || fclose(fp) != 0)
			fatal("%s", path);
	}
	outer_free(o);
	return 0;
}

int
main(int argc, char **argv)
{
	struct probe		 p = { .sni = "tunsplit.test", .timeout_ms = 5000 };
	struct ssl_ctx_st	*ctx;
	const char		*key = NULL, *target = "192.0.2.1:80";
	const char		*load = NULL;
	const char		*server = NULL;
	int			 ch, i, count = 1, rc = 0;

	log_init(LOG_LVL_WARN, false, "ts_probe");
	if (sodium_init() < 0)
		fatalx("libsodium");
	while ((ch = getopt(argc, argv, "c:s:C:Kk:1S:L:t:p:W:w:d:n:o:T:R")) != -1) {
		switch (ch) {
		case 'c':
			server = optarg;
			break;
		case 's':
			p.sni = optarg;
			break;
		case 'C':
			p.ca = optarg;
			break;
		case 'K':
			p.insecure = true;
			break;
		case 'k':
			key = optarg;
			break;
		case '1':
			p.v1 = true;
			break;
		case 'S':
			p.save = optarg;
			break;
		case 'L':
			load = optarg;
			break;
		case 't':
			target = optarg;
			break;
		case 'p':
			p.prefix = (size_t)strtoul(optarg, NULL, 10);
			break;
		case 'W':
			p.pause_ms = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'w':
			p.wait_ms = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'd':
			p.datalen = unescape(optarg, p.data, sizeof(p.data));
			break;
		case 'n':
			count = atoi(optarg);
			break;
		case 'o':
			p.out = optarg;
			break;
		case 'T':
			p.timeout_ms = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'R':
			p.resumed = true;
			break;
		default:
			usage();
		}
	}
	if (server == NULL || optind != argc || count < 1)
		usage();
	if (addr_parse(&p.server, server) == -1)
		fatalx("-c: not a numeric host:port");
	if (key != NULL && load != NULL)
		usage();
	if (key != NULL)
		make_request(&p, key, target);
	if (load != NULL)
		load_header(&p, load);
	if ((ctx = outer_ctx_client(p.ca, p.insecure)) == NULL)
		fatalx("TLS context");
	if (p.resumed)
		(void)SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
	for (i = 1; i <= count; i++)
		if (run_one(&p, ctx, i) == -1)
			rc = 1;
	outer_ctx_free(ctx);
	return rc;
}
