/*
 * tunsplit(8): argv and the subcommand table.  Each subcommand parses its
 * own options and calls into the modules; nothing else lives here.
 *
 * Exit status: 0 success, 1 runtime failure, 2 usage error, 3 configuration
 * error (documented in tunsplit.8; scripts tell a bad file from a failure).
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <sodium.h>
#include <yaml.h>

#include "lwip/init.h"

#include "wire/auth.h"
#include "client/client.h"
#include "client/route_test.h"
#include "conf/conf.h"
#include "daemon/check.h"
#include "daemon/control.h"
#include "daemon/daemon.h"
#include "core/log.h"
#include "server/server.h"

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
static int cmd_status(const struct cmd *, int, char **);
static int cmd_route_test(const struct cmd *, int, char **);
static int cmd_select(const struct cmd *, int, char **);
static int cmd_genkey(const struct cmd *, int, char **);
static int cmd_version(const struct cmd *, int, char **);
static int cmd_help_cmd(const struct cmd *, int, char **);

static const struct cmd cmds[] = {
	{ "run", cmd_run, "[-dv] [-c file] [-p pidfile]",
	    "run the client or server the configuration describes",
	    "  -c file     configuration file (default " DEFAULT_CONF ")\n"
	    "  -d          run in the background once set up; log to syslog\n"
	    "              unless log.syslog says otherwise\n"
	    "  -p pidfile  write and lock a pid file (overrides pidfile:)\n"
	    "  -v          log at debug level (to stderr in the foreground)\n"
	    "\nSIGHUP reloads the configuration, SIGTERM drains and stops "
	    "(twice: at once).\n" },
	{ "check", cmd_check, "[-q] [--secrets] [-c file]",
	    "check a configuration and its files; print it in full",
	    "  -c file    configuration file (default " DEFAULT_CONF ")\n"
	    "  -q         print only warnings and errors; the exit status "
	    "tells (0 or 3)\n"
	    "  --secrets  print keys and passwords too (else a key_file, or\n"
	    "             (redacted)), so that the output loads as it is\n" },
	{ "status", cmd_status,
	    "[-fj] [-w [secs]] [-s socket | -c file]",
	    "show a running daemon's flows, counters and server contact",
	    "  -c file            take the control socket from this "
	    "configuration\n"
	    "  -f, --flows        list every live flow (outer RTT, "
	    "retransmits)\n"
	    "  -j, --json         JSON instead of text\n"
	    "  -s socket          control socket (default "
	    CONF_CONTROL_DEFAULT ")\n"
	    "  -w, --watch [secs] redraw every secs (default 2, 1 to 3600)\n"
	    "                     until interrupted or the daemon stops\n" },
	{ "route-test", cmd_route_test,
	    "[--port n] [--udp | --icmp] [--src addr] [-s socket | -c file] "
	    "dest",
	    "print the outbound a flow to dest (an address or a name) would "
	    "take, and why",
	    "  -c file       decide under this configuration, without a "
	    "daemon\n"
	    "  -p, --port n  destination port (default 443; 0 for --icmp)\n"
	    "  -s socket     ask the daemon on this control socket (default\n"
	    "                " CONF_CONTROL_DEFAULT ")\n"
	    "  --src addr    the source address (a router's LAN client)\n"
	    "  -u, --udp     a UDP flow (default TCP)\n"
	    "  --icmp        an ICMP echo (ping)\n" },
	{ "select", cmd_select, "[-s socket | -c file] group member",
	    "make a running client's select group take member for new flows",
	    "  -c file       take the control socket from this "
	    "configuration\n"
	    "  -s socket     control socket (default "
	    CONF_CONTROL_DEFAULT ")\n"
	    "The choice is kept across a restart (in the control socket's "
	    "path\nwith .select appended).\n" },
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

static const struct option long_check[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "secrets", no_argument, NULL, 'S' },
	{ NULL, 0, NULL, 0 }
};

static const struct option long_status[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "json", no_argument, NULL, 'j' },
	{ "flows", no_argument, NULL, 'f' },
	{ "watch", optional_argument, NULL, 'w' },
	{ NULL, 0, NULL, 0 }
};

static const struct option long_route_test[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "port", required_argument, NULL, 'p' },
	{ "udp", no_argument, NULL, 'u' },
	{ "icmp", no_argument, NULL, 'I' },
	{ "src", required_argument, NULL, 'S' },
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
cmd_getopt_long(const struct cmd *cmd, int argc, char **argv,
    const char *opts, const struct option *longopts, int *rc)
{
	char	optstring[32];
	int	ch;

	/* "+": stop at the first operand; ":": we print the errors. */
	snprintf(optstring, sizeof(optstring), "+:%sh", opts);
	ch = getopt_long(argc, argv, optstring, longopts, NULL);
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

static int
cmd_getopt(const struct cmd *cmd, int argc, char **argv, const char *opts,
    int *rc)
{
	return cmd_getopt_long(cmd, argc, argv, opts, long_help, rc);
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
		fprintf(stderr, "%s%s\n", log_stderr_is_journal() ? "<3>" : "",
		    err);
	return c;
}

/*
 * The control socket named in a config file (status -c, select -c): 0 with
 * *c loaded (the caller frees it) and *sock pointing into it, or the exit
 * status, the reason on stderr.
 */
static int
load_control(const char *what, const char *path, struct conf **c,
    const char **sock)
{
	if ((*c = load(path)) == NULL)
		return EXIT_CONFIG;
	if ((*c)->control[0] == '\0') {
		fprintf(stderr, "tunsplit %s: %s: control: off\n", what, path);
		conf_free(*c);
		*c = NULL;
		return EXIT_CONFIG;
	}
	*sock = (*c)->control;
	return 0;
}

static int
cmd_run(const struct cmd *cmd, int argc, char **argv)
{
	const char	*path = DEFAULT_CONF, *pidfile = NULL;
	struct conf	*c;
	bool		 background = false, verbose = false, use_syslog;
	int		 ch, rc = 0;

	while ((ch = cmd_getopt(cmd, argc, argv, "c:dp:v", &rc)) != -1) {
		switch (ch) {
		case 'c':
			path = optarg;
			break;
		case 'd':
			background = true;
			break;
		case 'p':
			pidfile = optarg;
			break;
		case 'v':
			verbose = true;
			break;
		default:
			return rc;
		}
	}
	if (!cmd_no_operands(cmd, argc, argv))
		return EXIT_USAGE;
	if (pidfile != NULL && *pidfile != '/') {
		/* The daemon runs in /, where a relative name means nothing. */
		fprintf(stderr, "tunsplit run: -p needs an absolute path\n");
		return EXIT_USAGE;
	}
	if ((c = load(path)) == NULL)
		return EXIT_CONFIG;
	/* The certificate, key and CA, on the terminal and before anything
	 * is opened (as check does), not as an OpenSSL error stack later. */
	if (check_files(c, "tunsplit run", true) == -1) {
		conf_free(c);
		return EXIT_CONFIG;
	}
	/* In the background stderr goes nowhere once detached: syslog,
	 * unless log.syslog was given (until then, warnings reach stderr
	 * too).  -v in the foreground means debug on the terminal. */
	use_syslog = c->log_syslog;
	if (background && !c->log_syslog_set)
		use_syslog = true;
	else if (verbose && !background)
		use_syslog = false;
	log_init(verbose ? LOG_LVL_DEBUG : (enum log_level)c->log_level,
	    use_syslog, "tunsplit");
	log_set_flows(c->log_flows);
	daemon_init(c, verbose);
	if (pidfile == NULL)
		pidfile = c->pidfile;
	if (background && daemon_background() == -1) {
		conf_free(c);
		return EXIT_RUNTIME;
	}
	if (pidfile != NULL && daemon_pidfile(pidfile) == -1) {
		daemon_report(EXIT_RUNTIME);
		daemon_down();
		conf_free(c);
		return EXIT_RUNTIME;
	}
	/* A peer closing under us is an error return, never a signal. */
	signal(SIGPIPE, SIG_IGN);
	if (c->role == CONF_ROLE_CLIENT)
		rc = client_run(c);
	else
		rc = server_run(c);
	/* Failed before it was up: the waiting parent exits with rc. */
	daemon_report(rc);
	daemon_down();
	conf_free(c);
	return rc;
}

static int
cmd_check(const struct cmd *cmd, int argc, char **argv)
{
	const char	*path = DEFAULT_CONF;
	struct conf	*c;
	bool		 quiet = false, secrets = false;
	int		 ch, rc = 0;

	while ((ch = cmd_getopt_long(cmd, argc, argv, "c:q", long_check,
	    &rc)) != -1) {
		switch (ch) {
		case 'c':
			path = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		case 'S':
			secrets = true;
			break;
		default:
			return rc;
		}
	}
	if (!cmd_no_operands(cmd, argc, argv))
		return EXIT_USAGE;
	if ((c = load(path)) == NULL)
		return EXIT_CONFIG;
	/* What run would trip on next: the certificate, key and CA. */
	if (check_files(c, "tunsplit check", quiet) == -1) {
		conf_free(c);
		return EXIT_CONFIG;
	}
	if (!quiet && secrets)
		conf_dump_secrets(c, stdout);
	else if (!quiet)
		conf_dump(c, stdout);
	conf_free(c);
	if (fflush(stdout) == EOF || ferror(stdout))
		return EXIT_RUNTIME;
	return 0;
}

/* One command line to the control socket; the answer goes to stdout.
 * query_name names the command in messages. */
static const char *query_name = "status";

static int
status_query(const char *sock, const char *line)
{
	struct sockaddr_un	 sun;
	struct timeval		 tv = { CONTROL_TIMEOUT_MS / 1000, 0 };
	char			 buf[8192];
	size_t			 total = 0;
	ssize_t			 n;
	bool			 err = false;
	int			 fd;

	if (strlen(sock) >= sizeof(sun.sun_path)) {
		fprintf(stderr, "tunsplit %s: %s: path too long\n", query_name,
		    sock);
		return EXIT_USAGE;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, sock, strlen(sock) + 1);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == -1 ||
	    connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		fprintf(stderr, "tunsplit %s: %s: %s (is tunsplit "
		    "running, with this control socket?)\n", query_name, sock,
		    strerror(errno));
		if (fd != -1)
			close(fd);
		return EXIT_RUNTIME;
	}
	if (write(fd, line, strlen(line)) != (ssize_t)strlen(line)) {
		fprintf(stderr, "tunsplit %s: %s: %s\n", query_name, sock,
		    strerror(errno));
		close(fd);
		return EXIT_RUNTIME;
	}
	(void)shutdown(fd, SHUT_WR);
	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			fprintf(stderr, "tunsplit %s: %s: %s\n", query_name,
			    sock, errno == EAGAIN ? "no answer" : strerror(errno));
			close(fd);
			return EXIT_RUNTIME;
		}
		if (total == 0 && strncmp(buf, "error:", 6) == 0)
			err = true;
		fwrite(buf, 1, (size_t)n, err ? stderr : stdout);
		total += (size_t)n;
	}
	close(fd);
	if (total == 0) {
		fprintf(stderr, "tunsplit %s: %s: empty answer\n", query_name,
		    sock);
		return EXIT_RUNTIME;
	}
	if (fflush(stdout) == EOF || ferror(stdout))
		return EXIT_RUNTIME;
	return err ? EXIT_RUNTIME : 0;
}

static volatile sig_atomic_t status_stop;

static void
status_on_signal(int sig)
{
	(void)sig;
	status_stop = 1;
}

/* --watch: the interval in seconds, from --watch=N or the next argument
 * when it is a number (-w 5, --watch 5); 0: not valid. */
static unsigned
status_watch_secs(int argc, char **argv)
{
	const char	*arg = optarg;
	char		*end;
	unsigned long	 v;

	if (arg == NULL) {
		if (optind >= argc || argv[optind][0] < '0' ||
		    argv[optind][0] > '9')
			return 2;
		arg = argv[optind++];
	}
	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno != 0 || end == arg || *end != '\0' || *arg == '-' ||
	    v < 1 || v > 3600) {
		fprintf(stderr, "tunsplit status: --watch %s: seconds from 1 "
		    "to 3600\n", arg);
		return 0;
	}
	return (unsigned)v;
}

/*
 * Redraws the status every secs until SIGINT or SIGTERM (exit 0) or until
 * the daemon stops answering (its exit status).  The screen is cleared
 * only on a terminal; elsewhere the snapshots follow one another.
 */
static int
status_watch(const char *sock, const char *line, unsigned secs)
{
	struct sigaction	 sa;
	struct timespec		 ts;
	bool			 tty = isatty(STDOUT_FILENO);
	int			 rc;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = status_on_signal;	/* no SA_RESTART: wake up */
	sigemptyset(&sa.sa_mask);
	(void)sigaction(SIGINT, &sa, NULL);
	(void)sigaction(SIGTERM, &sa, NULL);
	while (!status_stop) {
		if (tty)
			printf("\033[H\033[2J");
		if ((rc = status_query(sock, line)) != 0)
			return rc;
		if (!tty && fflush(stdout) == EOF)
			return EXIT_RUNTIME;
		ts.tv_sec = secs;
		ts.tv_nsec = 0;
		while (!status_stop && nanosleep(&ts, &ts) == -1 &&
		    errno == EINTR)
			;
	}
	return 0;
}

static int
cmd_status(const struct cmd *cmd, int argc, char **argv)
{
	const char	*sock = NULL, *path = NULL;
	struct conf	*c = NULL;
	char		 line[32];
	bool		 json = false, flows = false;
	unsigned	 watch = 0;
	int		 ch, rc = 0;

	while ((ch = cmd_getopt_long(cmd, argc, argv, "c:fjs:w", long_status,
	    &rc)) != -1) {
		switch (ch) {
		case 'w':
			if ((watch = status_watch_secs(argc, argv)) == 0) {
				cmd_usage(cmd, stderr);
				return EXIT_USAGE;
			}
			break;
		case 'c':
			path = optarg;
			break;
		case 'f':
			flows = true;
			break;
		case 'j':
			json = true;
			break;
		case 's':
			sock = optarg;
			break;
		default:
			return rc;
		}
	}
	if (!cmd_no_operands(cmd, argc, argv))
		return EXIT_USAGE;
	if (sock != NULL && path != NULL) {
		fprintf(stderr, "tunsplit status: -s and -c are exclusive\n");
		cmd_usage(cmd, stderr);
		return EXIT_USAGE;
	}
	if (path != NULL && (rc = load_control("status", path, &c, &sock)) != 0)
		return rc;
	snprintf(line, sizeof(line), "status%s%s\n", json ? " json" : "",
	    flows ? " flows" : "");
	if (watch > 0)
		rc = status_watch(sock != NULL ? sock : CONF_CONTROL_DEFAULT,
		    line, watch);
	else
		rc = status_query(sock != NULL ? sock : CONF_CONTROL_DEFAULT,
		    line);
	conf_free(c);
	return rc;
}

/* The request line of route-test (client/route_test.h), from argv. */
static int
route_test_req(const struct cmd *cmd, int argc, char **argv, char *req,
    size_t reqlen, const char **sock, const char **path)
{
	const char	*net = "tcp", *src = "-";
	unsigned long	 port = 443;
	bool		 port_set = false;
	char		*end;
	int		 ch, rc = 0;

	while ((ch = cmd_getopt_long(cmd, argc, argv, "c:p:s:u",
	    long_route_test, &rc)) != -1) {
		switch (ch) {
		case 'c':
			*path = optarg;
			break;
		case 'p':
			port = strtoul(optarg, &end, 10);
			if (*optarg < '0' || *optarg > '9' || *end != '\0' ||
			    port > 65535) {
				fprintf(stderr, "tunsplit route-test: --port "
				    "%s: 0 to 65535\n", optarg);
				return EXIT_USAGE;
			}
			port_set = true;
			break;
		case 's':
			*sock = optarg;
			break;
		case 'u':
			net = "udp";
			break;
		case 'I':
			net = "icmp";
			break;
		case 'S':
			src = optarg;
			break;
		default:
			return rc;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "tunsplit route-test: %s\n", optind >= argc ?
		    "which destination?" : "one destination");
		cmd_usage(cmd, stderr);
		return EXIT_USAGE;
	}
	if (*sock != NULL && *path != NULL) {
		fprintf(stderr, "tunsplit route-test: -s and -c are "
		    "exclusive\n");
		cmd_usage(cmd, stderr);
		return EXIT_USAGE;
	}
	if (strcmp(net, "icmp") == 0 && !port_set)
		port = 0;
	if (strpbrk(src, " \t\r\n") != NULL ||
	    strpbrk(argv[optind], " \t\r\n") != NULL ||
	    (size_t)snprintf(req, reqlen, "%s %lu %s %s", net, port, src,
	    argv[optind]) >= reqlen) {
		fprintf(stderr, "tunsplit route-test: not an address or a "
		    "name\n");
		return EXIT_USAGE;
	}
	return -1;
}

static int
cmd_route_test(const struct cmd *cmd, int argc, char **argv)
{
	const char	*sock = NULL, *path = NULL;
	struct conf	*c;
	char		 req[512], line[600], *out = NULL;
	size_t		 outlen = 0;
	FILE		*fp;
	int		 rc;

	if ((rc = route_test_req(cmd, argc, argv, req, sizeof(req), &sock,
	    &path)) != -1)
		return rc;
	if (path == NULL) {
		query_name = "route-test";
		snprintf(line, sizeof(line), "route-test %s\n", req);
		return status_query(sock != NULL ? sock : CONF_CONTROL_DEFAULT,
		    line);
	}
	if ((c = load(path)) == NULL)
		return EXIT_CONFIG;
	if (c->role != CONF_ROLE_CLIENT) {
		fprintf(stderr, "tunsplit route-test: %s: only a client has "
		    "rules\n", path);
		conf_free(c);
		return EXIT_CONFIG;
	}
	if ((fp = open_memstream(&out, &outlen)) == NULL) {
		conf_free(c);
		return EXIT_RUNTIME;
	}
	rc = route_test_answer(c, req, fp, NULL) == 0 ? 0 : EXIT_USAGE;
	conf_free(c);
	if (fclose(fp) != 0) {
		free(out);
		return EXIT_RUNTIME;
	}
	fwrite(out, 1, outlen, rc == 0 ? stdout : stderr);
	free(out);
	if (fflush(stdout) == EOF || ferror(stdout))
		return EXIT_RUNTIME;
	return rc;
}

static int
cmd_select(const struct cmd *cmd, int argc, char **argv)
{
	const char	*sock = NULL, *path = NULL;
	struct conf	*c = NULL;
	char		 line[256];
	int		 ch, rc = 0;

	while ((ch = cmd_getopt(cmd, argc, argv, "c:s:", &rc)) != -1) {
		switch (ch) {
		case 'c':
			path = optarg;
			break;
		case 's':
			sock = optarg;
			break;
		default:
			return rc;
		}
	}
	if (argc - optind != 2 || (sock != NULL && path != NULL)) {
		cmd_usage(cmd, stderr);
		return EXIT_USAGE;
	}
	if (strlen(argv[optind]) > CONF_OB_NAME_MAX ||
	    strlen(argv[optind + 1]) > CONF_OB_NAME_MAX) {
		fprintf(stderr, "tunsplit select: a name has at most %d "
		    "characters\n", CONF_OB_NAME_MAX);
		return EXIT_USAGE;
	}
	if (path != NULL && (rc = load_control("select", path, &c, &sock)) != 0)
		return rc;
	query_name = "select";
	snprintf(line, sizeof(line), "select %s %s\n", argv[optind],
	    argv[optind + 1]);
	rc = status_query(sock != NULL ? sock : CONF_CONTROL_DEFAULT, line);
	conf_free(c);
	return rc;
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
	/* Each command's line, its summary on the next one: the options of
	 * `status` are too long for a column. */
	for (cmd = cmds; cmd->name != NULL; cmd++)
		fprintf(fp, "  %s%s%s\n      %s\n", cmd->name,
		    *cmd->args != '\0' ? " " : "", cmd->args, cmd->summary);
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
