/*
 * route-test: the outbound a flow would take, and why, under a
 * configuration -- the running daemon's (asked over the control socket)
 * or a file's (tunsplit route-test -c).  The request is one line:
 *
 *   NETWORK PORT SRC DEST      tcp|udp|icmp, 0..65535, an address or
 *                              "-", an address or a domain name
 */
#ifndef TUNSPLIT_ROUTE_TEST_H
#define TUNSPLIT_ROUTE_TEST_H

#include <stdbool.h>
#include <stdio.h>

struct conf;

/*
 * The running daemon's fake-IP table (dns.mode fake-ip), so that a fake
 * address is decided by the name it stands for, as its flows are:
 * lookup says whether ip is a fake address and, if it has one, its name.
 */
struct route_test_fake {
	bool	(*lookup)(void *arg, int family, const void *ip,
		    const char **name);
	void	*arg;
};

/* The answer into fp; -1 when the request is not one (fp then holds
 * "error: ...").  fake: NULL without a table (a file, or no fake-IP). */
int route_test_answer(const struct conf *c, const char *req, FILE *fp,
    const struct route_test_fake *fake);

#endif
