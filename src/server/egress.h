/*
 * The server's egress policy (egress.c): whether a session may dial or
 * send to an address.  Used by sessions and datagram sessions; reads the
 * generation of the configuration the session holds.
 */
#ifndef TUNSPLIT_EGRESS_H
#define TUNSPLIT_EGRESS_H

#include <stdbool.h>

struct addr;
struct conf;
struct conf_egress;

/* True when the server may dial this address.  Default denies loopback,
 * private, link-local, CGNAT, multicast, unspecified and metadata ranges,
 * unless conf lists an allow entry covering it. */
bool egress_allowed(const struct conf *c, const struct addr *a);
/* The same with a user's own lists (conf_user.egress, NULL: none) first:
 * its deny entries, then its allow entries, then the server's. */
bool egress_allowed_user(const struct conf *c, const struct conf_egress *u,
    const struct addr *a);

#endif
