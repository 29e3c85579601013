/*
 * conf: valid client and server files with their defaults, and for every
 * key a bad value reported as "file:line:col: key: message" at the right
 * place; YAML syntax errors; role rules; key_file; durations; conf_dump
 * round trip; every shipped example loads.
 */
#include "config.h"

#include <sys/stat.h>
#include <arpa/inet.h>
#include <glob.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "conf/conf.h"
#include "tests/unit/conf/conftest.h"
#include "core/log.h"

/* base64 of bytes 0..31, of 32 x 0xff, of bytes 32..63 */
#define K1	"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
#define K2	"//////////////////////////////////////////8="
#define K3	"ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8="

/* Minimal role sections, appended after the section under test so that
 * the lines being tested come first and their numbers stay small. */
#define CLIENT	"client:\n  server: vpn.example.org:443\n  key: " K1 "\n"
#define SERVER	"server:\n  listen: 0.0.0.0:443\n  cert: /c.pem\n" \
		"  cert_key: /k.pem\n  users:\n    - name: a\n      key: " K1 "\n"

/* SHA-224 of "s3cret" (what trojan sends); any 56 hex digits. */
#define TROJAN_S3CRET	"b4180f1273bf27a305b527fb86024440c2e6e85af5b0f3cf404417a0"
#define TROJAN_HEX	"0123456789ABCDEF0123456789abcdef0123456789abcdef01234567"

/* client.sniff and sniff_timeout: defaults, values, errors. */
static void
test_client_sniff(void **state)
{
	struct conf	*c;

	(void)state;
	c = load_ok(CLIENT);
	assert_int_equal(c->client.sniff, CONF_SNIFF_AUTO);
	assert_int_equal(c->client.sniff_timeout_ms, 50);
	conf_free(c);
	c = load_ok("client:\n  sniff: always\n  sniff_timeout: 5ms\n"
	    "  server: vpn.example.org:443\n  key: " K1 "\n");
	assert_int_equal(c->client.sniff, CONF_SNIFF_ALWAYS);
	assert_int_equal(c->client.sniff_timeout_ms, 5);
	conf_free(c);
	c = load_ok("client:\n  sniff: never\n"
	    "  server: vpn.example.org:443\n  key: " K1 "\n");
	assert_int_equal(c->client.sniff, CONF_SNIFF_NEVER);
	conf_free(c);
	expect_err("client:\n  sniff: maybe\n", "t.yaml:2:10: client.sniff: ",
	    "maybe");
	expect_err("client:\n  sniff_timeout: 2s\n",
	    "t.yaml:2:18: client.sniff_timeout: ", "");
	expect_err("client:\n  sniff_timeout: 0ms\n",
	    "t.yaml:2:18: client.sniff_timeout: ", "");
}

static void
test_client_values(void **state)
{
	static const uint8_t	 k1[32] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
	    11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27,
	    28, 29, 30, 31 };
	const char		*y =
	    "log:\n"
	    "  level: debug\n"
	    "  syslog: yes\n"
	    "  flows: true\n"
	    "tun:\n"
	    "  name: ts1\n"
	    "  mtu: 1500\n"
	    "  address: [10.9.0.2/24, \"fd00::2/120\"]\n"
	    "client:\n"
	    "  server: \"[2001:db8::1]:8443\"\n"
	    "  sni: www.example.com\n"
	    "  ca: /etc/tunsplit/ca.pem\n"
	    "  insecure: false\n"
	    "  pin_sha256: \"sha256//" K2 "\"\n"
	    "  key: " K1 "\n"
	    "  congestion: cubic\n"
	    "  mark: 0x1f\n"
	    "  max_flows: 100\n"
	    "  connect_timeout: 2500ms\n"
	    "  idle_timeout: 1h\n"
	    "  max_udp: 5\n"
	    "  udp_timeout: 2m\n"
	    "  dns_timeout: 3s\n"
	    "  dns: \"[2001:db8::53]:5353\"\n";
	struct conf		*c;
	char			 buf[64];

	(void)state;
	c = load_ok(y);
	assert_int_equal(c->role, CONF_ROLE_CLIENT);
	assert_int_equal(c->log_level, LOG_LVL_DEBUG);
	assert_true(c->log_syslog);
	assert_true(c->log_flows);
	assert_string_equal(c->tun.name, "ts1");
	assert_int_equal(c->tun.mtu, 1500);
	assert_true(c->tun.has_addr4 && c->tun.has_addr6);
	assert_string_equal(cidr_fmt(&c->tun.addr4, buf, sizeof(buf)),
	    "10.9.0.2/24");
	assert_string_equal(cidr_fmt(&c->tun.addr6, buf, sizeof(buf)),
	    "fd00::2/120");
	assert_string_equal(conf_final(c)->server_host, "2001:db8::1");
	assert_int_equal(conf_final(c)->server_port, 8443);
	assert_string_equal(conf_final(c)->sni, "www.example.com");
	assert_string_equal(conf_final(c)->ca_file, "/etc/tunsplit/ca.pem");
	assert_false(conf_final(c)->insecure);
	assert_true(conf_final(c)->has_pin);
	assert_int_equal(conf_final(c)->pin_sha256[0], 0xff);
	assert_int_equal(conf_final(c)->pin_sha256[31], 0xff);
	assert_memory_equal(conf_final(c)->key, k1, 32);
	assert_string_equal(c->client.congestion, "cubic");
	assert_int_equal(c->client.mark, 31);
	assert_int_equal(c->client.max_flows, 100);
	assert_int_equal(c->client.connect_timeout_ms, 2500);
	assert_int_equal(c->client.idle_timeout_ms, 3600000);
	assert_int_equal(c->client.max_udp, 5);
	assert_int_equal(c->client.udp_timeout_ms, 120000);
	assert_int_equal(c->client.dns_timeout_ms, 3000);
	assert_true(c->client.has_dns);
	assert_string_equal(addr_fmt(&c->client.dns, buf, sizeof(buf)),
	    "[2001:db8::53]:5353");
	conf_free(c);

	/* A bare resolver address means port 53. */
	c = load_ok(CLIENT "  dns: 192.0.2.53\n");
	assert_string_equal(addr_fmt(&c->client.dns, buf, sizeof(buf)),
	    "192.0.2.53:53");
	conf_free(c);
}

static void
test_client_defaults(void **state)
{
	struct conf	*c;
	char		 buf[64];

	(void)state;
	c = load_ok(CLIENT);
	assert_int_equal(c->log_level, LOG_LVL_INFO);
	assert_false(c->log_flows);
	assert_false(c->log_syslog);
	assert_string_equal(c->tun.name, "tun0");
	assert_int_equal(c->tun.mtu, 9000);
	assert_string_equal(cidr_fmt(&c->tun.addr4, buf, sizeof(buf)),
	    "198.18.0.1/15");
	assert_string_equal(cidr_fmt(&c->tun.addr6, buf, sizeof(buf)),
	    "fdfe:dcba:9876::1/64");
	assert_string_equal(conf_final(c)->server_host, "vpn.example.org");
	assert_int_equal(conf_final(c)->server_port, 443);
	assert_string_equal(conf_final(c)->sni, "vpn.example.org");
	assert_null(conf_final(c)->ca_file);
	assert_false(conf_final(c)->insecure);
	assert_false(conf_final(c)->has_pin);
	assert_null(c->path);
	assert_string_equal(c->client.congestion, "bbr");
	assert_int_equal(c->client.mark, 0);
	assert_int_equal(c->client.max_flows, 4096);
	assert_int_equal(c->client.connect_timeout_ms, 10000);
	assert_int_equal(c->client.idle_timeout_ms, 300000);
	assert_int_equal(c->client.max_udp, 1024);
	assert_int_equal(c->client.udp_timeout_ms, 60000);
	assert_int_equal(c->client.dns_timeout_ms, 10000);
	assert_false(c->client.has_dns);
	conf_free(c);

	/* One address replaces both defaults. */
	c = load_ok("tun:\n  address: fd01::1/64\n" CLIENT);
	assert_false(c->tun.has_addr4);
	assert_true(c->tun.has_addr6);
	conf_free(c);
}

static void
test_server_values(void **state)
{
	static const uint8_t	 k2[32] = {
	    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
	    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
	    255, 255, 255, 255, 255, 255 };
	const char		*y =
	    "server:\n"
	    "  listen: [\"0.0.0.0:443\", \"[::]:8443\"]\n"
	    "  cert: /etc/tunsplit/cert.pem\n"
	    "  cert_key: /etc/tunsplit/key.pem\n"
	    "  users:\n"
	    "    - name: alice\n"
	    "      key: " K1 "\n"
	    "    - {name: bob, key: \"" K2 "\"}\n"
	    "  congestion: cubic\n"
	    "  mark: 7\n"
	    "  max_conns: 10\n"
	    "  connect_timeout: 3s\n"
	    "  idle_timeout: 2m\n"
	    "  handshake_timeout: 500ms\n"
	    "  time_window: 1m\n"
	    "  egress:\n"
	    "    allow: [10.1.0.0/16]\n"
	    "    deny:\n"
	    "      - 203.0.113.0/24\n"
	    "      - 2001:db8::/32\n"
	    "  fallback: \"[::1]:8080\"\n"
	    "  fallback_tls: yes\n"
	    "log: {level: warn}\n";
	struct conf		*c;
	char			 buf[ADDR_STRLEN];

	(void)state;
	c = load_ok(y);
	assert_int_equal(c->role, CONF_ROLE_SERVER);
	assert_int_equal(c->log_level, LOG_LVL_WARN);
	assert_int_equal(c->server.nlisten, 2);
	assert_string_equal(addr_fmt(&c->server.listen[0], buf, sizeof(buf)),
	    "0.0.0.0:443");
	assert_string_equal(addr_fmt(&c->server.listen[1], buf, sizeof(buf)),
	    "[::]:8443");
	assert_string_equal(c->server.cert_file, "/etc/tunsplit/cert.pem");
	assert_string_equal(c->server.cert_key_file, "/etc/tunsplit/key.pem");
	assert_int_equal(c->server.nusers, 2);
	assert_string_equal(c->server.users[0].name, "alice");
	assert_int_equal(c->server.users[0].key[31], 31);
	assert_string_equal(c->server.users[1].name, "bob");
	assert_memory_equal(c->server.users[1].key, k2, 32);
	assert_string_equal(c->server.congestion, "cubic");
	assert_int_equal(c->server.mark, 7);
	assert_int_equal(c->server.max_conns, 10);
	assert_int_equal(c->server.connect_timeout_ms, 3000);
	assert_int_equal(c->server.idle_timeout_ms, 120000);
	assert_int_equal(c->server.handshake_timeout_ms, 500);
	assert_int_equal(c->server.time_window_s, 60);
	assert_int_equal(c->server.negress_allow, 1);
	assert_string_equal(cidr_fmt(&c->server.egress_allow[0], buf,
	    sizeof(buf)), "10.1.0.0/16");
	assert_int_equal(c->server.negress_deny, 2);
	assert_string_equal(cidr_fmt(&c->server.egress_deny[1], buf,
	    sizeof(buf)), "2001:db8::/32");
	assert_string_equal(c->server.fallback_host, "::1");
	assert_int_equal(c->server.fallback_port, 8080);
	assert_true(c->server.fallback_tls);
	assert_null(c->server.fallback_plain_host);
	conf_free(c);

	c = load_ok(SERVER "  fallback: www.example.org:443\n"
	    "  fallback_plain: 127.0.0.1:8082\n");
	assert_string_equal(c->server.fallback_host, "www.example.org");
	assert_int_equal(c->server.fallback_port, 443);
	assert_false(c->server.fallback_tls);
	assert_string_equal(c->server.fallback_plain_host, "127.0.0.1");
	assert_int_equal(c->server.fallback_plain_port, 8082);
	conf_free(c);
}

static void
test_server_defaults(void **state)
{
	struct conf	*c;

	(void)state;
	c = load_ok(SERVER);
	assert_int_equal(c->server.nlisten, 1);
	assert_int_equal(c->server.nusers, 1);
	assert_string_equal(c->server.congestion, "bbr");
	assert_int_equal(c->server.mark, 0);
	assert_int_equal(c->server.max_conns, 8192);
	assert_int_equal(c->server.connect_timeout_ms, 10000);
	assert_int_equal(c->server.idle_timeout_ms, 300000);
	assert_int_equal(c->server.handshake_timeout_ms, 60000);
	assert_int_equal(c->server.time_window_s, 120);
	assert_int_equal(c->server.negress_allow, 0);
	assert_int_equal(c->server.negress_deny, 0);
	assert_null(c->server.fallback_host);
	assert_false(c->server.fallback_tls);
	conf_free(c);

	/* An empty allow list is fine: it allows nothing extra. */
	c = load_ok(SERVER "  egress: {allow: []}\n");
	assert_int_equal(c->server.negress_allow, 0);
	conf_free(c);
}

struct bad {
	const char	*yaml;
	const char	*where;		/* "t.yaml:L:C: key: " */
	const char	*msg;		/* substring of the message */
};

static const struct bad bad_log[] = {
	{ "log:\n  level: loud\n" CLIENT, "t.yaml:2:10: log.level: ",
	    "'loud' is not error, warn, info or debug" },
	{ "log:\n  level: [info]\n" CLIENT, "t.yaml:2:10: log.level: ",
	    "expected a value, found a list" },
	{ "log:\n  syslog: maybe\n" CLIENT, "t.yaml:2:11: log.syslog: ",
	    "'maybe' is not true, false, yes or no" },
	{ "log:\n  syslog: 1\n" CLIENT, "t.yaml:2:11: log.syslog: ",
	    "is not true" },
	{ "log:\n  flows: all\n" CLIENT, "t.yaml:2:10: log.flows: ",
	    "'all' is not true, false, yes or no" },
	{ "log:\n  flows: [tcp]\n" CLIENT, "t.yaml:2:10: log.flows: ",
	    "expected a value, found a list" },
	{ "log:\n  colour: red\n" CLIENT, "t.yaml:2:3: log.colour: ",
	    "unknown key" },
	{ "log: info\n" CLIENT, "t.yaml:1:6: log: ",
	    "expected a mapping, found a single value" },
	{ "log:\n" CLIENT, "t.yaml:1:5: log: ",
	    "expected a mapping, found nothing" },
};

static const struct bad bad_tun[] = {
	{ "tun:\n  name: abcdefghijklmnop\n" CLIENT, "t.yaml:2:9: tun.name: ",
	    "too long (max 15 characters)" },
	{ "tun:\n  name: tun/0\n" CLIENT, "t.yaml:2:9: tun.name: ",
	    "contains characters" },
	{ "tun:\n  name: ..\n" CLIENT, "t.yaml:2:9: tun.name: ",
	    "contains characters" },
	{ "tun:\n  name: \"\"\n" CLIENT, "t.yaml:2:9: tun.name: ",
	    "empty value" },
	{ "tun:\n  mtu: 70000\n" CLIENT, "t.yaml:2:8: tun.mtu: ",
	    "70000 out of range (576..65535)" },
	{ "tun:\n  mtu: 575\n" CLIENT, "t.yaml:2:8: tun.mtu: ",
	    "575 out of range (576..65535)" },
	{ "tun:\n  mtu: 9000x\n" CLIENT, "t.yaml:2:8: tun.mtu: ",
	    "'9000x' is not an integer" },
	{ "tun:\n  mtu: -1\n" CLIENT, "t.yaml:2:8: tun.mtu: ",
	    "'-1' is not an integer" },
	{ "tun:\n  mtu: \" 1500\"\n" CLIENT, "t.yaml:2:8: tun.mtu: ",
	    "is not an integer" },
	{ "tun:\n  mtu: 99999999999999999999999\n" CLIENT,
	    "t.yaml:2:8: tun.mtu: ", "is not an integer" },
	{ "tun:\n  mtu: {a: 1}\n" CLIENT, "t.yaml:2:8: tun.mtu: ",
	    "expected a value, found a mapping" },
	{ "tun:\n  address: 10.0.0.1/33\n" CLIENT, "t.yaml:2:12: tun.address: ",
	    "'10.0.0.1/33' is not an address/prefix" },
	{ "tun:\n  address: [10.0.0.1/24, 10.0.0.2/24]\n" CLIENT,
	    "t.yaml:2:26: tun.address[1]: ", "only one IPv4 address" },
	{ "tun:\n  address: [fd::1/64, fd::2/64]\n" CLIENT,
	    "t.yaml:2:23: tun.address[1]: ", "only one IPv6 address" },
	{ "tun:\n  address: [10.0.0.1/24, fd::1/64, fd::2/64]\n" CLIENT,
	    "t.yaml:2:12: tun.address: ", "too many entries (max 2)" },
	{ "tun:\n  address: []\n" CLIENT, "t.yaml:2:12: tun.address: ",
	    "empty list" },
	{ "tun:\n  address: {a: b}\n" CLIENT, "t.yaml:2:12: tun.address: ",
	    "expected a value or a list, found a mapping" },
	{ "tun:\n  addr: 10.0.0.1/24\n" CLIENT, "t.yaml:2:3: tun.addr: ",
	    "unknown key" },
	{ "tun:\n  mtu: 1500\n  mtu: 1400\n" CLIENT, "t.yaml:3:3: tun.mtu: ",
	    "duplicate key" },
	{ "tun:\n  mtu: 1500\n" SERVER, "t.yaml:1:1: tun: ",
	    "only valid with client:" },
};

static const struct bad bad_client[] = {
	{ "client:\n  key: " K1 "\n", "t.yaml:2:3: client.server: ",
	    "missing required key" },
	{ "client:\n  server: vpn.example.org\n  key: " K1 "\n",
	    "t.yaml:2:11: client.server: ", "has no port" },
	{ "client:\n  server: vpn.example.org:0\n  key: " K1 "\n",
	    "t.yaml:2:11: client.server: ", "has no valid port" },
	{ "client:\n  server: vpn.example.org:65536\n  key: " K1 "\n",
	    "t.yaml:2:11: client.server: ", "has no valid port" },
	{ "client:\n  server: vpn.example.org:+443\n  key: " K1 "\n",
	    "t.yaml:2:11: client.server: ", "has no valid port" },
	{ "client:\n  server: \"::1:443\"\n  key: " K1 "\n",
	    "t.yaml:2:11: client.server: ", "IPv6 address needs brackets" },
	{ "client:\n  server: \"[::1]443\"\n  key: " K1 "\n",
	    "t.yaml:2:11: client.server: ", "is not host:port" },
	{ "client:\n  server: \"[vpn]:443\"\n  key: " K1 "\n",
	    "t.yaml:2:11: client.server: ", "is not host:port" },
	{ "client:\n  server: bad host:443\n  key: " K1 "\n",
	    "t.yaml:2:11: client.server: ", "'bad host:443' is not host:port" },
	{ "client:\n  server: :443\n  key: " K1 "\n",
	    "t.yaml:2:11: client.server: ", "is not host:port" },
	{ "client:\n  sni: a b\n  server: a.example:1\n  key: " K1 "\n",
	    "t.yaml:2:8: client.sni: ", "'a b' is not a host name" },
	{ "client:\n  ca: \"\"\n  server: a.example:1\n  key: " K1 "\n",
	    "t.yaml:2:7: client.ca: ", "empty value" },
	{ "client:\n  ca:\n  server: a.example:1\n  key: " K1 "\n",
	    "t.yaml:2:6: client.ca: ", "expected a value, found nothing" },
	{ "client:\n  ca: [/a, /b]\n  server: a.example:1\n  key: " K1 "\n",
	    "t.yaml:2:7: client.ca: ", "expected a value, found a list" },
	{ "client:\n  insecure: 2\n  server: a.example:1\n  key: " K1 "\n",
	    "t.yaml:2:13: client.insecure: ", "is not true, false, yes or no" },
	{ "client:\n  key: abc\n  server: a.example:1\n",
	    "t.yaml:2:8: client.key: ", "not a valid key" },
	{ "client:\n  key: " K1 "x\n  server: a.example:1\n",
	    "t.yaml:2:8: client.key: ", "not a valid key" },
	{ "client:\n  server: a.example:1\n",
	    "t.yaml:2:3: client.key: ", "missing required key (or key_file)" },
	{ "client:\n  server: a.example:1\n  key: " K1 "\n"
	    "  key_file: /nonexistent\n",
	    "t.yaml:4:13: client.key_file: ", "mutually exclusive" },
	{ "client:\n  key_file: /nonexistent/k\n  server: a.example:1\n",
	    "t.yaml:2:13: client.key_file: ",
	    "/nonexistent/k: No such file or directory" },
	{ "client:\n  key_file: /\n  server: a.example:1\n",
	    "t.yaml:2:13: client.key_file: ", "/: not a regular file" },
	{ "client:\n  congestion: abcdefghijklmnop\n" "  server: a.example:1\n"
	    "  key: " K1 "\n", "t.yaml:2:15: client.congestion: ",
	    "too long (max 15 characters)" },
	{ "client:\n  congestion: \"b r\"\n  server: a.example:1\n"
	    "  key: " K1 "\n", "t.yaml:2:15: client.congestion: ",
	    "contains characters" },
	{ "client:\n  mark: 4294967296\n  server: a.example:1\n  key: " K1 "\n",
	    "t.yaml:2:9: client.mark: ", "out of range (0..4294967295)" },
	{ "client:\n  mark: 0x\n  server: a.example:1\n  key: " K1 "\n",
	    "t.yaml:2:9: client.mark: ", "is not an integer" },
	{ "client:\n  mark: 0x0x1\n  server: a.example:1\n  key: " K1 "\n",
	    "t.yaml:2:9: client.mark: ", "is not an integer" },
	{ "client:\n  max_flows: 0\n  server: a.example:1\n  key: " K1 "\n",
	    "t.yaml:2:14: client.max_flows: ", "0 out of range (1..1000000)" },
	{ "client:\n  max_flows: 1000001\n  server: a.example:1\n  key: " K1
	    "\n", "t.yaml:2:14: client.max_flows: ", "out of range" },
	{ "client:\n  connect_timeout: 10x\n  server: a.example:1\n  key: " K1
	    "\n", "t.yaml:2:20: client.connect_timeout: ",
	    "'10x' is not a duration" },
	{ "client:\n  connect_timeout: 50ms\n  server: a.example:1\n  key: " K1
	    "\n", "t.yaml:2:20: client.connect_timeout: ",
	    "50ms out of range (100ms..10m)" },
	{ "client:\n  idle_timeout: 25h\n  server: a.example:1\n  key: " K1
	    "\n", "t.yaml:2:17: client.idle_timeout: ",
	    "25h out of range (1s..24h)" },
	{ "client:\n  idle_timeout: 0\n  server: a.example:1\n  key: " K1 "\n",
	    "t.yaml:2:17: client.idle_timeout: ", "out of range" },
	{ "client:\n  max_udp: 0\n  server: a.example:1\n  key: " K1 "\n",
	    "t.yaml:2:12: client.max_udp: ", "0 out of range (1..1000000)" },
	{ "client:\n  udp_timeout: 500ms\n  server: a.example:1\n  key: " K1
	    "\n", "t.yaml:2:16: client.udp_timeout: ", "out of range" },
	{ "client:\n  dns_timeout: 0\n  server: a.example:1\n  key: " K1
	    "\n", "t.yaml:2:16: client.dns_timeout: ", "out of range" },
	{ "client:\n  dns: resolver.example\n  server: a.example:1\n  key: "
	    K1 "\n", "t.yaml:2:8: client.dns: ",
	    "'resolver.example' is not a numeric address[:port]" },
	{ "client:\n  dns: \"192.0.2.1:0\"\n  server: a.example:1\n  key: "
	    K1 "\n", "t.yaml:2:8: client.dns: ", "is not a numeric" },
	{ "client:\n  dns: \"[2001:db8::1]:x\"\n  server: a.example:1\n  key: "
	    K1 "\n", "t.yaml:2:8: client.dns: ", "is not a numeric" },
	{ "client:\n  server: a.example:1\n  key: " K1 "\n  listen: x\n",
	    "t.yaml:4:3: client.listen: ", "unknown key" },
	{ "client:\n  server: a.example:1\n  server: a.example:2\n"
	    "  key: " K1 "\n", "t.yaml:3:3: client.server: ", "duplicate key" },
	{ "client: []\n", "t.yaml:1:9: client: ",
	    "expected a mapping, found a list" },
	{ "client:\n  pin_sha256: abc\n  server: a.example:1\n  key: " K1
	    "\n", "t.yaml:2:15: client.pin_sha256: ",
	    "'abc' is not a base64 SHA-256 digest" },
	{ "client:\n  pin_sha256: " K1 "=\n  server: a.example:1\n  key: "
	    K1 "\n", "t.yaml:2:15: client.pin_sha256: ", "is not a base64" },
	{ "client:\n  pin_sha256: \"sha256//\"\n  server: a.example:1\n"
	    "  key: " K1 "\n", "t.yaml:2:15: client.pin_sha256: ",
	    "is not a base64" },
	/* 44 characters, but 33 bytes' worth: no padding where one is due. */
	{ "client:\n  pin_sha256: "
	    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8g\n"
	    "  server: a.example:1\n  key: " K1 "\n",
	    "t.yaml:2:15: client.pin_sha256: ", "is not a base64" },
	{ "client:\n  pin_sha256: [" K1 "]\n  server: a.example:1\n  key: "
	    K1 "\n", "t.yaml:2:15: client.pin_sha256: ",
	    "expected a value, found a list" },
};

#define S_HEAD	"server:\n  cert: /c.pem\n  cert_key: /k.pem\n" \
		"  users: [{name: a, key: \"" K1 "\"}]\n"

static const struct bad bad_server[] = {
	{ S_HEAD, "t.yaml:2:3: server.listen: ", "missing required key" },
	{ S_HEAD "  listen: 1.2.3.4\n", "t.yaml:5:11: server.listen: ",
	    "'1.2.3.4' is not a numeric address:port" },
	{ S_HEAD "  listen: vpn.example.org:443\n",
	    "t.yaml:5:11: server.listen: ", "is not a numeric address:port" },
	{ S_HEAD "  listen: 1.2.3.4:0\n", "t.yaml:5:11: server.listen: ",
	    "is not a numeric address:port" },
	{ S_HEAD "  listen: [1.2.3.4:1, \"[::]:2\", 1.2.3.4:1]\n",
	    "t.yaml:5:33: server.listen[2]: ", "duplicate listen address" },
	{ S_HEAD "  listen: [\"1.1.1.1:1\", \"1.1.1.1:2\", \"1.1.1.1:3\", "
	    "\"1.1.1.1:4\", \"1.1.1.1:5\", \"1.1.1.1:6\", \"1.1.1.1:7\", "
	    "\"1.1.1.1:8\", \"1.1.1.1:9\"]\n",
	    "t.yaml:5:11: server.listen: ", "too many entries (max 8)" },
	{ S_HEAD "  listen: []\n", "t.yaml:5:11: server.listen: ",
	    "empty list" },
	{ "server:\n  listen: 0.0.0.0:1\n  cert_key: /k\n  users: [{name: a, "
	    "key: \"" K1 "\"}]\n", "t.yaml:2:3: server.cert: ",
	    "missing required key" },
	{ "server:\n  listen: 0.0.0.0:1\n  cert: /c\n  users: [{name: a, "
	    "key: \"" K1 "\"}]\n", "t.yaml:2:3: server.cert_key: ",
	    "missing required key" },
	{ "server:\n  listen: 0.0.0.0:1\n  cert: [/c]\n  cert_key: /k\n",
	    "t.yaml:3:9: server.cert: ", "expected a value, found a list" },
	{ "server:\n  cert_key: {file: /k}\n",
	    "t.yaml:2:13: server.cert_key: ",
	    "expected a value, found a mapping" },
	{ "server:\n  listen: 0.0.0.0:1\n  cert: /c\n  cert_key: /k\n",
	    "t.yaml:2:3: server.users: ", "missing required key" },
	{ "server:\n  users: []\n", "t.yaml:2:10: server.users: ",
	    "at least one user is required" },
	{ "server:\n  users: alice\n", "t.yaml:2:10: server.users: ",
	    "expected a list of users, found a single value" },
	{ "server:\n  users:\n    - alice\n",
	    "t.yaml:3:7: server.users[0]: ",
	    "expected a mapping, found a single value" },
	{ "server:\n  users:\n    - key: " K1 "\n",
	    "t.yaml:3:7: server.users[0].name: ", "missing required key" },
	{ "server:\n  users:\n    - name: a\n",
	    "t.yaml:3:7: server.users[0].key: ",
	    "missing required key (or key_file)" },
	{ "server:\n  users:\n    - name: a\n      key: " K1 "\n"
	    "      key_file: /k\n",
	    "t.yaml:5:17: server.users[0].key_file: ", "mutually exclusive" },
	{ "server:\n  users:\n    - name: a\n      key_file: /nonexistent/k\n",
	    "t.yaml:4:17: server.users[0].key_file: ",
	    "/nonexistent/k: No such file or directory" },
	{ "server:\n  users:\n    - name: a\n      key: nope\n",
	    "t.yaml:4:12: server.users[0].key: ", "not a valid key" },
	{ "server:\n  users:\n    - name: a\n      key: " K1 "\n"
	    "    - name: a\n      key: " K2 "\n",
	    "t.yaml:5:7: server.users[1].name: ", "duplicate user name 'a'" },
	{ "server:\n  users:\n    - name: a\n      key: " K1 "\n"
	    "    - name: b\n      key: " K1 "\n",
	    "t.yaml:5:7: server.users[1].key: ", "same key as user 'a'" },
	{ "server:\n  users:\n    - name: a\n      key: " K1 "\n"
	    "      uid: 3\n", "t.yaml:5:7: server.users[0].uid: ",
	    "unknown key" },
	{ "server:\n  users:\n    - name: "
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
	    "t.yaml:3:13: server.users[0].name: ", "too long (max 63" },
	{ "server:\n  users:\n    - name: a b\n",
	    "t.yaml:3:13: server.users[0].name: ", "contains characters" },
	{ "server:\n  congestion: \"\"\n", "t.yaml:2:15: server.congestion: ",
	    "empty value" },
	{ "server:\n  mark: -5\n", "t.yaml:2:9: server.mark: ",
	    "is not an integer" },
	{ "server:\n  max_conns: 0\n", "t.yaml:2:14: server.max_conns: ",
	    "0 out of range (1..1000000)" },
	{ "server:\n  connect_timeout: 1d\n",
	    "t.yaml:2:20: server.connect_timeout: ", "is not a duration" },
	{ "server:\n  idle_timeout: 500ms\n",
	    "t.yaml:2:17: server.idle_timeout: ", "out of range (1s..24h)" },
	{ "server:\n  handshake_timeout: 0s\n",
	    "t.yaml:2:22: server.handshake_timeout: ",
	    "out of range (100ms..10m)" },
	{ "server:\n  time_window: 1500ms\n",
	    "t.yaml:2:16: server.time_window: ", "must be whole seconds" },
	{ "server:\n  time_window: 2h\n", "t.yaml:2:16: server.time_window: ",
	    "out of range (1s..1h)" },
	{ "server:\n  egress:\n    allow: [10.0.0.0/8, 10.0.0.0/99]\n",
	    "t.yaml:3:25: server.egress.allow[1]: ",
	    "'10.0.0.0/99' is not an address/prefix" },
	{ "server:\n  egress:\n    deny: example.org\n",
	    "t.yaml:3:11: server.egress.deny: ", "is not an address/prefix" },
	{ "server:\n  egress:\n    deny: {a: 1}\n",
	    "t.yaml:3:11: server.egress.deny: ", "expected a value or a list" },
	{ "server:\n  egress:\n    permit: []\n",
	    "t.yaml:3:5: server.egress.permit: ", "unknown key" },
	{ "server:\n  egress: [10.0.0.0/8]\n", "t.yaml:2:11: server.egress: ",
	    "expected a mapping, found a list" },
	{ "server:\n  sni: x\n", "t.yaml:2:3: server.sni: ", "unknown key" },
	{ "server:\n  fallback: 127.0.0.1\n", "t.yaml:2:13: server.fallback: ",
	    "has no port" },
	{ "server:\n  fallback: \"::1:80\"\n",
	    "t.yaml:2:13: server.fallback: ", "IPv6 address needs brackets" },
	{ "server:\n  fallback: 127.0.0.1:0\n",
	    "t.yaml:2:13: server.fallback: ", "has no valid port" },
	{ "server:\n  fallback: \"bad host:80\"\n",
	    "t.yaml:2:13: server.fallback: ", "is not host:port" },
	{ "server:\n  fallback: [127.0.0.1:80]\n",
	    "t.yaml:2:13: server.fallback: ", "expected a value, found a list" },
	{ "server:\n  fallback_tls: sure\n",
	    "t.yaml:2:17: server.fallback_tls: ", "is not true, false" },
	{ S_HEAD "  listen: 0.0.0.0:1\n  fallback_tls: true\n",
	    "t.yaml:2:3: server.fallback_tls: ", "needs fallback" },
	{ S_HEAD "  listen: 0.0.0.0:1\n  fallback_plain: 127.0.0.1:1\n",
	    "t.yaml:2:3: server.fallback_plain: ", "needs fallback" },
};

static const struct bad bad_top[] = {
	{ "", "t.yaml:1:1: ", "empty configuration" },
	{ "# nothing\n", "t.yaml:1:1: ", "empty configuration" },
	{ "- a\n", "t.yaml:1:1: ", "expected a mapping, found a list" },
	{ "just text\n", "t.yaml:1:1: ", "expected a mapping, found a single" },
	{ "log: {}\n", "t.yaml:1:1: ", "a client: or a server: section is "
	    "required" },
	{ CLIENT SERVER, "t.yaml:4:1: server: ", "client: and server: are "
	    "mutually exclusive" },
	{ SERVER CLIENT, "t.yaml:8:1: client: ", "mutually exclusive" },
	{ CLIENT "colour: red\n", "t.yaml:4:1: colour: ", "unknown key" },
	{ CLIENT "Client: {}\n", "t.yaml:4:1: Client: ", "unknown key" },
	{ CLIENT "log: {}\nlog: {}\n", "t.yaml:5:1: log: ", "duplicate key" },
	{ CLIENT "? [a]\n: b\n", "t.yaml:4:3: ", "keys must be plain names" },
	{ CLIENT "\"log\\0x\": {}\n", "t.yaml:4:1: ",
	    "keys must be plain names" },
	{ CLIENT "---\n" CLIENT, "t.yaml:5:1: ",
	    "only one YAML document is allowed" },
	{ "log: &l\n  level: info\ntun: *l\n" CLIENT, "t.yaml:3:1: tun: ",
	    "aliases are not supported" },
	{ "server:\n  listen: [&a 1.2.3.4:1, *a]\n",
	    "t.yaml:2:11: server.listen[1]: ", "aliases are not supported" },
	{ "log:\n  level: \"in\\0fo\"\n" CLIENT, "t.yaml:2:10: log.level: ",
	    "NUL character in value" },
};

#define LONG100	"0123456789012345678901234567890123456789" \
	"0123456789012345678901234567890123456789" "01234567890123456789"

/* Process keys: control socket, metrics, pid file, privileges, drain,
 * and the client's route: auto. */
static const struct bad bad_daemon[] = {
	{ CLIENT "control: run/c.sock\n", "t.yaml:4:10: control: ",
	    "'run/c.sock' is not an absolute path (or off)" },
	{ CLIENT "control: /" LONG100 "12345678\n", "t.yaml:4:10: control: ",
	    "path too long for a socket (max 107 characters)" },
	{ CLIENT "control: [/a]\n", "t.yaml:4:10: control: ",
	    "expected a value, found a list" },
	{ CLIENT "control:\n", "t.yaml:4:9: control: ",
	    "expected a value, found nothing" },
	{ CLIENT "metrics: 0\n", "t.yaml:4:10: metrics: ",
	    "'0' is not a port (1..65535) or address:port" },
	{ CLIENT "metrics: 70000\n", "t.yaml:4:10: metrics: ",
	    "is not a port" },
	{ CLIENT "metrics: -1\n", "t.yaml:4:10: metrics: ",
	    "is not a port" },
	{ CLIENT "metrics: localhost:9353\n", "t.yaml:4:10: metrics: ",
	    "is not a numeric address:port" },
	{ CLIENT "metrics: \"127.0.0.1:0\"\n", "t.yaml:4:10: metrics: ",
	    "is not a numeric address:port" },
	{ CLIENT "metrics: \"::1:9353\"\n", "t.yaml:4:10: metrics: ",
	    "is not a numeric address:port" },
	{ CLIENT "pidfile: run/t.pid\n", "t.yaml:4:10: pidfile: ",
	    "is not an absolute path" },
	{ CLIENT "pidfile: {a: b}\n", "t.yaml:4:10: pidfile: ",
	    "expected a value, found a mapping" },
	{ CLIENT "user: no-such-user-here\n", "t.yaml:4:7: user: ",
	    "no such user 'no-such-user-here'" },
	{ CLIENT "user: \"a b\"\n", "t.yaml:4:7: user: ",
	    "contains characters" },
	{ CLIENT "user: root\ngroup: no-such-group-here\n",
	    "t.yaml:5:8: group: ", "no such group 'no-such-group-here'" },
	{ CLIENT "group: root\n", "t.yaml:1:1: group: ", "group: needs user:" },
	{ CLIENT "drain_timeout: 2h\n", "t.yaml:4:16: drain_timeout: ",
	    "2h out of range (0s..1h)" },
	{ CLIENT "drain_timeout: soon\n", "t.yaml:4:16: drain_timeout: ",
	    "is not a duration" },
	{ CLIENT "  route: maybe\n", "t.yaml:4:10: client.route: ",
	    "'maybe' is not auto or off" },
	{ CLIENT "  route: auto\n", "t.yaml:2:3: client.route: ",
	    "route: auto needs a mark" },
	{ CLIENT "  mark: 0\n  route: auto\n", "t.yaml:2:3: client.route: ",
	    "needs a mark" },
	{ CLIENT "  route_exclude: [10.0.0.0/33]\n",
	    "t.yaml:4:19: client.route_exclude[0]: ", "is not an address/prefix" },
	{ CLIENT "  route_exclude: {a: b}\n",
	    "t.yaml:4:18: client.route_exclude: ", "expected a value or a list" },
	{ CLIENT "  route_uid_exclude: [1000, 5-3]\n",
	    "t.yaml:4:29: client.route_uid_exclude[1]: ",
	    "'5-3' is not a user id or a range" },
	{ CLIENT "  route_uid_include: 4294967295\n",
	    "t.yaml:4:22: client.route_uid_include: ",
	    "'4294967295' is not a user id" },
	{ CLIENT "  route_uid_include: 1-x\n",
	    "t.yaml:4:22: client.route_uid_include: ", "is not a user id" },
	{ CLIENT "  route_uid_include: 1000\n  route_uid_exclude: 0\n",
	    "t.yaml:5:22: client.route_uid_exclude: ", "do not mix" },
	{ SERVER "  route: auto\n", "t.yaml:8:3: server.route: ",
	    "unknown key" },
	{ CLIENT "  ipv6: tunnel\n", "t.yaml:4:9: client.ipv6: ",
	    "'tunnel' is not block or bypass" },
	{ CLIENT "  fingerprint: chrome\n", "t.yaml:4:16: client.fingerprint: ",
	    "'chrome' is not curl or browser" },
	{ SERVER "  ipv6: bypass\n", "t.yaml:8:3: server.ipv6: ",
	    "unknown key" },
};

/* Syntax errors come from libyaml; we own the position and the prefix. */
static const struct bad bad_syntax[] = {
	{ "client:\n  server: \"a.example:1\n  key: x\n",
	    "t.yaml:4:1: syntax error: ", "found unexpected end of stream "
	    "while scanning a quoted scalar at 2:11" },
	{ "client:\n  server: a.example:1\n key: " K1 "\n",
	    "t.yaml:3:2: syntax error: ", "did not find expected key" },
	{ "client:\n  server: a.example:1\n    key: x\n",
	    "t.yaml:3:8: syntax error: ", "mapping values are not allowed" },
	{ "client:\n\tserver: a.example:1\n", "t.yaml:2:1: syntax error: ",
	    "found character that cannot start any token" },
	{ "client: {server: a.example:1\n", "t.yaml:2:1: syntax error: ",
	    "did not find expected ',' or '}'" },
	{ "log:\n  level: x\xff\n", "t.yaml:2:11: syntax error: ",
	    "invalid" },
	{ "log: *nope\n", "t.yaml:1:6: syntax error: ", "undefined alias" },
	/* The two mistakes libyaml words least helpfully get a hint. */
	{ "client:\n\tserver: a.example:1\n", "t.yaml:2:1: syntax error: ",
	    "(use spaces, not tabs, to indent)" },
	{ CLIENT "\n\tmark: 1\n", "t.yaml:5:1: syntax error: ",
	    "violates indentation while scanning a plain scalar at 3:8 (use "
	    "spaces, not tabs, to indent)" },
	{ "server:\n  listen: [::]:443\n", "t.yaml:2:12: syntax error: ",
	    "(quote IPv6 addresses: \"[::]:443\")" },
	{ "server:\n  listen:\n    - [2001:db8::1]:443\n",
	    "t.yaml:3:20: syntax error: ", "(quote IPv6 addresses" },
	{ "client:\n  server: [fd00::1]:443\n  key: " K1 "\n",
	    "t.yaml:2:20: syntax error: ", "(quote IPv6 addresses" },
	{ "metrics: [::1]:9353\n" CLIENT, "t.yaml:1:11: syntax error: ",
	    "(quote IPv6 addresses" },
};

/* Quoted, or not an address: no IPv6 hint. */
static const struct bad bad_no_hint[] = {
	{ "client:\n  server: \"[::1]:1\"\n  key: [\n",
	    "t.yaml:4:1: syntax error: ", "parsing a flow node at 4:1" },
	{ "client:\n  server: a:1\n  mark: [1,\n",
	    "t.yaml:4:1: syntax error: ", "parsing a flow node at 4:1" },
};

static void
run_bad(const struct bad *v, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		expect_err(v[i].yaml, v[i].where, v[i].msg);
}

#define RUN_BAD(v)	run_bad((v), sizeof(v) / sizeof((v)[0]))

static void test_bad_log(void **s) { (void)s; RUN_BAD(bad_log); }
static void test_bad_tun(void **s) { (void)s; RUN_BAD(bad_tun); }
static void test_bad_client(void **s) { (void)s; RUN_BAD(bad_client); }
static void test_bad_server(void **s) { (void)s; RUN_BAD(bad_server); }
static void test_bad_daemon(void **s) { (void)s; RUN_BAD(bad_daemon); }
static void test_bad_top(void **s) { (void)s; RUN_BAD(bad_top); }
static void
test_bad_syntax(void **state)
{
	size_t	i;

	(void)state;
	RUN_BAD(bad_syntax);
	for (i = 0; i < sizeof(bad_no_hint) / sizeof(bad_no_hint[0]); i++) {
		expect_err(bad_no_hint[i].yaml, bad_no_hint[i].where,
		    bad_no_hint[i].msg);
		assert_null(strchr(errbuf, '('));
	}
}

/* Writes content to a fresh file with the given mode; returns its path. */
static char *
tmpfile_with(const char *content, mode_t mode)
{
	char	*path = strdup("/tmp/test_conf.XXXXXX");
	int	 fd;

	assert_non_null(path);
	assert_true((fd = mkstemp(path)) != -1);
	assert_int_equal(write(fd, content, strlen(content)),
	    (ssize_t)strlen(content));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
	return path;
}

static void
test_key_file(void **state)
{
	char		*kf, *bad, *yaml;
	struct conf	*c;

	(void)state;
	/* Surrounding whitespace and the trailing newline are trimmed. */
	kf = tmpfile_with("  " K2 "\r\n\n", 0600);
	bad = tmpfile_with(K2 "x\n", 0600);
	assert_true(asprintf(&yaml, "client:\n  server: a.example:1\n"
	    "  key_file: %s\n", kf) > 0);
	c = load_ok(yaml);
	assert_int_equal(conf_final(c)->key[0], 0xff);
	assert_int_equal(conf_final(c)->key[31], 0xff);
	conf_free(c);
	free(yaml);

	/* A world-readable key file still loads (with a warning). */
	assert_int_equal(chmod(kf, 0644), 0);
	assert_true(asprintf(&yaml, "server:\n  listen: 0.0.0.0:1\n  cert: /c\n"
	    "  cert_key: /k\n  users:\n    - name: a\n      key_file: %s\n",
	    kf) > 0);
	c = load_ok(yaml);
	assert_int_equal(c->server.users[0].key[0], 0xff);
	conf_free(c);
	free(yaml);

	/* key after key_file conflicts just as the other way round. */
	assert_true(asprintf(&yaml, "client:\n  key_file: %s\n  key: " K1
	    "\n  server: a.example:1\n", kf) > 0);
	expect_err(yaml, "t.yaml:3:8: client.key: ", "key and key_file are "
	    "mutually exclusive");
	free(yaml);

	/* The error names the file, never its content. */
	assert_true(asprintf(&yaml, "client:\n  server: a.example:1\n"
	    "  key_file: %s\n", bad) > 0);
	assert_null(load(yaml));
	assert_string_equal(strstr(errbuf, bad) + strlen(bad),
	    ": not a valid key (base64 of 32 bytes, see tunsplit genkey)");
	assert_int_equal(strncmp(errbuf, "t.yaml:3:13: client.key_file: ", 30),
	    0);
	assert_null(strstr(errbuf, "//////"));
	free(yaml);

	unlink(kf);
	unlink(bad);
	free(kf);
	free(bad);
}

/* Whatever is wrong with a key, the message never quotes it. */
static void
test_key_not_echoed(void **state)
{
	(void)state;
	assert_null(load("client:\n  server: a.example:1\n  key: " K1 "=\n"));
	assert_non_null(strstr(errbuf, "client.key: not a valid key"));
	assert_null(strstr(errbuf, "AAECAwQF"));
	assert_null(load("client:\n  server: a.example:1\n  key: [" K1 "]\n"));
	assert_null(strstr(errbuf, "AAECAwQF"));
}

/* Writes content to dir/name. */
static void
file_in(const char *dir, const char *name, const char *content)
{
	char	 path[256];
	FILE	*fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_non_null(fp = fopen(path, "w"));
	assert_int_equal(fputs(content, fp) >= 0, 1);
	assert_int_equal(fclose(fp), 0);
}

/*
 * Relative file names in a file are taken from the file's directory, not
 * from wherever the daemon runs (it runs in "/" in the background); the
 * file's own path is kept absolute for the reload.
 */
static void
test_relative_paths(void **state)
{
	char		 top[64], dir[96], sub[128], want[256], cwd[4096];
	struct conf	*c;

	(void)state;
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	snprintf(top, sizeof(top), "/tmp/test_conf.XXXXXX");
	assert_non_null(mkdtemp(top));
	snprintf(dir, sizeof(dir), "%s/etc", top);
	snprintf(sub, sizeof(sub), "%s/keys", dir);
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(mkdir(sub, 0700), 0);
	file_in(sub, "a.key", K2 "\n");
	file_in(sub, "b.key", K3 "\n");
	file_in(dir, "s.yaml", "pidfile: run/s.pid\ncontrol: ./s.sock\n"
	    "server:\n  listen: 0.0.0.0:443\n  cert: cert.pem\n"
	    "  cert_key: ./keys//k.pem\n  users:\n    - name: a\n"
	    "      key_file: keys/a.key\n    - name: b\n"
	    "      key_file: ../etc/keys/./b.key\n");
	file_in(dir, "c.yaml", "client:\n  server: a.example:1\n"
	    "  key_file: keys/a.key\n  ca: ca.pem\n");
	/* Loaded from elsewhere, by a relative name. */
	assert_int_equal(chdir(top), 0);
	c = conf_load_file("./etc//s.yaml", errbuf, sizeof(errbuf));
	if (c == NULL)
		fail_msg("%s", errbuf);
	snprintf(want, sizeof(want), "%s/etc/s.yaml", top);
	assert_string_equal(c->path, want);
	snprintf(want, sizeof(want), "%s/etc/cert.pem", top);
	assert_string_equal(c->server.cert_file, want);
	snprintf(want, sizeof(want), "%s/etc/keys/k.pem", top);
	assert_string_equal(c->server.cert_key_file, want);
	snprintf(want, sizeof(want), "%s/etc/run/s.pid", top);
	assert_string_equal(c->pidfile, want);
	snprintf(want, sizeof(want), "%s/etc/s.sock", top);
	assert_string_equal(c->control, want);
	assert_int_equal(c->server.users[0].key[0], 0xff);
	assert_int_equal(c->server.users[1].key[31], 63);
	conf_free(c);
	/* The same from the file's own directory, and from "/". */
	assert_int_equal(chdir(dir), 0);
	c = conf_load_file("c.yaml", errbuf, sizeof(errbuf));
	if (c == NULL)
		fail_msg("%s", errbuf);
	snprintf(want, sizeof(want), "%s/etc/c.yaml", top);
	assert_string_equal(c->path, want);
	snprintf(want, sizeof(want), "%s/etc/ca.pem", top);
	assert_string_equal(conf_final(c)->ca_file, want);
	assert_int_equal(conf_final(c)->key[0], 0xff);
	conf_free(c);
	assert_int_equal(chdir("/"), 0);
	snprintf(want, sizeof(want), "%s/etc/c.yaml", top);
	c = conf_load_file(want, errbuf, sizeof(errbuf));
	if (c == NULL)
		fail_msg("%s", errbuf);
	assert_int_equal(conf_final(c)->key[0], 0xff);
	conf_free(c);
	/* A key file that is not there is named in full. */
	file_in(dir, "c.yaml", "client:\n  server: a.example:1\n"
	    "  key_file: nokey\n");
	assert_null(conf_load_file(want, errbuf, sizeof(errbuf)));
	snprintf(want, sizeof(want), "client.key_file: %s/etc/nokey: No such "
	    "file", top);
	if (strstr(errbuf, want) == NULL)
		fail_msg("%s", errbuf);
	assert_int_equal(chdir(cwd), 0);
	file_in(dir, "c.yaml", "");
	snprintf(want, sizeof(want), "%s/a.key", sub);
	unlink(want);
	snprintf(want, sizeof(want), "%s/b.key", sub);
	unlink(want);
	snprintf(want, sizeof(want), "%s/c.yaml", dir);
	unlink(want);
	snprintf(want, sizeof(want), "%s/s.yaml", dir);
	unlink(want);
	rmdir(sub);
	rmdir(dir);
	rmdir(top);
}

static void
test_load_file(void **state)
{
	char		*path;
	struct conf	*c;

	(void)state;
	path = tmpfile_with("log: {level: error}\n" CLIENT, 0600);
	c = conf_load_file(path, errbuf, sizeof(errbuf));
	if (c == NULL)
		fail_msg("%s", errbuf);
	assert_int_equal(c->log_level, LOG_LVL_ERROR);
	/* The path is kept for reloads. */
	assert_non_null(c->path);
	assert_string_equal(c->path, path);
	conf_free(c);
	unlink(path);

	/* Errors carry the file's own name. */
	c = conf_load_file(path, errbuf, sizeof(errbuf));
	assert_null(c);
	assert_non_null(strstr(errbuf, "No such file or directory"));
	assert_int_equal(strncmp(errbuf, path, strlen(path)), 0);
	free(path);

	path = tmpfile_with("log: {level: x}\n" CLIENT, 0600);
	assert_null(conf_load_file(path, errbuf, sizeof(errbuf)));
	assert_int_equal(strncmp(errbuf, path, strlen(path)), 0);
	assert_string_equal(errbuf + strlen(path),
	    ":1:14: log.level: 'x' is not error, warn, info or debug");
	unlink(path);
	free(path);

	assert_null(conf_load_file("/", errbuf, sizeof(errbuf)));
	assert_string_equal(errbuf, "/: not a regular file");
	/* A short error buffer truncates, a NULL one is allowed. */
	assert_null(conf_load_buf("t", "x: 1\n", 5, errbuf, 4));
	assert_string_equal(errbuf, "t:1");
	assert_null(conf_load_buf("t", "x: 1\n", 5, NULL, 0));
	conf_free(NULL);
}

static void
test_duration(void **state)
{
	static const struct {
		const char	*s;
		long long	 ms;
	} v[] = {
		{ "250ms", 250 }, { "30s", 30000 }, { "5m", 300000 },
		{ "1h", 3600000 }, { "10", 10000 }, { "0", 0 }, { "0ms", 0 },
		{ "007s", 7000 },
		{ "9223372036854775807ms", 9223372036854775807LL },
		{ "9223372036854775ms", 9223372036854775LL },
		{ "", -1 }, { "s", -1 }, { "ms", -1 }, { "-1", -1 },
		{ "+1s", -1 }, { "1.5s", -1 }, { "10 s", -1 }, { " 10", -1 },
		{ "10 ", -1 }, { "10S", -1 }, { "1d", -1 }, { "1sm", -1 },
		{ "1m30s", -1 }, { "0x10", -1 },
		{ "9223372036854775808ms", -1 }, { "9223372036854775807s", -1 },
		{ "99999999999999999999999", -1 }, { "2562047788015216h", -1 },
	};
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (conf_parse_duration_ms(v[i].s) != v[i].ms)
			fail_msg("\"%s\": got %lld, want %lld", v[i].s,
			    conf_parse_duration_ms(v[i].s), v[i].ms);
	assert_int_equal(conf_parse_duration_ms(NULL), -1);
}

/*
 * Not inlined: once inlined, gcc 12 for aarch64 and mipsel takes the
 * stream's hold on &s for a dangling pointer at every later use of the
 * dump (-Wdangling-pointer, a false positive).
 */
__attribute__((noinline)) static char *
dump(const struct conf *c)
{
	char	*s = NULL;
	size_t	 n = 0;
	FILE	*fp = open_memstream(&s, &n);

	assert_non_null(fp);
	conf_dump(c, fp);
	fclose(fp);
	return s;
}

__attribute__((noinline)) static char *
dump_secrets(const struct conf *c)
{
	char	*s = NULL;
	size_t	 n = 0;
	FILE	*fp = open_memstream(&s, &n);

	assert_non_null(fp);
	conf_dump_secrets(c, fp);
	fclose(fp);
	return s;
}

/*
 * conf_dump shows no secret; conf_dump_secrets reads back as the same
 * configuration (dump -> load -> dump equal, keys equal), and a plain
 * dump reads back too unless it had to redact something, which the
 * loader then says.
 */
static void
roundtrip(const char *yaml)
{
	struct conf	*a, *b;
	char		*d1, *d2, *s1, *s2;

	if ((a = load(yaml)) == NULL)
		fail_msg("%s", errbuf);
	d1 = dump(a);
	assert_null(strstr(d1, K1));
	assert_null(strstr(d1, K2));
	assert_null(strstr(d1, "s3cret"));
	s1 = dump_secrets(a);
	if ((b = load(s1)) == NULL)
		fail_msg("%s\n--\n%s", errbuf, s1);
	s2 = dump_secrets(b);
	assert_string_equal(s1, s2);
	d2 = dump(b);
	assert_string_equal(d1, d2);
	if (b->role == CONF_ROLE_CLIENT) {
		assert_memory_equal(conf_final(a)->key, conf_final(b)->key, CONF_KEY_LEN);
		assert_string_equal(conf_final(a)->trojan_hex, conf_final(b)->trojan_hex);
		assert_string_equal(conf_final(a)->password, conf_final(b)->password);
	} else {
		size_t	i;

		assert_int_equal(a->server.nusers, b->server.nusers);
		for (i = 0; i < a->server.nusers; i++)
			assert_memory_equal(a->server.users[i].key,
			    b->server.users[i].key, CONF_KEY_LEN);
		assert_int_equal(a->server.ntrojan, b->server.ntrojan);
		if (a->server.ntrojan > 0)
			assert_memory_equal(a->server.trojan_hex,
			    b->server.trojan_hex, a->server.ntrojan *
			    sizeof(*a->server.trojan_hex));
	}
	conf_free(b);
	b = load(d1);
	if (strstr(d1, CONF_REDACTED) != NULL) {
		assert_null(b);
		assert_non_null(strstr(errbuf, "redacted by tunsplit check: "
		    "`tunsplit check --secrets` prints it"));
	} else if (b == NULL)
		fail_msg("%s\n--\n%s", errbuf, d1);
	conf_free(a);
	conf_free(b);
	free(d1);
	free(d2);
	free(s1);
	free(s2);
}

/* The range of max_buffer_memory: 1024G, or what a 32-bit size_t holds. */
#if SIZE_MAX > 0xffffffffu
#define SIZE_RANGE	"1M..1024G"
#else
#define SIZE_RANGE	"1M..3G"
#endif

/* Resource limits: values, defaults, sizes, errors, the dump. */
static void
test_limits(void **state)
{
	static const struct {
		const char	*yaml, *where, *msg;
	} bad[] = {
		{ SERVER "  max_buffer_memory: 64m\n", "t.yaml:8:22: "
		    "server.max_buffer_memory: ", "'64m' is not a size" },
		{ SERVER "  max_buffer_memory: 512K\n", "t.yaml:8:22: "
		    "server.max_buffer_memory: ", "out of range (0 for no limit, "
		    "or " SIZE_RANGE ")" },
		{ SERVER "  max_buffer_memory: 2048G\n", "t.yaml:8:22: ",
		    "out of range" },
		{ SERVER "  max_buffer_memory: -1\n", "t.yaml:8:22: ",
		    "not a size" },
		{ SERVER "  max_buffer_memory: 99999999999999999999999\n",
		    "t.yaml:8:22: ", "not a size" },
		{ CLIENT "  max_buffer_memory: 1.5M\n", "t.yaml:4:22: "
		    "client.max_buffer_memory: ", "not a size" },
		{ SERVER "  max_conns_per_source: 1000001\n", "t.yaml:8:25: "
		    "server.max_conns_per_source: ", "out of range" },
		{ SERVER "  max_udp: 0\n", "t.yaml:8:12: server.max_udp: ",
		    "out of range (1..1000000)" },
		{ "server:\n  listen: 0.0.0.0:443\n  cert: /c\n  cert_key: /k\n"
		    "  users:\n    - {name: a, key: \"" K1 "\", max_conns: 0}\n",
		    "t.yaml:6:81: server.users[0].max_conns: ", "out of range" },
		{ "server:\n  listen: 0.0.0.0:443\n  cert: /c\n  cert_key: /k\n"
		    "  users:\n    - {name: a, key: \"" K1 "\", max_tcp: 3}\n",
		    "t.yaml:6:70: server.users[0].max_tcp: ", "unknown key" },
		{ CLIENT "  max_conns_per_source: 5\n", "t.yaml:4:3: ",
		    "unknown key" },
	};
	struct conf	*c;
	size_t		 i;

	(void)state;
	/* Defaults. */
	assert_non_null(c = load(SERVER));
	assert_int_equal(c->server.max_conns_per_source, 4096);
	assert_int_equal(c->server.max_conns_per_user, 0);
	assert_int_equal(c->server.max_udp, 4096);
	assert_int_equal(c->server.max_udp_per_user, 0);
	assert_int_equal(c->server.max_buffer_memory, 256u << 20);
	assert_int_equal(c->server.users[0].max_conns, 0);
	assert_int_equal(c->server.users[0].max_udp, 0);
	conf_free(c);
	assert_non_null(c = load(CLIENT));
	assert_int_equal(c->client.max_buffer_memory, 64u << 20);
	conf_free(c);
	/* Values. */
	c = load_ok("server:\n  listen: 0.0.0.0:443\n  cert: /c\n"
	    "  cert_key: /k\n  users:\n"
	    "    - {name: a, key: \"" K1 "\", max_conns: 5, max_udp: 2}\n"
	    "    - {name: b, key: \"" K2 "\"}\n"
	    "  max_conns_per_source: 0\n  max_conns_per_user: 50\n"
	    "  max_udp: 7\n  max_udp_per_user: 3\n"
	    "  max_buffer_memory: 1G\n");
	assert_int_equal(c->server.users[0].max_conns, 5);
	assert_int_equal(c->server.users[0].max_udp, 2);
	assert_int_equal(c->server.users[1].max_conns, 0);
	assert_int_equal(c->server.max_conns_per_source, 0);
	assert_int_equal(c->server.max_conns_per_user, 50);
	assert_int_equal(c->server.max_udp, 7);
	assert_int_equal(c->server.max_udp_per_user, 3);
	assert_int_equal(c->server.max_buffer_memory, 1u << 30);
	conf_free(c);
	assert_non_null(c = load(CLIENT "  max_buffer_memory: 0\n"));
	assert_int_equal(c->client.max_buffer_memory, 0);
	conf_free(c);
	assert_non_null(c = load(CLIENT "  max_buffer_memory: 1048576\n"));
	assert_int_equal(c->client.max_buffer_memory, 1u << 20);
	conf_free(c);
	assert_non_null(c = load(CLIENT "  max_buffer_memory: 3MiB\n"));
	assert_int_equal(c->client.max_buffer_memory, 3u << 20);
	conf_free(c);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_err(bad[i].yaml, bad[i].where, bad[i].msg);
	/* The dump reads back the same. */
	roundtrip(CLIENT "  max_buffer_memory: 1536K\n");
	roundtrip(CLIENT "  max_buffer_memory: 0\n");
	roundtrip("server:\n  listen: 0.0.0.0:443\n  cert: /c\n"
	    "  cert_key: /k\n  users:\n"
	    "    - {name: a, key: \"" K1 "\", max_conns: 5, max_udp: 2}\n"
	    "    - {name: b, key: \"" K2 "\"}\n"
	    "  max_conns_per_source: 9\n  max_conns_per_user: 8\n"
	    "  max_udp: 7\n  max_udp_per_user: 6\n"
	    "  max_buffer_memory: 1048577\n");
}

static void
test_dump(void **state)
{

	(void)state;
	roundtrip(CLIENT);
	roundtrip("log: {level: debug, syslog: true, flows: true}\n"
	    "tun: {name: \"t-1\", mtu: 1280, address: fd00::1/64}\n"
	    "client:\n  server: \"[::1]:1\"\n  ca: \"/a \\\"b\\\"\\\\c\"\n"
	    "  insecure: yes\n  key: " K1 "\n  connect_timeout: 1500ms\n"
	    "  idle_timeout: 90s\n  mark: 0xffffffff\n");
	roundtrip("client:\n  server: a.example:1\n  key: " K1 "\n"
	    "  pin_sha256: " K3 "\n");
	roundtrip(CLIENT "  max_udp: 7\n  udp_timeout: 5m\n"
	    "  dns_timeout: 2500ms\n  dns: \"[fd00::53]:53\"\n");
	roundtrip(SERVER);
	roundtrip("server:\n  listen: [\"[::1]:5\", 127.0.0.1:6]\n"
	    "  cert: /c\n  cert_key: /k\n  users:\n"
	    "    - {name: a, key: \"" K1 "\"}\n"
	    "    - {name: b@c, key: \"" K2 "\"}\n"
	    "    - {name: d, key: \"" K3 "\"}\n"
	    "  time_window: 1h\n"
	    "  egress: {allow: [10.0.0.0/8, \"::1\"], deny: [1.2.3.4/32]}\n");
	/* Protocols and their credentials; trojan's as the SHA-224. */
	roundtrip("client:\n  server: a.example:1\n  protocol: trojan\n"
	    "  password: s3cret\n");
	roundtrip("client:\n  server: a.example:1\n  protocol: trojan\n"
	    "  password: s3cret\n  key: " K2 "\n");
	roundtrip("client:\n  server: a.example:1\n  protocol: socks5\n"
	    "  username: u\n  password: s3cret\n");
	roundtrip("client:\n  server: a.example:1\n  protocol: socks5\n");
	roundtrip("client:\n  protocol: direct\n  mark: 0x10\n");
	roundtrip(SERVER "  trojan_passwords:\n    - s3cret\n"
	    "    - {password: other, max_conns: 3, egress_allow: [10.0.0.0/8]}"
	    "\n    - sha224: " TROJAN_HEX "\n      max_udp: 2\n");
	/* Process keys: a group given, or the user's own. */
	roundtrip("user: root\ngroup: root\nlog: {syslog: false}\n" CLIENT);
	roundtrip("user: root\n" CLIENT);
	roundtrip(SERVER "  fallback: \"[fd00::80]:8080\"\n");
	roundtrip(SERVER "  fallback: cover.example:443\n"
	    "  fallback_tls: true\n");
}

/*
 * What check prints: every key (protocol and group too), nothing secret,
 * a key_file as itself, so that such a dump loads back as it is; the
 * secrets only with --secrets.
 */
/* client.outbounds: the list form, the single form as "default", final,
 * and the errors, each at its position. */
#define OBS	"client:\n  mark: 0x7353\n  outbounds:\n" \
		"    - name: tunnel\n      server: vpn.example.org:443\n" \
		"      key: " K1 "\n      pool: 0\n      congestion: cubic\n" \
		"    - name: home\n      protocol: direct\n" \
		"      connect_timeout: 3s\n" \
		"    - name: ads\n      protocol: block\n"

static void
test_outbounds(void **state)
{
	struct conf	*c, *b;
	char		*d, *d2;

	(void)state;
	/* The single form is one outbound, "default", and the final. */
	c = load_ok(CLIENT);
	assert_int_equal(c->client.noutbounds, 1);
	assert_string_equal(conf_final(c)->name, "default");
	assert_int_equal(conf_outbound_index(c, "default"), 0);
	assert_int_equal(conf_outbound_index(c, "nope"), -1);
	assert_string_equal(conf_final(c)->server_host, "vpn.example.org");
	assert_string_equal(conf_final(c)->sni, "vpn.example.org");
	assert_string_equal(conf_final(c)->congestion, "bbr");
	assert_int_equal(conf_final(c)->connect_timeout_ms, 10000);
	assert_int_equal(conf_final(c)->pool, 8);
	assert_int_equal(conf_final(c)->pool_min, 1);
	assert_int_equal(conf_final(c)->pool_idle_ms, 60000);
	/* Its dump is the list form, and loads back as the same. */
	d = dump_secrets(c);
	b = load_ok(d);
	d2 = dump_secrets(b);
	assert_string_equal(d, d2);
	assert_int_equal(b->client.noutbounds, 1);
	free(d);
	free(d2);
	conf_free(b);
	conf_free(c);

	/* The list: in order, defaults from the client, final the first
	 * (no "default" listed) unless named. */
	c = load_ok(OBS);
	assert_int_equal(c->client.noutbounds, 3);
	assert_int_equal(c->client.final, 0);
	assert_int_equal(conf_outbound_index(c, "home"), 1);
	assert_int_equal(conf_outbound_index(c, "ads"), 2);
	assert_int_equal(c->client.outbounds[0].protocol, CONF_PROTO_TUNSPLIT);
	assert_int_equal(c->client.outbounds[0].pool, 0);
	assert_string_equal(c->client.outbounds[0].congestion, "cubic");
	assert_int_equal(c->client.outbounds[0].connect_timeout_ms, 10000);
	assert_int_equal(c->client.outbounds[1].protocol, CONF_PROTO_DIRECT);
	assert_null(c->client.outbounds[1].server_host);
	assert_string_equal(c->client.outbounds[1].congestion, "bbr");
	assert_int_equal(c->client.outbounds[1].connect_timeout_ms, 3000);
	assert_int_equal(c->client.outbounds[2].protocol, CONF_PROTO_BLOCK);
	d = dump_secrets(c);
	assert_non_null(strstr(d, "    - name: \"home\"\n      protocol: direct\n"));
	assert_non_null(strstr(d, "  final: \"tunnel\"\n"));
	b = load_ok(d);
	d2 = dump_secrets(b);
	assert_string_equal(d, d2);
	free(d);
	free(d2);
	conf_free(b);
	conf_free(c);
	c = load_ok(OBS "  final: home\n");
	assert_string_equal(conf_final(c)->name, "home");
	conf_free(c);
	c = load_ok("client:\n  outbounds:\n    - name: x\n"
	    "      protocol: block\n    - name: default\n"
	    "      protocol: block\n");
	assert_string_equal(conf_final(c)->name, "default");
	conf_free(c);
	/* final works with the single form too. */
	c = load_ok(CLIENT "  final: default\n");
	assert_int_equal(c->client.final, 0);
	conf_free(c);

	/* Errors, at the key or value that is wrong. */
	expect_err(OBS "  final: nope\n", "t.yaml:14:10: client.final: ",
	    "'nope': no outbound of that name");
	expect_err(CLIENT "  final: home\n", "t.yaml:4:10: client.final: ",
	    "'home': no outbound of that name");
	expect_err(OBS "  protocol: direct\n", "t.yaml:14:3: client.protocol: ",
	    "cannot be mixed with client.outbounds");
	expect_err(CLIENT "  outbounds:\n    - name: a\n      protocol: block\n",
	    "t.yaml:4:3: client.outbounds: ",
	    "cannot be mixed with the single form (client.server)");
	expect_err("client:\n  outbounds:\n    - name: a\n      protocol: block\n"
	    "    - name: a\n      protocol: block\n",
	    "t.yaml:5:13: client.outbounds[1].name: ",
	    "'a': an outbound of that name is listed already");
	expect_err("client:\n  outbounds:\n    - name: Tunnel\n",
	    "t.yaml:3:13: client.outbounds[0].name: ",
	    "'Tunnel' is not a name of 1..32 characters");
	expect_err("client:\n  outbounds:\n    - name: "
	    "a23456789012345678901234567890123\n",
	    "t.yaml:3:13: client.outbounds[0].name: ", "is not a name");
	expect_err("client:\n  outbounds:\n    - protocol: block\n",
	    "t.yaml:3:7: client.outbounds[0].name: ", "missing required key");
	expect_err("client:\n  outbounds:\n    - name: a\n",
	    "t.yaml:3:7: client.outbounds[0].server: ", "missing required key");
	expect_err("client:\n  outbounds:\n    - name: a\n      server: a.b:1\n",
	    "t.yaml:3:7: client.outbounds[0].key: ",
	    "missing required key (or key_file)");
	expect_err("client:\n  outbounds:\n    - name: a\n      protocol: direct\n",
	    "t.yaml:2:3: client.mark: ", "protocol: direct needs a mark");
	expect_err("client:\n  outbounds:\n    - name: a\n      protocol: block\n"
	    "      server: a.b:1\n",
	    "t.yaml:3:7: client.outbounds[0].server: ",
	    "not used with protocol: block");
	expect_err("client:\n  outbounds:\n    - name: a\n      protocol: block\n"
	    "      mark: 1\n", "t.yaml:5:7: client.outbounds[0].mark: ",
	    "unknown key");
	expect_err("client:\n  outbounds: []\n", "t.yaml:2:14: client.outbounds: ",
	    "empty list");
	expect_err("client:\n  outbounds: x\n", "t.yaml:2:14: client.outbounds: ",
	    "expected a list of outbounds");
	expect_err("client:\n  connect_mode: faithful\n  outbounds:\n"
	    "    - name: t\n      protocol: trojan\n      server: a.b:1\n"
	    "      password: x\n", "t.yaml:2:3: client.connect_mode: ",
	    "faithful needs the connect status");
}

static void
test_dump_complete(void **state)
{
	struct conf	*c, *b;
	char		*kf, *yaml, *d, *d2;

	(void)state;
	c = load_ok("user: root\n" CLIENT);
	d = dump(c);
	assert_non_null(strstr(d, "\nuser: \"root\"\ngroup: \"root\"\n"));
	assert_non_null(strstr(d, "  outbounds:\n    - name: \"default\"\n"
	    "      protocol: tunsplit\n"));
	assert_non_null(strstr(d, "      key: (redacted)\n"));
	assert_non_null(strstr(d, "  final: \"default\"\n"));
	assert_non_null(strstr(d, "  # syslog: not set"));
	assert_non_null(strstr(d, "  flows: false\n"));
	free(d);
	d = dump_secrets(c);
	assert_non_null(strstr(d, "  key: \"" K1 "\"\n"));
	free(d);
	conf_free(c);
	c = load_ok("client:\n  server: a.example:1\n  protocol: trojan\n"
	    "  password: s3cret\n");
	d = dump_secrets(c);
	assert_non_null(strstr(d, "  password_sha224: \"" TROJAN_S3CRET "\"\n"));
	assert_null(strstr(d, "key"));
	free(d);
	conf_free(c);

	/* key_file: shown as itself; that dump loads as it is. */
	kf = tmpfile_with(K2 "\n", 0600);
	assert_true(asprintf(&yaml, "server:\n  listen: 0.0.0.0:1\n"
	    "  cert: /c\n  cert_key: /k\n  users:\n    - name: a\n"
	    "      key_file: %s\n    - name: b\n      key: " K1 "\n", kf) > 0);
	c = load_ok(yaml);
	d = dump(c);
	assert_non_null(strstr(d, "      key_file: \""));
	assert_non_null(strstr(d, kf));
	assert_null(strstr(d, K2));
	free(d);
	free(yaml);
	conf_free(c);
	assert_true(asprintf(&yaml, "client:\n  server: a.example:1\n"
	    "  key_file: %s\n", kf) > 0);
	c = load_ok(yaml);
	d = dump(c);
	assert_null(strstr(d, CONF_REDACTED));
	b = load_ok(d);
	d2 = dump(b);
	assert_string_equal(d, d2);
	assert_memory_equal(conf_final(c)->key, conf_final(b)->key, CONF_KEY_LEN);
	free(d);
	free(d2);
	free(yaml);
	conf_free(b);
	conf_free(c);
	unlink(kf);
	free(kf);

	/* The hashed forms: what they accept. */
	expect_err("client:\n  server: a.example:1\n  protocol: trojan\n"
	    "  password_sha224: abc\n", "t.yaml:4:20: client.password_sha224: ",
	    "not a SHA-224 (56 hex digits)");
	expect_err("client:\n  server: a.example:1\n  protocol: trojan\n"
	    "  password: x\n  password_sha224: " TROJAN_HEX "\n",
	    "t.yaml:5:20: client.password_sha224: ", "mutually exclusive");
	expect_err(CLIENT "  password_sha224: " TROJAN_HEX "\n",
	    "t.yaml:2:3: client.password_sha224: ", "needs protocol: trojan");
	expect_err(SERVER "  trojan_passwords:\n    - {sha224: " TROJAN_HEX
	    ", password: x}\n", "t.yaml:9:84: server.trojan_passwords[0]."
	    "password: ", "mutually exclusive");
	expect_err(SERVER "  trojan_passwords:\n    - sha224: " TROJAN_S3CRET
	    "\n    - s3cret\n", "t.yaml:10:7: server.trojan_passwords[1]: ",
	    "duplicate password");
	expect_err(SERVER "  trojan_passwords:\n    - sha224: (redacted)\n",
	    "t.yaml:9:15: server.trojan_passwords[0].sha224: ",
	    "redacted by tunsplit check");
	expect_err("client:\n  server: a.example:1\n  key: (redacted)\n",
	    "t.yaml:3:8: client.key: ", "redacted by tunsplit check");
}

/* The process keys, their defaults and the dump that reads back. */
static void
test_daemon_values(void **state)
{
	struct conf	*c;
	char		 buf[ADDR_STRLEN], *d;

	(void)state;
	c = load_ok(CLIENT);
	assert_string_equal(c->control, "/run/tunsplit/tunsplit.sock");
	assert_false(c->has_metrics);
	assert_null(c->pidfile);
	assert_string_equal(c->user, "");
	assert_int_equal(c->drain_timeout_ms, 5000);
	assert_false(c->client.route_auto);
	assert_false(c->client.ipv6_bypass);
	assert_false(conf_final(c)->fp_browser);
	assert_false(c->log_syslog_set);
	d = dump(c);
	assert_non_null(strstr(d, "  ipv6: block\n"));
	assert_non_null(strstr(d, "  fingerprint: curl\n"));
	free(d);
	conf_free(c);

	c = load_ok("log: {syslog: false}\ncontrol: /tmp/x/c.sock\n"
	    "metrics: 9353\npidfile: /run/t.pid\nuser: root\ngroup: root\n"
	    "drain_timeout: 0\n" CLIENT "  mark: 0x7353\n  route: auto\n"
	    "  route_exclude: [192.0.2.0/24, \"2001:db8::/32\"]\n"
	    "  route_uid_include: [1000-1999, 0]\n"
	    "  ipv6: bypass\n  fingerprint: browser\n");
	assert_true(conf_final(c)->fp_browser);
	assert_true(c->client.route_uids_include);
	assert_int_equal(c->client.nroute_uids, 2);
	assert_int_equal(c->client.route_uids[0].lo, 1000);
	assert_int_equal(c->client.route_uids[0].hi, 1999);
	assert_int_equal(c->client.route_uids[1].lo, 0);
	assert_int_equal(c->client.route_uids[1].hi, 0);
	assert_true(c->log_syslog_set);
	assert_true(c->client.ipv6_bypass);
	assert_string_equal(c->control, "/tmp/x/c.sock");
	assert_true(c->has_metrics);
	assert_string_equal(addr_fmt(&c->metrics, buf, sizeof(buf)),
	    "127.0.0.1:9353");
	assert_string_equal(c->pidfile, "/run/t.pid");
	assert_string_equal(c->user, "root");
	assert_string_equal(c->group, "root");
	assert_int_equal(c->drain_timeout_ms, 0);
	assert_true(c->client.route_auto);
	assert_int_equal(c->client.nroute_exclude, 2);
	d = dump(c);
	assert_non_null(strstr(d, "control: \"/tmp/x/c.sock\"\n"));
	assert_non_null(strstr(d, "metrics: \"127.0.0.1:9353\"\n"));
	assert_non_null(strstr(d, "drain_timeout: 0s\n"));
	assert_non_null(strstr(d, "  fingerprint: browser\n"));
	assert_non_null(strstr(d, "  route: auto\n  route_exclude:\n"
	    "    - 192.0.2.0/24\n    - 2001:db8::/32\n"
	    "  route_uid_include:\n    - \"1000-1999\"\n    - \"0-0\"\n"
	    "  ipv6: bypass\n"));
	free(d);
	conf_free(c);

	c = load_ok("control: off\nmetrics: \"[::1]:9\"\n" CLIENT);
	assert_string_equal(c->control, "");
	assert_string_equal(addr_fmt(&c->metrics, buf, sizeof(buf)), "[::1]:9");
	d = dump(c);
	assert_non_null(strstr(d, "control: off\n"));
	free(d);
	conf_free(c);
}

/* Everything under examples/ must stay loadable. */
static void
test_examples(void **state)
{
	glob_t		 g;
	struct conf	*c;
	size_t		 i;

	(void)state;
	assert_int_equal(glob(TEST_SRCDIR "/../examples/*.yaml", 0, NULL, &g),
	    0);
	assert_int_equal(glob(TEST_SRCDIR "/../examples/openwrt/*/files/*.yaml",
	    GLOB_APPEND, NULL, &g), 0);
	assert_true(g.gl_pathc >= 3);
	for (i = 0; i < g.gl_pathc; i++) {
		if ((c = conf_load_file(g.gl_pathv[i], errbuf,
		    sizeof(errbuf))) == NULL)
			fail_msg("%s", errbuf);
		conf_free(c);
	}
	globfree(&g);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_client_values),
		cmocka_unit_test(test_client_defaults),
		cmocka_unit_test(test_server_values),
		cmocka_unit_test(test_server_defaults),
		cmocka_unit_test(test_bad_log),
		cmocka_unit_test(test_bad_tun),
		cmocka_unit_test(test_bad_client),
		cmocka_unit_test(test_bad_server),
		cmocka_unit_test(test_bad_daemon),
		cmocka_unit_test(test_daemon_values),
		cmocka_unit_test(test_bad_top),
		cmocka_unit_test(test_bad_syntax),
		cmocka_unit_test(test_key_file),
		cmocka_unit_test(test_key_not_echoed),
		cmocka_unit_test(test_load_file),
		cmocka_unit_test(test_relative_paths),
		cmocka_unit_test(test_duration),
		cmocka_unit_test(test_dump),
		cmocka_unit_test(test_outbounds),
		cmocka_unit_test(test_dump_complete),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_client_sniff),
		cmocka_unit_test(test_examples),
	};

	log_init(LOG_LVL_ERROR, false, "test_conf");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
