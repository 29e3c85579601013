/* The server role: TLS listener, authentication, egress policy, target
 * dialing and relaying on one loop. */
#ifndef TUNSPLIT_SERVER_H
#define TUNSPLIT_SERVER_H

#include <stdbool.h>

struct conf;
struct conf_egress;
struct addr;

/* Runs until SIGINT/SIGTERM.  Returns the process exit status. */
int server_run(const struct conf *c);

/* Egress policy: true when the server may dial this address.  Default
 * denies loopback, private, link-local, CGNAT, multicast, unspecified and
 * metadata ranges, unless conf lists an allow entry covering it. */
bool server_egress_allowed(const struct conf *c, const struct addr *a);
/* The same with a user's own lists (conf_user.egress, NULL: none) first:
 * its deny entries, then its allow entries, then the server's. */
bool server_egress_allowed_user(const struct conf *c,
    const struct conf_egress *u, const struct addr *a);

#endif
