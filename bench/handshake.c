/*
 * handshake: what an outer TLS connection costs to set up, full and
 * resumed, measured on the real outer.c code paths (both ends in this one
 * thread, over socketpairs, so the kernel's TCP costs are left out).
 *
 *   bench/handshake [-n count] [-r]
 *     -n count   connections per mode (default 2000)
 *     -r         RSA-2048 server key instead of ECDSA P-256
 *
 * Each connection: client and server handshakes driven in turn, then one
 * byte from server to client -- the read that delivers the session
 * tickets, as the first response of a flow would.  CPU time is thread CPU
 * time around each side's calls; bytes are what each side left queued for
 * the other after each call.  "full" makes every connection use a server
 * name that has no ticket yet (the certificate covers *.bench.test), so
 * tickets are still issued and stored as in real use; "resumed" reuses one
 * name, so each connection spends the ticket the previous one brought.
 *
 * Handshakes per second on one core = 1e6 / (client + server us): both
 * ends run on this one core.  The server alone manages 1e6 / server us.
 */
#include "config.h"

#include <sys/ioctl.h>
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "core/log.h"
#include "tls/outer.h"
#include "wire/proto.h"

#define BENCH_CN	"bench.test"

struct side {
	double		 cpu_us;	/* total over all connections */
	uint64_t	 bytes;		/* sent */
};

struct result {
	struct side	 c, s;
	unsigned	 n, reused;
};

static char	 dir[64], ca_pem[128], cert_pem[128], key_pem[128];

static double
thread_us(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* ---- certificates -------------------------------------------------- */

static void
ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX	 v3;
	X509_EXTENSION	*e;

	X509V3_set_ctx(&v3, issuer, x, NULL, NULL, 0);
	if ((e = X509V3_EXT_nconf_nid(NULL, &v3, nid, value)) == NULL ||
	    X509_add_ext(x, e, -1) != 1)
		fatalx("certificate extension");
	X509_EXTENSION_free(e);
}

static X509 *
cert(const char *cn, EVP_PKEY *key, X509 *issuer, EVP_PKEY *ikey)
{
	X509	*x = X509_new();

	if (x == NULL)
		fatalx("X509_new");
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), issuer == NULL ? 1 : 2);
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN",
	    MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, X509_get_subject_name(issuer != NULL ?
	    issuer : x));
	X509_set_pubkey(x, key);
	if (issuer == NULL) {
		ext(x, x, NID_basic_constraints, "critical,CA:TRUE");
		ext(x, x, NID_key_usage, "critical,keyCertSign");
	} else {
		ext(x, issuer, NID_basic_constraints, "critical,CA:FALSE");
		ext(x, issuer, NID_ext_key_usage, "serverAuth");
		ext(x, issuer, NID_subject_alt_name,
		    "DNS:" BENCH_CN ",DNS:*." BENCH_CN);
	}
	if (X509_sign(x, ikey != NULL ? ikey : key, EVP_sha256()) <= 0)
		fatalx("X509_sign");
	return x;
}

static void
pem(const char *path, X509 *x, EVP_PKEY *k)
{
	FILE	*fp = fopen(path, "w");

	if (fp == NULL || (x != NULL && PEM_write_X509(fp, x) != 1) ||
	    (k != NULL && PEM_write_PrivateKey(fp, k, NULL, NULL, 0, NULL,
	    NULL) != 1) || fclose(fp) != 0)
		fatal("%s", path);
}

static void
make_pki(bool rsa)
{
	EVP_PKEY	*cakey, *key;
	X509		*ca, *leaf;

	snprintf(dir, sizeof(dir), "/tmp/bench-handshake.XXXXXX");
	if (mkdtemp(dir) == NULL)
		fatal("mkdtemp");
	snprintf(ca_pem, sizeof(ca_pem), "%s/ca.pem", dir);
	snprintf(cert_pem, sizeof(cert_pem), "%s/cert.pem", dir);
	snprintf(key_pem, sizeof(key_pem), "%s/key.pem", dir);
	cakey = EVP_EC_gen("P-256");
	key = rsa ? EVP_RSA_gen(2048) : EVP_EC_gen("P-256");
	if (cakey == NULL || key == NULL)
		fatalx("key generation");
	ca = cert("bench CA", cakey, NULL, NULL);
	leaf = cert(BENCH_CN, key, ca, cakey);
	pem(ca_pem, ca, NULL);
	pem(cert_pem, leaf, NULL);
	pem(key_pem, NULL, key);
	X509_free(ca);
	X509_free(leaf);
	EVP_PKEY_free(cakey);
	EVP_PKEY_free(key);
}

static void
cleanup_pki(void)
{
	unlink(ca_pem);
	unlink(cert_pem);
	unlink(key_pem);
	rmdir(dir);
}

/* ---- one connection ------------------------------------------------ */

static uint64_t
queued(int fd)
{
	int	n = 0;

	return ioctl(fd, FIONREAD, &n) == 0 && n > 0 ? (uint64_t)n : 0;
}

/* Runs f on one side, charging its CPU time and the bytes it queued for
 * the peer (read at the peer's fd) to that side. */
#define TIMED(side, peer_fd, call) do {					\
	double	 t0_ = thread_us();					\
	uint64_t q0_ = queued(peer_fd);					\
	call;								\
	(side)->cpu_us += thread_us() - t0_;				\
	(side)->bytes += queued(peer_fd) - q0_;			\
} while (0)

static bool
connect_one(struct ssl_ctx_st *cctx, struct ssl_ctx_st *sctx,
    const char *sni, struct result *r)
{
	struct outer	*c, *s;
	int		 fds[2], crc = 0, src = 0, spins = 0;
	char		 b = 'x';
	ssize_t		 n = -1;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) == -1)
		fatal("socketpair");
	TIMED(&r->c, fds[1], c = outer_new(cctx, fds[0], true, sni));
	TIMED(&r->s, fds[0], s = outer_new(sctx, fds[1], false, NULL));
	if (c == NULL || s == NULL)
		fatalx("outer_new");
	while (crc != 1 || src != 1) {
		if (crc != 1)
			TIMED(&r->c, fds[1], crc = outer_handshake(c));
		if (src != 1)
			TIMED(&r->s, fds[0], src = outer_handshake(s));
		if (crc == -1 || src == -1 || ++spins > 100)
			fatalx("handshake failed (%d %d)", crc, src);
	}
	/* The server's first byte; the client's read takes the tickets. */
	TIMED(&r->s, fds[0], (void)outer_write(s, &b, 1));
	while (n != 1 && spins++ < 200)
		TIMED(&r->c, fds[1], n = outer_read(c, &b, 1));
	if (n != 1)
		fatalx("no data after the handshake");
	r->reused += outer_session_reused(c);
	r->n++;
	TIMED(&r->c, fds[1], outer_free(c));
	TIMED(&r->s, fds[0], outer_free(s));
	return true;
}

static void
report(const char *mode, const struct result *r)
{
	double	cu = r->c.cpu_us / r->n, su = r->s.cpu_us / r->n;

	printf("%-8s %6u conns (%u resumed)  client %7.1f us  server %7.1f us"
	    "  total %7.1f us  %6.0f hs/s/core  server-only %6.0f hs/s  "
	    "bytes c->s %4.0f s->c %4.0f\n", mode, r->n, r->reused, cu, su,
	    cu + su, 1e6 / (cu + su), 1e6 / su,
	    (double)r->c.bytes / r->n, (double)r->s.bytes / r->n);
}

int
main(int argc, char **argv)
{
	struct ssl_ctx_st	*cctx, *sctx;
	struct result		 full = { 0 }, resumed = { 0 }, warm = { 0 };
	char			 sni[64];
	unsigned		 i, n = 2000;
	bool			 rsa = false;
	int			 ch;

	log_init(LOG_LVL_WARN, false, "handshake");
	while ((ch = getopt(argc, argv, "n:r")) != -1) {
		switch (ch) {
		case 'n':
			n = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'r':
			rsa = true;
			break;
		default:
			fprintf(stderr, "usage: handshake [-n count] [-r]\n");
			return 2;
		}
	}
	if (n == 0)
		n = 1;
	make_pki(rsa);
	if ((sctx = outer_ctx_server(cert_pem, key_pem)) == NULL ||
	    (cctx = outer_ctx_client(ca_pem, false)) == NULL)
		fatalx("TLS contexts");

	/* Warm-up: code paths, allocator, the first ticket. */
	for (i = 0; i < 50; i++)
		connect_one(cctx, sctx, BENCH_CN, &warm);
	for (i = 0; i < n; i++) {
		snprintf(sni, sizeof(sni), "c%u." BENCH_CN, i);
		connect_one(cctx, sctx, sni, &full);
		connect_one(cctx, sctx, BENCH_CN, &resumed);
	}
	printf("outer TLS 1.3 (X25519, %s server key, CA-signed leaf, "
	    "verification on), %s\n", rsa ? "RSA-2048" : "ECDSA P-256",
	    OpenSSL_version(OPENSSL_VERSION));
	report("full", &full);
	report("resumed", &resumed);
	printf("request header: %d bytes (IPv4), %d (IPv6), %d + name "
	    "(domain), plus padding; status byte: 1\n",
	    PROTO_REQ_FIXED + 4 + 4 + PROTO_MAC_LEN,
	    PROTO_REQ_FIXED + 16 + 4 + PROTO_MAC_LEN,
	    PROTO_REQ_FIXED + 1 + 4 + PROTO_MAC_LEN);
	outer_ctx_free(cctx);
	outer_ctx_free(sctx);
	cleanup_pki();
	return 0;
}
