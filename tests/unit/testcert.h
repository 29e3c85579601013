/*
 * A throwaway self-signed certificate for the unit tests that run TLS over
 * loopback (test_relay, test_flow_udp, test_cover): nothing verifies it.
 */
#ifndef TUNSPLIT_TESTCERT_H
#define TUNSPLIT_TESTCERT_H

struct ssl_ctx_st;

struct testcert {
	char			 dir[64];
	char			 cert_pem[96];
	char			 key_pem[96];
	struct ssl_ctx_st	*sctx;	/* outer_ctx_server with it */
	struct ssl_ctx_st	*cctx;	/* outer_ctx_client, verifying nothing */
};

/* A fresh /tmp/<name>.XXXXXX holding cert.pem and key.pem (P-256, the
 * subject CN cn) and the two contexts; any failure fails the test. */
void	testcert_make(struct testcert *, const char *name, const char *cn);
/* Frees the contexts, removes the files and the directory. */
void	testcert_remove(struct testcert *);

#endif
