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

#include <stdio.h>

struct conf;

/* The answer into fp; -1 when the request is not one (fp then holds
 * "error: ..."). */
int route_test_answer(const struct conf *c, const char *req, FILE *fp);

#endif
