/*
 * The effective configuration as YAML (check -c): every default filled in,
 * names quoted so that they read back as they were, file names absolute.
 * Secrets are shown as the key_file they came from, else as CONF_REDACTED
 * (which the loader refuses, saying why) unless asked for.
 */
#include "config.h"

#include "conf/conf.h"

#include <arpa/inet.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <string.h>

#include <sodium.h>

#include "conf/conf_int.h"

/* Double-quoted YAML string, so that any name reads back as it was. */
void
conf_dump_str(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (; *s != '\0'; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(fp, "\\%c", *s);
		else if ((unsigned char)*s < 0x20 || *s == 0x7f)
			fprintf(fp, "\\x%02x", (unsigned char)*s);
		else
			fputc(*s, fp);
	}
	fputc('"', fp);
}

static void
dump_kv(FILE *fp, const char *indent, const char *key, const char *s)
{
	fprintf(fp, "%s%s: ", indent, key);
	conf_dump_str(fp, s);
	fputc('\n', fp);
}

/* Bytes in the largest unit that is exact. */
static void
dump_size(FILE *fp, const char *key, size_t v)
{
	static const char	 units[] = "GMK";
	unsigned		 shift;
	size_t			 i;

	for (i = 0, shift = 30; i < 3; i++, shift -= 10)
		if (v != 0 && v % ((size_t)1 << shift) == 0) {
			fprintf(fp, "  %s: %zu%c\n", key, v >> shift, units[i]);
			return;
		}
	fprintf(fp, "  %s: %zu\n", key, v);
}

static void
dump_ms(FILE *fp, const char *key, unsigned ms)
{
	char	buf[32];

	fprintf(fp, "  %s: %s\n", key, conf_duration_fmt(ms, buf, sizeof(buf)));
}

/* client.dns in the form it was given. */
static void
dump_client_dns(FILE *fp, const struct conf *c)
{
	char	buf[ADDR_STRLEN];
	size_t	i, j;

	if (!c->client.dns_map) {
		if (c->client.has_dns)
			dump_kv(fp, "  ", "dns", addr_fmt(&c->client.dns, buf,
			    sizeof(buf)));
		return;
	}
	fprintf(fp, "  dns:\n    mode: %s\n",
	    c->client.dns_fakeip ? "fake-ip" : "redirect");
	if (c->client.has_dns)
		dump_kv(fp, "    ", "server", addr_fmt(&c->client.dns, buf,
		    sizeof(buf)));
	if (c->client.dns_cache_size != 1024)
		fprintf(fp, "    cache_size: %u\n", c->client.dns_cache_size);
	if (c->client.ndns_upstreams > 0)
		fprintf(fp, "    upstreams:\n");
	for (i = 0; i < c->client.ndns_upstreams; i++) {
		const struct conf_dns_upstream *up = &c->client.dns_upstreams[i];

		fprintf(fp, "      - name: ");
		conf_dump_str(fp, up->name);
		fputc('\n', fp);
		dump_kv(fp, "        ", "address", addr_fmt(&up->addr, buf,
		    sizeof(buf)));
		fprintf(fp, "        protocol: %s\n", (const char *[]){ "udp",
		    "tcp", "tls", "https" }[up->protocol]);
		if (up->tls_name[0] != '\0')
			dump_kv(fp, "        ", "tls_name", up->tls_name);
		if (up->path != NULL)
			dump_kv(fp, "        ", "path", up->path);
		if (up->ca_file != NULL)
			dump_kv(fp, "        ", "ca", up->ca_file);
		fprintf(fp, "        domains:\n");
		for (j = 0; j < up->ndomains; j++) {
			fprintf(fp, "          - ");
			conf_dump_str(fp, up->domains[j][0] != '\0' ?
			    up->domains[j] : ".");
			fputc('\n', fp);
		}
	}
	if (!c->client.dns_fakeip)
		return;
	dump_kv(fp, "    ", "fake_ip_range", cidr_fmt(&c->client.fake_ip_range4,
	    buf, sizeof(buf)));
	if (c->client.has_fake_ip_range6)
		dump_kv(fp, "    ", "fake_ip_range6",
		    cidr_fmt(&c->client.fake_ip_range6, buf, sizeof(buf)));
	fprintf(fp, "    fake_ip_size: %u\n", c->client.fake_ip_size);
	dump_kv(fp, "    ", "fake_ip_file", c->client.fake_ip_file != NULL ?
	    c->client.fake_ip_file : "");
	if (c->client.nfake_ip_exclude > 0) {
		fprintf(fp, "    fake_ip_exclude:\n");
		for (i = 0; i < c->client.nfake_ip_exclude; i++) {
			fprintf(fp, "      - ");
			conf_dump_str(fp, c->client.fake_ip_exclude[i]);
			fputc('\n', fp);
		}
	}
}

/* Marks are written in hex everywhere else (ip rule, iptables). */
static void
dump_mark(FILE *fp, uint32_t mark)
{
	if (mark == 0)
		fprintf(fp, "  mark: 0\n");
	else
		fprintf(fp, "  mark: 0x%" PRIx32 "\n", mark);
}

static void
dump_cidr_list(FILE *fp, const char *indent, const char *key,
    const struct cidr *v, size_t n)
{
	char	buf[INET6_ADDRSTRLEN + 8];
	size_t	i;

	fprintf(fp, "%s%s:%s\n", indent, key, n == 0 ? " []" : "");
	for (i = 0; i < n; i++)
		fprintf(fp, "%s  - %s\n", indent,
		    cidr_fmt(&v[i], buf, sizeof(buf)));
}

/* A user's own lists, when it has them. */
static void
dump_user_egress(FILE *fp, const char *indent, const struct conf_egress *e)
{
	if (e == NULL)
		return;
	dump_cidr_list(fp, indent, "egress_allow", e->allow, e->nallow);
	dump_cidr_list(fp, indent, "egress_deny", e->deny, e->ndeny);
}

static void
dump_hostport(FILE *fp, const char *key, const char *host, uint16_t port)
{
	bool	v6 = strchr(host, ':') != NULL;

	fprintf(fp, "  %s: \"%s%s%s:%u\"\n", key, v6 ? "[" : "", host,
	    v6 ? "]" : "", port);
}

/* A key: its file, else the key itself (secrets) or CONF_REDACTED. */
static void
dump_key(FILE *fp, const char *indent, const uint8_t key[CONF_KEY_LEN],
    const char *file, bool secrets)
{
	char	b64[sodium_base64_ENCODED_LEN(CONF_KEY_LEN,
	    sodium_base64_VARIANT_ORIGINAL)];

	if (file != NULL)
		dump_kv(fp, indent, "key_file", file);
	else if (!secrets)
		fprintf(fp, "%skey: %s\n", indent, CONF_REDACTED);
	else {
		sodium_bin2base64(b64, sizeof(b64), key, CONF_KEY_LEN,
		    sodium_base64_VARIANT_ORIGINAL);
		dump_kv(fp, indent, "key", b64);
		sodium_memzero(b64, sizeof(b64));
	}
}

static void
dump_outbound_auth(const struct conf_outbound *ob, FILE *fp, bool secrets)
{
	const char	*in = "      ";

	/* trojan uses a key only for what it never sends; none given is
	 * none printed. */
	if (ob->protocol == CONF_PROTO_TUNSPLIT ||
	    (ob->protocol == CONF_PROTO_TROJAN &&
	    !sodium_is_zero(ob->key, sizeof(ob->key))))
		dump_key(fp, in, ob->key, ob->key_file, secrets);
	if (ob->protocol == CONF_PROTO_TUNSPLIT)
		fprintf(fp, "%sheader_version: %u\n", in, ob->header_version);
	if (ob->username[0] != '\0')
		dump_kv(fp, in, "username", ob->username);
	if (ob->protocol != CONF_PROTO_TROJAN && ob->password[0] == '\0')
		return;
	if (!secrets)
		fprintf(fp, "%spassword: %s\n", in, CONF_REDACTED);
	else if (ob->protocol == CONF_PROTO_TROJAN)
		dump_kv(fp, in, "password_sha224", ob->trojan_hex);
	else
		dump_kv(fp, in, "password", ob->password);
}

/* One entry of outbounds: (the single form is dumped as this too). */
static void
dump_outbound(const struct conf *c, const struct conf_outbound *ob, FILE *fp,
    bool secrets)
{
	const char	*in = "      ";
	char		 buf[32];
	size_t		 i;
	char		 pin[sodium_base64_ENCODED_LEN(32,
	    sodium_base64_VARIANT_ORIGINAL)];

	fprintf(fp, "    - name: ");
	conf_dump_str(fp, ob->name);
	if (ob->group != CONF_GROUP_NONE) {
		fprintf(fp, "\n%stype: %s\n%smembers: [", in,
		    conf_group_name(ob->group), in);
		for (i = 0; i < ob->nmembers; i++) {
			fprintf(fp, "%s%s", i > 0 ? ", " : "",
			    ob->weights[i] > 1 ? "{name: " : "");
			conf_dump_str(fp, c->client.outbounds[ob->members[i]].name);
			if (ob->weights[i] > 1)
				fprintf(fp, ", weight: %u}", ob->weights[i]);
		}
		fprintf(fp, "]\n");
		if (ob->per_flow)
			fprintf(fp, "%sstrategy: flow\n", in);
		return;
	}
	fprintf(fp, "\n%sprotocol: %s\n", in, conf_proto_name(ob->protocol));
	if (ob->server_host != NULL)	/* none for direct, block */
		fprintf(fp, "%sserver: \"%s%s%s:%u\"\n", in,
		    strchr(ob->server_host, ':') != NULL ? "[" : "",
		    ob->server_host,
		    strchr(ob->server_host, ':') != NULL ? "]" : "",
		    ob->server_port);
	if (ob->sni != NULL)
		dump_kv(fp, in, "sni", ob->sni);
	if (ob->protocol == CONF_PROTO_TUNSPLIT ||
	    ob->protocol == CONF_PROTO_TROJAN) {
		if (ob->ca_file != NULL)
			dump_kv(fp, in, "ca", ob->ca_file);
		else
			fprintf(fp, "%s# ca: system trust store\n", in);
		fprintf(fp, "%sinsecure: %s\n", in,
		    ob->insecure ? "true" : "false");
		if (ob->has_pin) {
			sodium_bin2base64(pin, sizeof(pin), ob->pin_sha256,
			    sizeof(ob->pin_sha256),
			    sodium_base64_VARIANT_ORIGINAL);
			fprintf(fp, "%spin_sha256: \"%s\"\n", in, pin);
		}
		fprintf(fp, "%sfingerprint: %s\n", in,
		    ob->fp_browser ? "browser" : "curl");
	}
	dump_outbound_auth(ob, fp, secrets);
	if (ob->protocol == CONF_PROTO_BLOCK)
		return;
	dump_kv(fp, in, "congestion", ob->congestion);
	fprintf(fp, "%sconnect_timeout: %s\n", in,
	    conf_duration_fmt(ob->connect_timeout_ms, buf, sizeof(buf)));
	if (ob->protocol != CONF_PROTO_TUNSPLIT &&
	    ob->protocol != CONF_PROTO_TROJAN)
		return;
	fprintf(fp, "%spadding: %u\n", in, ob->padding);
	fprintf(fp, "%spool: {min: %u, max: %u}\n", in, ob->pool_min,
	    ob->pool);
	fprintf(fp, "%spool_idle: %s\n", in,
	    conf_duration_fmt(ob->pool_idle_ms, buf, sizeof(buf)));
	fprintf(fp, "%spool_lifetime: %s\n", in,
	    conf_duration_fmt(ob->pool_lifetime_ms, buf, sizeof(buf)));
	if (ob->protocol == CONF_PROTO_TUNSPLIT)
		fprintf(fp, "%sreuse: %u\n%sreuse_age: %s\n", in, ob->reuse,
		    in, conf_duration_fmt(ob->reuse_age_ms, buf,
		    sizeof(buf)));
}

static void
dump_client(const struct conf *c, FILE *fp, bool secrets)
{
	char	buf[INET6_ADDRSTRLEN + 8];
	size_t	i;

	fprintf(fp, "tun:\n");
	dump_kv(fp, "  ", "name", c->tun.name);
	fprintf(fp, "  mtu: %u\n  offload: %s\n  address:\n", c->tun.mtu,
	    c->tun.offload ? "on" : "off");
	if (c->tun.has_addr4)
		fprintf(fp, "    - %s\n",
		    cidr_fmt(&c->tun.addr4, buf, sizeof(buf)));
	if (c->tun.has_addr6)
		fprintf(fp, "    - %s\n",
		    cidr_fmt(&c->tun.addr6, buf, sizeof(buf)));
	fprintf(fp, "client:\n  outbounds:\n");
	for (i = 0; i < c->client.noutbounds; i++)
		dump_outbound(c, &c->client.outbounds[i], fp, secrets);
	dump_kv(fp, "  ", "final", conf_final(c)->name);
	dump_kv(fp, "  ", "congestion", c->client.congestion);
	dump_mark(fp, c->client.mark);
	fprintf(fp, "  max_flows: %u\n", c->client.max_flows);
	fprintf(fp, "  dial_threads: %u\n", c->client.dial_threads);
	fprintf(fp, "  workers: %u\n", c->client.workers);
	dump_ms(fp, "connect_timeout", c->client.connect_timeout_ms);
	dump_ms(fp, "idle_timeout", c->client.idle_timeout_ms);
	dump_kv(fp, "  ", "connect_mode", c->client.faithful ? "faithful" : "fast");
	dump_kv(fp, "  ", "sniff", c->client.sniff == CONF_SNIFF_ALWAYS ?
	    "always" : c->client.sniff == CONF_SNIFF_NEVER ? "never" : "auto");
	dump_ms(fp, "sniff_timeout", c->client.sniff_timeout_ms);
	fprintf(fp, "  max_udp: %u\n", c->client.max_udp);
	dump_size(fp, "max_buffer_memory", c->client.max_buffer_memory);
	dump_ms(fp, "udp_timeout", c->client.udp_timeout_ms);
	dump_ms(fp, "dns_timeout", c->client.dns_timeout_ms);
	dump_client_dns(fp, c);
	fprintf(fp, "  route: %s\n", c->client.route_auto ? "auto" : "off");
	if (c->client.nroute_exclude > 0)
		dump_cidr_list(fp, "  ", "route_exclude",
		    c->client.route_exclude, c->client.nroute_exclude);
	if (c->client.nroute_uids > 0) {
		fprintf(fp, "  route_uid_%s:\n",
		    c->client.route_uids_include ? "include" : "exclude");
		for (i = 0; i < c->client.nroute_uids; i++)
			fprintf(fp, "    - \"%" PRIu32 "-%" PRIu32 "\"\n",
			    c->client.route_uids[i].lo,
			    c->client.route_uids[i].hi);
	}
	fprintf(fp, "  ipv6: %s\n", c->client.ipv6_bypass ? "bypass" : "block");
	conf_rules_dump(c, fp);
}

/* Each password as its SHA-224 (all the server keeps), with its own
 * limits and lists. */
static void
dump_trojan(const struct conf *c, FILE *fp, bool secrets)
{
	const struct conf_limits	*l;
	size_t				 i;

	if (c->server.ntrojan == 0)
		return;
	fprintf(fp, "  trojan_passwords:\n");
	for (i = 0; i < c->server.ntrojan; i++) {
		l = &c->server.trojan_limits[i];
		if (secrets)
			dump_kv(fp, "    - ", "sha224", c->server.trojan_hex[i]);
		else
			fprintf(fp, "    - sha224: %s\n", CONF_REDACTED);
		if (l->max_conns != 0)
			fprintf(fp, "      max_conns: %u\n", l->max_conns);
		if (l->max_udp != 0)
			fprintf(fp, "      max_udp: %u\n", l->max_udp);
		dump_user_egress(fp, "      ", c->server.trojan_egress[i]);
	}
}

static void
dump_server(const struct conf *c, FILE *fp, bool secrets)
{
	char	buf[ADDR_STRLEN];
	size_t	i;

	fprintf(fp, "server:\n  listen:\n");
	for (i = 0; i < c->server.nlisten; i++)
		fprintf(fp, "    - \"%s\"\n",
		    addr_fmt(&c->server.listen[i], buf, sizeof(buf)));
	dump_kv(fp, "  ", "cert", c->server.cert_file);
	dump_kv(fp, "  ", "cert_key", c->server.cert_key_file);
	fprintf(fp, "  users:\n");
	for (i = 0; i < c->server.nusers; i++) {
		dump_kv(fp, "    - ", "name", c->server.users[i].name);
		dump_key(fp, "      ", c->server.users[i].key,
		    c->server.users[i].key_file, secrets);
		if (c->server.users[i].max_conns != 0)
			fprintf(fp, "      max_conns: %u\n",
			    c->server.users[i].max_conns);
		if (c->server.users[i].max_udp != 0)
			fprintf(fp, "      max_udp: %u\n",
			    c->server.users[i].max_udp);
		dump_user_egress(fp, "      ", c->server.users[i].egress);
	}
	dump_trojan(c, fp, secrets);
	dump_kv(fp, "  ", "congestion", c->server.congestion);
	dump_mark(fp, c->server.mark);
	fprintf(fp, "  max_conns: %u\n", c->server.max_conns);
	fprintf(fp, "  max_conns_per_source: %u\n",
	    c->server.max_conns_per_source);
	fprintf(fp, "  max_conns_per_user: %u\n", c->server.max_conns_per_user);
	fprintf(fp, "  max_udp: %u\n", c->server.max_udp);
	fprintf(fp, "  max_udp_per_user: %u\n", c->server.max_udp_per_user);
	dump_size(fp, "max_buffer_memory", c->server.max_buffer_memory);
	dump_size(fp, "cover_buffer_memory", c->server.cover_buffer_memory);
	fprintf(fp, "  max_cover_per_source: %u\n",
	    c->server.max_cover_per_source);
	fprintf(fp, "  max_preauth: %u\n", c->server.max_preauth);
	fprintf(fp, "  max_preauth_per_source: %u\n",
	    c->server.max_preauth_per_source);
	fprintf(fp, "  padding: %u\n", c->server.padding);
	fprintf(fp, "  workers: %u\n", c->server.workers);
	dump_ms(fp, "connect_timeout", c->server.connect_timeout_ms);
	dump_ms(fp, "idle_timeout", c->server.idle_timeout_ms);
	dump_ms(fp, "handshake_timeout", c->server.handshake_timeout_ms);
	fprintf(fp, "  reuse: %u\n", c->server.reuse);
	dump_ms(fp, "reuse_age", c->server.reuse_age_ms);
	dump_ms(fp, "time_window", c->server.time_window_s * 1000);
	fprintf(fp, "  accept_v1: %s\n", c->server.accept_v1 ? "true" : "false");
	fprintf(fp, "  egress:\n");
	dump_cidr_list(fp, "    ", "allow", c->server.egress_allow,
	    c->server.negress_allow);
	dump_cidr_list(fp, "    ", "deny", c->server.egress_deny,
	    c->server.negress_deny);
	fprintf(fp, "  resolver:\n    workers: %u\n    queue: %u\n",
	    c->server.resolve_workers, c->server.resolve_queue);
	dump_ms(fp, "  timeout", c->server.resolve_timeout_ms);
	fprintf(fp, "    cache: %u\n", c->server.resolve_cache);
	dump_ms(fp, "  cache_ttl", c->server.resolve_ttl_ms);
	dump_ms(fp, "  negative_ttl", c->server.resolve_negative_ttl_ms);
	if (c->server.fallback_host != NULL) {
		dump_hostport(fp, "fallback", c->server.fallback_host,
		    c->server.fallback_port);
		fprintf(fp, "  fallback_tls: %s\n",
		    c->server.fallback_tls ? "true" : "false");
		if (c->server.fallback_plain_host != NULL)
			dump_hostport(fp, "fallback_plain",
			    c->server.fallback_plain_host,
			    c->server.fallback_plain_port);
	} else
		fprintf(fp, "  # fallback: none (unauthenticated connections "
		    "are closed)\n");
}

/* group: as given, else the user's own (what the daemon then uses). */
static void
dump_group(const struct conf *c, FILE *fp)
{
	struct passwd	*pw;
	struct group	*gr;

	if (c->group[0] != '\0')
		dump_kv(fp, "", "group", c->group);
	else if (c->user[0] == '\0')
		return;
	else if ((pw = getpwnam(c->user)) != NULL &&
	    (gr = getgrgid(pw->pw_gid)) != NULL)
		dump_kv(fp, "", "group", gr->gr_name);
	else
		fprintf(fp, "# group: the user's own\n");
}

static void
dump(const struct conf *c, FILE *fp, bool secrets)
{
	static const char *const levels[] = {
		[LOG_LVL_ERROR] = "error", [LOG_LVL_WARN] = "warn",
		[LOG_LVL_INFO] = "info", [LOG_LVL_DEBUG] = "debug",
	};

	char		 buf[ADDR_STRLEN], ms[32];

	fprintf(fp, "log:\n  level: %s\n",
	    c->log_level >= 0 && c->log_level <= LOG_LVL_DEBUG ?
	    levels[c->log_level] : "info");
	/* Not given is not false: run -d then logs to syslog. */
	if (c->log_syslog_set)
		fprintf(fp, "  syslog: %s\n", c->log_syslog ? "true" : "false");
	else
		fprintf(fp, "  # syslog: not set (run -d: syslog; in the "
		    "foreground: stderr)\n");
	fprintf(fp, "  flows: %s\n", c->log_flows ? "true" : "false");
	if (c->control[0] != '\0')
		dump_kv(fp, "", "control", c->control);
	else
		fprintf(fp, "control: off\n");
	if (c->has_metrics)
		fprintf(fp, "metrics: \"%s\"\n",
		    addr_fmt(&c->metrics, buf, sizeof(buf)));
	else
		fprintf(fp, "metrics: off\n");
	if (c->pidfile != NULL)
		dump_kv(fp, "", "pidfile", c->pidfile);
	else
		fprintf(fp, "# pidfile: none\n");
	if (c->user[0] != '\0')
		dump_kv(fp, "", "user", c->user);
	dump_group(c, fp);
	fprintf(fp, "drain_timeout: %s\n",
	    conf_duration_fmt(c->drain_timeout_ms, ms, sizeof(ms)));
	if (c->role == CONF_ROLE_CLIENT)
		dump_client(c, fp, secrets);
	else
		dump_server(c, fp, secrets);
}

void
conf_dump(const struct conf *c, FILE *fp)
{
	dump(c, fp, false);
}

void
conf_dump_secrets(const struct conf *c, FILE *fp)
{
	dump(c, fp, true);
}
