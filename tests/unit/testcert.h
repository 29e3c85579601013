/*
 * A throwaway self-signed certificate for the unit tests that run TLS over
 * loopback (test_relay, test_flow_udp, test_cover): nothing verifies it.
 */
#ifndef TUNSPLIT_TESTCERT_H
#define TUNSPLIT_TESTCERT_H

struct testcert {
	char	dir[64];
	char	cert_pem[96];
	char	key_pem[96];
};

/* A fresh /tmp/<name>.XXXXXX holding cert.pem and key.pem (P-256, the
 * subject CN cn); any failure fails the test. */
void	testcert_make(struct testcert *, const char *name, const char *cn);
/* Removes the files and the directory. */
void	testcert_remove(const struct testcert *);

#endif
