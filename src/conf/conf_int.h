/*
 * Inside the configuration loader: the walk over the composed YAML
 * document (conf_walk.c) and the key tables that drive it (conf.c for the
 * top level, conf_client.c, conf_server.c).  Not for other modules.
 *
 * A mapping is walked by one key table: a key names its handler, its
 * field (an offset into the base the walker got) and its range, and the
 * walker alone deals with unknown keys, duplicates and error positions.
 * Handlers report through conf_err() and return -1; only the first error
 * is kept.
 */
#ifndef TUNSPLIT_CONF_INT_H
#define TUNSPLIT_CONF_INT_H

#include <yaml.h>

#include "conf/conf.h"
#include "core/log.h"

/* Ranges shared by the key tables. */
#define CONF_MS_MAX	(24LL * 3600 * 1000)
#define CONF_SIZE_MIN	(1LL << 20)		/* max_buffer_memory */
#define CONF_SIZE_MAX	(1024LL << 30)

struct ctx {
	const char		*name;
	const char		*dir;		/* of the file; NULL: a buffer */
	yaml_document_t		*doc;
	struct conf		*c;
	char			*err;
	size_t			 errlen;
	bool			 failed;
	uint8_t			*visited;	/* per node index: aliases */
	size_t			 nnodes;
	char			 path[256];	/* "server.users[1].key" */
	const struct conf_map	*map;		/* mapping being walked */
	uint64_t		 seen;		/* its keys seen so far (<= 64) */
	yaml_node_t		*knode;		/* key of the value handled */
	yaml_node_t		*tun_knode;
	yaml_node_t		*dns_knode;	/* client.dns */
	yaml_node_t		*dns_range4, *dns_range6;
	yaml_node_t		*final_node;	/* client.final's value */
	yaml_node_t		*members[CONF_MAX_OUTBOUNDS]; /* groups' */
	bool			 inline_key;
	yaml_node_t		*rules_node;	/* client.rules, parsed last */
	yaml_node_t		*rule_sets_node;
	yaml_node_t		*geoip_node;	/* client.geoip_database */
	char			 vis[64];
};

struct conf_key;
typedef int (*conf_key_fn)(struct ctx *, yaml_node_t *,
    const struct conf_key *, void *);

/* One key of a mapping; off is relative to the base the walker got. */
struct conf_key {
	const char		*name;
	conf_key_fn		 fn;
	size_t			 off;
	long long		 min, max;	/* range, or buffer size */
	const struct conf_map	*sub;
};

struct conf_map {
	const struct conf_key	*keys;
	int			(*check)(struct ctx *, yaml_node_t *, void *);
};

/* One of the words a key takes, and what it stands for. */
struct conf_word {
	const char	*word;
	int		 value;
};

#define CONF_FIELD(base, k, type) \
	((type *)(void *)((char *)(base) + (k)->off))
#define C(f)	offsetof(struct conf, f)	/* off in the tables */

/* The sections, each in its own file. */
extern const struct conf_map conf_map_client;
extern const struct conf_map conf_map_server;

/* ---- conf_walk.c: errors, paths, nodes, the walk ---------------------- */

int conf_err(struct ctx *, const yaml_node_t *, const char *, ...)
    LOG_PRINTF(3, 4);
/* Printable, bounded copy of user text for messages (never of secrets). */
const char *conf_vis(struct ctx *, const char *);
size_t conf_path_push(struct ctx *, const char *key);
void conf_path_pop(struct ctx *, size_t old);

yaml_node_t *conf_node_get(struct ctx *, int idx, const yaml_node_t *where);
const char *conf_node_kind(const yaml_node_t *);
/* The scalar's text, or NULL once the reason is reported. */
const char *conf_scalar(struct ctx *, yaml_node_t *);
size_t conf_list_count(const yaml_node_t *);

typedef int (*conf_item_fn)(struct ctx *, yaml_node_t *, size_t, void *);
/* A single value or a list of between min and max values. */
int conf_list_walk(struct ctx *, yaml_node_t *, size_t min, size_t max,
    conf_item_fn, void *);
int conf_map_walk(struct ctx *, yaml_node_t *, const struct conf_map *,
    void *base);
/* Whether key name was seen in the mapping being walked. */
bool conf_seen(const struct ctx *, const char *name);
int conf_require(struct ctx *, yaml_node_t *map, const char *name);

/* ---- conf_walk.c: values ------------------------------------------------ */

int conf_parse_u64(const char *, unsigned long long *);
const char *conf_duration_fmt(long long ms, char *out, size_t outlen);
bool conf_host_valid(const char *);
/* The value of the word n holds, one of words (NULL-terminated). */
int conf_choice(struct ctx *, yaml_node_t *, const struct conf_word *words,
    int *value);
/* A bool field (k->off) set by one of words. */
int conf_flag(struct ctx *, yaml_node_t *, const struct conf_key *,
    void *base, const struct conf_word *words);
int conf_number(struct ctx *, yaml_node_t *, const struct conf_key *,
    unsigned long long *);
/* "host:port" or "[v6]:port"; *host is allocated. */
int conf_hostport(struct ctx *, yaml_node_t *, char **host, uint16_t *port);
/* A list of address/prefix, *v allocated. */
int conf_cidrs(struct ctx *, yaml_node_t *, struct cidr **v, size_t *nv);
int conf_check_key(struct ctx *, yaml_node_t *map);

/* ---- conf_walk.c: handlers for conf_key.fn ------------------------------ */

int conf_key_bool(struct ctx *, yaml_node_t *, const struct conf_key *,
    void *);
int conf_key_uint(struct ctx *, yaml_node_t *, const struct conf_key *,
    void *);
int conf_key_u32(struct ctx *, yaml_node_t *, const struct conf_key *,
    void *);
int conf_key_ms(struct ctx *, yaml_node_t *, const struct conf_key *,
    void *);
int conf_key_secs(struct ctx *, yaml_node_t *, const struct conf_key *,
    void *);
int conf_key_size(struct ctx *, yaml_node_t *, const struct conf_key *,
    void *);
int conf_key_path(struct ctx *, yaml_node_t *, const struct conf_key *,
    void *);
int conf_key_word(struct ctx *, yaml_node_t *, const struct conf_key *,
    void *);
int conf_key_map(struct ctx *, yaml_node_t *, const struct conf_key *,
    void *);
int conf_key_key(struct ctx *, yaml_node_t *, const struct conf_key *,
    void *);
/* k->off: the key; k->min: the char * that keeps the file's name. */
int conf_key_file(struct ctx *, yaml_node_t *, const struct conf_key *,
    void *);
/* A trojan password's SHA-224 in hex (56 digits), stored lower case. */
int conf_sha224(struct ctx *, yaml_node_t *, const char *s,
    char hex[CONF_TROJAN_HEX_LEN + 1]);
/* Whether s is a secret conf_dump redacted (then reported). */
bool conf_redacted(struct ctx *, yaml_node_t *, const char *s);

/* ---- conf_rules.c: client.rules and client.rule_sets ------------------- */

int conf_rules_key_rules(struct ctx *, yaml_node_t *, const struct conf_key *,
    void *);
int conf_rules_key_sets(struct ctx *, yaml_node_t *, const struct conf_key *,
    void *);
int conf_rules_key_geoip(struct ctx *, yaml_node_t *, const struct conf_key *,
    void *);
/* From the client section's check: parses both, binds the outbounds. */
int conf_rules_check(struct ctx *, yaml_node_t *map, struct conf *);
void conf_rules_dump(const struct conf *, FILE *);

/* ---- conf_dump.c --------------------------------------------------------- */

/* Double-quoted YAML string, so that any name reads back as it was. */
void conf_dump_str(FILE *, const char *);

/* ---- conf_path.c: file names ------------------------------------------- */

/* path made absolute from dir (unless it is already) into out, "." and
 * empty components dropped.  -1: it does not fit, or neither is
 * absolute. */
int conf_path_join(const char *dir, const char *path, char *out,
    size_t size);
/* path made absolute from the working directory (malloc'd); NULL with
 * errno set. */
char *conf_path_abs(const char *path);
/* The directory of an absolute path (malloc'd), "/" for "/x". */
char *conf_path_dir(const char *abs);
/* s, a file name from the configuration, made absolute from x->dir into
 * out (or kept as it is when loading a buffer); NULL once reported. */
const char *conf_file_name(struct ctx *, yaml_node_t *, const char *s,
    char *out, size_t size);
/* A file name (conf_file_name), strdup'd into the char * at k->off. */
int conf_key_filename(struct ctx *, yaml_node_t *, const struct conf_key *,
    void *);

/* ---- conf_dns.c: client.dns ------------------------------------------- */

int conf_key_dns(struct ctx *, yaml_node_t *, const struct conf_key *,
    void *);
/* The fake ranges' defaults and checks against tun: and route_exclude,
 * once the whole file is read. */
int conf_dns_check(struct ctx *);
void conf_dns_free(struct conf *);

/* ---- conf.c ------------------------------------------------------------- */

/* Reads the regular file path into buf, at most size bytes (a file that
 * fills buf is too large).  Returns NULL or why not; *shared: group or
 * others may read it, set as soon as that is known. */
const char *conf_read_file(const char *path, char *buf, size_t size,
    size_t *len, bool *shared);

#endif
