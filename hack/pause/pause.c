/*
 * pause: the process that holds a pod sandbox's namespaces.
 *
 * It does nothing but wait. SIGINT and SIGTERM make it exit 0; SIGCHLD makes it
 * reap every exited child (it is PID 1 of the pod's PID namespace when the pod
 * shares one). "-v" prints the version and exits.
 *
 * Build: gcc -static -Os -o _output/bin/pause hack/pause/pause.c
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAUSE_VERSION "nodeagent-pause 3.10"

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void on_child(int sig)
{
	int saved = errno;
	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	errno = saved;
}

static int install(int sig, void (*fn)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = (sig == SIGCHLD) ? (SA_RESTART | SA_NOCLDSTOP) : 0;
	return sigaction(sig, &sa, NULL);
}

int main(int argc, char **argv)
{
	sigset_t watched, waitmask;
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-v") == 0) {
			printf("%s\n", PAUSE_VERSION);
			return 0;
		}
	}

	if (getpid() != 1)
		fprintf(stderr, "pause: warning: not running as PID 1\n");

	/*
	 * Keep the signals blocked except while sleeping in sigsuspend(), so a
	 * SIGTERM that arrives between the flag test and the wait is not lost.
	 */
	sigemptyset(&watched);
	sigaddset(&watched, SIGINT);
	sigaddset(&watched, SIGTERM);
	sigaddset(&watched, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &watched, &waitmask) < 0) {
		perror("pause: sigprocmask");
		return 1;
	}
	sigdelset(&waitmask, SIGINT);
	sigdelset(&waitmask, SIGTERM);
	sigdelset(&waitmask, SIGCHLD);

	if (install(SIGINT, on_stop) < 0 || install(SIGTERM, on_stop) < 0 ||
	    install(SIGCHLD, on_child) < 0) {
		perror("pause: sigaction");
		return 1;
	}

	while (!stop_requested)
		sigsuspend(&waitmask);

	return 0;
}
