/*
 * tunsplit(8): argv and the subcommand table.  Each subcommand parses its
 * own options and calls into the modules; nothing else lives here.
 *
 * Exit status: 0 success, 1 runtime failure, 2 usage error, 3 configuration
 * error (documented in tunsplit.8; scripts tell a bad file from a failure).
 */
#include "config.h"

#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <sodium.h>
#include <yaml.h>

#include "lwip/init.h"

#include "auth.h"
#include "client.h"
#include "conf.h"
#include "log.h"
#include "server.h"

#define EXIT_RUNTIME	1
#define EXIT_USAGE	2
#define EXIT_CONFIG	3

#define DEFAULT_CONF	SYSCONFDIR "/tunsplit/tunsplit.yaml"

struct cmd {
	const char	*name;
	int		(*fn)(const struct cmd *, int, char **);
	const char	*args;		/* synopsis after the name */
	const char	*summary;
	const char	*options;	/* per-option help lines, or NULL */
};

static int cmd_run(const struct cmd *, int, char **);
static int cmd_check(const struct cmd *, int, char **);
static int cmd_genkey(const struct cmd *, int, char **);
static int cmd_version(const struct cmd *, int, char **);
static int cmd_help_cmd(const struct cmd *, int, char **);

static const struct cmd cmds[] = {
	{ "run", cmd_run, "[-d] [-c file]",
	    "run the client or server the configuration describes",
	    "  -c file  configuration file (default " DEFAULT_CONF ")\n"
	    "  -d       log at debug level to stderr, whatever log: says\n" },
	{ "check", cmd_check, "[-q] [-c file]",
	    "check a configuration and print it with all defaults filled in",
	    "  -c file  configuration file (default " DEFAULT_CONF ")\n"
	    "  -q       print nothing; the exit status tells (0 or 3)\n" },
	{ "genkey", cmd_genkey, "",
	    "print a new random key, base64, for key: or a key_file", NULL },
	{ "version", cmd_version, "",
	    "print the versions of tunsplit and its libraries", NULL },
	{ "help", cmd_help_cmd, "[command]",
	    "describe all commands, or one", NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

static const struct cmd *
cmd_find(const char *name)
{
	const struct cmd	*cmd;

	for (cmd = cmds; cmd->name != NULL; cmd++)
		if (strcmp(cmd->name, name) == 0)
			return cmd;
	return NULL;
}

static const struct option long_help[] = {
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static void
cmd_usage(const struct cmd *cmd, FILE *fp)
{
	fprintf(fp, "usage: tunsplit %s%s%s\n", cmd->name,
	    *cmd->args != '\0' ? " " : "", cmd->args);
}

static void
cmd_help(const struct cmd *cmd)
{
	cmd_usage(cmd, stdout);
	printf("\n%s\n", cmd->summary);
	if (cmd->options != NULL)
		printf("\n%s", cmd->options);
}

/*
 * getopt for a subcommand: -h/--help are handled here for all of them.
 * Returns the option character, -1 at the end of the options, or 'h'/'?'
 * after help or the complaint is printed (the caller returns *rc).
 */
static int
cmd_getopt(const struct cmd *cmd, int argc, char **argv, const char *opts,
    int *rc)
{
	char	optstring[32];
	int	ch;

	/* "+": stop at the first operand; ":": we print the errors. */
	snprintf(optstring, sizeof(optstring), "+:%sh", opts);
	ch = getopt_long(argc, argv, optstring, long_help, NULL);
	switch (ch) {
	case 'h':
		cmd_help(cmd);
		*rc = 0;
		return 'h';
	case ':':
		fprintf(stderr, "tunsplit %s: option -%c needs an argument\n",
		    cmd->name, optopt);
		break;
	case '?':
		fprintf(stderr, "tunsplit %s: unknown option %s\n", cmd->name,
		    argv[optind - 1]);
		break;
	default:
		return ch;
	}
	cmd_usage(cmd, stderr);
	*rc = EXIT_USAGE;
	return '?';
}

/* After the options: no operands expected. */
static bool
cmd_no_operands(const struct cmd *cmd, int argc, char **argv)
{
	if (optind >= argc)
		return true;
	fprintf(stderr, "tunsplit %s: unexpected argument '%s'\n", cmd->name,
	    argv[optind]);
	cmd_usage(cmd, stderr);
	return false;
}

/* Config errors are one line on stderr, "file:line:col: key: message". */
static struct conf *
load(const char *path)
{
	struct conf	*c;
	char		 err[512];

	if ((c = conf_load_file(path, err, sizeof(err))) == NULL)
		fprintf(stderr, "%s\n", err);
	return c;
}

static int
cmd_run(const struct cmd *cmd, int argc, char **argv)
{
	const char	*path = DEFAULT_CONF;
	struct conf	*c;
	bool		 debug = false;
	int		 ch, rc = 0;

	while ((ch = cmd_getopt(cmd, argc, argv, "c:d", &rc)) != -1) {
		switch (ch) {
		case 'c':
			path = optarg;
			break;
		case 'd':
			debug = true;
			break;
		default:
			return rc;
		}
	}
	if (!cmd_no_operands(cmd, argc, argv))
		return EXIT_USAGE;
	if ((c = load(path)) == NULL)
		return EXIT_CONFIG;
	if (debug)
		log_init(LOG_LVL_DEBUG, false, "tunsplit");
	else
		log_init((enum log_level)c->log_level, c->log_syslog,
		    "tunsplit");
	/* A peer closing under us is an error return, never a signal. */
	signal(SIGPIPE, SIG_IGN);
	if (c->role == CONF_ROLE_CLIENT)
		rc = client_run(c);
	else
		rc = server_run(c);
	conf_free(c);
	return rc;
}

static int
cmd_check(const struct cmd *cmd, int argc, char **argv)
{
	const char	*path = DEFAULT_CONF;
	struct conf	*c;
	bool		 quiet = false;
	int		 ch, rc = 0;

	while ((ch = cmd_getopt(cmd, argc, argv, "c:q", &rc)) != -1) {
		switch (ch) {
		case 'c':
			path = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		default:
			return rc;
		}
	}
	if (!cmd_no_operands(cmd, argc, argv))
		return EXIT_USAGE;
	if ((c = load(path)) == NULL)
		return EXIT_CONFIG;
	if (!quiet)
		conf_dump(c, stdout);
	conf_free(c);
	if (fflush(stdout) == EOF || ferror(stdout))
		return EXIT_RUNTIME;
	return 0;
}

static int
cmd_genkey(const struct cmd *cmd, int argc, char **argv)
{
	char	key[AUTH_KEY_B64_LEN];
	int	ch, rc = 0;

	while ((ch = cmd_getopt(cmd, argc, argv, "", &rc)) != -1)
		return rc;
	if (!cmd_no_operands(cmd, argc, argv))
		return EXIT_USAGE;
	auth_key_generate(key);
	printf("%s\n", key);
	sodium_memzero(key, sizeof(key));
	if (fflush(stdout) == EOF || ferror(stdout))
		return EXIT_RUNTIME;
	return 0;
}

static int
cmd_version(const struct cmd *cmd, int argc, char **argv)
{
	int	ch, rc = 0;

	while ((ch = cmd_getopt(cmd, argc, argv, "", &rc)) != -1)
		return rc;
	if (!cmd_no_operands(cmd, argc, argv))
		return EXIT_USAGE;
	printf("tunsplit %s\n", PACKAGE_VERSION);
	printf("lwIP %s\n", LWIP_VERSION_STRING);
	printf("%s\n", OpenSSL_version(OPENSSL_VERSION));
	printf("libsodium %s\n", sodium_version_string());
	printf("libyaml %s\n", yaml_get_version_string());
	return 0;
}

static void
usage(FILE *fp)
{
	const struct cmd	*cmd;

	fprintf(fp, "usage: tunsplit command [options]\n\ncommands:\n");
	for (cmd = cmds; cmd->name != NULL; cmd++)
		fprintf(fp, "  %-8s %-18s %s\n", cmd->name, cmd->args,
		    cmd->summary);
	fprintf(fp, "\n'tunsplit help command' or 'tunsplit command --help' "
	    "describes one command.\n"
	    "Default configuration file: %s\n"
	    "Exit status: 0 success, 1 runtime failure, 2 usage error, "
	    "3 configuration error.\n", DEFAULT_CONF);
}

static int
cmd_help_cmd(const struct cmd *cmd, int argc, char **argv)
{
	const struct cmd	*about;
	int			 ch, rc = 0;

	while ((ch = cmd_getopt(cmd, argc, argv, "", &rc)) != -1)
		return rc;
	if (optind == argc) {
		usage(stdout);
		return 0;
	}
	if (optind + 1 != argc || (about = cmd_find(argv[optind])) == NULL) {
		fprintf(stderr, "tunsplit help: no command '%s'\n",
		    argv[optind]);
		cmd_usage(cmd, stderr);
		return EXIT_USAGE;
	}
	cmd_help(about);
	return 0;
}

int
main(int argc, char **argv)
{
	const struct cmd	*cmd;
	const char		*name;

	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	name = argv[1];
	if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0)
		name = "help";
	else if (strcmp(name, "-V") == 0 || strcmp(name, "--version") == 0)
		name = "version";
	if ((cmd = cmd_find(name)) == NULL) {
		fprintf(stderr, "tunsplit: unknown command '%s'\n", argv[1]);
		usage(stderr);
		return EXIT_USAGE;
	}
	/* Subcommands see argv[0] as their own name. */
	return cmd->fn(cmd, argc - 1, argv + 1);
}
