/*
 * The country lookup, over libmaxminddb when the build has it.  The
 * database is memory-mapped by libmaxminddb and read-only; it belongs to
 * the configuration generation that opened it.
 */
#include "config.h"

#include "rules/rules_geoip.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#ifdef HAVE_MAXMINDDB
#include <maxminddb.h>
#endif

struct rules_geoip {
	char		*path;
#ifdef HAVE_MAXMINDDB
	MMDB_s		 db;
#endif
};

int
rules_geoip_code(const char *s)
{
	char	a, b;

	if (strlen(s) != 2)
		return -1;
	a = (char)(s[0] & ~0x20);
	b = (char)(s[1] & ~0x20);
	if (a < 'A' || a > 'Z' || b < 'A' || b > 'Z')
		return -1;
	return (a << 8) | b;
}

const char *
rules_geoip_path(const struct rules_geoip *g)
{
	return g->path;
}

#ifdef HAVE_MAXMINDDB

bool
rules_geoip_available(void)
{
	return true;
}

struct rules_geoip *
rules_geoip_open(const char *path, char *err, size_t errlen)
{
	struct rules_geoip	*g;
	int			 rc;

	if ((g = calloc(1, sizeof(*g))) == NULL ||
	    (g->path = strdup(path)) == NULL) {
		free(g);
		snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	if ((rc = MMDB_open(path, MMDB_MODE_MMAP, &g->db)) != MMDB_SUCCESS) {
		snprintf(err, errlen, "%s: %s", path, MMDB_strerror(rc));
		free(g->path);
		free(g);
		return NULL;
	}
	return g;
}

void
rules_geoip_free(struct rules_geoip *g)
{
	if (g == NULL)
		return;
	MMDB_close(&g->db);
	free(g->path);
	free(g);
}

bool
rules_geoip_country(const struct rules_geoip *g, int family, const void *ip,
    char cc[3])
{
	struct sockaddr_in	 sin;
	struct sockaddr_in6	 sin6;
	const struct sockaddr	*sa;
	MMDB_lookup_result_s	 r;
	MMDB_entry_data_s	 d;
	int			 mmdb = 0;

	if (g == NULL)
		return false;
	if (family == AF_INET) {
		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		memcpy(&sin.sin_addr, ip, 4);
		sa = (const struct sockaddr *)&sin;
	} else if (family == AF_INET6) {
		memset(&sin6, 0, sizeof(sin6));
		sin6.sin6_family = AF_INET6;
		memcpy(&sin6.sin6_addr, ip, 16);
		sa = (const struct sockaddr *)&sin6;
	} else
		return false;
	r = MMDB_lookup_sockaddr(&g->db, sa, &mmdb);
	if (mmdb != MMDB_SUCCESS || !r.found_entry)
		return false;
	if (MMDB_get_value(&r.entry, &d, "country", "iso_code", NULL) !=
	    MMDB_SUCCESS || !d.has_data || d.type != MMDB_DATA_TYPE_UTF8_STRING ||
	    d.data_size != 2)
		return false;
	cc[0] = (char)(d.utf8_string[0] & ~0x20);
	cc[1] = (char)(d.utf8_string[1] & ~0x20);
	cc[2] = '\0';
	return true;
}

#else	/* !HAVE_MAXMINDDB */

bool
rules_geoip_available(void)
{
	return false;
}

struct rules_geoip *
rules_geoip_open(const char *path, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s: this tunsplit was built without "
	    "libmaxminddb (configure --with-maxminddb)", path);
	return NULL;
}

void
rules_geoip_free(struct rules_geoip *g)
{
	free(g);
}

bool
rules_geoip_country(const struct rules_geoip *g, int family, const void *ip,
    char cc[3])
{
	(void)g;
	(void)family;
	(void)ip;
	(void)cc;
	return false;
}

#endif
