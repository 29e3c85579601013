/*
 * GeoIP for the rules: the country of an address, from a MaxMind-format
 * database (.mmdb, e.g. GeoLite2-Country) the user supplies.  Built with
 * libmaxminddb when configure finds it (--with-maxminddb); without it
 * rules_geoip_open fails, saying so, and nothing else changes.
 */
#ifndef TUNSPLIT_RULES_GEOIP_H
#define TUNSPLIT_RULES_GEOIP_H

#include <stdbool.h>
#include <stddef.h>

struct rules_geoip;

/* Whether this build can read .mmdb files. */
bool rules_geoip_available(void);
/* NULL with err set (the file, and why). */
struct rules_geoip *rules_geoip_open(const char *path, char *err,
    size_t errlen);
void rules_geoip_free(struct rules_geoip *);		/* NULL ok */
const char *rules_geoip_path(const struct rules_geoip *);
/* The ISO 3166 code (two upper-case letters) of ip into cc; false when
 * the database has none for it.  ip: 4 or 16 bytes by family. */
bool rules_geoip_country(const struct rules_geoip *, int family,
    const void *ip, char cc[3]);
/* "CN", any case, into the code rules compare: -1 if not two letters. */
int  rules_geoip_code(const char *s);

#endif
