/* The server role: TLS listener, authentication, egress policy, target
 * dialing and relaying on one loop. */
#ifndef TUNSPLIT_SERVER_H
#define TUNSPLIT_SERVER_H

#include <stdbool.h>
#include <stddef.h>

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

/* A user's limits (0: none): users[idx] when idx names that user in c
 * (a reload may have changed the table), or with trojan the password's
 * entry trojan_passwords[idx]; what they leave unset (or an idx out of
 * range) comes from server.max_conns_per_user and max_udp_per_user. */
void server_user_limits(const struct conf *c, bool trojan, size_t idx,
    const char *name, unsigned *max_conns, unsigned *max_udp);

#endif
